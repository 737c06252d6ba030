package cublas

import (
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/internal/dl"
	"github.com/gocuda/cuda/internal/fakecuda"
)

// TestCalls: before the libraries are opened every function is missing;
// opened (the fake driver answers cuBLAS's and cuBLASLt's calls, one file
// for both tables), they reach them, cublasGemmEx's 19 arguments in their
// places.
func TestCalls(t *testing.T) {
	var h Handle
	if r := Create(&h); r != Missing {
		t.Fatalf("Create before the library is opened = %v, want Missing", r)
	}
	if r := LtMatmul(0, 0, nil, 0, 0, 0, 0, nil, 0, 0, 0, 0, nil, 0, 0, 0); r != Missing {
		t.Fatalf("LtMatmul before the library is opened = %v, want Missing", r)
	}
	if name, ok := GetStatusName(InvalidValue); ok || name != "" {
		t.Fatalf("GetStatusName before the library is opened = %q, %v: want nothing", name, ok)
	}
	for _, tt := range []struct {
		r    Result
		want string
	}{{Success, "CUBLAS_STATUS_SUCCESS"}, {NotSupported, "CUBLAS_STATUS_NOT_SUPPORTED"}, {Result(2), "cublasStatus(2)"}, {Missing, "cublasStatus(missing function)"}} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("Result(%d).String() = %q, want %q", int32(tt.r), got, tt.want)
		}
	}
	// cuBLASLt writes and reads these as its header lays them out.
	if a, r := unsafe.Sizeof(LtMatmulAlgo{}), unsafe.Sizeof(LtMatmulHeuristicResult{}); a != 64 || r != 96 {
		t.Errorf("cublasLtMatmulAlgo_t is %d bytes and cublasLtMatmulHeuristicResult_t %d: want 64 and 96", a, r)
	}
	for _, l := range []struct {
		name  string
		table *dl.Table
	}{{"cuBLAS", Table}, {"cuBLASLt", LtTable}} {
		lib, err := fakecuda.Lazy(l.name, l.table)
		if err != nil {
			t.Skip("no C compiler for the fake driver:", err)
		}
		if err := lib.Open(); err != nil {
			t.Fatal(err)
		}
	}
	var major int32
	if r := GetProperty(0, &major); r != Success || major < 12 {
		t.Errorf("GetProperty(MAJOR_VERSION) = %v, %d: want success and 12 or later", r, major)
	}
	if name, ok := GetStatusName(InvalidValue); !ok || name != "CUBLAS_STATUS_INVALID_VALUE" {
		t.Errorf("GetStatusName(%d) = %q, %v", int32(InvalidValue), name, ok)
	}
	if text, ok := LtGetStatusString(NotSupported); !ok || text == "" {
		t.Errorf("LtGetStatusString(%d) = %q, %v", int32(NotSupported), text, ok)
	}
	// The fake checks the handle first: no handle is not initialized.
	alpha, beta := float32(1), float32(0)
	if r := GemmEx(0, 0, 0, 1, 1, 1, unsafe.Pointer(&alpha), 0, 0, 1, 0, 0, 1, unsafe.Pointer(&beta), 0, 0, 1, 68, -1); r != NotInitialized {
		t.Errorf("GemmEx without a handle = %v, want %v", r, NotInitialized)
	}
	// Made by cuBLASLt, a descriptor takes attributes from host memory.
	var desc LtMatmulDesc
	if r := LtMatmulDescCreate(&desc, 68, 0); r != Success || desc == 0 {
		t.Fatalf("LtMatmulDescCreate = %v, %#x", r, desc)
	}
	trans := int32(1)
	if r := LtMatmulDescSetAttribute(desc, 3, unsafe.Pointer(&trans), 4); r != Success {
		t.Errorf("LtMatmulDescSetAttribute(TRANSA) = %v", r)
	}
	if r := LtMatmulDescSetAttribute(desc, 3, unsafe.Pointer(&trans), 8); r != InvalidValue {
		t.Errorf("LtMatmulDescSetAttribute(TRANSA) of 8 bytes = %v, want %v", r, InvalidValue)
	}
	if r := LtMatmulDescDestroy(desc); r != Success {
		t.Errorf("LtMatmulDescDestroy = %v", r)
	}
}

package cusparse

import (
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/internal/fakecuda"
)

// TestCalls: before the library is opened every function is missing;
// opened (the fake driver answers cuSPARSE's calls), they reach it with
// their 64-bit sizes and enumerations where C reads them.
func TestCalls(t *testing.T) {
	var v int32
	if r := GetProperty(0, &v); r != Missing {
		t.Fatalf("GetProperty before the library is opened = %v, want Missing", r)
	}
	for _, tt := range []struct {
		r    Result
		want string
	}{{Success, "CUSPARSE_STATUS_SUCCESS"}, {NotSupported, "CUSPARSE_STATUS_NOT_SUPPORTED"}, {Result(77), "cusparseStatus(77)"}} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("Result(%d).String() = %q, want %q", int32(tt.r), got, tt.want)
		}
	}
	lib, err := fakecuda.Lazy("cuSPARSE", Table)
	if err != nil {
		t.Skip("no C compiler for the fake driver:", err)
	}
	if err := lib.Open(); err != nil {
		t.Fatal(err)
	}
	if r := GetProperty(0, &v); r != Success || v != 12 {
		t.Errorf("GetProperty(major) = %v, %d: want success and the fake's 12", r, v)
	}
	if name, ok := GetErrorName(InvalidValue); !ok || name != "CUSPARSE_STATUS_INVALID_VALUE" {
		t.Errorf("GetErrorName(InvalidValue) = %q, %v", name, ok)
	}
	// A descriptor holds what it was made with: sizes past 32 bits too.
	var d SpMatDescr
	if r := CreateCsr(&d, 1<<33, 5, 0, 0, 0, 0, 3, 3, 0, 1); r != Success {
		t.Fatalf("CreateCsr = %v", r)
	}
	var rows, cols, nnz int64
	if r := SpMatGetSize(d, &rows, &cols, &nnz); r != Success || rows != 1<<33 || cols != 5 || nnz != 0 {
		t.Errorf("SpMatGetSize = %v, %d x %d, %d non-zeros", r, rows, cols, nnz)
	}
	lower := int32(1)
	if r := SpMatSetAttribute(d, 0, unsafe.Pointer(&lower), 4); r != Success {
		t.Errorf("SpMatSetAttribute = %v", r)
	}
	if r := DestroySpMat(d); r != Success {
		t.Errorf("DestroySpMat = %v", r)
	}
	// 32-bit indices cannot count 2^33 rows; a bad value type or base is
	// refused; a handle that is not one is not initialized.
	for _, tt := range []struct {
		name string
		r    Result
		want Result
	}{
		{"32-bit indices for 2^33 rows", CreateCsr(&d, 1<<33, 5, 0, 0, 0, 0, 2, 2, 0, 0), InvalidValue},
		{"value type 99", CreateCoo(&d, 3, 3, 0, 0, 0, 0, 2, 0, 99), InvalidValue},
		{"base 2", CreateCsc(&d, 3, 3, 0, 0, 0, 0, 2, 2, 2, 0), InvalidValue},
		{"no handle", SetStream(0, 0), NotInitialized},
		{"SpMV without a handle", SpMV(0, 0, nil, 0, 0, nil, 0, 0, 0, 0), NotInitialized},
	} {
		if tt.r != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.r, tt.want)
		}
	}
}

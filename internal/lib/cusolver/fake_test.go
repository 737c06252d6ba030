package cusolver

import (
	"testing"

	"github.com/gocuda/cuda/internal/fakecuda"
)

// TestCalls: before the library is opened every function is missing;
// opened (the fake driver answers cuSOLVER's calls), they reach it,
// cusolverDnXgesvd's 23 arguments and the job letters in their places.
func TestCalls(t *testing.T) {
	var h Handle
	if r := DnCreate(&h); r != Missing {
		t.Fatalf("DnCreate before the library is opened = %v, want Missing", r)
	}
	for _, tt := range []struct {
		r    Result
		want string
	}{{Success, "CUSOLVER_STATUS_SUCCESS"}, {InvalidWorkspace, "CUSOLVER_STATUS_INVALID_WORKSPACE"}, {Result(17), "cusolverStatus(17)"}, {Missing, "cusolverStatus(missing function)"}} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("Result(%d).String() = %q, want %q", int32(tt.r), got, tt.want)
		}
	}
	lib, err := fakecuda.Lazy("cuSOLVER", Table)
	if err != nil {
		t.Skip("no C compiler for the fake driver:", err)
	}
	if err := lib.Open(); err != nil {
		t.Fatal(err)
	}
	var major int32
	if r := GetProperty(0, &major); r != Success || major != 11 {
		t.Errorf("GetProperty(MAJOR_VERSION) = %v, %d: want success and the fake's 11", r, major)
	}
	// No driver initialized: no handle.
	if r := DnCreate(&h); r != NotInitialized {
		t.Errorf("DnCreate without a context = %v, want %v", r, NotInitialized)
	}
	var p Params
	if r := DnCreateParams(&p); r != Success || p == 0 {
		t.Fatalf("DnCreateParams = %v, %#x", r, p)
	}
	if r := DnDestroyParams(p); r != Success {
		t.Errorf("DnDestroyParams = %v", r)
	}
	// The fake checks the handle first.
	var dev, host uintptr
	if r := DnXgesvd_bufferSize(0, 0, 'A', 'A', 4, 4, 1, 0, 4, 1, 0, 1, 0, 4, 1, 0, 4, 1, &dev, &host); r != NotInitialized {
		t.Errorf("DnXgesvd_bufferSize without a handle = %v, want %v", r, NotInitialized)
	}
	var info GesvdjInfo
	if r := DnCreateGesvdjInfo(&info); r != Success {
		t.Fatalf("DnCreateGesvdjInfo = %v", r)
	}
	if r := DnDestroySyevjInfo(SyevjInfo(info)); r != InvalidValue {
		t.Errorf("DnDestroySyevjInfo of a gesvdjInfo_t = %v, want %v", r, InvalidValue)
	}
	if r := DnDestroyGesvdjInfo(info); r != Success {
		t.Errorf("DnDestroyGesvdjInfo = %v", r)
	}
}

package cufft

import (
	"testing"

	"github.com/gocuda/cuda/internal/fakecuda"
)

// TestCalls: before the library is opened every function is missing;
// opened (the fake driver answers cuFFT's calls), they reach it.
func TestCalls(t *testing.T) {
	var h Handle
	if r := Create(&h); r != Missing {
		t.Fatalf("Create before the library is opened = %v, want Missing", r)
	}
	for _, tt := range []struct {
		r    Result
		want string
	}{{Success, "CUFFT_SUCCESS"}, {InvalidSize, "CUFFT_INVALID_SIZE"}, {Result(17), "cufftResult(17)"}, {Missing, "cufftResult(missing function)"}} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("Result(%d).String() = %q, want %q", int32(tt.r), got, tt.want)
		}
	}
	lib, err := fakecuda.Lazy("cuFFT", Table)
	if err != nil {
		t.Skip("no C compiler for the fake driver:", err)
	}
	if err := lib.Open(); err != nil {
		t.Fatal(err)
	}
	var v int32
	if r := GetVersion(&v); r != Success || v < 10000 {
		t.Errorf("GetVersion = %v, version %d: want success and a version", r, v)
	}
	if r := Destroy(-1); r != InvalidPlan {
		t.Errorf("Destroy of no plan = %v, want %v", r, InvalidPlan)
	}
}

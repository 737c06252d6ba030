package curand

import (
	"testing"

	"github.com/gocuda/cuda/internal/fakecuda"
)

// TestCalls: before the library is opened every function is missing, the
// ones purego.RegisterFunc builds too; opened (the fake driver answers
// cuRAND's calls), they reach it, a double by value where C reads it.
func TestCalls(t *testing.T) {
	var v int32
	if r := GetVersion(&v); r != Missing {
		t.Fatalf("GetVersion before the library is opened = %v, want Missing", r)
	}
	if r := GeneratePoisson(0, 0, 0, 1); r != Missing {
		t.Fatalf("GeneratePoisson before the library is opened = %v, want Missing", r)
	}
	for _, tt := range []struct {
		r    Result
		want string
	}{{Success, "CURAND_STATUS_SUCCESS"}, {LengthNotMultiple, "CURAND_STATUS_LENGTH_NOT_MULTIPLE"}, {Result(7), "curandStatus(7)"}} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("Result(%d).String() = %q, want %q", int32(tt.r), got, tt.want)
		}
	}
	lib, err := fakecuda.Lazy("cuRAND", Table)
	if err != nil {
		t.Skip("no C compiler for the fake driver:", err)
	}
	if err := lib.Open(); err != nil {
		t.Fatal(err)
	}
	if r := GetVersion(&v); r != Success || v != 10400 {
		t.Errorf("GetVersion = %v, version %d: want success and the fake's 10400", r, v)
	}
	// The fake checks lambda before the generator: a lambda it reads as
	// 0 is out of range, 2.5 goes on to find no generator.
	for _, tt := range []struct {
		lambda float64
		want   Result
	}{{0, OutOfRange}, {2.5, NotInitialized}} {
		if r := GeneratePoisson(0, 0, 2, tt.lambda); r != tt.want {
			t.Errorf("GeneratePoisson(lambda %v) = %v, want %v", tt.lambda, r, tt.want)
		}
	}
}

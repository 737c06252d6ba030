package curand

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/curand"
)

// TestCheck: what a generated function returns becomes this package's
// error: nothing for success, the code and its sentinel, or a function the
// library opened lacks ("PATH has no NAME").
func TestCheck(t *testing.T) {
	if err := check("Op", "curandGenerateNormal", clib.Success); err != nil {
		t.Errorf("check of success = %v", err)
	}
	err := check("Op", "curandGenerateNormal", clib.LengthNotMultiple)
	if e := (*Error)(nil); !errors.As(err, &e) || e.Code != ResultLengthNotMultiple || e.Call != "curandGenerateNormal" || !errors.Is(err, ResultLengthNotMultiple) || !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("check of %v = %#v, want the code, its call and cuda.ErrInvalidValue", clib.LengthNotMultiple, err)
	}
	err = check("Op", "curandGenerateNormal", clib.Missing)
	if e := (*Error)(nil); !errors.As(err, &e) || e.Code != 0 || !errors.Is(err, cuda.ErrNotSupported) || !strings.HasSuffix(e.Detail, " has no curandGenerateNormal") {
		t.Errorf("check of a missing function = %#v, want cuda.ErrNotSupported saying the library has no curandGenerateNormal", err)
	}
}

package cublas

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cublas"
)

// TestCheck: what a generated function returns becomes this package's
// error: nothing for success, the code and its sentinel, or a function the
// library opened lacks ("PATH lacks NAME: a newer cuBLAS is needed"), for
// cuBLAS's functions and cuBLASLt's.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		check func(op, name string, r clib.Result) error
		name  string
	}{{check, "cublasGemmEx"}, {checkLt, "cublasLtMatmul"}} {
		if err := c.check("Op", c.name, clib.Success); err != nil {
			t.Errorf("check of success = %v", err)
		}
		err := c.check("Op", c.name, clib.InvalidValue)
		if e := (*Error)(nil); !errors.As(err, &e) || e.Code != ResultInvalidValue || e.Call != c.name || !strings.Contains(e.Text, "CUBLAS_STATUS_INVALID_VALUE") ||
			!errors.Is(err, ResultInvalidValue) || !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("check of %v = %#v, want the code, its name, its call and cuda.ErrInvalidValue", clib.InvalidValue, err)
		}
		err = c.check("Op", c.name, clib.Missing)
		if e := (*Error)(nil); !errors.As(err, &e) || e.Code != 0 || !errors.Is(err, cuda.ErrNotSupported) || !strings.HasSuffix(e.Detail, " lacks "+c.name+": a newer cuBLAS is needed") {
			t.Errorf("check of a missing function = %#v, want cuda.ErrNotSupported saying the library lacks %s", err, c.name)
		}
	}
}

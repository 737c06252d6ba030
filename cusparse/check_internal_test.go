package cusparse

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cusparse"
)

// TestCheck: what a generated function returns becomes this package's
// error: nothing for success, the code and its sentinel, or a function the
// library opened lacks ("PATH has no NAME").
func TestCheck(t *testing.T) {
	if err := check("Op", "cusparseSpMV", clib.Success); err != nil {
		t.Errorf("check of success = %v", err)
	}
	for _, tt := range []struct {
		r    clib.Result
		want error
	}{
		{clib.InvalidValue, cuda.ErrInvalidValue},
		{clib.AllocFailed, cuda.ErrOutOfMemory},
		{clib.NotSupported, cuda.ErrNotSupported},
		{clib.MatrixTypeNotSupported, cuda.ErrNotSupported},
	} {
		err := check("Op", "cusparseSpMV", tt.r)
		if e := (*Error)(nil); !errors.As(err, &e) || e.Code != Result(tt.r) || e.Call != "cusparseSpMV" || !errors.Is(err, Result(tt.r)) || !errors.Is(err, tt.want) {
			t.Errorf("check of %v = %#v, want the code, its call and %v", tt.r, err, tt.want)
		}
	}
	err := check("Op", "cusparseSpMV", clib.Missing)
	if e := (*Error)(nil); !errors.As(err, &e) || e.Code != 0 || !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(e.Detail, " has no cusparseSpMV") {
		t.Errorf("check of a missing function = %#v, want cuda.ErrNotSupported saying the library has no cusparseSpMV", err)
	}
}

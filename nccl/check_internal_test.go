package nccl

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/nccl"
)

// TestCheck: what a generated function returns becomes this package's
// error: nothing for success, the code with NCCL's text and its sentinel,
// or a function the library opened lacks ("PATH lacks NAME: a newer NCCL
// is needed"); has sees which functions it has.
func TestCheck(t *testing.T) {
	if err := open("Op"); err != nil {
		t.Skip(err)
	}
	if err := check("Op", "ncclAllReduce", clib.Success); err != nil {
		t.Errorf("check of success = %v", err)
	}
	// NCCL's last error is its thread's: the call and check on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var n int32
	err := check("Op", "ncclCommCount", clib.CommCount(0, &n))
	if e := (*Error)(nil); !errors.As(err, &e) || e.Code != ResultInvalidArgument || e.Call != "ncclCommCount" || !strings.HasPrefix(e.Text, "invalid argument") || !errors.Is(err, ResultInvalidArgument) || !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("check of ncclCommCount of no communicator = %#v, want the code, NCCL's text, its call and cuda.ErrInvalidValue", err)
	}
	err = check("Op", "ncclCommRegister", clib.Missing)
	if e := (*Error)(nil); !errors.As(err, &e) || e.Code != 0 || !errors.Is(err, cuda.ErrNotSupported) || !strings.HasSuffix(e.Detail, " lacks ncclCommRegister: a newer NCCL is needed") {
		t.Errorf("check of a missing function = %#v, want cuda.ErrNotSupported saying the library lacks ncclCommRegister", err)
	}
	if !has("ncclCommRegister") || has("ncclNoSuchFunction") {
		t.Errorf("has(ncclCommRegister) = %v, has(ncclNoSuchFunction) = %v: want true, false", has("ncclCommRegister"), has("ncclNoSuchFunction"))
	}
}

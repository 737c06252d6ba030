package cublas

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/closed"
	"github.com/gocuda/cuda/internal/dl"
	clib "github.com/gocuda/cuda/internal/lib/cublas"
	"github.com/gocuda/cuda/internal/libhandle"
)

// sentinels are the gocuda sentinels cuBLAS's codes match.
var sentinels = map[Result]error{
	ResultInvalidValue: cuda.ErrInvalidValue,
	ResultAllocFailed:  cuda.ErrOutOfMemory,
	ResultNotSupported: cuda.ErrNotSupported,
	ResultArchMismatch: cuda.ErrNotSupported,
}

// check turns what cuBLAS's function name returned into an error: nil
// for success, cuda.ErrNotSupported where the library opened lacks the
// function.
func check(op, name string, r clib.Result) error {
	return statusError(op, name, r, &lib, clib.GetStatusName, clib.GetStatusString)
}

// checkLt is check for a cuBLASLt function.
func checkLt(op, name string, r clib.Result) error {
	return statusError(op, name, r, &libLt, clib.LtGetStatusName, clib.LtGetStatusString)
}

// statusError is the error for a call of l's function name that returned
// r; the code's name and text are the library's (cublasGetStatusName and
// cublasGetStatusString, or cuBLASLt's), where it has them.
func statusError(op, name string, r clib.Result, l *dl.Lazy, nameOf, textOf func(clib.Result) (string, bool)) error {
	switch r {
	case clib.Success:
		return nil
	case clib.Missing:
		return &Error{Op: op, Call: name, Err: cuda.ErrNotSupported, Detail: fmt.Sprintf("%s lacks %s: a newer cuBLAS is needed", l.Path(), name)}
	}
	s := Result(r)
	text := s.String()
	cname, okName := nameOf(r)
	ctext, okText := textOf(r)
	if okName && okText && cname != "" {
		text = ctext + " (" + cname + ")"
	}
	return &Error{Op: op, Call: name, Code: s, Text: text, Err: sentinels[s]}
}

// errorf returns an error of ours, not the library's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

// contextError returns the error for a buffer, named name, of context
// bctx, given to a handle of another: a zero buffer, of no context, is
// told as one, not as another context's.
func contextError(op, name string, bctx *cuda.Context) error {
	return errorf(op, cuda.ErrInvalidValue, "%s", libhandle.OtherContext(name, bctx))
}

// aliasError returns op's error for an output, out (named outName), found
// sharing memory with in (named inName): cuda.ErrClosed where either is
// closed (see package closed), else cuda.ErrInvalidValue of format and
// args.
func aliasError[T any](op, outName string, out *cuda.DeviceBuffer[T], inName string, in *cuda.DeviceBuffer[T], format string, args ...any) error {
	for _, b := range [2]struct {
		name string
		buf  *cuda.DeviceBuffer[T]
	}{{outName, out}, {inName, in}} {
		if closed.Buffer(b.buf) {
			return &Error{Op: op, Err: cuda.ErrClosed, Detail: b.name + " is closed (freed, or its context closed)"}
		}
	}
	return errorf(op, cuda.ErrInvalidValue, format, args...)
}

package cusparse

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cusparse"
)

// sentinels are the gocuda sentinels cuSPARSE's codes match.
var sentinels = map[Result]error{
	ResultInvalidValue:           cuda.ErrInvalidValue,
	ResultAllocFailed:            cuda.ErrOutOfMemory,
	ResultInsufficientResources:  cuda.ErrOutOfMemory,
	ResultNotSupported:           cuda.ErrNotSupported,
	ResultMatrixTypeNotSupported: cuda.ErrNotSupported,
	ResultArchMismatch:           cuda.ErrNotSupported,
}

// check turns what cuSPARSE's function name returned into an error: nil
// for success, cuda.ErrNotSupported where the library opened lacks the
// function. The code's name and text are the library's
// (cusparseGetErrorName and cusparseGetErrorString), where it has them.
func check(op, name string, r clib.Result) error {
	switch r {
	case clib.Success:
		return nil
	case clib.Missing:
		return &Error{Op: op, Call: name, Err: cuda.ErrNotSupported, Detail: lib.Lacks(name) + ": a newer cuSPARSE is needed"}
	}
	s := Result(r)
	text := s.String()
	cname, okName := clib.GetErrorName(r)
	ctext, okText := clib.GetErrorString(r)
	if okName && okText && cname != "" {
		text = ctext + " (" + cname + ")"
	}
	return &Error{Op: op, Call: name, Code: s, Text: text, Err: sentinels[s]}
}

// errorf returns an error of ours, not the library's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

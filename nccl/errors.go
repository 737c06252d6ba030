package nccl

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/errfmt"
	clib "github.com/gocuda/cuda/internal/lib/nccl"
)

// Result is an NCCL result code (ncclResult_t).
type Result int32

// NCCL's result codes.
const (
	ResultSuccess            = Result(clib.Success)
	ResultUnhandledCudaError = Result(clib.UnhandledCudaError)
	ResultSystemError        = Result(clib.SystemError)
	ResultInternalError      = Result(clib.InternalError)
	ResultInvalidArgument    = Result(clib.InvalidArgument)
	ResultInvalidUsage       = Result(clib.InvalidUsage)
	ResultRemoteError        = Result(clib.RemoteError)
	ResultInProgress         = Result(clib.InProgress)
	ResultTimeout            = Result(clib.Timeout)
)

// String returns the code's C name, such as ncclRemoteError.
func (r Result) String() string { return clib.Result(r).String() }

// Error makes a Result an error, so that errors.Is(err, nccl.ResultRemoteError)
// picks out one code.
func (r Result) Error() string { return r.String() }

// Error is the error type of this package.
type Error struct {
	Op     string // the gocuda operation, such as "AllReduce"
	Call   string // the NCCL function, such as "ncclAllReduce"; "" if NCCL was not called
	Code   Result // NCCL's result; 0 if NCCL was not called
	Text   string // NCCL's text for the code, and for the last error where it has one
	Err    error  // the gocuda sentinel this error matches, if any
	Detail string // what was wrong, in words, for errors of ours
}

func (e *Error) Error() string {
	if e == nil {
		return "nccl: <nil>"
	}
	var code string
	if e.Code != ResultSuccess {
		code = fmt.Sprintf("%s (%s)", e.Text, e.Code)
	}
	return errfmt.Message("nccl", e.Op, e.Call, code, e.Err, e.Detail)
}

// Unwrap returns the gocuda sentinel e matches (cuda.ErrInvalidValue,
// cuda.ErrClosed, cuda.ErrNotSupported), if any.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Is reports whether e carries NCCL's result target, so that
// errors.Is(err, nccl.ResultRemoteError) picks out one code.
func (e *Error) Is(target error) bool {
	r, ok := target.(Result)
	return ok && e != nil && e.Code != ResultSuccess && e.Code == r
}

// sentinels are the gocuda sentinels NCCL's codes match.
var sentinels = map[Result]error{
	ResultInvalidArgument: cuda.ErrInvalidValue,
	ResultInvalidUsage:    cuda.ErrInvalidValue,
}

// check turns what NCCL's function name returned into an error: nil for
// success, cuda.ErrNotSupported where the library opened lacks the
// function (one of a newer NCCL's).
func check(op, name string, r clib.Result) error {
	switch r {
	case clib.Success:
		return nil
	case clib.Missing:
		return &Error{Op: op, Call: name, Err: cuda.ErrNotSupported, Detail: fmt.Sprintf("%s lacks %s: a newer NCCL is needed", lib.Path(), name)}
	}
	return resultError(op, name, Result(r))
}

// resultError is the error of NCCL's function call returning r, with
// NCCL's text for it.
func resultError(op, call string, r Result) error {
	text, _ := clib.GetErrorString(clib.Result(r))
	// NCCL keeps the last error per thread (the comm argument is unused):
	// callers make their call and this one on a locked thread. An NCCL
	// without ncclGetLastError gives "".
	if last, _ := clib.GetLastError(0); last != "" {
		text += ": " + last
	}
	return &Error{Op: op, Call: call, Code: r, Text: text, Err: sentinels[r]}
}

// errorf returns an error of ours, not NCCL's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

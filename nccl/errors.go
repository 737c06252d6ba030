package nccl

import (
	"fmt"

	"github.com/ebitengine/purego"
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
	"github.com/gocuda/cuda/internal/errfmt"
)

// Result is an NCCL result code (ncclResult_t).
type Result int32

// NCCL's result codes.
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
	Timeout            Result = 8
)

var resultNames = [...]string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress", "ncclTimeout"}

func (r Result) String() string {
	if r >= 0 && int(r) < len(resultNames) {
		return resultNames[r]
	}
	return fmt.Sprintf("ncclResult(%d)", int32(r))
}

// Error makes a Result an error, so that errors.Is(err, nccl.RemoteError)
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
	if e.Code != Success {
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
// errors.Is(err, nccl.RemoteError) picks out one code.
func (e *Error) Is(target error) bool {
	r, ok := target.(Result)
	return ok && e != nil && e.Code != Success && e.Code == r
}

// sentinels are the gocuda sentinels NCCL's codes match.
var sentinels = map[Result]error{
	InvalidArgument: cuda.ErrInvalidValue,
	InvalidUsage:    cuda.ErrInvalidValue,
}

func resultError(op, call string, r Result) error {
	p, _, _ := purego.SyscallN(lib.fn.getErrorString, uintptr(r))
	text := dl.String(p)
	if lib.fn.getLastError != 0 {
		// NCCL keeps the last error per thread (the comm argument is
		// unused): callers make their call and this one on a locked thread.
		if p, _, _ := purego.SyscallN(lib.fn.getLastError, 0); dl.String(p) != "" {
			text += ": " + dl.String(p)
		}
	}
	return &Error{Op: op, Call: call, Code: r, Text: text, Err: sentinels[r]}
}

// errorf returns an error of ours, not NCCL's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

package curand

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/errfmt"
	clib "github.com/gocuda/cuda/internal/lib/curand"
)

// Result is a cuRAND status code (curandStatus_t), named Result as every
// package's status type is. A Result is itself an error value to match
// with errors.Is:
//
//	errors.Is(err, curand.ResultLengthNotMultiple)
type Result int32

// cuRAND's status codes.
const (
	ResultSuccess                 = Result(clib.Success)
	ResultVersionMismatch         = Result(clib.VersionMismatch)
	ResultNotInitialized          = Result(clib.NotInitialized)
	ResultAllocationFailed        = Result(clib.AllocationFailed)
	ResultTypeError               = Result(clib.TypeError)
	ResultOutOfRange              = Result(clib.OutOfRange)
	ResultLengthNotMultiple       = Result(clib.LengthNotMultiple)
	ResultDoublePrecisionRequired = Result(clib.DoublePrecisionRequired)
	ResultLaunchFailure           = Result(clib.LaunchFailure)
	ResultPreexistingFailure      = Result(clib.PreexistingFailure)
	ResultInitializationFailed    = Result(clib.InitializationFailed)
	ResultArchMismatch            = Result(clib.ArchMismatch)
	ResultInternalError           = Result(clib.InternalError)
)

// String returns the code's C name, such as CURAND_STATUS_TYPE_ERROR.
func (s Result) String() string { return clib.Result(s).String() }

// Error makes a Result an error value for errors.Is.
func (s Result) Error() string { return s.String() }

// Error is the error type of this package, of the same shape as cuda.Error
// and cublas.Error.
type Error struct {
	Op     string // the gocuda operation, such as "Normal" or "Generator.Bits"
	Call   string // the library function, such as "curandGenerateNormal"; "" if cuRAND was not called
	Code   Result // the library's status; 0 if it was not called
	Err    error  // the gocuda sentinel this error matches, if any
	Detail string // what was wrong, in words
}

func (e *Error) Error() string {
	if e == nil {
		return "curand: <nil>"
	}
	var code string
	if e.Code != ResultSuccess {
		code = e.Code.String()
	}
	return errfmt.Message("curand", e.Op, e.Call, code, e.Err, e.Detail)
}

// Unwrap returns the gocuda sentinel e matches (cuda.ErrInvalidValue,
// cuda.ErrClosed, cuda.ErrNotSupported, cuda.ErrOutOfMemory), if any.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Is reports whether e carries the library's status target.
func (e *Error) Is(target error) bool {
	s, ok := target.(Result)
	return ok && e != nil && e.Code != ResultSuccess && e.Code == s
}

// sentinels are the gocuda sentinels cuRAND's codes match.
var sentinels = map[Result]error{
	ResultTypeError:               cuda.ErrInvalidValue,
	ResultOutOfRange:              cuda.ErrInvalidValue,
	ResultLengthNotMultiple:       cuda.ErrInvalidValue,
	ResultAllocationFailed:        cuda.ErrOutOfMemory,
	ResultDoublePrecisionRequired: cuda.ErrNotSupported,
	ResultArchMismatch:            cuda.ErrNotSupported,
}

// check turns what cuRAND's function name returned into an error: nil
// for success, cuda.ErrNotSupported where the library opened lacks the
// function.
func check(op, name string, r clib.Result) error {
	switch r {
	case clib.Success:
		return nil
	case clib.Missing:
		return &Error{Op: op, Call: name, Err: cuda.ErrNotSupported, Detail: lib.Lacks(name)}
	}
	s := Result(r)
	return &Error{Op: op, Call: name, Code: s, Err: sentinels[s]}
}

// errorf returns an error of ours, not the library's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

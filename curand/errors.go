package curand

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/errfmt"
)

// Result is a cuRAND status code (curandStatus_t), named Result as every
// package's status type is. A Result is itself an error value to match
// with errors.Is:
//
//	errors.Is(err, curand.StatusLengthNotMultiple)
type Result int32

// cuRAND's status codes.
const (
	StatusSuccess                 Result = 0
	StatusVersionMismatch         Result = 100
	StatusNotInitialized          Result = 101
	StatusAllocationFailed        Result = 102
	StatusTypeError               Result = 103
	StatusOutOfRange              Result = 104
	StatusLengthNotMultiple       Result = 105
	StatusDoublePrecisionRequired Result = 106
	StatusLaunchFailure           Result = 201
	StatusPreexistingFailure      Result = 202
	StatusInitializationFailed    Result = 203
	StatusArchMismatch            Result = 204
	StatusInternalError           Result = 999
)

var resultNames = map[Result]string{
	StatusSuccess: "CURAND_STATUS_SUCCESS", StatusVersionMismatch: "CURAND_STATUS_VERSION_MISMATCH",
	StatusNotInitialized: "CURAND_STATUS_NOT_INITIALIZED", StatusAllocationFailed: "CURAND_STATUS_ALLOCATION_FAILED",
	StatusTypeError: "CURAND_STATUS_TYPE_ERROR", StatusOutOfRange: "CURAND_STATUS_OUT_OF_RANGE",
	StatusLengthNotMultiple: "CURAND_STATUS_LENGTH_NOT_MULTIPLE", StatusDoublePrecisionRequired: "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED",
	StatusLaunchFailure: "CURAND_STATUS_LAUNCH_FAILURE", StatusPreexistingFailure: "CURAND_STATUS_PREEXISTING_FAILURE",
	StatusInitializationFailed: "CURAND_STATUS_INITIALIZATION_FAILED", StatusArchMismatch: "CURAND_STATUS_ARCH_MISMATCH",
	StatusInternalError: "CURAND_STATUS_INTERNAL_ERROR",
}

func (s Result) String() string {
	if name, ok := resultNames[s]; ok {
		return name
	}
	return fmt.Sprintf("curandStatus(%d)", int32(s))
}

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
	if e.Code != StatusSuccess {
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
	return ok && e != nil && e.Code != StatusSuccess && e.Code == s
}

// sentinels are the gocuda sentinels cuRAND's codes match.
var sentinels = map[Result]error{
	StatusTypeError:               cuda.ErrInvalidValue,
	StatusOutOfRange:              cuda.ErrInvalidValue,
	StatusLengthNotMultiple:       cuda.ErrInvalidValue,
	StatusAllocationFailed:        cuda.ErrOutOfMemory,
	StatusDoublePrecisionRequired: cuda.ErrNotSupported,
	StatusArchMismatch:            cuda.ErrNotSupported,
}

// statusErr is the error for a call that returned s, nil for success.
func statusErr(op, call string, s Result) error {
	if s == StatusSuccess {
		return nil
	}
	return &Error{Op: op, Call: call, Code: s, Err: sentinels[s]}
}

// errorf returns an error of ours, not the library's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

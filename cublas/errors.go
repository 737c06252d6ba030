package cublas

import (
	"fmt"

	"github.com/ebitengine/purego"
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
	"github.com/gocuda/cuda/internal/errfmt"
)

// Result is a cuBLAS status code (cublasStatus_t), which cuBLASLt shares,
// named Result as every package's status type is. A Result is itself an
// error value to match with errors.Is:
//
//	errors.Is(err, cublas.StatusNotSupported)
type Result int32

// cuBLAS's status codes.
const (
	StatusSuccess         Result = 0
	StatusNotInitialized  Result = 1
	StatusAllocFailed     Result = 3
	StatusInvalidValue    Result = 7
	StatusArchMismatch    Result = 8
	StatusMappingError    Result = 11
	StatusExecutionFailed Result = 13
	StatusInternalError   Result = 14
	StatusNotSupported    Result = 15
	StatusLicenseError    Result = 16
)

var resultNames = map[Result]string{
	StatusSuccess: "CUBLAS_STATUS_SUCCESS", StatusNotInitialized: "CUBLAS_STATUS_NOT_INITIALIZED",
	StatusAllocFailed: "CUBLAS_STATUS_ALLOC_FAILED", StatusInvalidValue: "CUBLAS_STATUS_INVALID_VALUE",
	StatusArchMismatch: "CUBLAS_STATUS_ARCH_MISMATCH", StatusMappingError: "CUBLAS_STATUS_MAPPING_ERROR",
	StatusExecutionFailed: "CUBLAS_STATUS_EXECUTION_FAILED", StatusInternalError: "CUBLAS_STATUS_INTERNAL_ERROR",
	StatusNotSupported: "CUBLAS_STATUS_NOT_SUPPORTED", StatusLicenseError: "CUBLAS_STATUS_LICENSE_ERROR",
}

func (s Result) String() string {
	if name, ok := resultNames[s]; ok {
		return name
	}
	return fmt.Sprintf("cublasStatus(%d)", int32(s))
}

// Error makes a Result an error value for errors.Is.
func (s Result) Error() string { return s.String() }

// Error is the error type of this package, of the same shape as cuda.Error,
// nccl.Error and nvrtc.Error.
type Error struct {
	Op     string // the gocuda operation, such as "Gemm"
	Call   string // the library function, such as "cublasGemmEx"; "" if cuBLAS was not called
	Code   Result // the library's status; 0 if it was not called
	Text   string // the library's name and text for the code
	Err    error  // the gocuda sentinel this error matches, if any
	Detail string // what was wrong, in words
}

func (e *Error) Error() string {
	if e == nil {
		return "cublas: <nil>"
	}
	var code string
	if e.Code != StatusSuccess {
		code = e.Text
	}
	return errfmt.Message("cublas", e.Op, e.Call, code, e.Err, e.Detail)
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

// sentinels are the gocuda sentinels cuBLAS's codes match.
var sentinels = map[Result]error{
	StatusInvalidValue: cuda.ErrInvalidValue,
	StatusAllocFailed:  cuda.ErrOutOfMemory,
	StatusNotSupported: cuda.ErrNotSupported,
	StatusArchMismatch: cuda.ErrNotSupported,
}

// statusError is the error for a call that returned s; name and text are
// the library's (cublasGetStatusName and cublasGetStatusString, or
// cuBLASLt's), where it has them.
func statusError(op, call string, s Result, nameFn, textFn uintptr) error {
	text := s.String()
	if nameFn != 0 && textFn != 0 {
		n, _, _ := purego.SyscallN(nameFn, uintptr(s))
		t, _, _ := purego.SyscallN(textFn, uintptr(s))
		if name := dl.String(n); name != "" {
			text = dl.String(t) + " (" + name + ")"
		}
	}
	return &Error{Op: op, Call: call, Code: s, Text: text, Err: sentinels[s]}
}

// errorf returns an error of ours, not the library's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

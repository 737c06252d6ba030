package cublas

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
	"github.com/gocuda/cuda/internal/errfmt"
	clib "github.com/gocuda/cuda/internal/lib/cublas"
)

// Result is a cuBLAS status code (cublasStatus_t), which cuBLASLt shares,
// named Result as every package's status type is. A Result is itself an
// error value to match with errors.Is:
//
//	errors.Is(err, cublas.ResultNotSupported)
type Result int32

// cuBLAS's status codes.
const (
	ResultSuccess         = Result(clib.Success)
	ResultNotInitialized  = Result(clib.NotInitialized)
	ResultAllocFailed     = Result(clib.AllocFailed)
	ResultInvalidValue    = Result(clib.InvalidValue)
	ResultArchMismatch    = Result(clib.ArchMismatch)
	ResultMappingError    = Result(clib.MappingError)
	ResultExecutionFailed = Result(clib.ExecutionFailed)
	ResultInternalError   = Result(clib.InternalError)
	ResultNotSupported    = Result(clib.NotSupported)
	ResultLicenseError    = Result(clib.LicenseError)
)

// String returns the code's C name, such as CUBLAS_STATUS_NOT_SUPPORTED.
func (s Result) String() string { return clib.Result(s).String() }

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
	if e.Code != ResultSuccess {
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
	return ok && e != nil && e.Code != ResultSuccess && e.Code == s
}

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

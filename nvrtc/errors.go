package nvrtc

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/errfmt"
	clib "github.com/gocuda/cuda/internal/lib/nvrtc"
)

// Result is an NVRTC result code (nvrtcResult). A Result is itself an error
// value to match with errors.Is:
//
//	errors.Is(err, nvrtc.ResultCompilationError)
type Result int32

// NVRTC's result codes this package names.
const (
	ResultSuccess             = Result(clib.Success)
	ResultOutOfMemory         = Result(clib.OutOfMemory)
	ResultProgramCreationFail = Result(clib.ProgramCreationFail)
	ResultInvalidInput        = Result(clib.InvalidInput)
	ResultInvalidProgram      = Result(clib.InvalidProgram)
	ResultInvalidOption       = Result(clib.InvalidOption)
	ResultCompilationError    = Result(clib.CompilationError)
)

// String returns the code's C name, such as NVRTC_ERROR_COMPILATION.
func (r Result) String() string { return clib.Result(r).String() }

// Error makes a Result an error value for errors.Is.
func (r Result) Error() string { return r.String() }

// Error is the error type of this package, of the same shape as cuda.Error
// and nccl.Error.
type Error struct {
	Op     string // the gocuda operation, such as "Compile"
	Call   string // the NVRTC function, such as "nvrtcCompileProgram"; "" if NVRTC was not called
	Code   Result // NVRTC's result; 0 if NVRTC was not called
	Text   string // NVRTC's text for the code
	Err    error  // the gocuda sentinel this error matches, if any
	Detail string // what was wrong, in words (for a compile error, the log)
}

func (e *Error) Error() string {
	if e == nil {
		return "nvrtc: <nil>"
	}
	var code string
	if e.Code != ResultSuccess {
		code = fmt.Sprintf("%s (%s)", e.Text, e.Code)
	}
	return errfmt.Message("nvrtc", e.Op, e.Call, code, e.Err, e.Detail)
}

// Unwrap returns the gocuda sentinel e matches (cuda.ErrInvalidValue for a
// compile error or bad input, cuda.ErrNotSupported without NVRTC, ...).
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Is reports whether e carries NVRTC's result target.
func (e *Error) Is(target error) bool {
	r, ok := target.(Result)
	return ok && e != nil && e.Code != ResultSuccess && e.Code == r
}

// sentinels are the gocuda sentinels NVRTC's codes match.
var sentinels = map[Result]error{
	ResultOutOfMemory:      cuda.ErrOutOfMemory,
	ResultInvalidInput:     cuda.ErrInvalidValue,
	ResultInvalidOption:    cuda.ErrInvalidValue,
	ResultCompilationError: cuda.ErrInvalidValue,
}

// check turns what NVRTC's function name returned into an error: nil for
// success, cuda.ErrNotSupported where the library opened lacks the
// function, otherwise the code with NVRTC's text for it
// (nvrtcGetErrorString, which every NVRTC has: it is required).
func check(op, name string, r clib.Result) error {
	switch r {
	case clib.Success:
		return nil
	case clib.Missing:
		return &Error{Op: op, Call: name, Err: cuda.ErrNotSupported, Detail: lib.Lacks(name)}
	}
	text, _ := clib.GetErrorString(r)
	code := Result(r)
	return &Error{Op: op, Call: name, Code: code, Text: text, Err: sentinels[code]}
}

// errorf returns an error of ours, not NVRTC's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

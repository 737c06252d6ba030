package cufft

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
	"github.com/gocuda/cuda/internal/errfmt"
	clib "github.com/gocuda/cuda/internal/lib/cufft"
)

// Result is a cuFFT result code (cufftResult). A Result is itself an
// error value to match with errors.Is:
//
//	errors.Is(err, cufft.ResultInvalidSize)
type Result int32

// cuFFT's result codes.
const (
	ResultSuccess        = Result(clib.Success)
	ResultInvalidPlan    = Result(clib.InvalidPlan)
	ResultAllocFailed    = Result(clib.AllocFailed)
	ResultInvalidType    = Result(clib.InvalidType)
	ResultInvalidValue   = Result(clib.InvalidValue)
	ResultInternalError  = Result(clib.InternalError)
	ResultExecFailed     = Result(clib.ExecFailed)
	ResultSetupFailed    = Result(clib.SetupFailed)
	ResultInvalidSize    = Result(clib.InvalidSize)
	ResultUnalignedData  = Result(clib.UnalignedData)
	ResultInvalidDevice  = Result(clib.InvalidDevice)
	ResultNoWorkspace    = Result(clib.NoWorkspace)
	ResultNotImplemented = Result(clib.NotImplemented)
	ResultNotSupported   = Result(clib.NotSupported)
)

// String returns the code's C name, such as CUFFT_INVALID_SIZE.
func (s Result) String() string { return clib.Result(s).String() }

// Error makes a Result an error value for errors.Is.
func (s Result) Error() string { return s.String() }

// Error is the error type of this package, of the same shape as cuda.Error
// and cublas.Error.
type Error struct {
	Op     string // the gocuda operation, such as "Plan.ExecC2C"
	Call   string // the library function, such as "cufftExecC2C"; "" if cuFFT was not called
	Code   Result // the library's result; 0 if it was not called
	Err    error  // the gocuda sentinel this error matches, if any
	Detail string // what was wrong, in words
}

func (e *Error) Error() string {
	if e == nil {
		return "cufft: <nil>"
	}
	var code string
	if e.Code != ResultSuccess {
		code = e.Code.String()
	}
	return errfmt.Message("cufft", e.Op, e.Call, code, e.Err, e.Detail)
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

// sentinels are the gocuda sentinels cuFFT's codes match.
var sentinels = map[Result]error{
	ResultInvalidValue:   cuda.ErrInvalidValue,
	ResultInvalidSize:    cuda.ErrInvalidValue,
	ResultInvalidType:    cuda.ErrInvalidValue,
	ResultUnalignedData:  cuda.ErrInvalidValue,
	ResultAllocFailed:    cuda.ErrOutOfMemory,
	ResultNotSupported:   cuda.ErrNotSupported,
	ResultNotImplemented: cuda.ErrNotSupported,
}

// check turns what cuFFT's function name returned into an error: nil for
// success, cuda.ErrNotSupported where the library opened lacks the
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

// named returns err with op as its operation where err is package cuda's
// (from a call made on the user's behalf: a buffer's, a stream's, a
// context's) or this package's, so that it names the call the user made
// ("Plan.Close", not "DeviceBuffer.Free"). Other errors are returned as
// they are.
func named(op string, err error) error {
	if e, ok := err.(*Error); ok && e.Op != op {
		c := *e
		c.Op = op
		return &c
	}
	return calledas.Op(op, err)
}

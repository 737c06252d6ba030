package nvrtc

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/nvrtc"
)

// sentinels are the gocuda sentinels NVRTC's codes match.
var sentinels = map[Result]error{
	ResultOutOfMemory:      cuda.ErrOutOfMemory,
	ResultInvalidInput:     cuda.ErrInvalidValue,
	ResultInvalidOption:    cuda.ErrInvalidValue,
	ResultCompilationError: cuda.ErrInvalidValue,
	// What a program or a name expression NVRTC was given was wrong:
	// the caller's input, as Compile's other refusals.
	ResultInvalidProgram:                    cuda.ErrInvalidValue,
	ResultNameExpressionNotValid:            cuda.ErrInvalidValue,
	ResultNoNameExpressionsAfterCompilation: cuda.ErrInvalidValue,
	ResultNoLoweredNamesBeforeCompilation:   cuda.ErrInvalidValue,
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

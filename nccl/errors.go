package nccl

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/nccl"
)

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

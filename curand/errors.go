package curand

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
)

// sentinels are the gocuda sentinels cuRAND's codes match.
var sentinels = map[Result]error{
	ResultTypeError:               cuda.ErrInvalidValue,
	ResultOutOfRange:              cuda.ErrInvalidValue,
	ResultLengthNotMultiple:       cuda.ErrInvalidValue,
	ResultAllocationFailed:        cuda.ErrOutOfMemory,
	ResultDoublePrecisionRequired: cuda.ErrNotSupported,
	ResultArchMismatch:            cuda.ErrNotSupported,
}

// errorf returns an error of ours, not the library's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

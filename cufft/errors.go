package cufft

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
	"github.com/gocuda/cuda/internal/closed"
)

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

// errorf returns an error of ours, not the library's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

// closedArg returns op's error for b, named name, where it is closed (see
// package closed), else nil (for a nil b too): an overlap check asks it of
// the buffers it found overlapping, before it reports the overlap.
func closedArg[T any](op, name string, b *cuda.DeviceBuffer[T]) error {
	if closed.Buffer(b) {
		return &Error{Op: op, Err: cuda.ErrClosed, Detail: name + " is closed (freed, or its context closed)"}
	}
	return nil
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

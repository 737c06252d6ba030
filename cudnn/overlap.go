package cudnn

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/closed"
)

// buffer is what the overlap check reads of a DeviceBuffer of any type:
// its span, and, once it shares memory with another, whether it is
// closed.
type buffer interface {
	Ptr() cuda.DevicePtr
	ByteSize() int
	Context() *cuda.Context
	closed.Any
	// memory is the buffer as the memory a call holds, nil for an
	// optional buffer left out.
	memory() cuda.Memory
}

// typed is a DeviceBuffer of T as a buffer (nil for an optional one left
// out): of one pointer, it goes into the interface without allocating.
type typed[T any] struct{ *cuda.DeviceBuffer[T] }

func (b typed[T]) Closed() bool { return closed.Buffer(b.DeviceBuffer) }

func (b typed[T]) memory() cuda.Memory {
	if b.DeviceBuffer == nil {
		return nil
	}
	return b.DeviceBuffer
}

// named is a call's buffer by the name its signature gives it; a nil
// buffer (an optional one left out) spans nothing. Handle.do takes a
// call's buffers so.
type named struct {
	name string
	b    buffer
}

// buf names b for aliased.
func buf[T any](name string, b *cuda.DeviceBuffer[T]) named { return named{name, typed[T]{b}} }

// tensorBuf names a tensor's buffer for aliased.
func tensorBuf[T Element](name string, t Tensor[T]) named { return buf(name+".Data", t.Data) }

// shares reports whether a and b have a byte in common.
func (a named) shares(b named) bool {
	an, bn := uint64(a.b.ByteSize()), uint64(b.b.ByteSize())
	if an == 0 || bn == 0 {
		return false
	}
	alo, blo := uint64(a.b.Ptr()), uint64(b.b.Ptr())
	return alo < blo+bn && blo < alo+an
}

// aliased returns the error for an output of outs that shares memory
// with another output or with an input of ins: cuDNN reads its inputs
// while it writes its outputs, and runs no operation in place (the
// result would depend on the order of its threads), so the package
// refuses what it would compute wrong, on a GPU as on the fake.
func aliased(op string, outs []named, ins ...named) error {
	for i, o := range outs {
		for _, p := range outs[i+1:] {
			if o.shares(p) {
				return sharedError(op, o, p, "%s and %s share memory: cuDNN writes both; give each its own buffer", o.name, p.name)
			}
		}
		for _, in := range ins {
			if o.shares(in) {
				return sharedError(op, o, in, "%s shares memory with %s: cuDNN runs no operation in place, and its result would be undefined; write %s elsewhere", o.name, in.name, o.name)
			}
		}
	}
	return nil
}

// sharedError returns op's error for a and b, found sharing memory:
// cuda.ErrClosed where either is closed (see package closed), else
// cuda.ErrInvalidValue of format and args.
func sharedError(op string, a, b named, format string, args ...any) error {
	for _, x := range [2]named{a, b} {
		if x.b.Closed() {
			return &Error{Op: op, Err: cuda.ErrClosed, Detail: x.name + " is closed (freed, or its context closed)"}
		}
	}
	return errorf(op, cuda.ErrInvalidValue, format, args...)
}

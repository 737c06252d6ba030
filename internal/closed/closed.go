// Package closed tells gocuda's other packages whether a buffer of package
// cuda is closed (freed, or its context closed), for their overlap checks:
// a freed buffer's address may be another buffer's now, and a call given
// both must fail with cuda.ErrClosed, as it would with the addresses
// apart, not as an overlap. The checks ask only once they found two
// buffers sharing memory: the work's queueing checks every buffer anyway.
package closed

import (
	"errors"

	cuda "github.com/gocuda/cuda"
)

// Buffer reports whether b is closed: a Slice of it holds it, failing
// with cuda.ErrClosed where it cannot. A nil or zero b is not closed.
func Buffer[T any](b *cuda.DeviceBuffer[T]) bool {
	_, err := b.Slice(0, 0)
	return errors.Is(err, cuda.ErrClosed)
}

// Any is a buffer of any element type, as an overlap check keeps it.
type Any interface{ Closed() bool }

// Of is b as an Any: of one pointer, it goes into the interface without
// allocating.
type Of[T any] struct{ B *cuda.DeviceBuffer[T] }

// Closed reports whether the buffer is closed (Buffer).
func (o Of[T]) Closed() bool { return Buffer(o.B) }

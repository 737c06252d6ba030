package nn

import (
	"fmt"

	"github.com/gocuda/cuda/internal/errfmt"
)

// Error is the error type of this package, of the shape of nd.Error. Its
// Err is the gocuda sentinel it matches (cuda.ErrInvalidValue for a bad
// shape or argument, cuda.ErrClosed for a freed array,
// cuda.ErrNotSupported for what the package does not do) or the error of
// the call beneath (an nd.Error, a compute.Error, a cuda.Error), which
// errors.Is and errors.As reach.
type Error struct {
	Op     string // the operation, such as "LayerNorm"
	Err    error  // the sentinel, or the cause
	Detail string // what was wrong, in words
}

func (e *Error) Error() string {
	if e == nil {
		return "nn: <nil>"
	}
	return errfmt.Message("nn", e.Op, "", "", e.Err, e.Detail)
}

// Unwrap returns the sentinel or cause e matches.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

// wrap names op on the error of a call beneath; nil stays nil.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Err: err}
}

package compute

import (
	"fmt"

	"github.com/gocuda/cuda/internal/errfmt"
)

// Error is the error type of this package, of the shape of cuda.Error. Its
// Err is the gocuda sentinel it matches (cuda.ErrInvalidValue for bad
// input) or the error of the call beneath (a cuda.Error, an nvrtc.Error
// carrying the compiler's log), which errors.Is and errors.As reach.
type Error struct {
	Op     string // the operation, such as "Add" or "Elementwise.Launch"
	Err    error  // the sentinel, or the cause
	Detail string // what was wrong, in words
}

func (e *Error) Error() string {
	if e == nil {
		return "compute: <nil>"
	}
	return errfmt.Message("compute", e.Op, "", "", e.Err, e.Detail)
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

// wrap names op on an error of a call beneath; nil stays nil.
func wrap(op string, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Err: err, Detail: fmt.Sprintf(format, args...)}
}

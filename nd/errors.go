package nd

import (
	"errors"
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/errfmt"
	"github.com/gocuda/cuda/internal/ndshape"
)

// Error is the error type of this package, of the shape of cuda.Error and
// compute.Error. Its Err is the gocuda sentinel it matches
// (cuda.ErrInvalidValue for a bad shape, axis or argument, cuda.ErrClosed
// for a freed array, cuda.ErrNotSupported for what the package does not
// do) or the error of the call beneath (a cuda.Error, a compute.Error, a
// cublas.Error), which errors.Is and errors.As reach.
type Error struct {
	Op     string // the operation, such as "Add" or "Array.Reshape"
	Err    error  // the sentinel, or the cause
	Detail string // what was wrong, in words
}

func (e *Error) Error() string {
	if e == nil {
		return "nd: <nil>"
	}
	return errfmt.Message("nd", e.Op, "", "", e.Err, e.Detail)
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

// wrap names op on the error of a call beneath; nil stays nil. A shape
// error of the arithmetic beneath becomes cuda.ErrInvalidValue's, with
// its words.
func wrap(op string, err error) error {
	if err == nil {
		return nil // before se, which escapes: no allocation on the way that succeeds
	}
	var se *ndshape.Error
	if errors.As(err, &se) {
		return &Error{Op: op, Err: cuda.ErrInvalidValue, Detail: se.Msg}
	}
	return &Error{Op: op, Err: err}
}

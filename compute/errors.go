package compute

import (
	"errors"
	"fmt"
	cuda "github.com/gocuda/cuda"
	"strings"

	"github.com/gocuda/cuda/internal/errfmt"
	"github.com/gocuda/cuda/nvrtc"
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

// compilerMissing is NVRTC's absence, told in a line of compute's own
// rather than as nvrtc's error inside compute's ("compute: Add: nvrtc:
// Version: ..."): errors.Is and errors.As still reach nvrtc's error, and
// its sentinel, cuda.ErrNotSupported.
type compilerMissing struct{ err error }

func (m compilerMissing) Error() string {
	why := m.err.Error()
	var le *cuda.LibraryError
	var ne *nvrtc.Error
	switch {
	case errors.As(m.err, &le):
		why = le.Error()
	case errors.As(m.err, &ne) && ne.Detail != "":
		why = ne.Detail
	}
	if strings.HasPrefix(why, nvrtc.EnvLibrary+"=") {
		return why // the variable chose the library: the message says so, with its value
	}
	return "NVRTC is not installed: " + strings.TrimPrefix(why, "NVRTC not found: ")
}

func (m compilerMissing) Unwrap() error { return m.err }

// Package calledas names package cuda's errors after the call the user
// made: gocuda's other packages call package cuda on the user's behalf (a
// buffer's Free inside Handle.Close, Stream.Do inside Gemm), and an error
// that says "Stream.Do" names a call the user never wrote.
package calledas

import (
	"strings"

	cuda "github.com/gocuda/cuda"
)

// Op returns err with op as its operation where err is a *cuda.Error of
// another; other errors, and nil, are returned as they are.
func Op(op string, err error) error {
	e, ok := err.(*cuda.Error)
	if !ok || e.Op == op {
		return err
	}
	c := *e
	c.Op = op
	return &c
}

// Unfreed is the error of a Close (op) that released a library's objects
// but could not free the memory called what: err, the free's, named as op
// and saying what to do, in place of the advice the buffer's own Free
// gives.
func Unfreed(op, what string, err error) error {
	e, ok := err.(*cuda.Error)
	if !ok {
		return err
	}
	c := *e
	c.Op = op
	detail := strings.TrimSuffix(strings.TrimSuffix(c.Detail, "the device buffer is still open: close it again, or close its context"), "; ")
	if detail != "" {
		detail += "; "
	}
	c.Detail = detail + what + " is not freed: call Close again"
	return &c
}

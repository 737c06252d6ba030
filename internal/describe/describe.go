// Package describe writes what gocuda's objects print (their String
// methods, in every package): the type, what it is, its device and its
// state, in one shape, from what gocuda knows and without a call to the
// driver or a library.
package describe

import (
	"fmt"
	"strings"

	"github.com/gocuda/cuda/internal/lifetime"
)

// Object writes kind{parts..., state}: the state ("closed", a zero value's
// "zero") is left out for an object in use.
func Object(kind string, st lifetime.Status, parts ...string) string {
	switch st {
	case lifetime.Zero:
		parts = append(parts, "zero")
	case lifetime.Closed:
		parts = append(parts, "closed")
	}
	return kind + "{" + strings.Join(parts, ", ") + "}"
}

// Bytes is n bytes in words: "1 byte", "40 bytes", "4.0 KiB", "1.5 GiB".
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n == 1:
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

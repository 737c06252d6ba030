package cuda

import (
	"time"

	"github.com/gocuda/cuda/internal/driver"
)

// SetCopySpin sets how long idle copy workers spin, for benchmarks that
// compare; it returns the previous value.
func SetCopySpin(d time.Duration) time.Duration {
	old := copySpin
	copySpin = d
	return old
}

// IsCurrent reports whether c is the current context of the calling
// goroutine's OS thread; call it with the thread locked.
func IsCurrent(c *Context) bool {
	var cur driver.Context
	return driver.CtxGetCurrent(&cur) == driver.Success && cur == c.handle
}

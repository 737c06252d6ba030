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

// QueryRaw calls cuStreamQuery on s directly, with none of Query's locks
// and checks: the driver call and the crossing alone. With bound, the call
// binds s's context itself (the cgo shim does; purego ignores it).
func QueryRaw(s *Stream, bound bool) int {
	ctx := driver.Context(0)
	if bound {
		ctx = s.ctx.handle
	}
	return int(driver.StreamQuery(ctx, s.handle))
}

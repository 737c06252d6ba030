package cuda

import "time"

// SetCopySpin sets how long idle copy workers spin, for benchmarks that
// compare; it returns the previous value.
func SetCopySpin(d time.Duration) time.Duration {
	old := copySpin
	copySpin = d
	return old
}

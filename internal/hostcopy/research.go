//go:build gocuda_research

package hostcopy

import "runtime"

// Tuning hooks for the research benchmarks (built with -tags
// gocuda_research: scripts/gpu-build.sh), here and in package cuda, which
// sweep what ordinary builds keep fixed. Call them with no copy under way.

// SetMinPart sets the least part a copy worker is given, and returns the
// previous one.
func SetMinPart(n int) int {
	old := minPart
	minPart = n
	return old
}

// SetHold sets whether Hold keeps the copy workers spinning, and returns
// the previous setting.
func SetHold(on bool) bool {
	old := hold
	hold = on
	return old
}

// SetFutexParking sets whether copy workers that block park in the kernel
// (a futex, woken all at once) rather than on channels (woken by the
// scheduler one after another), and returns the previous setting. Only on
// Linux.
func SetFutexParking(on bool) bool {
	if on = on && runtime.GOOS == "linux"; on {
		pool.futexUsed.Store(true)
	}
	return futexParking.Swap(on)
}

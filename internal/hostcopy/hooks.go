package hostcopy

import "time"

// The hooks below are for the tests of the staging pipeline over this
// package, which cannot reach its test-only exports; the library calls
// neither.

// SetDelay makes every part the copy workers copy take d longer, so that a
// test sees a copy still running; it returns the previous delay.
func SetDelay(d time.Duration) time.Duration {
	return time.Duration(delay.Swap(int64(d)))
}

// Workers returns the number of copy workers, how many of them are
// blocked waiting for work, and how many wake-up calls blocked ones have
// been sent so far.
func Workers() (n, parked int, wakes int64) {
	pool.once.Do(start)
	return pool.n, int(pool.parked.Load()), pool.wakes.Load()
}

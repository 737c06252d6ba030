//go:build race

package cuda_test

// raceEnabled: the race detector allocates, and sync.Pool drops items at random under it.
const raceEnabled = true

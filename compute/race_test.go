//go:build race

package compute_test

// raceEnabled: the sweeps of kernel logic (staged_sweep_test.go) run
// without the race detector, which watches Go's memory, not a kernel's.
const raceEnabled = true

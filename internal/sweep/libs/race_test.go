//go:build race

package libs_test

// raceEnabled: under the race detector the sweep fails the first call of
// each function only.
const raceEnabled = true

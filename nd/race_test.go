//go:build race

package nd_test

// raceEnabled: under the race detector the fault sweep fails the first
// call of each function only, with one code (internal/sweep's Config.Race).
const raceEnabled = true

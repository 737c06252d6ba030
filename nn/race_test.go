//go:build race

package nn_test

// nnRace: under the race detector the fault sweep fails the first call of
// each function only, with one code (internal/sweep's Config.Race).
const nnRace = true

//go:build !race

package cuda_test

const raceEnabled = false

//go:build !race

package nd_test

const raceEnabled = false

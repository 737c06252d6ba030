//go:build !race

package cusparse_test

const raceEnabled = false

//go:build race

package cusparse_test

// raceEnabled: the race detector is on, and TestOperations checks the
// small shapes with two of the type combinations (its checks are the same
// at every size and type, and the detector slows the fake tenfold).
const raceEnabled = true

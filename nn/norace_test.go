//go:build !race

package nn_test

const nnRace = false

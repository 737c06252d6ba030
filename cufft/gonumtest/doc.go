// Package gonumtest checks package cufft against an independent CPU
// reference, gonum's dsp/fourier, at power-of-two and awkward sizes. It is
// a module of its own so that the library's module requires nothing but
// purego: gonum is needed by these tests alone.
package gonumtest

// Package gonumtest checks package cublas against an independent CPU
// reference, gonum's BLAS, at random shapes (odd ones included) in every
// layout. It is a module of its own so that the library's module requires
// nothing but purego: gonum is needed by these tests alone.
package gonumtest

// Package kernelhook lets the tests put a compiler in NVRTC's place for
// package compute's generated kernels, for a whole test binary: where the
// tests run against the fake driver and a C++ compiler is found,
// internal/cudatest sets Compile to internal/hostcc's, whose images the
// fake runs on the CPU, so that every package's tests (compute's, nd's,
// the fault sweeps') run generated kernels without a GPU. Nothing else
// sets it; unset, compute compiles with NVRTC.
package kernelhook

// Compile compiles a generated CUDA C source, named name (as NVRTC names
// a program, "add_float32.cu"), to an image the driver loads; its error
// has NVRTC's shape (an *nvrtc.Error carrying the compiler's log). Set
// before the first kernel is compiled and not changed while kernels are
// compiled, except by a test that restores it.
var Compile func(source, name string) ([]byte, error)

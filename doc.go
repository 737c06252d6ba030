// Package cuda gives Go programs NVIDIA GPUs through the CUDA driver API,
// with nothing but the Go toolchain to build: the driver library
// (libcuda.so.1, installed with every NVIDIA driver) is opened at run time,
// so there is no cgo requirement, no CUDA toolkit and no cuda.h.
// GOCUDA_LIBCUDA names another driver library file.
//
// # Contexts and threads
//
// CUDA keeps a current context per OS thread, and goroutines move between
// threads. Every object (Stream, Event, and the memory types) remembers the
// Context it was made in, and each of its methods makes that context current
// on a locked OS thread for the duration of the driver call. Callers never
// call runtime.LockOSThread, and objects may be shared between goroutines.
//
// # Errors
//
// Every error wraps one of the sentinel errors (ErrInvalidValue,
// ErrOutOfMemory, ErrClosed, ...) where one applies, whether the driver
// reported it or gocuda caught bad input before calling the driver; a
// driver error also matches its Result with errors.Is, and says which call
// failed with the driver's name and text for the code.
//
// # Releasing resources
//
// Close (or Free) each object when done; closing twice is a no-op. A cleanup
// backstop releases what was forgotten once the garbage collector finds it
// unreachable, but the GPU's memory is not the garbage collector's to
// measure: do not rely on it.
package cuda

// Package cuda gives Go programs NVIDIA GPUs through the CUDA driver API,
// with nothing but the Go toolchain to build: the driver library
// (libcuda.so.1, installed with every NVIDIA driver) is opened at run time,
// so there is no cgo requirement, no CUDA toolkit and no cuda.h.
// GOCUDA_LIBCUDA names another driver library file.
//
// # Contexts and threads
//
// CUDA keeps a current context per OS thread, and goroutines move between
// threads. Every object (Stream, Event, Module, the memory types) remembers
// the Context it was made in, and every driver call made for it runs with
// that context current on the thread that makes the call: bound in the same
// C call when built with cgo, or, with CGO_ENABLED=0 (purego), on an OS
// thread locked for the operation. Callers never call runtime.LockOSThread,
// and objects may be shared between goroutines (StagingBuffer excepted: see
// its docs).
//
// # Errors
//
// Every error wraps one of the sentinel errors (ErrInvalidValue,
// ErrOutOfMemory, ErrClosed, ...) where one applies, whether the driver
// reported it or gocuda caught bad input before calling the driver; a
// driver error also matches its Result with errors.Is, and says which call
// failed with the driver's name and text for the code.
//
// # Moving data between host and device
//
// The device reads and writes page-locked (pinned) host memory directly, at
// the link's speed: about 55 GB/s each way on the H200 test machine (PCIe
// Gen5 x16). Ordinary Go memory the driver first copies into pinned memory
// of its own, a piece at a time; that ran at 7-15 GB/s there. Pinning memory
// is slow, about a millisecond per MiB, so pinned memory is for reuse. In
// order of speed:
//
//   - Make or use the data in pinned memory in place: StagingBuffer's
//     UploadWith and DownloadInto, or a PinnedBuffer. 1.6-3.6x the plain
//     copy at 64-256 KiB, 3.5-7x from 1 MiB up, 53-55 GB/s from 16 MiB up.
//   - Register a slice you transfer again and again (Register): it then
//     moves at the link's speed too, and registering 256 MiB took 10 ms.
//   - Move ordinary slices with StagingBuffer's Upload and Download: below
//     2 MiB they take the driver's own path (on the H200 machine staging
//     them whole won nothing once the data was not in the CPU's caches);
//     from 2 MiB up they are pipelined through pinned slots by several
//     goroutines: 1.2-2.8x the plain copy at 4.7-16 MiB, 2.9-8x from
//     256 MiB up, 49-53 GB/s uploading and 42-47 GB/s downloading there.
//     Calibrate finds the thresholds for the machine in hand.
//   - DeviceBuffer's CopyFromHost and CopyToHost: the driver's path.
//
// docs/performance.md in the repository has every number, with the
// programs that measured them.
//
// # Kernels
//
// Context.LoadModule loads PTX, a cubin or a fatbin; Function.Launch queues a
// kernel with typed Go arguments. Package nvrtc compiles CUDA C++ at run
// time.
//
// # Releasing resources
//
// Close (or Free) each object when done; closing twice is a no-op. A cleanup
// backstop releases what was forgotten once the garbage collector finds it
// unreachable, but the GPU's memory is not the garbage collector's to
// measure: do not rely on it.
package cuda

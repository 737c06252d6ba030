// Package cuda gives Go programs NVIDIA GPUs through the CUDA driver API,
// with nothing but the Go toolchain to build: the driver library
// (libcuda.so.1, installed with every NVIDIA driver) is opened at run time,
// so there is no cgo requirement, no CUDA toolkit and no cuda.h.
// GOCUDA_LIBCUDA names another driver library file.
//
// # Starting
//
// Open(0) returns device 0's context and a stream in it: the one call a
// program needs before allocating, copying and launching (see Example).
// Buffers may be empty: Alloc(ctx, 0), FromHost of an empty slice and a
// launch over zero elements are valid and do nothing, as empty arrays do in
// CuPy and PyTorch.
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
// the link's speed. Ordinary Go memory the driver first copies into pinned
// memory of its own, a piece at a time, at a fraction of that. Pinning memory
// is slow, about a millisecond per MiB, so pinned memory is for reuse. In
// order of speed:
//
//   - Make or use the data in pinned memory in place: StagingBuffer's
//     UploadWith and DownloadInto, or a PinnedBuffer: faster than the plain
//     copy from 64 KiB, at the link's speed from a few MiB.
//   - Register a slice you transfer again and again (Register): it then
//     moves at the link's speed too (registering costs about as much as
//     pinning).
//   - Move ordinary slices with StagingBuffer's Upload and Download: small
//     ones take the driver's own path (on the H200 machine staging them
//     whole won nothing once the data was not in the CPU's caches); from
//     128 KiB both ways they are pipelined through pinned memory by several
//     goroutines (below 1 MiB only while those are awake from a transfer
//     just before), faster than the plain copy from 150 KiB and near the
//     link's speed from 256 MiB. Calibrate finds the thresholds for the
//     machine in hand.
//   - DeviceBuffer's CopyFromHost and CopyToHost: the driver's path.
//
// docs/performance.md in the repository has every number, with the
// programs that measured them.
//
// # Loading data
//
// Data that comes from a file or a stream goes to the device without a Go
// slice between:
//
//   - A file, or anything that reads at offsets (an *os.File, an
//     *io.SectionReader): ReadFrom reads it straight into pinned slots, 16
//     goroutines at once, while the DMA engine moves the slots already
//     read, several times faster than PyTorch's safetensors
//     load_file(device="cuda"); package safetensors does that for
//     .safetensors files, checking their header first.
//   - Any other io.Reader (a pipe, a network connection): ReadFrom reads it
//     chunk after chunk into four slots of 1 MiB on a goroutine of its own,
//     which queues each chunk's DMA as soon as it is read: a pipe or a
//     socket moves at nearly its speed into a Go buffer.
//   - The way back: WriteTo, to any io.Writer. DeviceBuffer implements
//     io.ReaderFrom and io.WriterTo with the staging buffer its context
//     keeps for them (its page-locked memory reused from call to call, until
//     Context.Close) and a stream made for the call; the functions take
//     yours (IOConfig), and a progress callback.
//   - Another process's device memory (one running CuPy or PyTorch, or
//     gocuda): no copy at all. DeviceBuffer.IPCHandle exports a buffer as
//     a handle that travels as text, OpenIPC opens one, and
//     Event.IPCHandle and OpenIPCEvent order the two processes' work.
//
// # Allocating device memory
//
// Which allocation for which use:
//
//   - Alloc (cuMemAlloc) for memory that lives long: model weights, buffers
//     made once. It costs tens to hundreds of microseconds, and Free waits
//     for the device.
//   - AllocAsync for memory a loop makes and drops at every step: the
//     allocation and its Free are steps of a stream, served from the
//     device's memory pool in a few microseconds, and Free does not wait;
//     a size the loop repeats is served from memory the stream kept at its
//     last free, with no driver call (see AllocAsync for when the stream
//     gives it back). Order other streams after it with an event.
//   - AllocFromPool with a MemPool of your own (Context.NewMemPool) to keep
//     memory across synchronizations (SetReleaseThreshold), give it back on
//     demand (TrimTo), watch it (Stats), or share it with another device
//     (SetAccess).
//   - AllocManaged for memory the host and the device both use, as a slice
//     and as a DeviceBuffer, its pages moving between them on demand or
//     ahead of use (ManagedBuffer.Prefetch).
//   - NewGrowableBuffer for memory that grows without moving: addresses
//     reserved once, memory mapped behind them as it grows.
//
// Context.MemoryStats says what the context's buffers hold, by kind, now
// and at the peak.
//
// # Graphs
//
// Stream.Capture records the work queued on a stream into a Graph;
// Graph.Instantiate makes a GraphExec to launch again and again, at about a
// seventh of the cost of queuing the same kernels one by one;
// GraphExec.Update takes a newer capture of the
// same shape in place, or instantiates anew when the shape changed. A
// capture refuses what it cannot replay safely: copies of host memory,
// staging transfers, waiting for the stream. While a graph or an instance
// uses a buffer or a module, neither can be freed.
//
// # Kernels
//
// Context.LoadModule loads PTX, a cubin or a fatbin; Function.Launch queues a
// kernel with Go arguments, checked as far as the driver and the PTX can
// describe the kernel (see Function.Launch); LaunchConfigFor sizes a 1-D
// launch over n elements, and Function.SuggestBlockSize the block that
// keeps the most of a kernel's threads resident (the occupancy calls).
// LaunchConfig's Cooperative, Cluster and Priority ask for a launch with
// attributes: a grid whose blocks all run at once, thread block clusters,
// a priority of its own. LoadLibrary loads code once for every context of
// the process. Package nvrtc compiles CUDA C++ at run time.
//
// # Releasing resources
//
// Close (or Free) each object when done; closing twice is a no-op. Close
// waits for the calls in flight on the object; calls made while it runs
// return ErrClosed at once, so a gocuda call never waits on a Close (not
// even one made inside Context.Do while the context is being closed). If
// the driver refuses to release the resource, Close returns its error, the
// object stays open, owned and usable, and Close may be called again. A
// cleanup backstop releases what was forgotten once the garbage collector
// finds it unreachable, but the GPU's memory is not the garbage collector's
// to measure: do not rely on it.
//
// The zero value of every exported type, and a nil pointer to it, is safe:
// StagingBuffer's is ready to use, a zero number or configuration is that
// value, and the methods of the others (Context, Stream, Event, Module,
// Function, DeviceBuffer, PinnedBuffer, Registered, Device) return an error
// wrapping ErrInvalidValue without calling the driver.
//
// # Ordering
//
// Work queued on one stream runs in order. A synchronous call on a buffer
// (CopyToHost, CopyFromHost, CopyFromDevice, the Memset methods without a
// stream, CopyPeer, and ReadFrom and WriteTo without a stream of the
// caller's) sees all work queued on that buffer before it through gocuda, on
// any stream: a kernel launched on s, then CopyToHost, returns the kernel's
// result without a Synchronize, as in CuPy and PyTorch (CUDA's own rule for
// non-blocking streams would not wait). It waits for the streams that used
// the buffer, kernels among them; work queued on another library's stream,
// or given the buffer as a bare DevicePtr, is not seen: synchronize that
// stream first. The asynchronous calls follow CUDA's rule: they are ordered
// after the work of their own stream only.
//
// The synchronous calls that may
// return before the device is done (CopyFromHost from ordinary memory,
// CopyFromDevice, the Memset methods without a stream) are ordered before
// everything gocuda queues afterwards in the context, on any stream and
// from any goroutine: each is counted once the driver call returned, and
// the next work queued waits until a synchronize of the legacy stream has
// seen it done. Another library's stream is not ordered after them:
// synchronize the context first. Go memory an asynchronous copy reads or
// writes stays pinned until a synchronize of its stream succeeds (or the
// stream is closed), and no failed transfer of a StagingBuffer returns
// while the device may still copy into or out of memory gocuda reuses.
package cuda

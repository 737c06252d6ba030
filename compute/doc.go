// Package compute computes on device buffers from Go, without writing a
// whole CUDA C kernel: elementwise and reduction kernels declared from Go
// (as CuPy's ElementwiseKernel, with its raw parameters for gathers,
// scatters and stencils, and ReductionKernel), kernels written whole in
// CUDA C (RawKernel, as CuPy's), and a standard set of
// operations built on them: Fill, Iota, Cast, Add, Sub, Mul, Div, Max, Min
// (of two buffers, or a buffer and a scalar), Axpby, Abs, Neg, Relu, Exp,
// Log, Sqrt, Tanh, Sigmoid, Gelu, Where, ArgMax, ArgMin, Sum, MaxOf, MinOf, Mean (of a
// buffer, or per row or column of a matrix: SumAxis, ...), Softmax and
// LogSoftmax of rows, Transpose.
//
// Every operation is queued on a stream, its last argument, like a kernel
// launch: compute.Add(dst, a, b, s). Its result is there for the work
// queued after it on that stream, and for a synchronous copy of the buffer
// (CopyToHost waits for it). The element types are cuda.Number's (and
// cuda.AnyFloat's for the functions of floats), types defined on them
// too: a buffer of type Celsius float32 is a float32 buffer to every
// operation. Arguments are checked before anything is compiled or
// launched: a nil, zero, freed or other context's buffer, or a bad length
// or shape, is an error that names the operation and the argument as its
// signature names them ("compute: Sum: invalid value: dst has 3 elements,
// want 1"), wrapping cuda.ErrInvalidValue (cuda.ErrClosed for a freed
// buffer).
//
// Every operation can be captured into a CUDA graph (Stream.Capture) once
// its kernel is compiled: a capture does not compile, so call the
// operation once before capturing it. (A reduction that takes several
// blocks for one result keeps their partial results in the stream's
// scratch memory outside a capture, and in a capture allocates them in
// stream order, which the capture records as nodes of the graph: a replay
// may run beside the stream's later work. Both give the same bits.)
//
// Generated kernels read and write 16 bytes of a buffer at a time where
// every buffer of the call is aligned for it (buffers from cuda.Alloc
// are; a view from Slice may not be, and the call then takes every
// element one by one).
//
// Reductions are deterministic: the same input on the same device gives the
// same bits, run after run. They fold in a fixed tree that depends on the
// shape only (an atomic counter finds the block that folds the others'
// results, and adds nothing up); integers are summed in 64 bits and
// Float16 and BFloat16 in float32.
//
// # The kernel cache
//
// A kernel is generated from its declaration and the pattern of its
// arguments (which are buffers, which scalars), compiled by NVRTC for the
// device's architecture on its first use, and loaded once per context,
// until the context's Close (or Release, to give the memory back before).
// The compiled image is kept on disk, under os.UserCacheDir()'s
// gocuda/kernels (GOCUDA_KERNEL_CACHE names another folder, or "off"),
// keyed by a SHA-256 of the generated source, the compiler's options, the
// target architecture and NVRTC's version: a warm cache's first call loads
// the image without compiling. An entry holds the SHA-256 of the image and
// its key, and is written to a temporary file renamed into place: a
// damaged, truncated or foreign file is not trusted but compiled anew and
// rewritten, and processes writing the same entry at once each leave it
// whole.
//
// The package needs NVRTC (see package nvrtc) to compile; without it every
// operation on a non-empty buffer fails with an error wrapping nvrtc's,
// and so cuda.ErrNotSupported, that says so ("compute: Add: NVRTC is not
// installed: ...").
package compute

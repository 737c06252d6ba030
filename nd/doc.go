// Package nd is n-dimensional arrays on the GPU, as NumPy's and CuPy's
// ndarray: an Array[T] has a shape, strides in elements (0 for a
// broadcast axis, negative for a reversed one) and an offset into device
// memory, and operations on arrays allocate their results, so that array
// code in Go reads as it does in CuPy:
//
//	x, _ := nd.FromSlice(s, data, 4, 3)     // a 4×3 matrix on stream s
//	bias, _ := nd.FromSlice(s, b, 3)        // one value per column
//	y, _ := nd.Add(x, bias)                 // bias added to every row
//	z, _ := nd.Exp(y.T())                   // a transposed view, no copy
//	fmt.Println(z)                          // printed as NumPy prints
//
// # Arrays and views
//
// Constructors (Empty, Zeros, Ones, Full, FromSlice, FromBuffer, Arange,
// Linspace, Eye) allocate on a stream, in stream order. Reshape, Permute,
// T, Slice, Index, At, BroadcastTo, Expand, Squeeze and Unsqueeze return
// views of the same memory (Reshape copies where the strides allow no
// view, as NumPy's); writing through a view writes its base. Free releases
// an array's own memory and closes its views.
//
// # Operations
//
// Elementwise operations (Add, Mul, Pow, Maximum, comparisons giving
// masks of Bool, Where, Clip, Exp, Gelu, Cast, ...) take arrays of any
// shapes and strides, broadcast together by NumPy's rules, with Scalar for
// a number; each has an Into form that writes into an array given (a
// view, or an array that shares memory with the inputs, which are then
// read as if from a copy, as NumPy's out=; so do the Into forms of the
// reductions, the operations along an axis, Take, Concat and Matmul; a
// broadcast view, which repeats elements, is read-only). Each
// is one CUDA C expression, compiled by package compute into a kernel for
// the pattern of its operands: where every operand is contiguous the
// kernel reads and writes 16 bytes at a time, as compute's own operations
// do; otherwise it computes each operand's offset from the element's
// index, over the fewest axes the operands' layouts merge into; where an
// input runs along another axis than the output (a transposed view into a
// row-major array, Contiguous of a transpose), tiles of it pass through
// shared memory, so that both are read and written in order. A result
// is laid out in the memory order of its first operand of the result's
// shape (NumPy's order K): an operation on a transposed view reads and
// writes memory in order, and returns a transposed result; Contiguous
// makes one row-major.
//
// Operations need NVRTC (see package compute); the arrays, their views
// and their reading and printing do not.
package nd

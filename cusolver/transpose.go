package cusolver

import (
	"errors"
	"unsafe"

	cuda "github.com/gocuda/cuda"
)

// The batched Cholesky's other triangle. cuSOLVER's potrfBatched runs its
// column-major CUBLAS_FILL_MODE_LOWER about 2.8 times faster than UPPER
// (10,000 8×8 matrices on an H100: 39-41 µs against 110). So where a
// batch's triangle is cuSOLVER's upper one (a row-major Lower, a
// column-major Upper), CholeskyBatched transposes each matrix into the
// device workspace with a kernel of the package's own (transposePTX),
// factors the lower triangle there, and transposes the batch back. A
// plain transpose (not the conjugate one) is what turns one storage order
// into the other, so the matrix the workspace holds, read column-major,
// is the caller's as the caller's layout reads it (row-major Lower), or
// its transpose (column-major Upper: Aᵀ, which is A for a symmetric
// matrix and conj(A) for a Hermitian one, whose lower factor L gives A =
// (Lᵀ)ᴴ·Lᵀ): either way the factor comes back in the triangle the caller
// named, the other triangle goes there and back unchanged, and the
// leading minors, and so the info values, are the caller's matrix's.
//
// cuBLASLt's batched transform (cublasLtMatrixTransform) did this before,
// at about 10 µs a pass over 10,000 8×8 matrices (2.5 to 5 MB, which the
// H100's memory moves in about 2 µs): 20 of the 60 µs a row-major Lower
// batch took. The kernel is PTX text, compiled by the driver's JIT at the
// first batch of a handle that needs it, kept by the handle and unloaded
// by its Close (after the work queued on its stream, which may use it;
// while a graph that captured it lives, the module cannot be unloaded,
// and Close fails). Where the driver refuses the PTX, the batch is
// factored in place in cuSOLVER's slow triangle: right, and slower; so it
// is too for matrices of 65,536 rows or more (the kernel indexes a
// matrix's elements in 32 bits) and for a batch whose buffer is not
// aligned to its elements' loads.

// transposeName is the kernel's entry.
const transposeName = "gocuda_transpose_batch"

// transposePTX is the transpose, dst = srcᵀ for each of count packed n×n
// matrices, with no division: each thread takes one element, its row r,
// column q and matrix m from the grid (r = ctaid.y·ntid.x + tid.x, q =
// ctaid.z·ntid.y + tid.y, m = ctaid.x·ntid.z + tid.z; past n or count, it
// does nothing), and moves element m·n² + q·n + r of src (column-major
// (r, q)) to m·n² + r·n + q of dst, esize bytes (4, 8, or 16, moved as two
// 8-byte halves: what complex128 and its 8-byte alignment take). x runs
// down a column, so that a warp reads consecutive elements; its writes
// stay within a matrix or a tile of one, which the L2 cache gathers.
// m·n² is 64-bit (mul.wide); q·n + r and r·n + q, below n², are 32-bit
// for n < 65,536. transposeConfig makes the grid. The fake driver runs a
// C version of it (internal/fakecuda/csrc/kernels.c), matched by its
// text.
const transposePTX = `.version 7.0
.target sm_52
.address_size 64

.visible .entry gocuda_transpose_batch(.param .u64 p_dst, .param .u64 p_src, .param .u32 p_n, .param .u32 p_count, .param .u32 p_esize)
{
	.reg .pred %p<4>;
	.reg .b32 %r<13>;
	.reg .b64 %rd<10>;

	ld.param.u64 %rd0, [p_dst];
	ld.param.u64 %rd1, [p_src];
	ld.param.u32 %r0, [p_n];
	ld.param.u32 %r1, [p_count];
	ld.param.u32 %r2, [p_esize];
	cvta.to.global.u64 %rd0, %rd0;
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r3, %ctaid.y;
	mov.u32 %r4, %ntid.x;
	mov.u32 %r5, %tid.x;
	mad.lo.u32 %r6, %r3, %r4, %r5;
	mov.u32 %r3, %ctaid.z;
	mov.u32 %r4, %ntid.y;
	mov.u32 %r5, %tid.y;
	mad.lo.u32 %r7, %r3, %r4, %r5;
	mov.u32 %r3, %ctaid.x;
	mov.u32 %r4, %ntid.z;
	mov.u32 %r5, %tid.z;
	mad.lo.u32 %r8, %r3, %r4, %r5;
	setp.ge.u32 %p0, %r6, %r0;
	setp.ge.u32 %p1, %r7, %r0;
	setp.ge.u32 %p2, %r8, %r1;
	or.pred %p0, %p0, %p1;
	or.pred %p0, %p0, %p2;
	@%p0 bra L_DONE;
	mul.lo.u32 %r9, %r0, %r0;
	mul.wide.u32 %rd2, %r8, %r9;
	mad.lo.u32 %r10, %r7, %r0, %r6;
	mad.lo.u32 %r11, %r6, %r0, %r7;
	cvt.u64.u32 %rd3, %r10;
	add.u64 %rd3, %rd2, %rd3;
	cvt.u64.u32 %rd4, %r11;
	add.u64 %rd4, %rd2, %rd4;
	cvt.u64.u32 %rd5, %r2;
	mad.lo.u64 %rd6, %rd3, %rd5, %rd1;
	mad.lo.u64 %rd7, %rd4, %rd5, %rd0;
	setp.eq.u32 %p3, %r2, 4;
	@%p3 bra L_E4;
	setp.eq.u32 %p3, %r2, 8;
	@%p3 bra L_E8;
	ld.global.b64 %rd8, [%rd6];
	ld.global.b64 %rd9, [%rd6+8];
	st.global.b64 [%rd7], %rd8;
	st.global.b64 [%rd7+8], %rd9;
	bra L_DONE;
L_E8:
	ld.global.b64 %rd8, [%rd6];
	st.global.b64 [%rd7], %rd8;
	bra L_DONE;
L_E4:
	ld.global.b32 %r12, [%rd6];
	st.global.b32 [%rd7], %r12;
L_DONE:
	ret;
}
`

// The registers of transposePTX, by what they hold:
//
//	%rd0 dst, %rd1 src, %rd2 m·n² (the matrix's first element),
//	%rd3 m·n² + q·n + r (the element of src), %rd4 m·n² + r·n + q (of
//	dst), %rd5 esize, %rd6 and %rd7 their addresses, %rd8 and %rd9 the
//	element's bytes; %r0 n, %r1 count, %r2 esize, %r3 to %r5 the grid's
//	and block's numbers, %r6 r, %r7 q, %r8 m, %r9 n², %r10 q·n + r,
//	%r11 r·n + q, %r12 a 4-byte element.

// transposeMaxDim is the first n the kernel does not take: n² must fit 32
// bits.
const transposeMaxDim = 1 << 16

// transposeConfig is the kernel's grid for count n×n matrices on s: whole
// matrices a block where n² is at most 256 (as many as fit in 256
// threads, at most 64: a block's greatest depth), else a tile of 32 rows
// by 8 columns of one matrix a block, the grid's y and z over a matrix's
// tiles (at most 2,048 and 8,192 of them for n < 65,536) and x over the
// matrices.
func transposeConfig(n, count int, s *cuda.Stream) cuda.LaunchConfig {
	if nn := n * n; nn <= 256 {
		k := min(256/nn, 64)
		return cuda.LaunchConfig{Grid: cuda.Dim3{X: (count-1)/k + 1}, Block: cuda.Dim3{X: n, Y: n, Z: k}, Stream: s}
	}
	return cuda.LaunchConfig{Grid: cuda.Dim3{X: count, Y: (n-1)/32 + 1, Z: (n-1)/8 + 1}, Block: cuda.Dim3{X: 32, Y: 8}, Stream: s}
}

// transposeKernel returns h's transpose, loading it at the first call:
// nil, and no error, where the driver refuses it (CholeskyBatched then
// takes cuSOLVER's slow triangle, and h does not try again). An error of
// another kind (out of memory, a closed context) is returned and not
// kept: the next call tries again. Called in do.
func (h *Handle) transposeKernel() (*cuda.Function, error) {
	if h.tr != nil || h.trOff {
		return h.tr, nil
	}
	mod, err := h.base.Context().LoadModule([]byte(transposePTX))
	if err == nil {
		var f *cuda.Function
		if f, err = mod.Function(transposeName); err == nil {
			h.trMod, h.tr = mod, f
			return f, nil
		}
		if cerr := mod.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	if refusedKernel(err) {
		h.trOff = true
		return nil, nil
	}
	return nil, err
}

// closeTranspose unloads h's transpose, once the work queued on h's
// stream, which may use it, is done (a stream closed before h has none
// left). Called by Close.
func (h *Handle) closeTranspose() error {
	if err := h.base.Stream().Synchronize(); err != nil && !errors.Is(err, cuda.ErrClosed) {
		return err
	}
	return h.trMod.Close()
}

// refusedKernel reports whether err is the driver refusing the kernel as
// such: an image or PTX it cannot take (INVALID_IMAGE, NO_BINARY_FOR_GPU,
// INVALID_PTX, UNSUPPORTED_PTX_VERSION), or a kernel it cannot run
// (cuda.ErrNotSupported: the fake driver, for a kernel it has no C version
// of).
func refusedKernel(err error) bool {
	for _, r := range []cuda.Result{200, 209, 218, 222} {
		if errors.Is(err, r) {
			return true
		}
	}
	return errors.Is(err, cuda.ErrNotSupported)
}

// slowTriangle returns the transpose kernel where a Cholesky of n×n
// matrices of T at p in fill mode fill is in cuSOLVER's slow triangle
// (upper, column-major) and the kernel takes them: they are then factored
// transposed, in the fast one. nil where they are factored as they lie
// (the fast triangle, n of 1, the kernel refused or unable to take them).
// Called in do.
func slowTriangle[T Element](h *Handle, fill int32, n int, p uintptr) (*cuda.Function, error) {
	if fill != fillUpper || n <= 1 || !canTranspose[T](n, p) {
		return nil, nil
	}
	return h.transposeKernel()
}

// canTranspose reports whether the kernel takes a batch of n×n matrices
// of T at the device addresses given: n below transposeMaxDim, and each
// address aligned to the kernel's loads of T (4 bytes for float32, 8 for
// the others, complex128 moved as two halves).
func canTranspose[T Element](n int, addrs ...uintptr) bool {
	align := min(unsafe.Sizeof(*new(T)), 8)
	for _, p := range addrs {
		if p%align != 0 {
			return false
		}
	}
	return n < transposeMaxDim
}

// transpose queues dst = srcᵀ for each of count packed n×n matrices of T
// (column-major or row-major alike) with the kernel f on h's stream. dst
// and src must not overlap. Called in do.
func transpose[T Element](h *Handle, f *cuda.Function, dst, src uintptr, n, count int) error {
	return f.Launch(transposeConfig(n, count, h.base.Stream()), cuda.DevicePtr(dst), cuda.DevicePtr(src), uint32(n), uint32(count), uint32(unsafe.Sizeof(*new(T))))
}

// elemIndex is T's index in the batched calls' tables (float32, float64,
// complex64, complex128).
func elemIndex[T Element]() int {
	switch dataType[T]() {
	case typeF64:
		return 1
	case typeC32:
		return 2
	case typeC64:
		return 3
	}
	return 0
}

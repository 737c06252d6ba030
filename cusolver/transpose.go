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
// H100's memory moves in about 2 µs): 20 of the 60 µs a row-major
// Lower batch took. The kernel is PTX text, compiled by the driver's JIT at the
// first batch of a handle that needs it, kept by the handle and unloaded
// by its Close (after the work queued on its stream, which may use it;
// while a graph that captured it lives, the module cannot be unloaded, and
// Close fails). Where the driver refuses the PTX, the batch is factored
// in place in cuSOLVER's slow triangle: right, and slower; so it is too
// for matrices of 65,536 rows or more (the kernel indexes a matrix's
// elements in 32 bits) and for a batch whose buffer is not aligned to its
// elements' loads.

// transposeName is the kernel's entry.
const transposeName = "gocuda_transpose_batch"

// transposeBlock is the kernel's block: one thread an element.
const transposeBlock = 256

// transposePTX is the transpose: for each of the total elements of a batch
// of packed n×n matrices, element i of src (its column-major element
// (r, q) of matrix m, with e = i - m·n² = q·n + r) goes to element (q, r)
// of the same matrix in dst, m·n² + r·n + q, esize bytes (4, 8, or 16,
// moved as two 8-byte halves: what complex128 and its 8-byte alignment
// take). One thread an element: a warp reads consecutive elements of the
// batch, and its writes stay within a matrix or two (n² elements), which
// the L2 cache gathers. m is found by 32-bit division where total (and so
// i) fits 32 bits, else by 64-bit; e, q and r fit 32 bits for n < 65,536.
// The fake driver runs a C version of it (internal/fakecuda/csrc/
// kernels.c), matched by its text.
const transposePTX = `.version 7.0
.target sm_52
.address_size 64

.visible .entry gocuda_transpose_batch(.param .u64 p_dst, .param .u64 p_src, .param .u64 p_total, .param .u32 p_n, .param .u32 p_esize)
{
	.reg .pred %p<3>;
	.reg .b32 %r<10>;
	.reg .b64 %rd<13>;

	ld.param.u64 %rd0, [p_dst];
	ld.param.u64 %rd1, [p_src];
	ld.param.u64 %rd2, [p_total];
	ld.param.u32 %r0, [p_n];
	ld.param.u32 %r1, [p_esize];
	cvta.to.global.u64 %rd0, %rd0;
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mul.wide.u32 %rd3, %r2, %r3;
	cvt.u64.u32 %rd4, %r4;
	add.u64 %rd3, %rd3, %rd4;
	setp.ge.u64 %p0, %rd3, %rd2;
	@%p0 bra L_DONE;
	mul.lo.u32 %r5, %r0, %r0;
	shr.u64 %rd5, %rd2, 32;
	setp.ne.u64 %p1, %rd5, 0;
	@%p1 bra L_WIDE;
	cvt.u32.u64 %r6, %rd3;
	div.u32 %r6, %r6, %r5;
	mul.wide.u32 %rd6, %r6, %r5;
	bra L_SPLIT;
L_WIDE:
	cvt.u64.u32 %rd7, %r5;
	div.u64 %rd6, %rd3, %rd7;
	mul.lo.u64 %rd6, %rd6, %rd7;
L_SPLIT:
	sub.u64 %rd7, %rd3, %rd6;
	cvt.u32.u64 %r7, %rd7;
	div.u32 %r8, %r7, %r0;
	mul.lo.u32 %r9, %r8, %r0;
	sub.u32 %r9, %r7, %r9;
	mad.wide.u32 %rd8, %r9, %r0, %rd6;
	cvt.u64.u32 %rd9, %r8;
	add.u64 %rd8, %rd8, %rd9;
	cvt.u64.u32 %rd10, %r1;
	mad.lo.u64 %rd11, %rd3, %rd10, %rd1;
	mad.lo.u64 %rd12, %rd8, %rd10, %rd0;
	setp.eq.u32 %p2, %r1, 4;
	@%p2 bra L_E4;
	setp.eq.u32 %p2, %r1, 8;
	@%p2 bra L_E8;
	ld.global.b64 %rd4, [%rd11];
	ld.global.b64 %rd5, [%rd11+8];
	st.global.b64 [%rd12], %rd4;
	st.global.b64 [%rd12+8], %rd5;
	bra L_DONE;
L_E8:
	ld.global.b64 %rd4, [%rd11];
	st.global.b64 [%rd12], %rd4;
	bra L_DONE;
L_E4:
	ld.global.b32 %r2, [%rd11];
	st.global.b32 [%rd12], %r2;
L_DONE:
	ret;
}
`

// The registers of transposePTX, by what they hold:
//
//	%rd0 dst, %rd1 src, %rd2 total, %rd3 i (this thread's element of src),
//	%rd6 m·n² (the first element of i's matrix), %rd7 e = i - m·n²,
//	%rd8 j = m·n² + r·n + q (i's element of dst), %rd10 esize,
//	%rd11 &src[i], %rd12 &dst[j], %rd4 and %rd5 an element's bytes;
//	%r0 n, %r1 esize, %r5 n², %r6 m, %r7 e, %r8 q = e / n, %r9 r = e - q·n.

// transposeMaxDim is the first n the kernel does not take: n² must fit 32
// bits.
const transposeMaxDim = 1 << 16

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
	total := n * n * count
	cfg := cuda.LaunchConfig{
		Grid:   cuda.Dim3{X: (total-1)/transposeBlock + 1},
		Block:  cuda.Dim3{X: transposeBlock},
		Stream: h.base.Stream(),
	}
	return f.Launch(cfg, cuda.DevicePtr(dst), cuda.DevicePtr(src), uint64(total), uint32(n), uint32(unsafe.Sizeof(*new(T))))
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

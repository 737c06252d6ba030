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
// column-major Upper), CholeskyBatched transposes each matrix's triangle
// into the device workspace with a kernel of the package's own
// (transposePTX), factors the lower triangle there, and transposes the
// factors back (one matrix's Cholesky does the same). A
// plain transpose (not the conjugate one) is what turns one storage order
// into the other, so the matrix the workspace holds, read column-major,
// is the caller's as the caller's layout reads it (row-major Lower), or
// its transpose (column-major Upper: Aᵀ, which is A for a symmetric
// matrix and conj(A) for a Hermitian one, whose lower factor L gives A =
// (Lᵀ)ᴴ·Lᵀ): either way the factor comes back in the triangle the caller
// named, and the leading minors, and so the info values, are the
// caller's matrix's (a leading minor is of the triangle's elements
// alone).
//
// Only that triangle moves, each way: potrf in the lower triangle reads
// and writes the lower triangle of its column-major matrix alone (the
// diagonal included), as LAPACK's, so the kernel moves the caller's
// triangle into the workspace's lower one and the factor back from it,
// n(n+1)/2 of the n² elements (36 of 64 at n = 8); the caller's other
// triangle is neither read nor written, and the workspace's other one is
// read by neither the kernel nor potrf (whatever an earlier call left
// there stays unused). Both full transposes took complex128's batch of 10,000 8×8
// matrices to 63.4 µs on an H100, PyTorch (one transposing copy, its
// factor returned as a strided view) 55.9.
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

// transposeName and transposeTiledName are the kernel's entries: a
// thread an element, and a tile of 32×32 elements through shared memory.
const (
	transposeName      = "gocuda_transpose_batch"
	transposeTiledName = "gocuda_transpose_tiled"
)

// transposePTX is the transpose of a triangle, for each of count packed
// n×n matrices: element (r, q) of src read column-major (at q·n + r)
// goes to dst's r·n + q (dst = srcᵀ, column-major), for the elements of
// src's upper triangle (r ≤ q) where lower is 0, of its lower one (r ≥
// q) where it is 1; the others of dst are not written, nor those of src
// read. The in-pass takes the caller's matrix (cuSOLVER's upper triangle)
// to the workspace's lower one with lower 0, the out-pass the factor back
// with lower 1; the two together are a full transpose (the diagonal moved
// twice). Two entries of the same parameters (dst, src, n, count, esize,
// vec, lower): esize is the element's bytes (4, 8 or 16), and vec, for
// 16, says that src and dst are 16-byte aligned, so that an element moves
// in one 16-byte load and store (ld.global.v2.u64); where it is 0 (a
// complex128 view 8 bytes off), as two 8-byte halves, which complex128's
// 8-byte alignment takes. complex128's batch moved as halves took 69.1 µs
// to PyTorch's 56.5 (10,000 8×8 matrices on an H100), the other types
// 1.01x PyTorch.
//
// gocuda_transpose_batch, with no division: each thread takes one
// element of the triangle, so that no lane of a warp idles on the other
// triangle: its index t = ctaid.y·ntid.x + tid.x in the triangle and its
// matrix m = ctaid.x·ntid.z + tid.z (past n(n+1)/2 or count, it does
// nothing). t counts the triangle's elements (u, v), v ≤ u, row by row,
// t = u(u+1)/2 + v: u = ⌊(√(8t+1) − 1)/2⌋ (sqrt.approx, a MUFU
// instruction, then corrected by one either way where the float is off:
// exact below n = 64, where this entry runs, and corrected past it), and
// v = t − u(u+1)/2. Of src's upper triangle (lower 0) the element is r =
// v, q = u: src's u·n + v to dst's v·n + u, so that a warp reads down a
// column of src, consecutive elements. Of the lower one (lower 1) it is
// the reflection, r = n−1−v, q = n−1−u (r ≥ q): src's n²−1−(u·n + v) to
// dst's n²−1−(v·n + u), consecutive again (descending). The writes stay
// within a matrix, which the L2 cache gathers.
//
// gocuda_transpose_tiled, for large matrices, whose writes that way are a
// stride of n elements apart (a single matrix's Cholesky at n = 1024 lost
// 3-4% to PyTorch by it): a block of 32×8 threads takes a 32×32 tile of
// matrix m = ctaid.x, and only the tiles on or beside the triangle are
// launched: of the t = ⌈n/32⌉ tiles a side, the t(t+1)/2 (I, J), J ≤ I,
// numbered row by row as the element entry's elements (the block's
// number ctaid.z·nctaid.y + ctaid.y, the grid's y at most 65,535; past
// t(t+1)/2 the block does nothing), and decoded the same way. The tile's
// rows r0 = I·32 and columns q0 = J·32 (lower 1), or r0 = J·32 and q0 =
// I·32 (lower 0); on the diagonal, where the tile is cut by the
// triangle, each element is moved only where s·(r − q) ≥ 0 (s = 1 for
// lower, −1 for upper), which the tiles off it pass whole. Thread (x, y)
// reads (r0+x, q0+y+8j) for j = 0 to 3 (four
// loads in flight, a warp's consecutive) into tile[y+8j][x], and after
// bar.sync writes tile[x][y+8j] to dst's (q0+x, r0+y+8j) of the
// transpose, again consecutive along x. The tile's rows are 33 elements
// long, so that a warp's reads down a column of it fall in different
// banks; it is sized for 16-byte elements (32·33·16 bytes), the smaller
// ones using its first part. Elements past n or outside the triangle are
// neither read nor written (the write's test is on the same element as
// the read's, so no slot of the tile that was not filled is read); each
// thread of a block that has a tile still reaches bar.sync.
//
// m·n² is 64-bit (mul.wide); q·n + r and r·n + q, below n², are 32-bit
// for n < 65,536. transposeConfig chooses the entry and makes the grid.
// The fake driver runs a C version of each (internal/fakecuda/csrc/kernels.c),
// matched by its text.
const transposePTX = `.version 7.0
.target sm_52
.address_size 64

.visible .entry gocuda_transpose_batch(.param .u64 p_dst, .param .u64 p_src, .param .u32 p_n, .param .u32 p_count, .param .u32 p_esize, .param .u32 p_vec, .param .u32 p_lower)
{
	.reg .pred %p<4>;
	.reg .f32 %f<2>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<10>;

	ld.param.u64 %rd0, [p_dst];
	ld.param.u64 %rd1, [p_src];
	ld.param.u32 %r0, [p_n];
	ld.param.u32 %r1, [p_count];
	ld.param.u32 %r2, [p_esize];
	ld.param.u32 %r13, [p_vec];
	ld.param.u32 %r14, [p_lower];
	cvta.to.global.u64 %rd0, %rd0;
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r3, %ctaid.y;
	mov.u32 %r4, %ntid.x;
	mov.u32 %r5, %tid.x;
	mad.lo.u32 %r6, %r3, %r4, %r5;
	mov.u32 %r3, %ctaid.x;
	mov.u32 %r4, %ntid.z;
	mov.u32 %r5, %tid.z;
	mad.lo.u32 %r8, %r3, %r4, %r5;
	mad.lo.u32 %r9, %r0, %r0, %r0;
	shr.u32 %r9, %r9, 1;
	setp.ge.u32 %p0, %r6, %r9;
	setp.ge.u32 %p1, %r8, %r1;
	or.pred %p0, %p0, %p1;
	@%p0 bra L_DONE;
	shl.b32 %r3, %r6, 3;
	add.u32 %r3, %r3, 1;
	cvt.rn.f32.u32 %f0, %r3;
	sqrt.approx.f32 %f0, %f0;
	fma.rn.f32 %f0, %f0, 0f3F000000, 0fBF000000;
	cvt.rzi.u32.f32 %r7, %f0;
	mad.lo.u32 %r4, %r7, %r7, %r7;
	shr.u32 %r4, %r4, 1;
	setp.gt.u32 %p1, %r4, %r6;
	@%p1 sub.u32 %r4, %r4, %r7;
	@%p1 sub.u32 %r7, %r7, 1;
	add.u32 %r3, %r4, %r7;
	add.u32 %r3, %r3, 1;
	setp.le.u32 %p1, %r3, %r6;
	@%p1 add.u32 %r7, %r7, 1;
	@%p1 mov.u32 %r4, %r3;
	sub.u32 %r5, %r6, %r4;
	mul.lo.u32 %r9, %r0, %r0;
	mul.wide.u32 %rd2, %r8, %r9;
	mad.lo.u32 %r10, %r7, %r0, %r5;
	mad.lo.u32 %r11, %r5, %r0, %r7;
	setp.ne.u32 %p1, %r14, 0;
	sub.u32 %r9, %r9, 1;
	@%p1 sub.u32 %r10, %r9, %r10;
	@%p1 sub.u32 %r11, %r9, %r11;
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
	setp.ne.u32 %p3, %r13, 0;
	@%p3 bra L_E16;
	ld.global.u64 %rd8, [%rd6];
	ld.global.u64 %rd9, [%rd6+8];
	st.global.u64 [%rd7], %rd8;
	st.global.u64 [%rd7+8], %rd9;
	bra L_DONE;
L_E16:
	ld.global.v2.u64 {%rd8, %rd9}, [%rd6];
	st.global.v2.u64 [%rd7], {%rd8, %rd9};
	bra L_DONE;
L_E8:
	ld.global.u64 %rd8, [%rd6];
	st.global.u64 [%rd7], %rd8;
	bra L_DONE;
L_E4:
	ld.global.u32 %r15, [%rd6];
	st.global.u32 [%rd7], %r15;
L_DONE:
	ret;
}

.visible .entry gocuda_transpose_tiled(.param .u64 p_dst, .param .u64 p_src, .param .u32 p_n, .param .u32 p_count, .param .u32 p_esize, .param .u32 p_vec, .param .u32 p_lower)
{
	.reg .pred %p<10>;
	.reg .f32 %f<2>;
	.reg .b32 %r<26>;
	.reg .b64 %rd<17>;
	.shared .align 16 .b8 gocuda_transpose_tile[16896];

	ld.param.u64 %rd0, [p_dst];
	ld.param.u64 %rd1, [p_src];
	ld.param.u32 %r0, [p_n];
	ld.param.u32 %r1, [p_count];
	ld.param.u32 %r2, [p_esize];
	ld.param.u32 %r3, [p_vec];
	ld.param.u32 %r19, [p_lower];
	mov.u32 %r4, %ctaid.x;
	setp.ge.u32 %p0, %r4, %r1;
	@%p0 bra L_DONE;
	mov.u32 %r5, %ctaid.z;
	mov.u32 %r6, %nctaid.y;
	mov.u32 %r7, %ctaid.y;
	mad.lo.u32 %r20, %r5, %r6, %r7;
	add.u32 %r5, %r0, 31;
	shr.u32 %r5, %r5, 5;
	mad.lo.u32 %r6, %r5, %r5, %r5;
	shr.u32 %r6, %r6, 1;
	setp.ge.u32 %p0, %r20, %r6;
	@%p0 bra L_DONE;
	shl.b32 %r5, %r20, 3;
	add.u32 %r5, %r5, 1;
	cvt.rn.f32.u32 %f0, %r5;
	sqrt.approx.f32 %f0, %f0;
	fma.rn.f32 %f0, %f0, 0f3F000000, 0fBF000000;
	cvt.rzi.u32.f32 %r21, %f0;
	mad.lo.u32 %r22, %r21, %r21, %r21;
	shr.u32 %r22, %r22, 1;
	setp.gt.u32 %p1, %r22, %r20;
	@%p1 sub.u32 %r22, %r22, %r21;
	@%p1 sub.u32 %r21, %r21, 1;
	add.u32 %r5, %r22, %r21;
	add.u32 %r5, %r5, 1;
	setp.le.u32 %p1, %r5, %r20;
	@%p1 add.u32 %r21, %r21, 1;
	@%p1 mov.u32 %r22, %r5;
	sub.u32 %r20, %r20, %r22;
	shl.b32 %r21, %r21, 5;
	shl.b32 %r20, %r20, 5;
	setp.ne.u32 %p9, %r19, 0;
	selp.b32 %r5, %r21, %r20, %p9;
	selp.b32 %r6, %r20, %r21, %p9;
	selp.b32 %r23, 1, -1, %p9;
	shl.b32 %r24, %r23, 3;
	cvta.to.global.u64 %rd0, %rd0;
	cvta.to.global.u64 %rd1, %rd1;
	setp.eq.u32 %p6, %r2, 4;
	setp.eq.u32 %p7, %r2, 8;
	setp.ne.u32 %p8, %r3, 0;
	cvt.u64.u32 %rd2, %r2;
	mul.lo.u32 %r10, %r0, %r0;
	mul.wide.u32 %rd3, %r4, %r10;
	mul.wide.u32 %rd4, %r0, %r2;
	shl.b64 %rd4, %rd4, 3;
	mov.u32 %r7, %tid.x;
	mov.u32 %r8, %tid.y;
	mov.u32 %r9, gocuda_transpose_tile;

	add.u32 %r11, %r5, %r7;
	setp.lt.u32 %p5, %r11, %r0;
	add.u32 %r12, %r6, %r8;
	sub.s32 %r25, %r11, %r12;
	mul.lo.s32 %r25, %r25, %r23;
	mad.lo.u32 %r11, %r12, %r0, %r11;
	cvt.u64.u32 %rd5, %r11;
	add.u64 %rd5, %rd3, %rd5;
	mad.lo.u64 %rd5, %rd5, %rd2, %rd1;
	add.u64 %rd6, %rd5, %rd4;
	add.u64 %rd7, %rd6, %rd4;
	add.u64 %rd8, %rd7, %rd4;
	setp.lt.and.u32 %p1, %r12, %r0, %p5;
	setp.ge.and.s32 %p1, %r25, 0, %p1;
	add.u32 %r12, %r12, 8;
	sub.s32 %r25, %r25, %r24;
	setp.lt.and.u32 %p2, %r12, %r0, %p5;
	setp.ge.and.s32 %p2, %r25, 0, %p2;
	add.u32 %r12, %r12, 8;
	sub.s32 %r25, %r25, %r24;
	setp.lt.and.u32 %p3, %r12, %r0, %p5;
	setp.ge.and.s32 %p3, %r25, 0, %p3;
	add.u32 %r12, %r12, 8;
	sub.s32 %r25, %r25, %r24;
	setp.lt.and.u32 %p4, %r12, %r0, %p5;
	setp.ge.and.s32 %p4, %r25, 0, %p4;
	mad.lo.u32 %r13, %r8, 33, %r7;
	mad.lo.u32 %r13, %r13, %r2, %r9;
	@%p6 bra L_R4;
	@%p7 bra L_R8;
	@%p8 bra L_R16;
	@%p1 ld.global.u64 %rd9, [%rd5];
	@%p1 ld.global.u64 %rd10, [%rd5+8];
	@%p2 ld.global.u64 %rd11, [%rd6];
	@%p2 ld.global.u64 %rd12, [%rd6+8];
	@%p3 ld.global.u64 %rd13, [%rd7];
	@%p3 ld.global.u64 %rd14, [%rd7+8];
	@%p4 ld.global.u64 %rd15, [%rd8];
	@%p4 ld.global.u64 %rd16, [%rd8+8];
	bra L_S16;
L_R16:
	@%p1 ld.global.v2.u64 {%rd9, %rd10}, [%rd5];
	@%p2 ld.global.v2.u64 {%rd11, %rd12}, [%rd6];
	@%p3 ld.global.v2.u64 {%rd13, %rd14}, [%rd7];
	@%p4 ld.global.v2.u64 {%rd15, %rd16}, [%rd8];
L_S16:
	@%p1 st.shared.v2.u64 [%r13], {%rd9, %rd10};
	@%p2 st.shared.v2.u64 [%r13+4224], {%rd11, %rd12};
	@%p3 st.shared.v2.u64 [%r13+8448], {%rd13, %rd14};
	@%p4 st.shared.v2.u64 [%r13+12672], {%rd15, %rd16};
	bra L_SYNC;
L_R8:
	@%p1 ld.global.u64 %rd9, [%rd5];
	@%p2 ld.global.u64 %rd10, [%rd6];
	@%p3 ld.global.u64 %rd11, [%rd7];
	@%p4 ld.global.u64 %rd12, [%rd8];
	@%p1 st.shared.u64 [%r13], %rd9;
	@%p2 st.shared.u64 [%r13+2112], %rd10;
	@%p3 st.shared.u64 [%r13+4224], %rd11;
	@%p4 st.shared.u64 [%r13+6336], %rd12;
	bra L_SYNC;
L_R4:
	@%p1 ld.global.u32 %r15, [%rd5];
	@%p2 ld.global.u32 %r16, [%rd6];
	@%p3 ld.global.u32 %r17, [%rd7];
	@%p4 ld.global.u32 %r18, [%rd8];
	@%p1 st.shared.u32 [%r13], %r15;
	@%p2 st.shared.u32 [%r13+1056], %r16;
	@%p3 st.shared.u32 [%r13+2112], %r17;
	@%p4 st.shared.u32 [%r13+3168], %r18;
L_SYNC:
	bar.sync 0;

	add.u32 %r11, %r6, %r7;
	setp.lt.u32 %p5, %r11, %r0;
	add.u32 %r12, %r5, %r8;
	sub.s32 %r25, %r12, %r11;
	mul.lo.s32 %r25, %r25, %r23;
	mad.lo.u32 %r11, %r12, %r0, %r11;
	cvt.u64.u32 %rd5, %r11;
	add.u64 %rd5, %rd3, %rd5;
	mad.lo.u64 %rd5, %rd5, %rd2, %rd0;
	add.u64 %rd6, %rd5, %rd4;
	add.u64 %rd7, %rd6, %rd4;
	add.u64 %rd8, %rd7, %rd4;
	setp.lt.and.u32 %p1, %r12, %r0, %p5;
	setp.ge.and.s32 %p1, %r25, 0, %p1;
	add.u32 %r12, %r12, 8;
	add.s32 %r25, %r25, %r24;
	setp.lt.and.u32 %p2, %r12, %r0, %p5;
	setp.ge.and.s32 %p2, %r25, 0, %p2;
	add.u32 %r12, %r12, 8;
	add.s32 %r25, %r25, %r24;
	setp.lt.and.u32 %p3, %r12, %r0, %p5;
	setp.ge.and.s32 %p3, %r25, 0, %p3;
	add.u32 %r12, %r12, 8;
	add.s32 %r25, %r25, %r24;
	setp.lt.and.u32 %p4, %r12, %r0, %p5;
	setp.ge.and.s32 %p4, %r25, 0, %p4;
	mad.lo.u32 %r14, %r7, 33, %r8;
	mad.lo.u32 %r14, %r14, %r2, %r9;
	@%p6 bra L_W4;
	@%p7 bra L_W8;
	@%p1 ld.shared.v2.u64 {%rd9, %rd10}, [%r14];
	@%p2 ld.shared.v2.u64 {%rd11, %rd12}, [%r14+128];
	@%p3 ld.shared.v2.u64 {%rd13, %rd14}, [%r14+256];
	@%p4 ld.shared.v2.u64 {%rd15, %rd16}, [%r14+384];
	@%p8 bra L_W16;
	@%p1 st.global.u64 [%rd5], %rd9;
	@%p1 st.global.u64 [%rd5+8], %rd10;
	@%p2 st.global.u64 [%rd6], %rd11;
	@%p2 st.global.u64 [%rd6+8], %rd12;
	@%p3 st.global.u64 [%rd7], %rd13;
	@%p3 st.global.u64 [%rd7+8], %rd14;
	@%p4 st.global.u64 [%rd8], %rd15;
	@%p4 st.global.u64 [%rd8+8], %rd16;
	bra L_DONE;
L_W16:
	@%p1 st.global.v2.u64 [%rd5], {%rd9, %rd10};
	@%p2 st.global.v2.u64 [%rd6], {%rd11, %rd12};
	@%p3 st.global.v2.u64 [%rd7], {%rd13, %rd14};
	@%p4 st.global.v2.u64 [%rd8], {%rd15, %rd16};
	bra L_DONE;
L_W8:
	@%p1 ld.shared.u64 %rd9, [%r14];
	@%p2 ld.shared.u64 %rd10, [%r14+64];
	@%p3 ld.shared.u64 %rd11, [%r14+128];
	@%p4 ld.shared.u64 %rd12, [%r14+192];
	@%p1 st.global.u64 [%rd5], %rd9;
	@%p2 st.global.u64 [%rd6], %rd10;
	@%p3 st.global.u64 [%rd7], %rd11;
	@%p4 st.global.u64 [%rd8], %rd12;
	bra L_DONE;
L_W4:
	@%p1 ld.shared.u32 %r15, [%r14];
	@%p2 ld.shared.u32 %r16, [%r14+32];
	@%p3 ld.shared.u32 %r17, [%r14+64];
	@%p4 ld.shared.u32 %r18, [%r14+96];
	@%p1 st.global.u32 [%rd5], %r15;
	@%p2 st.global.u32 [%rd6], %r16;
	@%p3 st.global.u32 [%rd7], %r17;
	@%p4 st.global.u32 [%rd8], %r18;
L_DONE:
	ret;
}
`

// The registers of gocuda_transpose_batch, by what they hold:
//
//	%rd0 dst, %rd1 src, %rd2 m·n² (the matrix's first element),
//	%rd3 m·n² + q·n + r (the element of src), %rd4 m·n² + r·n + q (of
//	dst), %rd5 esize, %rd6 and %rd7 their addresses, %rd8 and %rd9 the
//	element's bytes; %f0 u, as a float; %r0 n, %r1 count, %r2 esize, %r3
//	to %r5 the grid's and block's numbers (then 8t+1 and (u+1)(u+2)/2,
//	u(u+1)/2, v), %r6 t, %r7 u, %r8 m, %r9 n(n+1)/2 (then n², n²−1),
//	%r10 q·n + r, %r11 r·n + q, %r13 vec, %r14 lower, %r15 a 4-byte
//	element; %p1 lower (first the corrections of u).
//
// Of gocuda_transpose_tiled:
//
//	%rd0 dst, %rd1 src, %rd2 esize, %rd3 m·n², %rd4 8·n·esize (the bytes
//	from a thread's element j to j+1), %rd5 to %rd8 the addresses of its
//	elements 0 to 3 (in src, then in dst), %rd9 to %rd16 their bytes (two
//	registers an element of 16 bytes, one of 8); %f0 I, as a float; %r0
//	n, %r1 count, %r2 esize, %r3 vec, %r4 m, %r5 r0, %r6 q0 (first t and
//	t(t+1)/2, then 8·idx+1 and (I+1)(I+2)/2), %r7 tid.x, %r8 tid.y, %r9
//	the tile's address, %r10 n², %r11 and %r12 a row and column of the
//	thread's (then its first element's offset), %r13 and %r14 the
//	thread's first slot of the tile when reading and when writing, %r15
//	to %r18 4-byte elements, %r19 lower, %r20 the tile's number idx (then
//	J, J·32), %r21 I (then I·32), %r22 I(I+1)/2, %r23 s, %r24 8·s, %r25
//	s·(r − q) of the thread's element; %p1 to %p4 whether the thread's
//	elements 0 to 3 are in the matrix and the triangle, %p5 whether its
//	fixed coordinate is in the matrix, %p6 esize 4, %p7 esize 8, %p8 vec,
//	%p9 lower.

// transposeMaxDim is the first n the kernel does not take: n² must fit 32
// bits.
const transposeMaxDim = 1 << 16

// transposeTiledMin is the first n that takes the tiled entry. Smaller
// matrices keep a thread an element: a 32×32 tile of a matrix below 32
// rows would be mostly empty, and up to 64 a matrix's strided writes stay
// within a few kilobytes the L2 cache gathers.
const transposeTiledMin = 64

// transposeConfig is the kernel's grid for a triangle of count n×n
// matrices on s, and whether it is the tiled entry's. For the element
// entry: whole triangles a block where a triangle's n(n+1)/2 elements
// are at most 256 (as many as fit in 256 threads, at most 64: a block's
// greatest depth; the threads of a block are numbered x first, so a
// warp's lanes run on from one matrix's triangle to the next), else 256
// elements of one triangle a block, the grid's y over a triangle's
// (at most 8 blocks below n = 64) and x over the matrices. For the tiled
// one (n from transposeTiledMin): 32×8 threads a 32×32 tile, the
// grid's y and z over the triangle's t(t+1)/2 tiles (y at most 65,535,
// the grid's limit), x over the matrices.
func transposeConfig(n, count int, s *cuda.Stream) (cfg cuda.LaunchConfig, tiled bool) {
	if n >= transposeTiledMin {
		t := (n-1)/32 + 1
		tiles := t * (t + 1) / 2
		y := min(tiles, 65535)
		return cuda.LaunchConfig{Grid: cuda.Dim3{X: count, Y: y, Z: (tiles-1)/y + 1}, Block: cuda.Dim3{X: 32, Y: 8}, Stream: s}, true
	}
	tri := n * (n + 1) / 2
	if tri <= 256 {
		k := min(256/tri, 64)
		return cuda.LaunchConfig{Grid: cuda.Dim3{X: (count-1)/k + 1}, Block: cuda.Dim3{X: tri, Y: 1, Z: k}, Stream: s}, false
	}
	return cuda.LaunchConfig{Grid: cuda.Dim3{X: count, Y: (tri-1)/256 + 1}, Block: cuda.Dim3{X: 256}, Stream: s}, false
}

// transposer is a handle's transpose: the module's two entries.
type transposer struct {
	elem, tiled *cuda.Function
}

// transposeKernel returns h's transpose, loading it at the first call:
// nil, and no error, where the driver refuses it (CholeskyBatched then
// takes cuSOLVER's slow triangle, and h does not try again). An error of
// another kind (out of memory, a closed context) is returned and not
// kept: the next call tries again. Called in do.
func (h *Handle) transposeKernel() (*transposer, error) {
	if h.tr != nil || h.trOff {
		return h.tr, nil
	}
	mod, err := h.base.Context().LoadModule([]byte(transposePTX))
	if err == nil {
		var tr transposer
		if tr.elem, err = mod.Function(transposeName); err == nil {
			tr.tiled, err = mod.Function(transposeTiledName)
		}
		if err == nil {
			h.trMod, h.tr = mod, &tr
			return &tr, nil
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

// slowTriangle returns the transpose where a Cholesky of n×n matrices of
// T at p in fill mode fill is in cuSOLVER's slow triangle (upper,
// column-major) and the kernel takes them: they are then factored
// transposed, in the fast one. nil where they are factored as they lie
// (the fast triangle, n of 1, the kernel refused or unable to take them).
// Called in do.
func slowTriangle[T Element](h *Handle, fill int32, n int, p uintptr) (*transposer, error) {
	if fill != fillUpper || n <= 1 || !canTranspose[T](n, p) {
		return nil, nil
	}
	return h.transposeKernel()
}

// canTranspose reports whether the kernel takes a batch of n×n matrices
// of T at the device addresses given: n below transposeMaxDim, and each
// address aligned to the kernel's loads of T (4 bytes for float32, 8 for
// the others: complex128 off 16 bytes moves as two halves).
func canTranspose[T Element](n int, addrs ...uintptr) bool {
	align := min(unsafe.Sizeof(*new(T)), 8)
	for _, p := range addrs {
		if p%align != 0 {
			return false
		}
	}
	return n < transposeMaxDim
}

// transposeVec is the kernel's vec for elements of esize bytes at dst and
// src: 1 where they are 16 bytes, each moved in one 16-byte load and
// store, which takes both addresses 16-byte aligned (device allocations
// are; a view may be 8 bytes off), else 0.
func transposeVec(esize, dst, src uintptr) uint32 {
	if esize == 16 && dst%16 == 0 && src%16 == 0 {
		return 1
	}
	return 0
}

// transpose queues dst = srcᵀ for a triangle of each of count packed n×n
// matrices of T with the kernel tr on h's stream: of src read
// column-major, its lower triangle (the diagonal included) where lower
// is set, else its upper one, written to the other triangle of dst read
// column-major; the rest of dst is not written, nor of src read. dst and
// src must not overlap. Called in do.
func transpose[T Element](h *Handle, tr *transposer, dst, src uintptr, n, count int, lower bool) error {
	cfg, tiled := transposeConfig(n, count, h.base.Stream())
	f := tr.elem
	if tiled {
		f = tr.tiled
	}
	esize := unsafe.Sizeof(*new(T))
	var lo uint32
	if lower {
		lo = 1
	}
	return f.Launch(cfg, cuda.DevicePtr(dst), cuda.DevicePtr(src), uint32(n), uint32(count), uint32(esize), transposeVec(esize, dst, src), lo)
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

package cusolver

import (
	"unsafe"

	cuda "github.com/gocuda/cuda"
)

// TransposeBatch, for the tests, queues dst = srcᵀ for count packed n×n
// matrices on h's stream with CholeskyBatched's kernel, as its two passes
// (src's upper triangle, then its lower one: the diagonal moved twice),
// and reports whether the kernel took the batch: false, with nothing
// queued, where the driver refused the kernel, or n or the buffers'
// alignment are beyond it.
func TransposeBatch[T Element](h *Handle, dst, src *cuda.DeviceBuffer[T], n, count int) (ok bool, err error) {
	if ok, err = TransposeTriangle(h, dst, src, n, count, false); !ok || err != nil {
		return ok, err
	}
	return TransposeTriangle(h, dst, src, n, count, true)
}

// TransposeTriangle, for the tests, queues one of CholeskyBatched's
// passes for count packed n×n matrices on h's stream: of each matrix of
// src read column-major, its lower triangle (lower) or its upper one, the
// diagonal included, to the other triangle of dst's (dst = srcᵀ there);
// the rest of dst is not written. It reports whether the kernel took the
// batch, as TransposeBatch.
func TransposeTriangle[T Element](h *Handle, dst, src *cuda.DeviceBuffer[T], n, count int, lower bool) (ok bool, err error) {
	err = h.do("TransposeTriangle", []cuda.Memory{dst, src}, func() error {
		if n*count == 0 || !canTranspose[T](n, uintptr(dst.Ptr()), uintptr(src.Ptr())) {
			return nil
		}
		f, err := h.transposeKernel()
		if err != nil || f == nil {
			return err
		}
		ok = true
		return transpose[T](h, f, uintptr(dst.Ptr()), uintptr(src.Ptr()), n, count, lower)
	})
	return ok, err
}

// TransposePTX is the kernel's text, for the tests.
const TransposePTX = transposePTX

// TransposeLaunch, for the tests, is how TransposeBatch launches the
// kernel for count n×n matrices of T from src to dst: whether through the
// tiled entry, and whether each 16-byte element moves in one load and
// store (vec) rather than as two halves.
func TransposeLaunch[T Element](dst, src *cuda.DeviceBuffer[T], n, count int) (tiled, vec bool) {
	_, tiled = transposeConfig(n, count, nil)
	return tiled, transposeVec(unsafe.Sizeof(*new(T)), uintptr(dst.Ptr()), uintptr(src.Ptr())) == 1
}

// TransposeGrid, for the tests, is the kernel's grid and block for a
// triangle of count n×n matrices.
func TransposeGrid(n, count int) (grid, block cuda.Dim3) {
	cfg, _ := transposeConfig(n, count, nil)
	return cfg.Grid, cfg.Block
}

// PoisonWorkspace, for the tests, grows h's device workspace to at least
// bytes and fills all of it with 0xff bytes (a NaN in every element type),
// in stream order: a factorization in the workspace that read its other
// triangle, which the transposes leave as they find it, would meet NaNs.
func PoisonWorkspace(h *Handle, bytes int) error {
	return h.do("PoisonWorkspace", nil, func() error {
		if _, _, err := h.workspace("PoisonWorkspace", uintptr(bytes), 0); err != nil {
			return err
		}
		return h.dev.Memset8Async(0xff, h.base.Stream())
	})
}

package cusolver

import (
	"unsafe"

	cuda "github.com/gocuda/cuda"
)

// TransposeBatch, for the tests, queues dst = srcᵀ for count packed n×n
// matrices on h's stream with CholeskyBatched's kernel, and reports
// whether the kernel took the batch: false, with nothing queued, where
// the driver refused the kernel, or n or the buffers' alignment are
// beyond it.
func TransposeBatch[T Element](h *Handle, dst, src *cuda.DeviceBuffer[T], n, count int) (ok bool, err error) {
	err = h.do("TransposeBatch", []cuda.Memory{dst, src}, func() error {
		if n*count == 0 || !canTranspose[T](n, uintptr(dst.Ptr()), uintptr(src.Ptr())) {
			return nil
		}
		f, err := h.transposeKernel()
		if err != nil || f == nil {
			return err
		}
		ok = true
		return transpose[T](h, f, uintptr(dst.Ptr()), uintptr(src.Ptr()), n, count)
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

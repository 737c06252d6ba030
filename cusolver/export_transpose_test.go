package cusolver

import cuda "github.com/gocuda/cuda"

// TransposeBatch, for the tests, queues dst = srcᵀ for count packed n×n
// matrices (column-major) on h's stream, as CholeskyBatched does, and
// reports whether cuBLASLt took the type.
func TransposeBatch[T Element](h *Handle, dst, src *cuda.DeviceBuffer[T], n, count int) (ok bool, err error) {
	err = h.do("TransposeBatch", []cuda.Memory{dst, src}, func() error {
		var err error
		if ok, err = prepareTranspose[T](h, "TransposeBatch", n, count); err != nil || !ok {
			return err
		}
		ok, err = transpose[T](h, "TransposeBatch", uintptr(dst.Ptr()), uintptr(src.Ptr()), true)
		return err
	})
	return ok, err
}

// OpenLt opens the transposes' cuBLASLt, for the tests, and returns its
// path, or "" where it could not.
func OpenLt() string {
	if !openLt() {
		return ""
	}
	return ltLib.Path()
}

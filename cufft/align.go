package cufft

import (
	"errors"
	"fmt"
	"unsafe"

	cuda "github.com/gocuda/cuda"
)

// cuFFT refuses (CUFFT_INVALID_VALUE) a real buffer that is not aligned as
// its complex counterpart: a float32 slice one element into its allocation,
// given to an R2C plan, fails on the H100 though its elements are aligned.
// Such a buffer goes through stream-ordered scratch memory of its own, so
// that every element-aligned buffer works, at the cost of a copy.

// alignedForComplex reports whether b is aligned to twice its element
// size: to the complex number its real elements pair into.
func alignedForComplex[T any](b *cuda.DeviceBuffer[T]) bool {
	var z T
	return uintptr(b.Ptr())%(2*unsafe.Sizeof(z)) == 0
}

// complexAligned returns b where real is unset or b is aligned as a
// complex number, else stream-ordered scratch memory of b's length on s,
// holding a copy of b's elements if fill is set; and what frees what it
// returned (nothing to do for b itself).
func complexAligned[T any](b *cuda.DeviceBuffer[T], s *cuda.Stream, real, fill bool) (*cuda.DeviceBuffer[T], func() error, error) {
	if !real || alignedForComplex(b) {
		return b, func() error { return nil }, nil
	}
	tmp, err := cuda.AllocAsync[T](s, b.Len())
	if err != nil {
		return nil, nil, fmt.Errorf("scratch memory for a buffer not aligned for cuFFT: %w", err)
	}
	if fill {
		if err := tmp.CopyFromDeviceAsync(b, s); err != nil {
			return nil, nil, errors.Join(err, freeScratch(tmp))
		}
	}
	return tmp, func() error { return freeScratch(tmp) }, nil
}

// freeScratch frees stream-ordered scratch memory, in the stream's order
// after the work queued on it; a failed free is tried once more, so that
// nothing is lost.
func freeScratch[T any](tmp *cuda.DeviceBuffer[T]) error {
	err := tmp.Free()
	if err != nil && tmp.Free() != nil {
		err = fmt.Errorf("%w (and again)", err)
	}
	return err
}

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

// scratchLike returns stream-ordered memory of b's length on s, holding a
// copy of b's elements if fill is set.
func scratchLike[T any](b *cuda.DeviceBuffer[T], s *cuda.Stream, fill bool) (*cuda.DeviceBuffer[T], error) {
	tmp, err := cuda.AllocAsync[T](s, b.Len())
	if err != nil {
		return nil, fmt.Errorf("scratch memory for a buffer not aligned for cuFFT: %w", err)
	}
	if fill {
		if err := tmp.CopyFromDeviceAsync(b, s); err != nil {
			return nil, errors.Join(err, freeScratch(tmp))
		}
	}
	return tmp, nil
}

// freeScratch frees stream-ordered scratch memory (nil is nothing to do),
// in the stream's order after the work queued on it; a failed free is
// tried once more, so that nothing is lost.
func freeScratch[T any](tmp *cuda.DeviceBuffer[T]) error {
	if tmp == nil {
		return nil
	}
	err := tmp.Free()
	if err != nil && tmp.Free() != nil {
		err = fmt.Errorf("%w (and again)", err)
	}
	return err
}

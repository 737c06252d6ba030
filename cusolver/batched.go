package cusolver

import (
	"math"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cusolver"
)

// MaxBatchedDim is the largest dimension SVDBatched and EighBatched take:
// cuSOLVER's Jacobi batches hold each matrix in a block's shared memory.
const MaxBatchedDim = 32

// checkBatch checks count matrices shaped as a, packed one after another
// in a's buffer.
func checkBatch[T cuda.Float](h *Handle, op string, a Matrix[T], count int) error {
	if err := h.valid(op); err != nil {
		return err
	}
	if count < 0 || count > maxDim {
		return errorf(op, cuda.ErrInvalidValue, "count is %d: want 0 to %d", count, maxDim)
	}
	one := a
	if err := a.check(op, "a", h.base.Context()); err != nil {
		return err
	}
	size := a.Rows * a.Cols
	if size > 0 && count > math.MaxInt/size {
		return errorf(op, cuda.ErrInvalidValue, "%d matrices of %d×%d are beyond any buffer", count, a.Rows, a.Cols)
	}
	if need, have := size*count, one.Data.Len(); need > have {
		return errorf(op, cuda.ErrInvalidValue, "a: %d matrices of %d×%d need %d elements; its buffer holds %d", count, a.Rows, a.Cols, need, have)
	}
	return nil
}

// CholeskyBatched factors count symmetric positive definite n×n matrices
// in place, packed one after another in a's buffer (a describes the
// first), as Cholesky does each (cusolverDnSpotrfBatched,
// cusolverDnDpotrfBatched), queued on h's stream. The Info's Err names
// each matrix that was not positive definite (the first 8), counted from
// 0. As Cholesky, it reads and writes only the triangle tri, as a's
// layout reads it; the other triangle is left as it was.
//
// cuSOLVER's batch is fast in one triangle: its column-major lower one,
// which is a row-major Upper or a column-major Lower (10,000 8×8 matrices
// in 39-41 µs on an H100). In the other (a row-major Lower, a
// column-major Upper) cuSOLVER is about 2.8 times slower, so there the
// batch is transposed into h's device workspace with cuBLASLt's batched
// matrix transform (cublasLtMatrixTransform), factored there in the fast
// triangle, and transposed back: two copies of the batch through memory
// more, a fraction of what cuSOLVER's slow triangle costs. The workspace
// grows to the batch's size (count·n·n elements) and is reused as the
// handle's other workspaces are. Where cuBLASLt cannot be opened, lacks
// the transform or refuses the type or batch, the batch is factored in place in
// cuSOLVER's slow triangle: the same result, slower. The arrays of
// pointers cuSOLVER takes (one for a's batch, one for the workspace's)
// are kept by h for the next call on the same batch.
func CholeskyBatched[T cuda.Float](h *Handle, a Matrix[T], count int, tri Triangle) (*Info, error) {
	const op = "CholeskyBatched"
	if err := checkBatch(h, op, a, count); err != nil {
		return nil, err
	}
	if err := checkSymmetric(h, op, a, tri); err != nil {
		return nil, err
	}
	n := a.Rows
	size := uintptr(n*n) * unsafe.Sizeof(*new(T))
	var out *Info
	err := h.do(op, []cuda.Memory{a.Data}, func() error {
		info, err := newInfo(h, op, infoMinor, count)
		if err != nil {
			return err
		}
		if count == 0 {
			out = info
			return nil
		}
		fill := a.fill(tri)
		if n <= 1 {
			fill = fillLower // one element is both triangles
		}
		base, ptrSlot, keySlot := a.ptr(), &h.ptrs, &h.ptrsKey
		transposed := false
		if fill == fillUpper {
			// cuSOLVER's slow triangle: into the workspace, transposed,
			// where it is the fast one (transpose.go).
			var ok bool
			ok, err = prepareTranspose[T](h, op, n, count)
			var work uintptr
			if err == nil && ok {
				work, _, err = h.workspace(op, size*uintptr(count), 0)
			}
			if err == nil && ok {
				ok, err = transpose[T](h, op, work, a.ptr(), true)
			}
			if err != nil {
				info.discard(&err)
				return err
			}
			if ok {
				base, ptrSlot, keySlot, fill, transposed = work, &h.workPtrs, &h.workPtrsKey, fillLower, true
			}
		}
		ptrs, err := h.pointers(ptrSlot, keySlot, base, size, count)
		if err != nil {
			info.discard(&err)
			return err
		}
		if isF64[T]() {
			err = check(op, "cusolverDnDpotrfBatched", clib.DnDpotrfBatched(h.raw.h, fill, int32(n), ptrs, int32(a.ld()), info.ptr(), int32(count)))
		} else {
			err = check(op, "cusolverDnSpotrfBatched", clib.DnSpotrfBatched(h.raw.h, fill, int32(n), ptrs, int32(a.ld()), info.ptr(), int32(count)))
		}
		if err == nil && transposed {
			_, err = transpose[T](h, op, a.ptr(), base, false)
		}
		if err != nil {
			info.discard(&err)
			return err
		}
		out = info
		return nil
	})
	return out, err
}

// pointers returns the device address of an array of count device
// pointers, base and every size bytes after it, uploading it in stream
// order unless h holds that array already in *buf (made for *key). Called
// in do.
func (h *Handle) pointers(buf **cuda.DeviceBuffer[uint64], key *[3]uintptr, base, size uintptr, count int) (uintptr, error) {
	want := [3]uintptr{base, size, uintptr(count)}
	if *buf != nil && *key == want {
		return uintptr((*buf).Ptr()), nil
	}
	if *buf != nil {
		if err := (*buf).FreeOn(h.base.Stream()); err != nil {
			return 0, err
		}
		*buf = nil
	}
	host := make([]uint64, count)
	for i := range host {
		host[i] = uint64(base + uintptr(i)*size)
	}
	b, err := cuda.AllocAsync[uint64](h.base.Stream(), count)
	if err != nil {
		return 0, err
	}
	if err := b.CopyFromHostAsync(host, h.base.Stream()); err != nil {
		freeTemp(&err, b, h.base.Stream())
		return 0, err
	}
	*buf, *key = b, want
	return uintptr(b.Ptr()), nil
}

// SVDBatched computes the SVDs A = U·S·Vᵀ of count m×n matrices (m and n
// at most MaxBatchedDim) packed one after another in a's buffer (a
// describes the first), overwriting them, by cuSOLVER's Jacobi method
// (cusolverDnSgesvdjBatched, cusolverDnDgesvdjBatched), queued on h's
// stream: s receives min(m,n) singular values a matrix, descending; u
// (m×m a matrix) and v (n×n) the singular vectors, each contiguous (U and
// V column-major, whatever a's layout), or nothing where both are nil. The
// Info's Err names each matrix that did not converge.
func SVDBatched[T cuda.Float](h *Handle, a Matrix[T], count int, s, u, v *cuda.DeviceBuffer[T]) (*Info, error) {
	const op = "SVDBatched"
	if err := checkBatch(h, op, a, count); err != nil {
		return nil, err
	}
	m, n := a.Rows, a.Cols
	switch {
	case m < 1 || n < 1 || m > MaxBatchedDim || n > MaxBatchedDim:
		return nil, errorf(op, cuda.ErrInvalidValue, "a is %d×%d: the Jacobi batch takes 1 to %d rows and columns", m, n, MaxBatchedDim)
	case (u == nil) != (v == nil):
		return nil, errorf(op, cuda.ErrInvalidValue, "give both u and v, or neither")
	}
	if err := checkVectors(op, "s", s, min(m, n), count, h.base.Context()); err != nil {
		return nil, err
	}
	mem := []cuda.Memory{a.Data, s}
	vectors := u != nil
	if vectors {
		if err := checkVectors(op, "u", u, m*m, count, h.base.Context()); err != nil {
			return nil, err
		}
		if err := checkVectors(op, "v", v, n*n, count, h.base.Context()); err != nil {
			return nil, err
		}
		mem = append(mem, u, v)
	}
	bufs := []struct {
		b *cuda.DeviceBuffer[T]
		n int
	}{{a.Data, m * n * count}, {s, min(m, n) * count}}
	if vectors {
		bufs = append(bufs, struct {
			b *cuda.DeviceBuffer[T]
			n int
		}{u, m * m * count}, struct {
			b *cuda.DeviceBuffer[T]
			n int
		}{v, n * n * count})
	}
	for i := range bufs {
		for j := i + 1; j < len(bufs); j++ {
			if overlap(bufs[i].b, bufs[i].n, bufs[j].b, bufs[j].n) {
				return nil, errorf(op, cuda.ErrInvalidValue, "a, s, u and v must not overlap")
			}
		}
	}
	// cuSOLVER sees cm×cn matrices; of a row-major a, Aᵀ, whose U is A's
	// V: hand it v as its U and u as its V.
	cm, cn := a.cuRows(), a.cuCols()
	cu, cv := u, v
	if a.Layout == RowMajor {
		cu, cv = v, u
	}
	jobz := int32(eigNoVector)
	var pu, pv uintptr
	if vectors {
		jobz, pu, pv = eigVector, uintptr(cu.Ptr()), uintptr(cv.Ptr())
	}
	var out *Info
	err := h.do(op, mem, func() error {
		info, err := newInfo(h, op, infoConvergence, count)
		if err != nil {
			return err
		}
		if count == 0 {
			out = info
			return nil
		}
		var lw int32
		if isF64[T]() {
			err = check(op, "cusolverDnDgesvdjBatched_bufferSize", clib.DnDgesvdjBatched_bufferSize(h.raw.h, jobz, int32(cm), int32(cn), a.ptr(), int32(cm), uintptr(s.Ptr()), pu, int32(cm), pv, int32(cn), &lw, h.raw.svdj, int32(count)))
		} else {
			err = check(op, "cusolverDnSgesvdjBatched_bufferSize", clib.DnSgesvdjBatched_bufferSize(h.raw.h, jobz, int32(cm), int32(cn), a.ptr(), int32(cm), uintptr(s.Ptr()), pu, int32(cm), pv, int32(cn), &lw, h.raw.svdj, int32(count)))
		}
		var work uintptr
		if err == nil {
			work, err = lwork[T](h, op, lw)
		}
		if err == nil {
			if isF64[T]() {
				err = check(op, "cusolverDnDgesvdjBatched", clib.DnDgesvdjBatched(h.raw.h, jobz, int32(cm), int32(cn), a.ptr(), int32(cm), uintptr(s.Ptr()), pu, int32(cm), pv, int32(cn), work, lw, info.ptr(), h.raw.svdj, int32(count)))
			} else {
				err = check(op, "cusolverDnSgesvdjBatched", clib.DnSgesvdjBatched(h.raw.h, jobz, int32(cm), int32(cn), a.ptr(), int32(cm), uintptr(s.Ptr()), pu, int32(cm), pv, int32(cn), work, lw, info.ptr(), h.raw.svdj, int32(count)))
			}
		}
		if err != nil {
			info.discard(&err)
			return err
		}
		out = info
		return nil
	})
	return out, err
}

// EighBatched computes the eigenvalues (ascending, n a matrix, into w)
// and with vectors true the eigenvectors of count symmetric n×n matrices
// (n at most MaxBatchedDim) packed one after another in a's buffer (a
// describes the first), read from their triangle tri, by cuSOLVER's Jacobi
// method (cusolverDnSsyevjBatched, cusolverDnDsyevjBatched), queued on h's
// stream; the eigenvectors overwrite the matrices, each contiguous, as
// Eigh's. The Info's Err names each matrix that did not converge.
func EighBatched[T cuda.Float](h *Handle, a Matrix[T], count int, tri Triangle, w *cuda.DeviceBuffer[T], vectors bool) (*Info, error) {
	const op = "EighBatched"
	if err := checkBatch(h, op, a, count); err != nil {
		return nil, err
	}
	if err := checkSymmetric(h, op, a, tri); err != nil {
		return nil, err
	}
	n := a.Rows
	if n < 1 || n > MaxBatchedDim {
		return nil, errorf(op, cuda.ErrInvalidValue, "a is %d×%d: the Jacobi batch takes 1 to %d rows and columns", n, n, MaxBatchedDim)
	}
	if err := checkVectors(op, "w", w, n, count, h.base.Context()); err != nil {
		return nil, err
	}
	if overlap(w, n*count, a.Data, n*n*count) {
		return nil, errorf(op, cuda.ErrInvalidValue, "w overlaps a")
	}
	jobz := int32(eigNoVector)
	if vectors {
		jobz = eigVector
	}
	var out *Info
	err := h.do(op, []cuda.Memory{a.Data, w}, func() error {
		info, err := newInfo(h, op, infoConvergence, count)
		if err != nil {
			return err
		}
		if count == 0 {
			out = info
			return nil
		}
		fill := a.fill(tri)
		var lw int32
		if isF64[T]() {
			err = check(op, "cusolverDnDsyevjBatched_bufferSize", clib.DnDsyevjBatched_bufferSize(h.raw.h, jobz, fill, int32(n), a.ptr(), int32(n), uintptr(w.Ptr()), &lw, h.raw.syevj, int32(count)))
		} else {
			err = check(op, "cusolverDnSsyevjBatched_bufferSize", clib.DnSsyevjBatched_bufferSize(h.raw.h, jobz, fill, int32(n), a.ptr(), int32(n), uintptr(w.Ptr()), &lw, h.raw.syevj, int32(count)))
		}
		var work uintptr
		if err == nil {
			work, err = lwork[T](h, op, lw)
		}
		if err == nil {
			if isF64[T]() {
				err = check(op, "cusolverDnDsyevjBatched", clib.DnDsyevjBatched(h.raw.h, jobz, fill, int32(n), a.ptr(), int32(n), uintptr(w.Ptr()), work, lw, info.ptr(), h.raw.syevj, int32(count)))
			} else {
				err = check(op, "cusolverDnSsyevjBatched", clib.DnSsyevjBatched(h.raw.h, jobz, fill, int32(n), a.ptr(), int32(n), uintptr(w.Ptr()), work, lw, info.ptr(), h.raw.syevj, int32(count)))
			}
		}
		if err != nil {
			info.discard(&err)
			return err
		}
		out = info
		return nil
	})
	return out, err
}

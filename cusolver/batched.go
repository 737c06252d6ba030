package cusolver

import (
	"cmp"
	"errors"
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
func checkBatch[T Element](h *Handle, op string, a Matrix[T], count int) error {
	if err := h.valid(op); err != nil {
		return err
	}
	if count < 0 || count > maxDim {
		return errorf(op, cuda.ErrInvalidValue, "count is %d: want 0 to %d", count, maxDim)
	}
	// The buffer holds count matrices: none where count is 0.
	if err := a.checkShape(op, "a", h.base.Context()); err != nil {
		return err
	}
	size := a.Rows * a.Cols
	if size > 0 && count > math.MaxInt/size {
		return errorf(op, cuda.ErrInvalidValue, "%d matrices of %d×%d are beyond any buffer", count, a.Rows, a.Cols)
	}
	if need, have := size*count, a.Data.Len(); need > have {
		return errorf(op, cuda.ErrInvalidValue, "a: %d matrices of %d×%d need %d elements; its buffer holds %d", count, a.Rows, a.Cols, need, have)
	}
	return nil
}

// CholeskyBatched factors count symmetric positive definite n×n matrices
// in place, packed one after another in a's buffer (a describes the
// first), as Cholesky does each (cusolverDnSpotrfBatched,
// cusolverDnDpotrfBatched; cusolverDnCpotrfBatched and
// cusolverDnZpotrfBatched for complex matrices, Hermitian: L·Lᴴ or Uᴴ·U,
// in either layout and triangle, as Cholesky's), queued on h's stream.
// The Info's Err names each matrix that was not positive definite (the
// first 8), counted from 0. A count of 0 queues nothing (a's buffer may
// then be empty; its shape and tri are still checked). As Cholesky, it reads and writes only the
// triangle tri, as a's layout reads it; the other triangle is left as it
// was.
//
// cuSOLVER's batch is fast in one triangle: its column-major lower one,
// which is a row-major Upper or a column-major Lower (10,000 8×8 matrices
// in 39-41 µs on an H100). In the other (a row-major Lower, a
// column-major Upper) cuSOLVER is about 2.8 times slower, so there the
// triangle tri of each matrix is transposed into h's device workspace by
// a kernel of the package's own (PTX, compiled by the driver at h's first
// such batch and kept until h's Close), factored there in the fast
// triangle, and the factor transposed back: two copies of the batch's
// triangles (n(n+1)/2 of each matrix's n² elements) through memory more,
// a fraction of what cuSOLVER's slow triangle costs; the other triangle
// is neither read nor written there either. The workspace grows to the batch's size
// (count·n·n elements) and is reused as the handle's other workspaces
// are. Where the driver refuses the kernel, for matrices of 65,536 rows or
// more, and for a buffer not aligned to its elements (4 bytes for
// float32, 8 for the others), the batch is factored in place in
// cuSOLVER's slow triangle: the same result, slower. The transposes are
// plain ones, not conjugate ones, for complex matrices too: what turns one
// storage order into the other (transpose.go says why the factor is then
// the caller's). The arrays of pointers cuSOLVER takes (one for a's
// batch, one for the workspace's) are kept by h for the next call on the
// same batch.
func CholeskyBatched[T Element](h *Handle, a Matrix[T], count int, tri Triangle) (*Info, error) {
	const op = "CholeskyBatched"
	if err := checkBatch(h, op, a, count); err != nil {
		return nil, err
	}
	if err := errors.Join(checkTriangle(op, tri), a.square(op, "a")); err != nil {
		return nil, err
	}
	n := a.Rows
	size := uintptr(n*n) * unsafe.Sizeof(*new(T))
	var out *Info
	err := h.do(op, []cuda.Memory{a.Data}, func() error {
		info, err := newBatchInfo(h, op, infoMinor, count)
		if err != nil {
			return err
		}
		if count == 0 {
			out = info
			return nil
		}
		if n == 0 {
			// Matrices of no elements: nothing to factor.
			if err := info.zero(); err != nil {
				return err
			}
			out = info
			return nil
		}
		fill := a.fill(tri)
		if n <= 1 {
			fill = fillLower // one element is both triangles
		}
		base, ptrSlot, keySlot := a.ptr(), &h.ptrs, &h.ptrsKey
		// cuSOLVER's slow triangle: its elements into the workspace's
		// lower triangle, transposed, where it is the fast one, and the
		// factor back from there (transpose.go).
		tr, err := slowTriangle[T](h, fill, n, a.ptr())
		var work uintptr
		if err == nil && tr != nil {
			work, _, err = h.workspace(op, size*uintptr(count), 0)
		}
		if err == nil && tr != nil {
			err = transpose[T](h, tr, work, a.ptr(), n, count, false)
		}
		if err != nil {
			info.discard(&err)
			return err
		}
		if tr != nil {
			base, ptrSlot, keySlot, fill = work, &h.workPtrs, &h.workPtrsKey, fillLower
		}
		ptrs, err := h.pointers(ptrSlot, keySlot, base, size, count)
		if err != nil {
			info.discard(&err)
			return err
		}
		k := elemIndex[T]()
		err = check(op, potrfBatched[k].name, potrfBatched[k].f(h.raw.h, fill, int32(n), ptrs, int32(a.ld()), info.ptr(), int32(count)))
		if err == nil && tr != nil {
			err = transpose[T](h, tr, a.ptr(), base, n, count, true)
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
// Info's Err names each matrix that did not converge. A count of 0 queues
// nothing (the buffers may then be empty).
//
// A complex batch (complex64, complex128: cusolverDnCgesvdjBatched,
// cusolverDnZgesvdjBatched) has A = U·S·Vᴴ, U and V unitary, and real
// singular values: s holds float32 for float32 and complex64 matrices,
// float64 for float64 and complex128 ones (R; another is refused), as
// SVD's. Of a row-major complex A's memory cuSOLVER computes Aᵀ =
// conj(V)·S·conj(U)ᴴ: the vectors come out conjugated, so that u and v
// read column-major are conj(U) and conj(V), and read row-major Uᴴ and
// Vᴴ (as Eigh's row-major vectors are Vᴴ).
func SVDBatched[T Element, R cuda.Float](h *Handle, a Matrix[T], count int, s *cuda.DeviceBuffer[R], u, v *cuda.DeviceBuffer[T]) (*Info, error) {
	const op = "SVDBatched"
	if err := checkBatch(h, op, a, count); err != nil {
		return nil, err
	}
	if err := checkReal[T, R](op, "s"); err != nil {
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
	if overlapAny(s, min(m, n)*count, a.Data, m*n*count) || vectors && (overlapAny(s, min(m, n)*count, u, m*m*count) || overlapAny(s, min(m, n)*count, v, n*n*count)) {
		return nil, cmp.Or(closedArg(op, "a", a.Data), closedArg(op, "s", s), closedArg(op, "u", u), closedArg(op, "v", v),
			errorf(op, cuda.ErrInvalidValue, "a, s, u and v must not overlap"))
	}
	bufs := []struct {
		b *cuda.DeviceBuffer[T]
		n int
	}{{a.Data, m * n * count}}
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
				return nil, cmp.Or(closedArg(op, "a", a.Data), closedArg(op, "s", s), closedArg(op, "u", u), closedArg(op, "v", v),
					errorf(op, cuda.ErrInvalidValue, "a, s, u and v must not overlap"))
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
		info, err := newBatchInfo(h, op, infoConvergence, count)
		if err != nil {
			return err
		}
		if count == 0 {
			out = info
			return nil
		}
		var lw int32
		f := gesvdjBatched[elemIndex[T]()]
		err = check(op, f.name+"_bufferSize", f.size(h.raw.h, jobz, int32(cm), int32(cn), a.ptr(), int32(cm), uintptr(s.Ptr()), pu, int32(cm), pv, int32(cn), &lw, h.raw.svdj, int32(count)))
		var work uintptr
		if err == nil {
			work, err = lwork[T](h, op, lw)
		}
		if err == nil {
			err = check(op, f.name, f.f(h.raw.h, jobz, int32(cm), int32(cn), a.ptr(), int32(cm), uintptr(s.Ptr()), pu, int32(cm), pv, int32(cn), work, lw, info.ptr(), h.raw.svdj, int32(count)))
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
// Eigh's. The Info's Err names each matrix that did not converge. A count
// of 0 queues nothing (the buffers may then be empty).
//
// Complex matrices (complex64, complex128: cusolverDnCheevjBatched,
// cusolverDnZheevjBatched) are Hermitian, A = V·Λ·Vᴴ, the imaginary parts
// of their diagonals not read, and their eigenvalues real: w holds float32
// for float32 and complex64 matrices, float64 for float64 and complex128
// ones (R; another is refused), as Eigh's. As Eigh's, a row-major complex
// batch's vectors come out conjugated (cuSOLVER sees conj(A)): each
// matrix's memory reads V column-major, Vᴴ row-major.
func EighBatched[T Element, R cuda.Float](h *Handle, a Matrix[T], count int, tri Triangle, w *cuda.DeviceBuffer[R], vectors bool) (*Info, error) {
	const op = "EighBatched"
	if err := checkBatch(h, op, a, count); err != nil {
		return nil, err
	}
	if err := checkReal[T, R](op, "w"); err != nil {
		return nil, err
	}
	if err := errors.Join(checkTriangle(op, tri), a.square(op, "a")); err != nil {
		return nil, err
	}
	n := a.Rows
	if n < 1 || n > MaxBatchedDim {
		return nil, errorf(op, cuda.ErrInvalidValue, "a is %d×%d: the Jacobi batch takes 1 to %d rows and columns", n, n, MaxBatchedDim)
	}
	if err := checkVectors(op, "w", w, n, count, h.base.Context()); err != nil {
		return nil, err
	}
	if overlapAny(w, n*count, a.Data, n*n*count) {
		return nil, cmp.Or(closedArg(op, "w", w), closedArg(op, "a", a.Data), errorf(op, cuda.ErrInvalidValue, "w overlaps a"))
	}
	jobz := int32(eigNoVector)
	if vectors {
		jobz = eigVector
	}
	var out *Info
	err := h.do(op, []cuda.Memory{a.Data, w}, func() error {
		info, err := newBatchInfo(h, op, infoConvergence, count)
		if err != nil {
			return err
		}
		if count == 0 {
			out = info
			return nil
		}
		fill := a.fill(tri)
		var lw int32
		f := syevjBatched[elemIndex[T]()]
		err = check(op, f.name+"_bufferSize", f.size(h.raw.h, jobz, fill, int32(n), a.ptr(), int32(n), uintptr(w.Ptr()), &lw, h.raw.syevj, int32(count)))
		var work uintptr
		if err == nil {
			work, err = lwork[T](h, op, lw)
		}
		if err == nil {
			err = check(op, f.name, f.f(h.raw.h, jobz, fill, int32(n), a.ptr(), int32(n), uintptr(w.Ptr()), work, lw, info.ptr(), h.raw.syevj, int32(count)))
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

// The batched calls' typed functions, by elemIndex (float32, float64,
// complex64, complex128): the same arguments in each, the matrices'
// elements of the type, the singular values and eigenvalues real.
var (
	potrfBatched = [4]struct {
		name string
		f    func(clib.Handle, int32, int32, uintptr, int32, uintptr, int32) clib.Result
	}{
		{"cusolverDnSpotrfBatched", clib.DnSpotrfBatched},
		{"cusolverDnDpotrfBatched", clib.DnDpotrfBatched},
		{"cusolverDnCpotrfBatched", clib.DnCpotrfBatched},
		{"cusolverDnZpotrfBatched", clib.DnZpotrfBatched},
	}
	gesvdjBatched = [4]struct {
		name string
		size func(clib.Handle, int32, int32, int32, uintptr, int32, uintptr, uintptr, int32, uintptr, int32, *int32, clib.GesvdjInfo, int32) clib.Result
		f    func(clib.Handle, int32, int32, int32, uintptr, int32, uintptr, uintptr, int32, uintptr, int32, uintptr, int32, uintptr, clib.GesvdjInfo, int32) clib.Result
	}{
		{"cusolverDnSgesvdjBatched", clib.DnSgesvdjBatched_bufferSize, clib.DnSgesvdjBatched},
		{"cusolverDnDgesvdjBatched", clib.DnDgesvdjBatched_bufferSize, clib.DnDgesvdjBatched},
		{"cusolverDnCgesvdjBatched", clib.DnCgesvdjBatched_bufferSize, clib.DnCgesvdjBatched},
		{"cusolverDnZgesvdjBatched", clib.DnZgesvdjBatched_bufferSize, clib.DnZgesvdjBatched},
	}
	syevjBatched = [4]struct {
		name string
		size func(clib.Handle, int32, int32, int32, uintptr, int32, uintptr, *int32, clib.SyevjInfo, int32) clib.Result
		f    func(clib.Handle, int32, int32, int32, uintptr, int32, uintptr, uintptr, int32, uintptr, clib.SyevjInfo, int32) clib.Result
	}{
		{"cusolverDnSsyevjBatched", clib.DnSsyevjBatched_bufferSize, clib.DnSsyevjBatched},
		{"cusolverDnDsyevjBatched", clib.DnDsyevjBatched_bufferSize, clib.DnDsyevjBatched},
		{"cusolverDnCheevjBatched", clib.DnCheevjBatched_bufferSize, clib.DnCheevjBatched},
		{"cusolverDnZheevjBatched", clib.DnZheevjBatched_bufferSize, clib.DnZheevjBatched},
	}
)

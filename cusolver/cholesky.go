package cusolver

import (
	"cmp"
	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cusolver"
	"unsafe"
)

// CholeskyFactor is the Cholesky factor of a symmetric positive definite
// matrix, in one triangle of the matrix's own memory, with its info.
type CholeskyFactor[T Element] struct {
	info *Info
	a    Matrix[T]
	tri  Triangle
}

// Err waits for the handle's stream to finish the factorization, and says
// whether the matrix was positive definite (ErrNotPositiveDefinite, naming
// the first leading minor that is not); see Info.Err.
func (f *CholeskyFactor[T]) Err() error {
	if f == nil || f.info == nil {
		return errorf("CholeskyFactor.Err", cuda.ErrInvalidValue, "a nil or zero *CholeskyFactor: Cholesky returns one")
	}
	return f.info.Err()
}

// Free frees the info in stream order if Err has not read it (see
// Info.Free); the factor itself is in the matrix, the caller's.
func (f *CholeskyFactor[T]) Free() error {
	if f == nil || f.info == nil {
		return errorf("CholeskyFactor.Free", cuda.ErrInvalidValue, "a nil or zero *CholeskyFactor: Cholesky returns one")
	}
	return f.info.Free()
}

// Matrix returns the factored matrix and the triangle holding the factor:
// L (A = L·Lᵀ) in Lower, U (A = Uᵀ·U) in Upper, as the matrix's layout
// reads it.
func (f *CholeskyFactor[T]) Matrix() (Matrix[T], Triangle) {
	if f == nil {
		return Matrix[T]{}, Lower
	}
	return f.a, f.tri
}

// Cholesky factors the symmetric positive definite matrix a in place
// (cusolverDnXpotrf), queued on h's stream: reading triangle tri of a, as
// a's layout reads it, it writes there L with A = L·Lᵀ (Lower) or U with
// A = Uᵀ·U (Upper), and leaves the other triangle as it was. A complex a
// is Hermitian, and the factor L·Lᴴ's or Uᴴ·U's, in either layout (the
// memory of a row-major A is conj(A) to cuSOLVER, whose factor, read
// row-major, is A's). The returned
// factor's Err says (waiting for the stream) whether a was positive
// definite: ErrNotPositiveDefinite, naming the first leading minor that is
// not. In cuSOLVER's slow triangle (a row-major Lower, a column-major
// Upper: twice the time of the other at n = 256 and 1024 on an H100) the
// matrix's triangle tri is transposed into h's workspace, factored there
// in the fast one and the factor transposed back, as CholeskyBatched's
// batch is; the other triangle is still neither read nor written.
func Cholesky[T Element](h *Handle, a Matrix[T], tri Triangle) (*CholeskyFactor[T], error) {
	const op = "Cholesky"
	if err := checkSymmetric(h, op, a, tri); err != nil {
		return nil, err
	}
	n := a.Rows
	var f *CholeskyFactor[T]
	err := h.do(op, []cuda.Memory{a.Data}, func() error {
		info, err := newInfo(h, op, infoMinor, 1)
		if err != nil {
			return err
		}
		if n == 0 {
			if err := info.zero(); err != nil {
				return err
			}
			f = &CholeskyFactor[T]{info: info, a: a, tri: tri}
			return nil
		}
		dt, fill := dataType[T](), a.fill(tri)
		// cuSOLVER's slow triangle (a row-major Lower, a column-major
		// Upper: twice PyTorch's time at n = 256 and 1024 on an H100,
		// whose factor is in the other) is factored transposed, in the
		// handle's workspace after potrf's own, as CholeskyBatched's is:
		// the triangle in, the factor's triangle out; the workspace's
		// other triangle is neither written nor read (by potrf, in its
		// lower triangle).
		tr, err := slowTriangle[T](h, fill, n, a.ptr())
		base, ld := a.ptr(), a.ld()
		if err == nil && tr != nil {
			fill, ld = fillLower, n
		}
		var dev, host, off uintptr
		if err == nil {
			err = check(op, "cusolverDnXpotrf_bufferSize", clib.DnXpotrf_bufferSize(h.raw.h, h.raw.params, fill, int64(n), dt, base, int64(ld), dt, &dev, &host))
		}
		if err == nil {
			size := dev
			if tr != nil {
				off = (dev + 255) &^ 255
				size = off + uintptr(n*n)*unsafe.Sizeof(*new(T))
			}
			d, p, werr := h.workspace(op, size, host)
			err = werr
			if err == nil && tr != nil {
				base = d + off
				err = transpose[T](h, tr, base, a.ptr(), n, 1, false)
			}
			if err == nil {
				err = check(op, "cusolverDnXpotrf", clib.DnXpotrf(h.raw.h, h.raw.params, fill, int64(n), dt, base, int64(ld), dt, d, dev, p, host, info.ptr()))
			}
			if err == nil && tr != nil {
				err = transpose[T](h, tr, a.ptr(), base, n, 1, true)
			}
		}
		if err != nil {
			info.discard(&err)
			return err
		}
		f = &CholeskyFactor[T]{info: info, a: a, tri: tri}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// checkSymmetric checks h, and a square matrix a and triangle tri.
func checkSymmetric[T Element](h *Handle, op string, a Matrix[T], tri Triangle) error {
	if err := h.valid(op); err != nil {
		return err
	}
	if err := checkTriangle(op, tri); err != nil {
		return err
	}
	if err := a.check(op, "a", h.base.Context()); err != nil {
		return err
	}
	return a.square(op, "a")
}

// checkTriangle returns the error for a triangle that is neither Lower nor
// Upper.
func checkTriangle(op string, tri Triangle) error {
	if tri != Lower && tri != Upper {
		return errorf(op, cuda.ErrInvalidValue, "tri is %d: want Lower or Upper", tri)
	}
	return nil
}

// factor checks f for op.
func (f *CholeskyFactor[T]) usable(h *Handle, op string) error {
	if err := h.valid(op); err != nil {
		return err
	}
	switch {
	case f == nil || f.info == nil:
		return errorf(op, cuda.ErrInvalidValue, "f is a nil or zero *CholeskyFactor: Cholesky returns one")
	case f.info.h != h:
		return errorf(op, cuda.ErrInvalidValue, "f was made by another handle")
	}
	return nil
}

// CholeskySolve solves A·X = B with f's factor, queued on h's stream
// (cusolverDnXpotrs): b holds nrhs right-hand sides of n elements each,
// one after another (B column-major; the rows of a row-major nrhs×n
// matrix), overwritten with the solutions. A matrix that was not positive
// definite is f's Err; CholeskySolve does not wait for it. A complex
// matrix must be column-major here: of a row-major one cuSOLVER would
// solve with conj(A).
func CholeskySolve[T Element](h *Handle, f *CholeskyFactor[T], b *cuda.DeviceBuffer[T], nrhs int) error {
	const op = "CholeskySolve"
	if err := f.usable(h, op); err != nil {
		return err
	}
	n := f.a.Rows
	if isComplex[T]() && f.a.Layout == RowMajor {
		// The memory of a row-major Hermitian A is, column-major, Aᵀ =
		// conj(A), whose solve is conj(A⁻¹·conj(B)): not A's.
		return errorf(op, cuda.ErrInvalidValue, "f's matrix is complex and row-major: CholeskySolve of a complex matrix takes it column-major (its row-major memory is conj(A) to cuSOLVER)")
	}
	if err := checkVectors(op, "b", b, n, nrhs, h.base.Context()); err != nil {
		return err
	}
	if overlap(b, n*nrhs, f.a.Data, n*n) {
		return cmp.Or(closedArg(op, "b", b), closedArg(op, "f's matrix", f.a.Data), errorf(op, cuda.ErrInvalidValue, "b overlaps f's matrix"))
	}
	mem := []cuda.Memory{f.a.Data, b}
	if n == 0 || nrhs == 0 {
		return h.core().Idle(op, mem) // nothing to solve
	}
	return h.do(op, mem, func() error {
		info, err := h.scratchInfo()
		if err != nil {
			return err
		}
		dt := dataType[T]()
		return check(op, "cusolverDnXpotrs", clib.DnXpotrs(h.raw.h, h.raw.params, f.a.fill(f.tri), int64(n), int64(nrhs), dt, f.a.ptr(), int64(f.a.ld()), dt, uintptr(b.Ptr()), int64(max(n, 1)), info))
	})
}

// CholeskyInverse overwrites f's triangle with that of A⁻¹, queued on h's
// stream (cusolverDnSpotri, Dpotri, Cpotri, Zpotri: cuSOLVER has no
// 64-bit form): the inverse of a symmetric (or Hermitian) matrix is
// symmetric (Hermitian), and as LAPACK's potri only the triangle that
// held the factor is written; the other is left as it was. A complex
// matrix may be in either layout: the inverse of conj(A), which cuSOLVER
// sees in a row-major A's memory, read row-major is A⁻¹. f holds the inverse afterwards, no longer the factor.
// The returned Info's Err says whether the factor had a zero on its
// diagonal.
func CholeskyInverse[T Element](h *Handle, f *CholeskyFactor[T]) (*Info, error) {
	const op = "CholeskyInverse"
	if err := f.usable(h, op); err != nil {
		return nil, err
	}
	n := f.a.Rows
	var out *Info
	err := h.do(op, []cuda.Memory{f.a.Data}, func() error {
		info, err := newInfo(h, op, infoInverse, 1)
		if err != nil {
			return err
		}
		if n == 0 {
			if err := info.zero(); err != nil {
				return err
			}
			out = info
			return nil
		}
		fill, a, lda := f.a.fill(f.tri), f.a.ptr(), int32(f.a.ld())
		// The typed functions, by element type: S, D, C, Z.
		var lw int32
		switch dataType[T]() {
		case typeF32:
			err = check(op, "cusolverDnSpotri_bufferSize", clib.DnSpotri_bufferSize(h.raw.h, fill, int32(n), a, lda, &lw))
		case typeF64:
			err = check(op, "cusolverDnDpotri_bufferSize", clib.DnDpotri_bufferSize(h.raw.h, fill, int32(n), a, lda, &lw))
		case typeC32:
			err = check(op, "cusolverDnCpotri_bufferSize", clib.DnCpotri_bufferSize(h.raw.h, fill, int32(n), a, lda, &lw))
		default:
			err = check(op, "cusolverDnZpotri_bufferSize", clib.DnZpotri_bufferSize(h.raw.h, fill, int32(n), a, lda, &lw))
		}
		var work uintptr
		if err == nil {
			work, err = lwork[T](h, op, lw)
		}
		if err == nil {
			switch dataType[T]() {
			case typeF32:
				err = check(op, "cusolverDnSpotri", clib.DnSpotri(h.raw.h, fill, int32(n), a, lda, work, lw, info.ptr()))
			case typeF64:
				err = check(op, "cusolverDnDpotri", clib.DnDpotri(h.raw.h, fill, int32(n), a, lda, work, lw, info.ptr()))
			case typeC32:
				err = check(op, "cusolverDnCpotri", clib.DnCpotri(h.raw.h, fill, int32(n), a, lda, work, lw, info.ptr()))
			default:
				err = check(op, "cusolverDnZpotri", clib.DnZpotri(h.raw.h, fill, int32(n), a, lda, work, lw, info.ptr()))
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

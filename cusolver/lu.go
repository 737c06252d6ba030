package cusolver

import (
	"cmp"
	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cusolver"
)

// LUFactors is an LU factorization with partial pivoting of an n×n matrix, in
// the matrix's own memory, with its pivots (device memory it owns) and its
// info. Free it when done.
type LUFactors[T Element] struct {
	info *Info
	a    Matrix[T]
	piv  *cuda.DeviceBuffer[int64]
}

// Err waits for the handle's stream to finish the factorization, and says
// whether the matrix was singular (ErrSingular, naming the zero pivot); see
// Info.Err.
func (f *LUFactors[T]) Err() error {
	if f == nil || f.info == nil {
		return errorf("LUFactors.Err", cuda.ErrInvalidValue, "a nil or zero *LUFactors: LU returns one")
	}
	return f.info.Err()
}

// Matrix returns the factored matrix (its memory holds L and U of the
// matrix cuSOLVER saw: Aᵀ for a row-major a).
func (f *LUFactors[T]) Matrix() Matrix[T] {
	if f == nil {
		return Matrix[T]{}
	}
	return f.a
}

// Free frees the pivots in stream order (after the work queued that uses
// them), and the info if Err has not read it (see Info.Free). Free of a
// freed LUFactors does nothing.
func (f *LUFactors[T]) Free() error {
	if f == nil || f.info == nil {
		return errorf("LUFactors.Free", cuda.ErrInvalidValue, "a nil or zero *LUFactors: LU returns one")
	}
	f.info.mu.Lock()
	defer f.info.mu.Unlock()
	var err error
	if f.info.discard(&err); err == nil && !f.info.read {
		f.info.freed = true
	}
	if f.piv != nil {
		var perr error
		if freeTemp(&perr, f.piv, f.info.h.base.Stream()); perr == nil {
			f.piv = nil
		}
		if err == nil {
			err = perr
		}
	}
	return err
}

// LU factors the square matrix a in place, P·A = L·U with partial
// pivoting (cusolverDnXgetrf), queued on h's stream. The returned LUFactors'
// Err says (waiting for the stream) whether a was singular; Solve uses it.
func LU[T Element](h *Handle, a Matrix[T]) (*LUFactors[T], error) {
	const op = "LU"
	if err := h.valid(op); err != nil {
		return nil, err
	}
	if err := a.check(op, "a", h.base.Context()); err != nil {
		return nil, err
	}
	if err := a.square(op, "a"); err != nil {
		return nil, err
	}
	n := a.Rows
	var f *LUFactors[T]
	err := h.do(op, []cuda.Memory{a.Data}, func() error {
		info, err := newInfo(h, op, infoPivot, 1)
		if err != nil {
			return err
		}
		piv, err := cuda.AllocAsync[int64](h.base.Stream(), max(n, 1))
		if err != nil {
			info.discard(&err)
			return err
		}
		f = &LUFactors[T]{info: info, a: a, piv: piv}
		if n == 0 {
			if err = info.zero(); err != nil {
				freeTemp(&err, piv, h.base.Stream())
				f = nil
			}
			return err
		}
		dt := dataType[T]()
		var dev, host uintptr
		err = check(op, "cusolverDnXgetrf_bufferSize", clib.DnXgetrf_bufferSize(h.raw.h, h.raw.params, int64(n), int64(n), dt, a.ptr(), int64(a.ld()), dt, &dev, &host))
		if err == nil {
			d, p, werr := h.workspace(op, dev, host)
			err = werr
			if err == nil {
				err = check(op, "cusolverDnXgetrf", clib.DnXgetrf(h.raw.h, h.raw.params, int64(n), int64(n), dt, a.ptr(), int64(a.ld()), uintptr(piv.Ptr()), dt, d, dev, p, host, info.ptr()))
			}
		}
		if err != nil {
			info.discard(&err)
			freeTemp(&err, piv, h.base.Stream())
			f = nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Solve solves A·X = B with f's factors, queued on h's stream
// (cusolverDnXgetrs): b holds nrhs right-hand sides of n elements each, one
// after another (B column-major; the rows of a row-major nrhs×n matrix),
// and is overwritten with the solutions. The answer is A's whatever a's
// layout: for a row-major a, whose transpose cuSOLVER factored, Solve asks
// cuSOLVER for the transposed solve (CUBLAS_OP_T, not the conjugate one:
// a complex A's row-major memory is Aᵀ). A singular matrix is f's Err; Solve
// does not wait for it.
func Solve[T Element](h *Handle, f *LUFactors[T], b *cuda.DeviceBuffer[T], nrhs int) error {
	const op = "Solve"
	if err := h.valid(op); err != nil {
		return err
	}
	if f == nil || f.info == nil {
		return errorf(op, cuda.ErrInvalidValue, "f is a nil or zero *LUFactors: LU returns one")
	}
	if f.info.h != h {
		return errorf(op, cuda.ErrInvalidValue, "f was made by another handle")
	}
	n := f.a.Rows
	if err := checkVectors(op, "b", b, n, nrhs, h.base.Context()); err != nil {
		return err
	}
	if overlap(b, n*nrhs, f.a.Data, n*n) {
		return cmp.Or(closedArg(op, "b", b), closedArg(op, "f's matrix", f.a.Data), errorf(op, cuda.ErrInvalidValue, "b overlaps f's matrix"))
	}
	f.info.mu.Lock()
	piv := f.piv
	f.info.mu.Unlock()
	if piv == nil {
		// Freed, as a freed buffer is: closed.
		return errorf(op, cuda.ErrClosed, "f is freed")
	}
	trans := int32(opN)
	if f.a.Layout == RowMajor {
		trans = opT
	}
	mem := []cuda.Memory{f.a.Data, b, piv}
	if n == 0 || nrhs == 0 {
		return h.core().Idle(op, mem) // nothing to solve (and nothing to ask cuSOLVER)
	}
	return h.do(op, mem, func() error {
		info, err := h.scratchInfo()
		if err != nil {
			return err
		}
		dt := dataType[T]()
		return check(op, "cusolverDnXgetrs", clib.DnXgetrs(h.raw.h, h.raw.params, trans, int64(n), int64(nrhs), dt, f.a.ptr(), int64(f.a.ld()), uintptr(piv.Ptr()), dt, uintptr(b.Ptr()), int64(max(n, 1)), info))
	})
}

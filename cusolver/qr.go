package cusolver

import (
	"cmp"
	"sync"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cusolver"
)

// QRFactors is a QR factorization A = Q·R of an m×n column-major matrix,
// as LAPACK's geqrf leaves it: R on and above the diagonal of the
// matrix's own memory, Q as min(m,n) Householder reflectors below it and
// their scales tau (device memory it owns). Of a complex matrix Q is
// unitary (QᴴQ = I). Free it when done.
type QRFactors[T Element] struct {
	h   *Handle
	a   Matrix[T]
	mu  sync.Mutex // guards tau, which Free takes
	tau *cuda.DeviceBuffer[T]
}

// Matrix returns the factored matrix: R on and above its diagonal.
func (f *QRFactors[T]) Matrix() Matrix[T] {
	if f == nil {
		return Matrix[T]{}
	}
	return f.a
}

// Tau returns the reflectors' scales, min(m,n) of them (LAPACK's tau).
func (f *QRFactors[T]) Tau() *cuda.DeviceBuffer[T] {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tau
}

// Free frees tau in stream order (after the work queued that uses it).
// Free of a freed QRFactors does nothing.
func (f *QRFactors[T]) Free() error {
	if f == nil || f.h == nil {
		return errorf("QRFactors.Free", cuda.ErrInvalidValue, "a nil or zero *QRFactors: QR returns one")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tau == nil {
		return nil
	}
	var err error
	if freeTemp(&err, f.tau, f.h.base.Stream()); err == nil {
		f.tau = nil
	}
	return err
}

// colMajor returns the error for a matrix, named name, that is not
// column-major: of a row-major matrix's memory cuSOLVER would factor Aᵀ.
func colMajor[T Element](op, name string, m Matrix[T]) error {
	if m.Layout != ColMajor {
		return errorf(op, cuda.ErrInvalidValue, "%s is row-major: QR takes column-major matrices (of a row-major one's memory cuSOLVER would factor Aᵀ, A's LQ): set Layout to ColMajor with the elements in that order", name)
	}
	return nil
}

// QR factors the column-major m×n matrix a in place, A = Q·R
// (cusolverDnXgeqrf), queued on h's stream. Complex matrices are
// factored as LAPACK's cgeqrf and zgeqrf do: Q unitary, the reflectors
// H = I - τ·v·vᴴ.
func QR[T Element](h *Handle, a Matrix[T]) (*QRFactors[T], error) {
	const op = "QR"
	if err := h.valid(op); err != nil {
		return nil, err
	}
	if err := a.check(op, "a", h.base.Context()); err != nil {
		return nil, err
	}
	if err := colMajor(op, "a", a); err != nil {
		return nil, err
	}
	m, n := a.Rows, a.Cols
	var f *QRFactors[T]
	err := h.do(op, []cuda.Memory{a.Data}, func() error {
		tau, err := cuda.AllocAsync[T](h.base.Stream(), max(min(m, n), 1))
		if err != nil {
			return err
		}
		if m == 0 || n == 0 {
			// No reflectors: nothing to factor.
			f = &QRFactors[T]{h: h, a: a, tau: tau}
			return nil
		}
		dt := dataType[T]()
		var dev, host uintptr
		err = check(op, "cusolverDnXgeqrf_bufferSize", clib.DnXgeqrf_bufferSize(h.raw.h, h.raw.params, int64(m), int64(n), dt, a.ptr(), int64(a.ld()), dt, uintptr(tau.Ptr()), dt, &dev, &host))
		var d uintptr
		if err == nil {
			dd, hp, werr := h.workspace(op, dev, host)
			d, err = dd, werr
			if err == nil {
				var info uintptr
				info, err = h.scratchInfo()
				if err == nil {
					err = check(op, "cusolverDnXgeqrf", clib.DnXgeqrf(h.raw.h, h.raw.params, int64(m), int64(n), dt, a.ptr(), int64(a.ld()), dt, uintptr(tau.Ptr()), dt, d, dev, hp, host, info))
				}
			}
		}
		if err != nil {
			freeTemp(&err, tau, h.base.Stream())
			return err
		}
		f = &QRFactors[T]{h: h, a: a, tau: tau}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// usable checks f for op and returns its tau.
func (f *QRFactors[T]) usable(h *Handle, op string) (*cuda.DeviceBuffer[T], error) {
	if err := h.valid(op); err != nil {
		return nil, err
	}
	switch {
	case f == nil || f.h == nil:
		return nil, errorf(op, cuda.ErrInvalidValue, "f is a nil or zero *QRFactors: QR returns one")
	case f.h != h:
		return nil, errorf(op, cuda.ErrInvalidValue, "f was made by another handle")
	}
	if tau := f.Tau(); tau != nil {
		return tau, nil
	}
	// Freed, as a freed buffer is: closed.
	return nil, errorf(op, cuda.ErrClosed, "f is freed")
}

// QRQ writes Q's first n columns (the m×n matrix with orthonormal columns,
// A = Q·R with R n×n) into q, column-major m×n, queued on h's stream: it
// copies f's reflectors into q and forms Q there (cusolverDnSorgqr,
// Dorgqr, and for complex matrices Cungqr, Zungqr: cuSOLVER has no 64-bit
// form). f's matrix must have at least as many rows as columns, and is
// left as it was.
func QRQ[T Element](h *Handle, f *QRFactors[T], q Matrix[T]) error {
	const op = "QRQ"
	tau, err := f.usable(h, op)
	if err != nil {
		return err
	}
	if err := q.check(op, "q", h.base.Context()); err != nil {
		return err
	}
	if err := colMajor(op, "q", q); err != nil {
		return err
	}
	m, n := f.a.Rows, f.a.Cols
	switch {
	case m < n:
		return errorf(op, cuda.ErrInvalidValue, "f's matrix is %d×%d: QRQ forms Q of a matrix with at least as many rows as columns", m, n)
	case q.Rows != m || q.Cols != n:
		return errorf(op, cuda.ErrInvalidValue, "q is %d×%d: want %d×%d, f's matrix's shape", q.Rows, q.Cols, m, n)
	case overlap(q.Data, m*n, f.a.Data, m*n):
		return cmp.Or(closedArg(op, "q", q.Data), closedArg(op, "f's matrix", f.a.Data), errorf(op, cuda.ErrInvalidValue, "q overlaps f's matrix"))
	}
	if m*n == 0 {
		return h.core().Idle(op, []cuda.Memory{f.a.Data, q.Data, tau})
	}
	src, err := f.a.Data.Slice(0, m*n)
	if err != nil {
		return err
	}
	dst, err := q.Data.Slice(0, m*n)
	if err != nil {
		return err
	}
	return h.do(op, []cuda.Memory{f.a.Data, q.Data, tau}, func() error {
		if err := dst.CopyFromDeviceAsync(src, h.base.Stream()); err != nil {
			return err
		}
		hh, mm, nn, a, lda, pt := h.raw.h, int32(m), int32(n), q.ptr(), int32(q.ld()), uintptr(tau.Ptr())
		// The typed functions, by element type: S, D, C, Z.
		var lw int32
		var err error
		switch dataType[T]() {
		case typeF32:
			err = check(op, "cusolverDnSorgqr_bufferSize", clib.DnSorgqr_bufferSize(hh, mm, nn, nn, a, lda, pt, &lw))
		case typeF64:
			err = check(op, "cusolverDnDorgqr_bufferSize", clib.DnDorgqr_bufferSize(hh, mm, nn, nn, a, lda, pt, &lw))
		case typeC32:
			err = check(op, "cusolverDnCungqr_bufferSize", clib.DnCungqr_bufferSize(hh, mm, nn, nn, a, lda, pt, &lw))
		default:
			err = check(op, "cusolverDnZungqr_bufferSize", clib.DnZungqr_bufferSize(hh, mm, nn, nn, a, lda, pt, &lw))
		}
		if err != nil {
			return err
		}
		work, err := lwork[T](h, op, lw)
		if err != nil {
			return err
		}
		info, err := h.scratchInfo()
		if err != nil {
			return err
		}
		switch dataType[T]() {
		case typeF32:
			return check(op, "cusolverDnSorgqr", clib.DnSorgqr(hh, mm, nn, nn, a, lda, pt, work, lw, info))
		case typeF64:
			return check(op, "cusolverDnDorgqr", clib.DnDorgqr(hh, mm, nn, nn, a, lda, pt, work, lw, info))
		case typeC32:
			return check(op, "cusolverDnCungqr", clib.DnCungqr(hh, mm, nn, nn, a, lda, pt, work, lw, info))
		}
		return check(op, "cusolverDnZungqr", clib.DnZungqr(hh, mm, nn, nn, a, lda, pt, work, lw, info))
	})
}

// ApplyQ overwrites the column-major m×k matrix c with Q·C, or Qᵀ·C where
// transpose is true (Qᴴ·C for a complex matrix: its Q is unitary), Q the
// m×m matrix of f's reflectors (f's matrix m×n), queued on h's stream
// (cusolverDnSormqr, Dormqr, and for complex matrices Cunmqr, Zunmqr:
// cuSOLVER has no 64-bit form). Qᵀ·B (Qᴴ·B) is the first step of a
// least-squares solve.
func ApplyQ[T Element](h *Handle, f *QRFactors[T], c Matrix[T], transpose bool) error {
	const op = "ApplyQ"
	tau, err := f.usable(h, op)
	if err != nil {
		return err
	}
	if err := c.check(op, "c", h.base.Context()); err != nil {
		return err
	}
	if err := colMajor(op, "c", c); err != nil {
		return err
	}
	m, k := f.a.Rows, min(f.a.Rows, f.a.Cols)
	switch {
	case c.Rows != m:
		return errorf(op, cuda.ErrInvalidValue, "c has %d rows: want %d, f's matrix's", c.Rows, m)
	case overlap(c.Data, c.Rows*c.Cols, f.a.Data, f.a.Rows*f.a.Cols):
		return cmp.Or(closedArg(op, "c", c.Data), closedArg(op, "f's matrix", f.a.Data), errorf(op, cuda.ErrInvalidValue, "c overlaps f's matrix"))
	}
	if c.Rows*c.Cols == 0 || k == 0 {
		return h.core().Idle(op, []cuda.Memory{f.a.Data, c.Data, tau}) // nothing to multiply, or Q = I (no reflectors)
	}
	trans := int32(opN)
	switch {
	case transpose && isComplex[T]():
		trans = opC // unmqr takes N or C
	case transpose:
		trans = opT
	}
	nc := c.Cols
	return h.do(op, []cuda.Memory{f.a.Data, c.Data, tau}, func() error {
		hh, mm, nn, kk := h.raw.h, int32(m), int32(nc), int32(k)
		a, lda, pt, pc, ldc := f.a.ptr(), int32(f.a.ld()), uintptr(tau.Ptr()), c.ptr(), int32(c.ld())
		var lw int32
		var err error
		switch dataType[T]() {
		case typeF32:
			err = check(op, "cusolverDnSormqr_bufferSize", clib.DnSormqr_bufferSize(hh, sideLeft, trans, mm, nn, kk, a, lda, pt, pc, ldc, &lw))
		case typeF64:
			err = check(op, "cusolverDnDormqr_bufferSize", clib.DnDormqr_bufferSize(hh, sideLeft, trans, mm, nn, kk, a, lda, pt, pc, ldc, &lw))
		case typeC32:
			err = check(op, "cusolverDnCunmqr_bufferSize", clib.DnCunmqr_bufferSize(hh, sideLeft, trans, mm, nn, kk, a, lda, pt, pc, ldc, &lw))
		default:
			err = check(op, "cusolverDnZunmqr_bufferSize", clib.DnZunmqr_bufferSize(hh, sideLeft, trans, mm, nn, kk, a, lda, pt, pc, ldc, &lw))
		}
		if err != nil {
			return err
		}
		work, err := lwork[T](h, op, lw)
		if err != nil {
			return err
		}
		info, err := h.scratchInfo()
		if err != nil {
			return err
		}
		switch dataType[T]() {
		case typeF32:
			return check(op, "cusolverDnSormqr", clib.DnSormqr(hh, sideLeft, trans, mm, nn, kk, a, lda, pt, pc, ldc, work, lw, info))
		case typeF64:
			return check(op, "cusolverDnDormqr", clib.DnDormqr(hh, sideLeft, trans, mm, nn, kk, a, lda, pt, pc, ldc, work, lw, info))
		case typeC32:
			return check(op, "cusolverDnCunmqr", clib.DnCunmqr(hh, sideLeft, trans, mm, nn, kk, a, lda, pt, pc, ldc, work, lw, info))
		}
		return check(op, "cusolverDnZunmqr", clib.DnZunmqr(hh, sideLeft, trans, mm, nn, kk, a, lda, pt, pc, ldc, work, lw, info))
	})
}

// LeastSquares solves the least-squares problem min ||A·X - B|| for the
// column-major m×n matrix a with m >= n and full column rank, queued on
// h's stream (cusolverDnSSgels, cusolverDnDDgels, and for complex
// matrices cusolverDnCCgels, cusolverDnZZgels: cuSOLVER's QR-based
// solver, in one precision, so without iterative refinement): b holds nrhs
// right-hand sides of m elements each, one after another (B
// column-major), and x receives nrhs solutions of n elements each. a and b
// may be overwritten (cuSOLVER's documentation allows it to use them);
// keep copies where they are needed after. The Info's Err says what
// cuSOLVER's info says: a matrix without full column rank, whose R has a
// zero on its diagonal, is ErrSingular (cuSOLVER writes
// -CUSOLVER_STATUS_IRS_MATRIX_SINGULAR in the info, and the error matches
// ResultIRSMatrixSingular too), and x holds no solution.
func LeastSquares[T Element](h *Handle, a Matrix[T], b, x *cuda.DeviceBuffer[T], nrhs int) (*Info, error) {
	const op = "LeastSquares"
	if err := h.valid(op); err != nil {
		return nil, err
	}
	if err := a.check(op, "a", h.base.Context()); err != nil {
		return nil, err
	}
	if err := colMajor(op, "a", a); err != nil {
		return nil, err
	}
	m, n := a.Rows, a.Cols
	if m < n {
		return nil, errorf(op, cuda.ErrInvalidValue, "a is %d×%d: LeastSquares takes a matrix with at least as many rows as columns", m, n)
	}
	if err := checkVectors(op, "b", b, m, nrhs, h.base.Context()); err != nil {
		return nil, err
	}
	if err := checkVectors(op, "x", x, n, nrhs, h.base.Context()); err != nil {
		return nil, err
	}
	if overlap(b, m*nrhs, a.Data, m*n) || overlap(x, n*nrhs, a.Data, m*n) || overlap(x, n*nrhs, b, m*nrhs) {
		return nil, cmp.Or(closedArg(op, "a", a.Data), closedArg(op, "b", b), closedArg(op, "x", x), errorf(op, cuda.ErrInvalidValue, "a, b and x must not overlap"))
	}
	var out *Info
	err := h.do(op, []cuda.Memory{a.Data, b, x}, func() error {
		info, err := newInfo(h, op, infoRank, 1)
		if err != nil {
			return err
		}
		if n == 0 || nrhs == 0 {
			// No unknowns, or no right-hand sides: x has nothing to hold.
			if err := info.zero(); err != nil {
				return err
			}
			out = info
			return nil
		}
		lda, ldb, ldx := int32(max(m, 1)), int32(max(m, 1)), int32(max(n, 1))
		var size uintptr
		f := gels[elemIndex[T]()]
		err = check(op, f.name+"_bufferSize", f.size(h.raw.h, int32(m), int32(n), int32(nrhs), a.ptr(), lda, uintptr(b.Ptr()), ldb, uintptr(x.Ptr()), ldx, 0, &size))
		if err == nil {
			// The iteration count cuSOLVER writes on the host goes to
			// the page-locked host workspace.
			d, p, werr := h.workspace(op, size, 8)
			err = werr
			if err == nil {
				iter := (*int32)(p)
				err = check(op, f.name, f.f(h.raw.h, int32(m), int32(n), int32(nrhs), a.ptr(), lda, uintptr(b.Ptr()), ldb, uintptr(x.Ptr()), ldx, d, size, iter, info.ptr()))
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

// gels are LeastSquares' solvers, by elemIndex (float32, float64,
// complex64, complex128): one precision each, no refinement.
var gels = [4]struct {
	name string
	size func(clib.Handle, int32, int32, int32, uintptr, int32, uintptr, int32, uintptr, int32, uintptr, *uintptr) clib.Result
	f    func(clib.Handle, int32, int32, int32, uintptr, int32, uintptr, int32, uintptr, int32, uintptr, uintptr, *int32, uintptr) clib.Result
}{
	{"cusolverDnSSgels", clib.DnSSgels_bufferSize, clib.DnSSgels},
	{"cusolverDnDDgels", clib.DnDDgels_bufferSize, clib.DnDDgels},
	{"cusolverDnCCgels", clib.DnCCgels_bufferSize, clib.DnCCgels},
	{"cusolverDnZZgels", clib.DnZZgels_bufferSize, clib.DnZZgels},
}

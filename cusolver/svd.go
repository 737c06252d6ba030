package cusolver

import (
	"cmp"
	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cusolver"
)

// SVD computes the singular value decomposition A = U·S·Vᵀ of the m×n
// matrix a (cusolverDnXgesvd), queued on h's stream, overwriting a: s
// receives the min(m,n) singular values, in descending order; u (m×m) and
// vt (n×n), in a's layout, receive U and Vᵀ in full. Give u and vt nil
// Data (zero matrices) for the values alone; either may be left out.
//
// A complex a (complex64, complex128) has A = U·S·Vᴴ, U and V unitary, and
// vt receives Vᴴ; the singular values are real whatever T: s holds
// float32 for float32 and complex64 matrices, float64 for float64 and
// complex128 ones (R; another is refused). The layouts work as for real
// matrices: of a row-major A's memory cuSOLVER computes Aᵀ = U'·S·V'ᴴ, so
// A = conj(V')·S·U'ᵀ, and the swapped outputs read row-major are U and Vᴴ
// exactly.
//
// cuSOLVER's gesvd takes matrices with at least as many rows as columns
// as it sees them, column-major: a row-major a must have Rows <= Cols,
// a column-major one Rows >= Cols (of the other shape, take the SVD of
// the transpose and swap U and Vᵀ). For a row-major a, cuSOLVER computes
// the SVD of Aᵀ, whose U is A's V, and the package swaps the outputs: u
// and vt are A's, in row-major order (see the package doc). The Info's Err
// says whether it converged.
func SVD[T Element, R cuda.Float](h *Handle, a Matrix[T], s *cuda.DeviceBuffer[R], u, vt Matrix[T]) (*Info, error) {
	const op = "SVD"
	if err := h.valid(op); err != nil {
		return nil, err
	}
	if err := checkReal[T, R](op, "s"); err != nil {
		return nil, err
	}
	if err := a.check(op, "a", h.base.Context()); err != nil {
		return nil, err
	}
	m, n := a.Rows, a.Cols
	cm, cn := a.cuRows(), a.cuCols()
	if cm < cn {
		return nil, errorf(op, cuda.ErrInvalidValue, "a is %d×%d %s: cuSOLVER's gesvd takes it only with %s (see SVD): take the SVD of its transpose, or store it %s",
			m, n, a.Layout, map[Layout]string{RowMajor: "Rows <= Cols", ColMajor: "Rows >= Cols"}[a.Layout], Layout(1-a.Layout))
	}
	if err := checkVectors(op, "s", s, min(m, n), 1, h.base.Context()); err != nil {
		return nil, err
	}
	mem := []cuda.Memory{a.Data, s}
	for _, o := range []struct {
		name string
		x    Matrix[T]
		dim  int
	}{{"u", u, m}, {"vt", vt, n}} {
		if o.x.Data == nil {
			continue
		}
		if err := o.x.check(op, o.name, h.base.Context()); err != nil {
			return nil, err
		}
		if o.x.Rows != o.dim || o.x.Cols != o.dim || o.x.Layout != a.Layout {
			return nil, errorf(op, cuda.ErrInvalidValue, "%s is %d×%d %s: want %d×%d %s, as a", o.name, o.x.Rows, o.x.Cols, o.x.Layout, o.dim, o.dim, a.Layout)
		}
		if overlap(o.x.Data, o.dim*o.dim, a.Data, m*n) || overlapAny(o.x.Data, o.dim*o.dim, s, min(m, n)) {
			return nil, cmp.Or(closedArg(op, o.name, o.x.Data), closedArg(op, "a", a.Data), closedArg(op, "s", s), errorf(op, cuda.ErrInvalidValue, "%s overlaps a or s", o.name))
		}
		mem = append(mem, o.x.Data)
	}
	if overlapAny(s, min(m, n), a.Data, m*n) {
		return nil, cmp.Or(closedArg(op, "s", s), closedArg(op, "a", a.Data), errorf(op, cuda.ErrInvalidValue, "s overlaps a"))
	}
	if u.Data != nil && vt.Data != nil && overlap(u.Data, m*m, vt.Data, n*n) {
		return nil, cmp.Or(closedArg(op, "u", u.Data), closedArg(op, "vt", vt.Data), errorf(op, cuda.ErrInvalidValue, "u overlaps vt"))
	}
	// cuSOLVER's U (cm×cm) and Vᵀ (cn×cn): A's for a column-major a,
	// A's Vᵀ and U swapped for a row-major one.
	cu, cvt := u, vt
	if a.Layout == RowMajor {
		cu, cvt = vt, u
	}
	// The leading dimensions are the full ones even where a matrix is
	// left out ('N'), which every reading of gesvd's rules accepts.
	job := func(x Matrix[T], dim int) (int8, uintptr, int64) {
		if x.Data == nil {
			return 'N', 0, int64(max(dim, 1))
		}
		return 'A', x.ptr(), int64(max(dim, 1))
	}
	jobu, pu, ldu := job(cu, cm)
	jobvt, pvt, ldvt := job(cvt, cn)
	var out *Info
	err := h.do(op, mem, func() error {
		info, err := newInfo(h, op, infoConvergence, 1)
		if err != nil {
			return err
		}
		if m == 0 && n == 0 || min(m, n) == 0 && u.Data == nil && vt.Data == nil {
			// No singular values, and no vectors wanted.
			if err := info.zero(); err != nil {
				return err
			}
			out = info
			return nil
		}
		dt, rt := dataType[T](), realType[T]()
		var dev, host uintptr
		err = check(op, "cusolverDnXgesvd_bufferSize", clib.DnXgesvd_bufferSize(h.raw.h, h.raw.params, jobu, jobvt, int64(cm), int64(cn), dt, a.ptr(), int64(a.ld()), rt, uintptr(s.Ptr()), dt, pu, ldu, dt, pvt, ldvt, dt, &dev, &host))
		if err == nil {
			d, p, werr := h.workspace(op, dev, host)
			err = werr
			if err == nil {
				err = check(op, "cusolverDnXgesvd", clib.DnXgesvd(h.raw.h, h.raw.params, jobu, jobvt, int64(cm), int64(cn), dt, a.ptr(), int64(a.ld()), rt, uintptr(s.Ptr()), dt, pu, ldu, dt, pvt, ldvt, dt, d, dev, p, host, info.ptr()))
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

// Eigh computes the eigenvalues of the symmetric n×n matrix a, read from
// its triangle tri (as a's layout reads it), into w in ascending order,
// and with vectors true the eigenvectors into a's memory, each contiguous:
// vector i at elements i·n to (i+1)·n (V column-major, Vᵀ row-major)
// (cusolverDnXsyevd), queued on h's stream. Without vectors, a's triangle
// is overwritten. The Info's Err says whether it converged.
//
// A complex a is Hermitian (A = V·Λ·Vᴴ, V unitary; the imaginary parts of
// its diagonal are not read), and its eigenvalues real: w holds float32
// for float32 and complex64 matrices, float64 for float64 and complex128
// ones (R; another is refused). Its eigenvectors come out as V column-major
// and Vᴴ row-major: of a row-major A's memory cuSOLVER sees Aᵀ = conj(A),
// whose eigenvectors are conj(V), and those read row-major are Vᴴ.
func Eigh[T Element, R cuda.Float](h *Handle, a Matrix[T], tri Triangle, w *cuda.DeviceBuffer[R], vectors bool) (*Info, error) {
	const op = "Eigh"
	if err := checkSymmetric(h, op, a, tri); err != nil {
		return nil, err
	}
	if err := checkReal[T, R](op, "w"); err != nil {
		return nil, err
	}
	n := a.Rows
	if err := checkVectors(op, "w", w, n, 1, h.base.Context()); err != nil {
		return nil, err
	}
	if overlapAny(w, n, a.Data, n*n) {
		return nil, cmp.Or(closedArg(op, "w", w), closedArg(op, "a", a.Data), errorf(op, cuda.ErrInvalidValue, "w overlaps a"))
	}
	jobz := int32(eigNoVector)
	if vectors {
		jobz = eigVector
	}
	var out *Info
	err := h.do(op, []cuda.Memory{a.Data, w}, func() error {
		info, err := newInfo(h, op, infoConvergence, 1)
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
		dt, rt, fill := dataType[T](), realType[T](), a.fill(tri)
		var dev, host uintptr
		err = check(op, "cusolverDnXsyevd_bufferSize", clib.DnXsyevd_bufferSize(h.raw.h, h.raw.params, jobz, fill, int64(n), dt, a.ptr(), int64(a.ld()), rt, uintptr(w.Ptr()), dt, &dev, &host))
		if err == nil {
			d, p, werr := h.workspace(op, dev, host)
			err = werr
			if err == nil {
				err = check(op, "cusolverDnXsyevd", clib.DnXsyevd(h.raw.h, h.raw.params, jobz, fill, int64(n), dt, a.ptr(), int64(a.ld()), rt, uintptr(w.Ptr()), dt, d, dev, p, host, info.ptr()))
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

package cusparse

import (
	"errors"
	"reflect"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/closed"
	clib "github.com/gocuda/cuda/internal/lib/cusparse"
	"github.com/gocuda/cuda/internal/libhandle"
	"github.com/gocuda/cuda/internal/lifetime"
)

// descs are the library's descriptors one call makes, destroyed when it
// returns (cuSPARSE reads them when a function is called, not when its
// work runs).
type descs struct {
	op   string
	sp   []clib.SpMatDescr
	vec  []clib.DnVecDescr
	mat  []clib.DnMatDescr
	gemm clib.SpGEMMDescr
	sv   clib.SpSVDescr
	sm   clib.SpSMDescr
}

// release destroys them all, inside the call's Stream.Do (their context
// current: cuSPARSE may free device memory of its own with them), into
// *err where it holds no error yet.
func (d *descs) release(err *error) {
	if derr := d.destroy(); *err == nil {
		*err = derr
	}
}

// destroy destroys them all, each failure tried once more
// (lifetime.CloseTemp: a passing refusal leaks nothing); the first
// failure is the error.
func (d *descs) destroy() error {
	var err error
	closeAll := func(name string, n int, destroy func(i int) clib.Result) {
		for i := range n {
			lifetime.CloseTemp(&err, func() error { return check(d.op, name, destroy(i)) })
		}
	}
	if d.gemm != 0 {
		closeAll("cusparseSpGEMM_destroyDescr", 1, func(int) clib.Result { return clib.SpGEMM_destroyDescr(d.gemm) })
	}
	if d.sv != 0 {
		closeAll("cusparseSpSV_destroyDescr", 1, func(int) clib.Result { return clib.SpSV_destroyDescr(d.sv) })
	}
	if d.sm != 0 {
		closeAll("cusparseSpSM_destroyDescr", 1, func(int) clib.Result { return clib.SpSM_destroyDescr(d.sm) })
	}
	closeAll("cusparseDestroySpMat", len(d.sp), func(i int) clib.Result { return clib.DestroySpMat(d.sp[i]) })
	closeAll("cusparseDestroyDnVec", len(d.vec), func(i int) clib.Result { return clib.DestroyDnVec(d.vec[i]) })
	closeAll("cusparseDestroyDnMat", len(d.mat), func(i int) clib.Result { return clib.DestroyDnMat(d.mat[i]) })
	return err
}

// spMat makes m's descriptor.
func spMat[I Index, T Value](d *descs, m *Matrix[I, T]) (clib.SpMatDescr, error) {
	var s clib.SpMatDescr
	it, vt := indexType[I](), valueType[T]()
	a, b, v := uintptr(m.outer.Ptr()), uintptr(m.inner.Ptr()), uintptr(m.values.Ptr())
	var err error
	switch m.format {
	case BSR:
		nb := int64(m.block)
		err = check(d.op, "cusparseCreateBsr", clib.CreateBsr(&s, int64(m.rows)/nb, int64(m.cols)/nb, int64(m.innerN), nb, nb, a, b, v, it, it, 0, vt, orderRow))
	case BlockedELL:
		nb := int64(m.block)
		err = check(d.op, "cusparseCreateBlockedEll", clib.CreateBlockedEll(&s, int64(m.rows), int64(m.cols), nb, int64(m.nnz)/max(int64(m.rows), 1), b, v, it, 0, vt))
	case CSR:
		err = check(d.op, "cusparseCreateCsr", clib.CreateCsr(&s, int64(m.rows), int64(m.cols), int64(m.nnz), a, b, v, it, it, 0, vt))
	case CSC:
		err = check(d.op, "cusparseCreateCsc", clib.CreateCsc(&s, int64(m.rows), int64(m.cols), int64(m.nnz), a, b, v, it, it, 0, vt))
	default:
		err = check(d.op, "cusparseCreateCoo", clib.CreateCoo(&s, int64(m.rows), int64(m.cols), int64(m.nnz), a, b, v, it, 0, vt))
	}
	if err != nil {
		return 0, err
	}
	d.sp = append(d.sp, s)
	return s, nil
}

// dnVec makes x's descriptor.
func dnVec[T Value](d *descs, x *cuda.DeviceBuffer[T]) (clib.DnVecDescr, error) {
	var v clib.DnVecDescr
	if err := check(d.op, "cusparseCreateDnVec", clib.CreateDnVec(&v, int64(x.Len()), uintptr(x.Ptr()), valueType[T]())); err != nil {
		return 0, err
	}
	d.vec = append(d.vec, v)
	return v, nil
}

// dnMat makes m's descriptor.
func dnMat[T Value](d *descs, m Dense[T]) (clib.DnMatDescr, error) {
	var v clib.DnMatDescr
	if err := check(d.op, "cusparseCreateDnMat", clib.CreateDnMat(&v, int64(m.Rows), int64(m.Cols), int64(m.ld()), uintptr(m.Data.Ptr()), valueType[T](), m.order())); err != nil {
		return 0, err
	}
	d.mat = append(d.mat, v)
	return v, nil
}

// opShape returns op(A)'s rows and columns.
func opShape(op Op, rows, cols int) (int, int) {
	if op == NoTrans {
		return rows, cols
	}
	return cols, rows
}

// scalarOf reads the scalar at p, of T or, where T is a half type,
// float32 (the compute type), as complex128.
func scalarOf[T Value](p unsafe.Pointer) complex128 {
	switch {
	case isHalf[T]():
		return complex(float64(*(*float32)(p)), 0)
	case isComplexValue[T]():
		if valueType[T]() == 4 {
			return complex128(*(*complex64)(p))
		}
		return *(*complex128)(p)
	case valueType[T]() == 1:
		return complex(*(*float64)(p), 0)
	}
	return complex(float64(*(*float32)(p)), 0)
}

// checkHalf returns the error for a matrix of half values in a format
// cuSPARSE does not multiply them in (CSR, COO and, by SpMM, BlockedELL
// are those package cusparse offers them in).
func checkHalf[T Value](op string, f Format) error {
	if isHalf[T]() && f != CSR && f != COO && f != BlockedELL {
		return errorf(op, cuda.ErrNotSupported, "a %v matrix of %v values: cuSPARSE multiplies the half types (in float32) in CSR, COO and BlockedELL here", f, reflect.TypeFor[T]())
	}
	return nil
}

// checkBlocked returns the error for a blocked matrix where cuSPARSE does
// not take it: BlockedELL in SpMV (cuSPARSE multiplies it by dense
// matrices only) or with int64 indices or complex values (cuSPARSE 12's
// SpMM answers NOT_SUPPORTED to those on an H100), and either transposed
// (cuSPARSE multiplies them as they are).
func checkBlocked[I Index, T Value](name string, f Format, op Op, spmv bool) error {
	switch {
	case f == BlockedELL && indexType[I]() != 2:
		return errorf(name, cuda.ErrNotSupported, "a is BlockedELL with %v indices: cuSPARSE multiplies Blocked-ELL matrices of int32 indices only", reflect.TypeFor[I]())
	case f == BlockedELL && isComplexValue[T]():
		return errorf(name, cuda.ErrNotSupported, "a is BlockedELL of %v values: cuSPARSE multiplies Blocked-ELL matrices of real or half values only", reflect.TypeFor[T]())
	case f == BlockedELL && spmv:
		return errorf(name, cuda.ErrNotSupported, "a is BlockedELL: cuSPARSE multiplies a Blocked-ELL matrix by a dense matrix only (SpMM), not by a vector")
	case (f == BSR || f == BlockedELL) && op != NoTrans:
		return errorf(name, cuda.ErrNotSupported, "a is %v and op %v: cuSPARSE multiplies the blocked formats untransposed only", f, op)
	}
	return nil
}

func checkOp(op, name string, o Op) error {
	if o > ConjTrans {
		return errorf(op, cuda.ErrInvalidValue, "%s is %d: want NoTrans, Trans or ConjTrans", name, int(o))
	}
	return nil
}

// region is memory an operand spans: lines of width bytes, ld bytes from
// the start of one to the next (a vector or an array is one line), and
// the buffer that holds it, which checkOutput asks whether it is closed
// where the region overlaps another.
type region struct {
	base, width, ld uint64
	lines           int
	buf             closed.Any
}

// spanOf is the region of the first n elements of b.
func spanOf[E any](b *cuda.DeviceBuffer[E], n int) region {
	return region{base: uint64(b.Ptr()), width: uint64(n) * uint64(unsafe.Sizeof(*new(E))), lines: 1, buf: closed.Of[E]{B: b}}
}

// overlaps reports whether r and s share a byte: each line of the one
// with fewer lines against the other's lines, of which only the last to
// start before the line's end can reach it.
func (r region) overlaps(s region) bool {
	if r.lines == 0 || s.lines == 0 || r.width == 0 || s.width == 0 {
		return false
	}
	if r.end() <= s.base || s.end() <= r.base {
		return false // apart: the usual case, at once
	}
	if r.lines > s.lines {
		r, s = s, r
	}
	for i := range r.lines {
		lo := r.base + uint64(i)*r.ld
		hi := lo + r.width
		if hi <= s.base {
			continue
		}
		k := s.lines - 1
		if s.ld > 0 {
			k = min(k, int((hi-1-s.base)/s.ld))
		}
		if s.base+uint64(k)*s.ld+s.width > lo {
			return true
		}
	}
	return false
}

// end is the byte after r's last.
func (r region) end() uint64 { return r.base + uint64(r.lines-1)*r.ld + r.width }

// spans are m's arrays' regions.
func (m *Matrix[I, T]) spans() []region {
	return []region{spanOf(m.outer, m.outerLen), spanOf(m.inner, m.innerLen()), spanOf(m.values, m.nnz)}
}

// input is an operation's input and its name, for checkOutput.
type input struct {
	name string
	r    []region
}

// checkOutput returns the error for an output, named name, of region
// out, that shares memory with an input: cuSPARSE writes it while it reads
// them, which it does not allow (the result would be the GPU's order of
// reading and writing). Where either of the two is closed, the error is
// cuda.ErrClosed (see package closed).
func checkOutput(op, name string, out region, in ...input) error {
	for _, x := range in {
		for _, r := range x.r {
			if !out.overlaps(r) {
				continue
			}
			for _, c := range [2]struct {
				name string
				r    region
			}{{name, out}, {x.name, r}} {
				if c.r.buf.Closed() { // an overlapping region is not empty: it has a buffer
					return &Error{Op: op, Err: cuda.ErrClosed, Detail: c.name + " is closed (freed, or its context closed)"}
				}
			}
			return errorf(op, cuda.ErrInvalidValue, "%s overlaps %s: cuSPARSE reads the one while it writes the other", name, x.name)
		}
	}
	return nil
}

// checkVec checks a vector operand's length.
func checkVec[T Value](op, name string, x *cuda.DeviceBuffer[T], n int) error {
	switch {
	case x == nil:
		return errorf(op, cuda.ErrInvalidValue, "%s is nil", name)
	case x.Len() != n:
		return errorf(op, cuda.ErrInvalidValue, "len(%s) is %d: want %d", name, x.Len(), n)
	}
	return nil
}

// SpMV computes y = alpha·op(A)·x + beta·y (cusparseSpMV, its default
// algorithm), queued on h's stream. x has op(A)'s columns, y its rows;
// where beta is 0, y is not read. y shares no memory with x or A's arrays
// (cuSPARSE writes it while it reads them): that is an error. The work
// buffer cuSPARSE asks for is h's, reused by later calls.
// Matrices of the half types use SpMVHalf.
func SpMV[I Index, T Element](h *Handle, op Op, alpha T, a *Matrix[I, T], x *cuda.DeviceBuffer[T], beta T, y *cuda.DeviceBuffer[T]) error {
	return spmv("SpMV", h, op, valueType[T](), unsafe.Pointer(&alpha), a, x, unsafe.Pointer(&beta), y)
}

// SpMVHalf is SpMV of a matrix of a half type (cuda.Float16,
// cuda.BFloat16): A, x and y hold H, and cuSPARSE computes in float32
// (CUDA_R_16F or CUDA_R_16BF values, CUDA_R_32F compute type), alpha and
// beta float32, its compute type (an exception to the package's scalars of
// the element type: a Float16 alpha would be rounded to 11 bits, and the
// constant 1 converted to Float16 is not 1 but its smallest subnormal). A
// is CSR or COO, the formats NewCSR and NewCOO make of halves; cuSPARSE
// also takes a float32 y, which this package does not offer.
func SpMVHalf[I Index, H Half](h *Handle, op Op, alpha float32, a *Matrix[I, H], x *cuda.DeviceBuffer[H], beta float32, y *cuda.DeviceBuffer[H]) error {
	return spmv("SpMVHalf", h, op, typeF32, unsafe.Pointer(&alpha), a, x, unsafe.Pointer(&beta), y)
}

// spmv is SpMV and SpMVHalf, computing in ct with the scalars at pa and
// pb.
func spmv[I Index, T Value](name string, h *Handle, op Op, ct int32, pa unsafe.Pointer, a *Matrix[I, T], x *cuda.DeviceBuffer[T], pb unsafe.Pointer, y *cuda.DeviceBuffer[T]) error {
	if err := h.valid(name); err != nil {
		return err
	}
	if err := a.hold(name); err != nil {
		return err
	}
	defer a.life.Release()
	rows, cols := opShape(op, a.rows, a.cols)
	if err := errors.Join(checkOp(name, "op", op), checkHalf[T](name, a.format), checkBlocked[I, T](name, a.format, op, true), checkVec(name, "x", x, cols), checkVec(name, "y", y, rows)); err != nil {
		return err
	}
	if err := h.base.SameContext(name, a.operand("a"), libhandle.Arg("x", x), libhandle.Arg("y", y)); err != nil {
		return err
	}
	if err := checkOutput(name, "y", spanOf(y, rows), input{"x", []region{spanOf(x, cols)}}, input{"a's arrays", a.spans()}); err != nil {
		return err
	}
	d := &descs{op: name}
	err := h.do(name, append(a.mem(), x, y), func(lh clib.Handle, work func(int, uintptr) (uintptr, error)) (err error) {
		defer d.release(&err)
		// Empty operands are not cuSPARSE's (it may refuse their NULL
		// arrays): no y to write, or over no columns y = beta·y, which
		// needs cuSPARSE only for a beta other than 0 and 1.
		if rows == 0 {
			return nil
		}
		if cols == 0 {
			switch beta := scalarOf[T](pb); beta {
			case 0:
				return y.Memset8Async(0, h.base.Stream())
			case 1:
				return nil
			}
		}
		da, err := spMat(d, a)
		if err != nil {
			return err
		}
		dx, err := dnVec(d, x)
		if err != nil {
			return err
		}
		dy, err := dnVec(d, y)
		if err != nil {
			return err
		}
		var n uintptr
		if err := check(name, "cusparseSpMV_bufferSize", clib.SpMV_bufferSize(lh, int32(op), pa, da, dx, pb, dy, ct, 0, &n)); err != nil {
			return err
		}
		buf, err := work(0, n)
		if err != nil {
			return err
		}
		return check(name, "cusparseSpMV", clib.SpMV(lh, int32(op), pa, da, dx, pb, dy, ct, 0, buf))
	})
	return err
}

// SpMM computes C = alpha·op(A)·B + beta·C (cusparseSpMM, its default
// algorithm), with B and C dense, each row- or column-major, queued on h's
// stream. B has op(A)'s columns as rows, C op(A)'s rows and B's columns;
// where beta is 0, C is not read. No element of C is one of B's or in A's
// arrays (an error); B and C may interleave in one buffer.
// Matrices of the half types use SpMMHalf.
func SpMM[I Index, T Element](h *Handle, op Op, alpha T, a *Matrix[I, T], b Dense[T], beta T, c Dense[T]) error {
	return spmm("SpMM", h, op, valueType[T](), unsafe.Pointer(&alpha), a, b, unsafe.Pointer(&beta), c)
}

// SpMMHalf is SpMM of a matrix of a half type, as SpMVHalf is SpMV's: A, B
// and C hold H, cuSPARSE computes in float32, alpha and beta are float32,
// and A is CSR or COO.
func SpMMHalf[I Index, H Half](h *Handle, op Op, alpha float32, a *Matrix[I, H], b Dense[H], beta float32, c Dense[H]) error {
	return spmm("SpMMHalf", h, op, typeF32, unsafe.Pointer(&alpha), a, b, unsafe.Pointer(&beta), c)
}

// spmm is SpMM and SpMMHalf, as spmv.
func spmm[I Index, T Value](name string, h *Handle, op Op, ct int32, pa unsafe.Pointer, a *Matrix[I, T], b Dense[T], pb unsafe.Pointer, c Dense[T]) error {
	if err := h.valid(name); err != nil {
		return err
	}
	if err := a.hold(name); err != nil {
		return err
	}
	defer a.life.Release()
	rows, k := opShape(op, a.rows, a.cols)
	if err := errors.Join(checkOp(name, "op", op), checkHalf[T](name, a.format), checkBlocked[I, T](name, a.format, op, false), b.check(name, "b"), c.check(name, "c")); err != nil {
		return err
	}
	if err := h.base.SameContext(name, a.operand("a"), libhandle.Arg("b", b.Data), libhandle.Arg("c", c.Data)); err != nil {
		return err
	}
	if b.Rows != k || c.Rows != rows || c.Cols != b.Cols {
		return errorf(name, cuda.ErrInvalidValue, "op(A) is %dx%d, b %dx%d, c %dx%d: want b %dx%d and c %dx%d", rows, k, b.Rows, b.Cols, c.Rows, c.Cols, k, b.Cols, rows, b.Cols)
	}
	if err := checkOutput(name, "c", c.region(), input{"b", []region{b.region()}}, input{"a's arrays", a.spans()}); err != nil {
		return err
	}
	d := &descs{op: name}
	err := h.do(name, append(a.mem(), b.Data, c.Data), func(lh clib.Handle, work func(int, uintptr) (uintptr, error)) (err error) {
		defer d.release(&err)
		if rows == 0 || c.Cols == 0 {
			return nil // no C to write (not cuSPARSE's: see spmv)
		}
		if k == 0 {
			// C = beta·C: for 1 nothing, for 0 zeros where C is packed.
			switch beta := scalarOf[T](pb); {
			case beta == 1:
				return nil
			case beta == 0 && c.packed():
				v, err := c.Data.Slice(0, c.Rows*c.Cols)
				if err != nil {
					return err
				}
				return v.Memset8Async(0, h.base.Stream())
			case beta == 0:
				// A strided C: zeros line by line (its rows, or columns
				// column-major), the elements between them left alone,
				// as the package doc promises this case to be cuSPARSE's
				// no more than a packed C's (B is empty: cuSPARSE would
				// be handed its NULL array). One memset a line: package
				// cuda offers no 2D memset, and the case is a degenerate
				// one.
				lines, width := c.Rows, c.Cols
				if c.Layout == ColMajor {
					lines, width = c.Cols, c.Rows
				}
				for i := range lines {
					v, err := c.Data.Slice(i*c.ld(), width)
					if err != nil {
						return err
					}
					if err := v.Memset8Async(0, h.base.Stream()); err != nil {
						return err
					}
				}
				return nil
			}
		}
		da, err := spMat(d, a)
		if err != nil {
			return err
		}
		db, err := dnMat(d, b)
		if err != nil {
			return err
		}
		dc, err := dnMat(d, c)
		if err != nil {
			return err
		}
		var n uintptr
		if err := check(name, "cusparseSpMM_bufferSize", clib.SpMM_bufferSize(lh, int32(op), 0, pa, da, db, pb, dc, ct, 0, &n)); err != nil {
			return err
		}
		buf, err := work(0, n)
		if err != nil {
			return err
		}
		return check(name, "cusparseSpMM", clib.SpMM(lh, int32(op), 0, pa, da, db, pb, dc, ct, 0, buf))
	})
	return err
}

// SpGEMM returns C = A·B (cusparseSpGEMM, its default algorithm) of two
// CSR matrices, a new CSR matrix in stream-ordered memory of h's stream.
// cuSPARSE computes C's number of non-zeros on the device and hands it to
// the host, so SpGEMM waits for h's stream (cusparseSpGEMM_compute
// does), and is refused while the stream captures. Convert other formats
// to CSR first. cuSPARSE's SpGEMM takes 32-bit indices only: with int64
// indices SpGEMM returns cuda.ErrNotSupported.
func SpGEMM[I Index, T Element](h *Handle, a, b *Matrix[I, T]) (*Matrix[I, T], error) {
	const name = "SpGEMM"
	if err := h.valid(name); err != nil {
		return nil, err
	}
	if err := a.hold(name); err != nil {
		return nil, err
	}
	defer a.life.Release()
	if err := b.hold(name); err != nil {
		return nil, err
	}
	defer b.life.Release()
	switch {
	case a.format != CSR || b.format != CSR:
		return nil, errorf(name, cuda.ErrInvalidValue, "a is %v and b %v: SpGEMM takes CSR (Convert first)", a.format, b.format)
	case a.cols != b.rows:
		return nil, errorf(name, cuda.ErrInvalidValue, "a is %dx%d and b %dx%d: a's columns must be b's rows", a.rows, a.cols, b.rows, b.cols)
	case indexType[I]() != 2:
		return nil, errorf(name, cuda.ErrNotSupported, "cuSPARSE's SpGEMM takes 32-bit indices only: these are %v", reflect.TypeFor[I]())
	case h.base.Stream().Capturing():
		return nil, errorf(name, cuda.ErrInvalidValue, "the stream captures: SpGEMM hands the product's count to the host, which a capture cannot")
	}
	if err := h.base.SameContext(name, a.operand("a"), b.operand("b")); err != nil {
		return nil, err
	}
	var c *Matrix[I, T]
	d := &descs{op: name}
	err := h.do(name, append(a.mem(), b.mem()...), func(lh clib.Handle, work func(int, uintptr) (uintptr, error)) (err error) {
		defer d.release(&err)
		if a.nnz == 0 || b.nnz == 0 {
			// Nothing to multiply: a product of no non-zeros, its
			// offsets zeros, without asking cuSPARSE.
			c, err = zeroMatrix[I, T](h.base.Stream(), CSR, a.rows, b.cols)
			return err
		}
		out, err := allocMatrix[I, T](h.base.Stream(), CSR, a.rows, b.cols, -1)
		if err != nil {
			return err
		}
		c = out
		da, err := spMat(d, a)
		if err != nil {
			return err
		}
		db, err := spMat(d, b)
		if err != nil {
			return err
		}
		dc, err := spMat(d, c)
		if err != nil {
			return err
		}
		if err := check(name, "cusparseSpGEMM_createDescr", clib.SpGEMM_createDescr(&d.gemm)); err != nil {
			return err
		}
		var alpha, beta T
		alpha = 1
		pa, pb := unsafe.Pointer(&alpha), unsafe.Pointer(&beta)
		ct := valueType[T]()
		var n1, n2 uintptr
		if err := check(name, "cusparseSpGEMM_workEstimation", clib.SpGEMM_workEstimation(lh, 0, 0, pa, da, db, pb, dc, ct, 0, d.gemm, &n1, 0)); err != nil {
			return err
		}
		buf1, err := work(0, n1)
		if err != nil {
			return err
		}
		if err := check(name, "cusparseSpGEMM_workEstimation", clib.SpGEMM_workEstimation(lh, 0, 0, pa, da, db, pb, dc, ct, 0, d.gemm, &n1, buf1)); err != nil {
			return err
		}
		if err := check(name, "cusparseSpGEMM_compute", clib.SpGEMM_compute(lh, 0, 0, pa, da, db, pb, dc, ct, 0, d.gemm, &n2, 0)); err != nil {
			return err
		}
		buf2, err := work(1, n2)
		if err != nil {
			return err
		}
		if err := check(name, "cusparseSpGEMM_compute", clib.SpGEMM_compute(lh, 0, 0, pa, da, db, pb, dc, ct, 0, d.gemm, &n2, buf2)); err != nil {
			return err
		}
		var rows, cols, nnz int64
		if err := check(name, "cusparseSpMatGetSize", clib.SpMatGetSize(dc, &rows, &cols, &nnz)); err != nil {
			return err
		}
		if nnz < 0 || int(nnz) > maxIndex[I]() {
			return errorf(name, cuda.ErrNotSupported, "the product has %d non-zeros: more than its indices count", nnz)
		}
		if err := c.resize(int(nnz)); err != nil {
			return err
		}
		if err := check(name, "cusparseCsrSetPointers", clib.CsrSetPointers(dc, uintptr(c.outer.Ptr()), uintptr(c.inner.Ptr()), uintptr(c.values.Ptr()))); err != nil {
			return err
		}
		return check(name, "cusparseSpGEMM_copy", clib.SpGEMM_copy(lh, 0, 0, pa, da, db, pb, dc, ct, 0, d.gemm))
	})
	if err != nil {
		if c != nil {
			c.freeAll()
		}
		return nil, err
	}
	return c, nil
}

// zeroMatrix makes a matrix of no non-zeros in format f, its offsets
// zeroed on s.
func zeroMatrix[I Index, T Element](s *cuda.Stream, f Format, rows, cols int) (*Matrix[I, T], error) {
	m, err := allocMatrix[I, T](s, f, rows, cols, 0)
	if err != nil {
		return nil, err
	}
	if err := m.outer.Memset8Async(0, s); err != nil {
		m.freeAll()
		return nil, err
	}
	return m, nil
}

// resize gives a CSR matrix being made, whose offsets alone are
// allocated (allocMatrix with a negative nnz), nnz non-zeros: its index
// and value arrays, stream-ordered.
func (m *Matrix[I, T]) resize(nnz int) error {
	m.nnz = nnz
	var err error
	if m.inner, err = cuda.AllocAsync[I](m.stream, max(nnz, 1)); err != nil {
		return err
	}
	m.values, err = cuda.AllocAsync[T](m.stream, max(nnz, 1))
	return err
}

// SpSV solves op(A)·y = alpha·x for y (cusparseSpSV: its analysis, then
// its solve), with A square, CSR or COO, triangular: only its triangle
// fill is read, and its diagonal as diag says. x and y have A's rows; y
// shares no memory with A's arrays (an error).
// cuSPARSE's generic solves report no zero pivot: with NonUnit, a zero on
// the diagonal (or one not stored) is no error, and y is then no solution
// (infinities or NaNs from the division by it on); Unit never reads the
// diagonal.
func SpSV[I Index, T Element](h *Handle, op Op, fill Fill, diag Diag, alpha T, a *Matrix[I, T], x, y *cuda.DeviceBuffer[T]) error {
	const name = "SpSV"
	if err := h.valid(name); err != nil {
		return err
	}
	if err := a.hold(name); err != nil {
		return err
	}
	defer a.life.Release()
	if err := checkTriangular(name, op, fill, diag, a.format, a.rows, a.cols); err != nil {
		return err
	}
	if err := errors.Join(checkVec(name, "x", x, a.rows), checkVec(name, "y", y, a.rows)); err != nil {
		return err
	}
	if err := h.base.SameContext(name, a.operand("a"), libhandle.Arg("x", x), libhandle.Arg("y", y)); err != nil {
		return err
	}
	if err := checkOutput(name, "y", spanOf(y, a.rows), input{"a's arrays", a.spans()}); err != nil {
		return err
	}
	d := &descs{op: name}
	err := h.do(name, append(a.mem(), x, y), func(lh clib.Handle, work func(int, uintptr) (uintptr, error)) (err error) {
		defer d.release(&err)
		if a.rows == 0 {
			return nil // no y to write (not cuSPARSE's: see spmv)
		}
		da, err := triMat(d, a, fill, diag)
		if err != nil {
			return err
		}
		dx, err := dnVec(d, x)
		if err != nil {
			return err
		}
		dy, err := dnVec(d, y)
		if err != nil {
			return err
		}
		if err := check(name, "cusparseSpSV_createDescr", clib.SpSV_createDescr(&d.sv)); err != nil {
			return err
		}
		ct, pa := valueType[T](), unsafe.Pointer(&alpha)
		var n uintptr
		if err := check(name, "cusparseSpSV_bufferSize", clib.SpSV_bufferSize(lh, int32(op), pa, da, dx, dy, ct, 0, d.sv, &n)); err != nil {
			return err
		}
		buf, err := work(0, n)
		if err != nil {
			return err
		}
		if err := check(name, "cusparseSpSV_analysis", clib.SpSV_analysis(lh, int32(op), pa, da, dx, dy, ct, 0, d.sv, buf)); err != nil {
			return err
		}
		return check(name, "cusparseSpSV_solve", clib.SpSV_solve(lh, int32(op), pa, da, dx, dy, ct, 0, d.sv))
	})
	return err
}

// SpSM solves op(A)·C = alpha·B for C (cusparseSpSM: its analysis, then
// its solve), with A square, CSR or COO, triangular as for SpSV, and B and
// C dense of A's rows, each row- or column-major; C shares no memory with
// A's arrays (an error). As SpSV's, a zero diagonal is no error.
func SpSM[I Index, T Element](h *Handle, op Op, fill Fill, diag Diag, alpha T, a *Matrix[I, T], b, c Dense[T]) error {
	const name = "SpSM"
	if err := h.valid(name); err != nil {
		return err
	}
	if err := a.hold(name); err != nil {
		return err
	}
	defer a.life.Release()
	if err := checkTriangular(name, op, fill, diag, a.format, a.rows, a.cols); err != nil {
		return err
	}
	if err := errors.Join(b.check(name, "b"), c.check(name, "c")); err != nil {
		return err
	}
	if err := h.base.SameContext(name, a.operand("a"), libhandle.Arg("b", b.Data), libhandle.Arg("c", c.Data)); err != nil {
		return err
	}
	if b.Rows != a.rows || c.Rows != a.rows || c.Cols != b.Cols {
		return errorf(name, cuda.ErrInvalidValue, "a is %dx%d, b %dx%d, c %dx%d: want b and c of a's rows and the same columns", a.rows, a.cols, b.Rows, b.Cols, c.Rows, c.Cols)
	}
	if err := checkOutput(name, "c", c.region(), input{"a's arrays", a.spans()}); err != nil {
		return err
	}
	d := &descs{op: name}
	err := h.do(name, append(a.mem(), b.Data, c.Data), func(lh clib.Handle, work func(int, uintptr) (uintptr, error)) (err error) {
		defer d.release(&err)
		if a.rows == 0 || c.Cols == 0 {
			return nil // no C to write (not cuSPARSE's: see spmv)
		}
		da, err := triMat(d, a, fill, diag)
		if err != nil {
			return err
		}
		db, err := dnMat(d, b)
		if err != nil {
			return err
		}
		dc, err := dnMat(d, c)
		if err != nil {
			return err
		}
		if err := check(name, "cusparseSpSM_createDescr", clib.SpSM_createDescr(&d.sm)); err != nil {
			return err
		}
		ct, pa := valueType[T](), unsafe.Pointer(&alpha)
		var n uintptr
		if err := check(name, "cusparseSpSM_bufferSize", clib.SpSM_bufferSize(lh, int32(op), 0, pa, da, db, dc, ct, 0, d.sm, &n)); err != nil {
			return err
		}
		buf, err := work(0, n)
		if err != nil {
			return err
		}
		if err := check(name, "cusparseSpSM_analysis", clib.SpSM_analysis(lh, int32(op), 0, pa, da, db, dc, ct, 0, d.sm, buf)); err != nil {
			return err
		}
		return check(name, "cusparseSpSM_solve", clib.SpSM_solve(lh, int32(op), 0, pa, da, db, dc, ct, 0, d.sm))
	})
	return err
}

func checkTriangular(name string, op Op, fill Fill, diag Diag, f Format, rows, cols int) error {
	switch {
	case op > ConjTrans:
		return errorf(name, cuda.ErrInvalidValue, "op is %d: want NoTrans, Trans or ConjTrans", int(op))
	case fill > Upper:
		return errorf(name, cuda.ErrInvalidValue, "fill is %d: want Lower or Upper", int(fill))
	case diag > Unit:
		return errorf(name, cuda.ErrInvalidValue, "diag is %d: want NonUnit or Unit", int(diag))
	case f == CSC:
		return errorf(name, cuda.ErrInvalidValue, "a is CSC: the triangular solves take CSR or COO (Convert first)")
	case f == BSR || f == BlockedELL:
		return errorf(name, cuda.ErrInvalidValue, "a is %v: the triangular solves take CSR or COO", f)
	case rows != cols:
		return errorf(name, cuda.ErrInvalidValue, "a is %dx%d: a triangular solve needs a square matrix", rows, cols)
	}
	return nil
}

// triMat makes a's descriptor with its fill mode and diagonal type
// (CUSPARSE_SPMAT_FILL_MODE 0, CUSPARSE_SPMAT_DIAG_TYPE 1).
func triMat[I Index, T Element](d *descs, a *Matrix[I, T], fill Fill, diag Diag) (clib.SpMatDescr, error) {
	da, err := spMat(d, a)
	if err != nil {
		return 0, err
	}
	f, g := int32(fill), int32(diag)
	if err := check(d.op, "cusparseSpMatSetAttribute", clib.SpMatSetAttribute(da, 0, unsafe.Pointer(&f), 4)); err != nil {
		return 0, err
	}
	if err := check(d.op, "cusparseSpMatSetAttribute", clib.SpMatSetAttribute(da, 1, unsafe.Pointer(&g), 4)); err != nil {
		return 0, err
	}
	return da, nil
}

package cusparse

import (
	"errors"
	"fmt"
	"slices"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
	clib "github.com/gocuda/cuda/internal/lib/cusparse"
	"github.com/gocuda/cuda/internal/libhandle"
)

// Convert returns a in format f: a new Matrix in stream-ordered memory of
// h's stream (a copy where a is in f already). With int32 indices it runs
// on the device, in h's stream's order (cusparseCsr2cscEx2,
// cusparseXcsr2coo, cusparseXcoo2csr); cuSPARSE's conversions take 32-bit
// indices only, so with int64 indices it waits for h's stream, converts on
// the host and copies the result back (and is refused while the stream
// captures).
func Convert[I Index, T Element](h *Handle, a *Matrix[I, T], f Format) (*Matrix[I, T], error) {
	const name = "Convert"
	if err := h.valid(name); err != nil {
		return nil, err
	}
	if err := a.hold(name); err != nil {
		return nil, err
	}
	defer a.life.Release()
	if err := h.base.SameContext(name, a.operand("a")); err != nil {
		return nil, err
	}
	switch {
	case f == BSR || f == BlockedELL:
		return nil, errorf(name, cuda.ErrInvalidValue, "f is %v: ToBSR and ToBlockedELL make the blocked formats, of a block size", f)
	case f > COO:
		return nil, errorf(name, cuda.ErrInvalidValue, "f is %d: want CSR, CSC or COO", int(f))
	case a.blocked():
		return nil, errorf(name, cuda.ErrInvalidValue, "a is %v: Convert takes CSR, CSC and COO (ToDense writes a blocked matrix out)", a.format)
	}
	if indexType[I]() != 2 {
		if h.base.Stream().Capturing() {
			return nil, errorf(name, cuda.ErrInvalidValue, "the stream captures: a conversion of int64 indices goes through the host, which a capture cannot")
		}
		if err := h.hold(name); err != nil {
			return nil, err
		}
		defer h.base.Release()
		if err := h.base.Stream().Synchronize(); err != nil {
			return nil, calledas.Op(name, err)
		}
		hm, err := a.download(name)
		if err != nil {
			return nil, err
		}
		// The device's arrays first: a matrix too large for them (a COO
		// of 2^40 rows made CSR, say) is the device's out of memory, not
		// the host's, which Go cannot recover from.
		m, err := allocMatrix[I, T](h.base.Stream(), f, a.rows, a.cols, a.nnz)
		if err != nil {
			return nil, calledas.Op(name, err)
		}
		out := hm.to(f)
		if err := errors.Join(copyIn(m.outer, out.outer), copyIn(m.inner, out.inner), copyIn(m.values, out.values)); err != nil {
			m.freeAll()
			return nil, calledas.Op(name, err)
		}
		return m, nil
	}
	var out *Matrix[I, T]
	err := h.do(name, a.mem(), func(lh clib.Handle, work func(int, uintptr) (uintptr, error)) error {
		if a.nnz == 0 {
			// No non-zeros: offsets of zeros, without asking cuSPARSE.
			m, err := zeroMatrix[I, T](h.base.Stream(), f, a.rows, a.cols)
			out = m
			return err
		}
		m, err := allocMatrix[I, T](h.base.Stream(), f, a.rows, a.cols, a.nnz)
		if err != nil {
			return err
		}
		out = m
		return convert32(name, h.base.Stream(), lh, work, a, m)
	})
	if err != nil {
		if out != nil {
			out.freeAll()
		}
		return nil, err
	}
	return out, nil
}

// convert32 queues the conversion of a into m (of 32-bit indices, the same
// shape, in another format or the same), on s.
func convert32[I Index, T Element](op string, s *cuda.Stream, lh clib.Handle, work func(int, uintptr) (uintptr, error), a, m *Matrix[I, T]) error {
	ptr := func(b interface{ Ptr() cuda.DevicePtr }) uintptr { return uintptr(b.Ptr()) }
	nnz := int32(a.nnz)
	switch {
	case a.format == m.format:
		return copyAll(s, a, m)
	case a.format == CSR && m.format == COO, a.format == COO && m.format == CSR:
		if err := copyPart(s, m.inner, a.inner, a.nnz); err != nil {
			return err
		}
		if err := copyPart(s, m.values, a.values, a.nnz); err != nil {
			return err
		}
		if a.format == CSR {
			return check(op, "cusparseXcsr2coo", clib.Xcsr2coo(lh, ptr(a.outer), nnz, int32(a.rows), ptr(m.outer), 0))
		}
		return check(op, "cusparseXcoo2csr", clib.Xcoo2csr(lh, ptr(a.outer), nnz, int32(a.rows), ptr(m.outer), 0))
	case a.format == CSR && m.format == CSC, a.format == CSC && m.format == CSR:
		// The CSC of A is the CSR of Aᵀ: one transposition either way.
		rows, cols := a.rows, a.cols
		if a.format == CSC {
			rows, cols = cols, rows
		}
		vt := valueType[T]()
		var n uintptr
		if err := check(op, "cusparseCsr2cscEx2_bufferSize", clib.Csr2cscEx2_bufferSize(lh, int32(rows), int32(cols), nnz, ptr(a.values), ptr(a.outer), ptr(a.inner),
			ptr(m.values), ptr(m.outer), ptr(m.inner), vt, 1, 0, 1, &n)); err != nil {
			return err
		}
		buf, err := work(0, n)
		if err != nil {
			return err
		}
		return check(op, "cusparseCsr2cscEx2", clib.Csr2cscEx2(lh, int32(rows), int32(cols), nnz, ptr(a.values), ptr(a.outer), ptr(a.inner),
			ptr(m.values), ptr(m.outer), ptr(m.inner), vt, 1, 0, 1, buf))
	}
	// COO and CSC, either way: through CSR.
	mid, err := allocMatrix[I, T](s, CSR, a.rows, a.cols, a.nnz)
	if err != nil {
		return err
	}
	err = convert32(op, s, lh, work, a, mid)
	if err == nil {
		err = convert32(op, s, lh, work, mid, m)
	}
	// Stream-ordered: after the work that reads it.
	if ferr := mid.freeAll(); err == nil {
		err = ferr
	}
	return err
}

// copyAll copies a's arrays into m's, on s.
func copyAll[I Index, T Element](s *cuda.Stream, a, m *Matrix[I, T]) error {
	if err := copyPart(s, m.outer, a.outer, a.outerLen); err != nil {
		return err
	}
	if err := copyPart(s, m.inner, a.inner, a.nnz); err != nil {
		return err
	}
	return copyPart(s, m.values, a.values, a.nnz)
}

// copyPart copies the first n elements of src to dst, on s.
func copyPart[E any](s *cuda.Stream, dst, src *cuda.DeviceBuffer[E], n int) error {
	if n == 0 {
		return nil
	}
	d, err := dst.Slice(0, n)
	if err != nil {
		return err
	}
	from, err := src.Slice(0, n)
	if err != nil {
		return err
	}
	return d.CopyFromDeviceAsync(from, s)
}

// to returns h in format f, converted on the host.
func (h hostMatrix[I, T]) to(f Format) hostMatrix[I, T] {
	if h.format == f {
		return h
	}
	// To CSR first.
	csr := h
	switch h.format {
	case CSC:
		csr = transpose(h.cols, h.rows, h.outer, h.inner, h.values)
		csr.rows, csr.cols = h.rows, h.cols
	case COO:
		off := make([]I, h.rows+1)
		for _, r := range h.outer {
			off[r+1]++
		}
		for i := range h.rows {
			off[i+1] += off[i]
		}
		csr.outer = off
	}
	csr.format = CSR
	switch f {
	case CSC:
		out := transpose(h.rows, h.cols, csr.outer, csr.inner, csr.values)
		out.format, out.rows, out.cols = CSC, h.rows, h.cols
		return out
	case COO:
		rows := make([]I, 0, h.nnz)
		for i := range h.rows {
			for k := csr.outer[i]; k < csr.outer[i+1]; k++ {
				rows = append(rows, I(i))
			}
		}
		csr.outer, csr.format = rows, COO
	}
	return csr
}

// transpose returns the CSR of Aᵀ (its outer by the inner dimension) from
// the CSR of A, of outer rows and inner columns: a stable counting sort by
// column, each new row's indices increasing.
func transpose[I Index, T Value](outer, inner int, off, ind []I, val []T) hostMatrix[I, T] {
	nnz := len(ind)
	toff := make([]I, inner+1)
	for _, c := range ind {
		toff[c+1]++
	}
	for c := range inner {
		toff[c+1] += toff[c]
	}
	next := append([]I(nil), toff[:inner]...)
	tind, tval := make([]I, nnz), make([]T, nnz)
	for r := range outer {
		for k := off[r]; k < off[r+1]; k++ {
			c := ind[k]
			tind[next[c]], tval[next[c]] = I(r), val[k]
			next[c]++
		}
	}
	return hostMatrix[I, T]{nnz: nnz, outer: toff, inner: tind, values: tval}
}

// ToDense writes a into d, dense (cusparseSparseToDense), queued on h's
// stream: every element of d's Rows×Cols is written, zero where a stores
// nothing. d shares no memory with a's arrays (an error). A BSR or BlockedELL matrix is written out through the host
// (cuSPARSE's SparseToDense does not take them): ToDense waits for h's
// stream, and is refused while it captures.
func ToDense[I Index, T Element](h *Handle, a *Matrix[I, T], d Dense[T]) error {
	const name = "ToDense"
	if err := h.valid(name); err != nil {
		return err
	}
	if err := a.hold(name); err != nil {
		return err
	}
	defer a.life.Release()
	if err := d.check(name, "d"); err != nil {
		return err
	}
	if err := h.base.SameContext(name, a.operand("a"), libhandle.Arg("d", d.Data)); err != nil {
		return err
	}
	if d.Rows != a.rows || d.Cols != a.cols {
		return errorf(name, cuda.ErrInvalidValue, "a is %dx%d and d %dx%d: want the same shape", a.rows, a.cols, d.Rows, d.Cols)
	}
	if err := checkOutput(name, "d", d.region(), input{"a's arrays", a.spans()}); err != nil {
		return err
	}
	if a.blocked() {
		return blockedToDense(name, h, a, d)
	}
	ds := &descs{op: name}
	return h.do(name, append(a.mem(), d.Data), func(lh clib.Handle, work func(int, uintptr) (uintptr, error)) (err error) {
		defer ds.release(&err)
		if a.rows == 0 || a.cols == 0 {
			return nil // no element to write (not cuSPARSE's: see spmv)
		}
		da, err := spMat(ds, a)
		if err != nil {
			return err
		}
		dd, err := dnMat(ds, d)
		if err != nil {
			return err
		}
		var n uintptr
		if err := check(name, "cusparseSparseToDense_bufferSize", clib.SparseToDense_bufferSize(lh, da, dd, 0, &n)); err != nil {
			return err
		}
		buf, err := work(0, n)
		if err != nil {
			return err
		}
		return check(name, "cusparseSparseToDense", clib.SparseToDense(lh, da, dd, 0, buf))
	})
}

// FromDense returns the non-zeros of d as a new CSR Matrix in
// stream-ordered memory of h's stream (cusparseDenseToSparse). cuSPARSE
// counts the non-zeros on the device and hands the count to the host, so
// FromDense waits for h's stream (its analysis does), and is refused while
// the stream captures. cuSPARSE does not order a row's non-zeros by
// column: FromDense waits for the conversion too, and sorts them on the
// host where they are out of order.
func FromDense[I Index, T Element](h *Handle, d Dense[T]) (*Matrix[I, T], error) {
	const name = "FromDense"
	if err := h.valid(name); err != nil {
		return nil, err
	}
	if err := d.check(name, "d"); err != nil {
		return nil, err
	}
	if err := h.base.SameContext(name, libhandle.Arg("d", d.Data)); err != nil {
		return nil, err
	}
	if err := checkShape[I](name, d.Rows, d.Cols, 0); err != nil {
		return nil, err
	}
	if h.base.Stream().Capturing() {
		return nil, errorf(name, cuda.ErrInvalidValue, "the stream captures: FromDense hands the count of non-zeros to the host, which a capture cannot")
	}
	var out *Matrix[I, T]
	ds := &descs{op: name}
	err := h.do(name, []cuda.Memory{d.Data}, func(lh clib.Handle, work func(int, uintptr) (uintptr, error)) (err error) {
		defer ds.release(&err)
		if d.Rows == 0 || d.Cols == 0 {
			// No elements: no non-zeros (not cuSPARSE's: see spmv).
			out, err = zeroMatrix[I, T](h.base.Stream(), CSR, d.Rows, d.Cols)
			return err
		}
		m, err := allocMatrix[I, T](h.base.Stream(), CSR, d.Rows, d.Cols, -1)
		if err != nil {
			return err
		}
		out = m
		dd, err := dnMat(ds, d)
		if err != nil {
			return err
		}
		dm, err := spMat(ds, m)
		if err != nil {
			return err
		}
		var n uintptr
		if err := check(name, "cusparseDenseToSparse_bufferSize", clib.DenseToSparse_bufferSize(lh, dd, dm, 0, &n)); err != nil {
			return err
		}
		buf, err := work(0, n)
		if err != nil {
			return err
		}
		if err := check(name, "cusparseDenseToSparse_analysis", clib.DenseToSparse_analysis(lh, dd, dm, 0, buf)); err != nil {
			return err
		}
		var rows, cols, nnz int64
		if err := check(name, "cusparseSpMatGetSize", clib.SpMatGetSize(dm, &rows, &cols, &nnz)); err != nil {
			return err
		}
		if nnz < 0 || int(nnz) > maxIndex[I]() {
			return errorf(name, cuda.ErrNotSupported, "d has %d non-zeros: more than the indices count", nnz)
		}
		if err := m.resize(int(nnz)); err != nil {
			return err
		}
		if err := check(name, "cusparseCsrSetPointers", clib.CsrSetPointers(dm, uintptr(m.outer.Ptr()), uintptr(m.inner.Ptr()), uintptr(m.values.Ptr()))); err != nil {
			return err
		}
		return check(name, "cusparseDenseToSparse_convert", clib.DenseToSparse_convert(lh, dd, dm, 0, buf))
	})
	if err == nil {
		err = sortRows(name, h, out)
	}
	if err != nil {
		if out != nil {
			out.freeAll()
		}
		return nil, err
	}
	return out, nil
}

// sortRows puts each row's column indices of m, a CSR matrix FromDense
// has just made, in increasing order, with their values: cuSPARSE's
// DenseToSparse gives each row its non-zeros in an order of its own (on an
// H100, cuSPARSE 12 leaves rows of a few dozen non-zeros and more
// unsorted, from a row-major or a column-major matrix alike; NVIDIA calls
// it the expected behavior, unsorted CSR being valid CSR for cuSPARSE),
// and a Matrix keeps them sorted. It waits for h's stream and sorts on the
// host (FromDense waits for the stream already), writing back only what
// was out of order.
func sortRows[I Index, T Element](op string, h *Handle, m *Matrix[I, T]) error {
	if m.nnz < 2 {
		return nil
	}
	if err := h.hold(op); err != nil {
		return err
	}
	defer h.base.Release()
	if err := h.base.Stream().Synchronize(); err != nil {
		return calledas.Op(op, err)
	}
	hm, err := m.download(op)
	if err != nil {
		return err
	}
	sorted, err := sortCompressed(hm.outer, hm.inner, hm.values, m.cols)
	if err != nil {
		return errorf(op, cuda.ErrInvalidValue, "cuSPARSE's DenseToSparse gave %v (did d change during the call?)", err)
	}
	if sorted {
		return nil
	}
	if err := errors.Join(copyIn(m.inner, hm.inner), copyIn(m.values, hm.values)); err != nil {
		return calledas.Op(op, err)
	}
	return nil
}

// sortCompressed sorts the inner indices of each slice of a compressed
// matrix (offsets off into ind and val), with their values, in place;
// sorted reports that they were in order already. It checks what it
// reads: offsets that start at 0, never decrease and end at len(ind),
// inner indices in [0, inner), none twice in a slice.
func sortCompressed[I Index, T Element](off, ind []I, val []T, inner int) (sorted bool, err error) {
	if len(off) == 0 || off[0] != 0 || int(off[len(off)-1]) != len(ind) || len(val) != len(ind) {
		return false, fmt.Errorf("offsets from %v to %v for %d non-zeros", off[:min(len(off), 1)], off[max(len(off)-1, 0):], len(ind))
	}
	sorted = true
	var perm []int
	var pi []I
	var pv []T
	for o := range len(off) - 1 {
		lo, hi := int(off[o]), int(off[o+1])
		if lo > hi || hi > len(ind) {
			return false, fmt.Errorf("offsets %d and %d at %d", lo, hi, o)
		}
		in := true
		for k := lo; k < hi; k++ {
			if ind[k] < 0 || int(ind[k]) >= inner {
				return false, fmt.Errorf("index %d in slice %d, outside [0, %d)", ind[k], o, inner)
			}
			if k > lo && ind[k] <= ind[k-1] {
				in = false
			}
		}
		if in {
			continue
		}
		sorted = false
		perm = perm[:0]
		for k := lo; k < hi; k++ {
			perm = append(perm, k)
		}
		slices.SortFunc(perm, func(a, b int) int { return cmpIndex(ind[a], ind[b]) })
		pi, pv = pi[:0], pv[:0]
		for _, k := range perm {
			pi, pv = append(pi, ind[k]), append(pv, val[k])
		}
		for k := 1; k < len(pi); k++ {
			if pi[k] == pi[k-1] {
				return false, fmt.Errorf("index %d twice in slice %d", pi[k], o)
			}
		}
		copy(ind[lo:hi], pi)
		copy(val[lo:hi], pv)
	}
	return sorted, nil
}

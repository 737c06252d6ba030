package cusparse

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
	"github.com/gocuda/cuda/internal/libhandle"
	"github.com/gocuda/cuda/internal/lifetime"
)

// Index is the types of a sparse matrix's indices: cuSPARSE's 32-bit and
// 64-bit indices (CUSPARSE_INDEX_32I, CUSPARSE_INDEX_64I), or types
// defined on them.
type Index interface{ ~int32 | ~int64 }

// Element is the types of a sparse matrix's values that cuSPARSE computes
// with: real and complex, single and double precision, or types defined
// on them.
type Element interface {
	~float32 | ~float64 | ~complex64 | ~complex128
}

// Half is the half-precision types cuSPARSE multiplies computing in
// float32 (CUDA_R_16F and CUDA_R_16BF values, CUDA_R_32F compute type):
// SpMVHalf and SpMMHalf, of CSR and COO matrices.
type Half interface {
	cuda.Float16 | cuda.BFloat16
}

// Value is the types a Matrix and a Dense may hold: Element, and Half. A
// matrix of a half type is made by NewCSR or NewCOO and multiplied by
// SpMVHalf and SpMMHalf; the other operations (Convert, ToDense,
// FromDense, SpGEMM, SpSV, SpSM) take Element alone, as cuSPARSE's generic
// API takes the halves in none of them here.
type Value interface {
	Element | Half
}

// Format is how a Matrix stores its non-zeros.
type Format uint8

const (
	// CSR is compressed sparse rows: Rows+1 row offsets into the column
	// indices and values, row after row, each row's columns increasing.
	// The zero Format.
	CSR Format = iota
	// CSC is compressed sparse columns: Cols+1 column offsets into the
	// row indices and values, column after column, each column's rows
	// increasing.
	CSC
	// COO is coordinates: a row index, a column index and a value per
	// non-zero, sorted by row, then column.
	COO
	// BSR is block sparse rows: CSR of square blocks of BlockSize×BlockSize
	// elements, each stored whole and row-major (cuSPARSE's generic BSR,
	// cusparseCreateBsr, CUSPARSE_ORDER_ROW). Made by NewBSR and ToBSR;
	// multiplied by SpMV and SpMM.
	BSR
	// BlockedELL is blocked ELLPACK: each row of BlockSize×BlockSize blocks
	// stores as many blocks as the fullest one holds, empty ones marked
	// with column -1 (cusparseCreateBlockedEll). Made by NewBlockedELL and
	// ToBlockedELL; multiplied by SpMM only, as cuSPARSE does.
	BlockedELL
)

func (f Format) String() string {
	switch f {
	case CSR:
		return "CSR"
	case CSC:
		return "CSC"
	case COO:
		return "COO"
	case BSR:
		return "BSR"
	case BlockedELL:
		return "BlockedELL"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Matrix is a sparse matrix of Rows×Cols in device memory, in one of the
// formats, that owns its arrays (made in stream-ordered memory of the
// stream it was made on): Free releases them. No two non-zeros share a
// position. It is safe for use by many goroutines; the device memory it
// names is not protected against concurrent writes. The zero Matrix is
// not usable: the operations return cuda.ErrInvalidValue for it.
type Matrix[I Index, T Value] struct {
	life            lifetime.Life
	format          Format
	rows, cols, nnz int
	outer, inner    *cuda.DeviceBuffer[I] // see Arrays
	values          *cuda.DeviceBuffer[T]
	stream          *cuda.Stream
	outerLen        int // the first array's length (the buffers hold at least one element each)
	// The blocked formats: the block size, and the second array's length
	// (nnz counts the values, blocks whole).
	block, innerN int
}

// blocked reports whether m is BSR or BlockedELL.
func (m *Matrix[I, T]) blocked() bool { return m.format == BSR || m.format == BlockedELL }

// innerLen is the second array's length: the non-zeros' indices, or the
// blocks' columns.
func (m *Matrix[I, T]) innerLen() int {
	if m.blocked() {
		return m.innerN
	}
	return m.nnz
}

// Format returns how m stores its non-zeros.
func (m *Matrix[I, T]) Format() Format {
	if m == nil {
		return CSR
	}
	return m.format
}

// Rows returns m's number of rows.
func (m *Matrix[I, T]) Rows() int {
	if m == nil {
		return 0
	}
	return m.rows
}

// Cols returns m's number of columns.
func (m *Matrix[I, T]) Cols() int {
	if m == nil {
		return 0
	}
	return m.cols
}

// NNZ returns the number of non-zeros m stores: for the blocked formats,
// the values of its blocks, zeros within them included.
func (m *Matrix[I, T]) NNZ() int {
	if m == nil {
		return 0
	}
	return m.nnz
}

// BlockSize returns the side of m's blocks: 0 unless m is BSR or
// BlockedELL.
func (m *Matrix[I, T]) BlockSize() int {
	if m == nil {
		return 0
	}
	return m.block
}

// Arrays returns views of m's device arrays, valid until m's Free: for
// CSR, the row offsets (Rows+1) and the column indices (NNZ); for CSC, the
// column offsets (Cols+1) and the row indices; for COO, the row indices
// and the column indices (NNZ each); then the values (NNZ). For BSR, the
// offsets of the block rows (Rows/BlockSize+1), the blocks' column indices
// (counted in blocks), and the blocks' values, each block row-major; for
// BlockedELL, no first array, the blocks' column indices (Rows/BlockSize
// rows of as many as the fullest block row holds, -1 for none) and the
// values (Rows rows of that many blocks' columns).
func (m *Matrix[I, T]) Arrays() (outer, inner *cuda.DeviceBuffer[I], values *cuda.DeviceBuffer[T], err error) {
	const op = "Matrix.Arrays"
	if err := m.hold(op); err != nil {
		return nil, nil, nil, err
	}
	defer m.life.Release()
	if outer, err = m.outer.Slice(0, m.outerLen); err != nil {
		return nil, nil, nil, calledas.Op(op, err)
	}
	if inner, err = m.inner.Slice(0, m.innerLen()); err != nil {
		return nil, nil, nil, calledas.Op(op, err)
	}
	if values, err = m.values.Slice(0, m.nnz); err != nil {
		return nil, nil, nil, calledas.Op(op, err)
	}
	return outer, inner, values, nil
}

// ToHost copies m's arrays to Go slices, as Arrays names them, after the
// work queued on m's stream.
func (m *Matrix[I, T]) ToHost() (outer, inner []I, values []T, err error) {
	const op = "Matrix.ToHost"
	if err := m.hold(op); err != nil {
		return nil, nil, nil, err
	}
	defer m.life.Release()
	h, err := m.download(op)
	return h.outer, h.inner, h.values, err
}

// String describes m, as `cusparse.Matrix[int32,float64]{CSR 97x97, 412 non-zeros}`.
func (m *Matrix[I, T]) String() string {
	kind := fmt.Sprintf("cusparse.Matrix[%v,%v]", reflect.TypeFor[I](), reflect.TypeFor[T]())
	switch {
	case m == nil:
		return kind + "(nil)"
	case m.life.Status() == lifetime.Zero:
		return kind + "{zero}"
	case m.life.IsClosed():
		return kind + "{freed}"
	}
	if m.blocked() {
		return fmt.Sprintf("%s{%v %dx%d, blocks of %dx%d, %d values}", kind, m.format, m.rows, m.cols, m.block, m.block, m.nnz)
	}
	return fmt.Sprintf("%s{%v %dx%d, %d non-zeros}", kind, m.format, m.rows, m.cols, m.nnz)
}

// Free releases m's arrays, after the work queued on the stream m was made
// on (they are stream-ordered memory). Free of a freed Matrix returns nil.
func (m *Matrix[I, T]) Free() error {
	const op = "Matrix.Free"
	if err := m.valid(op); err != nil {
		return err
	}
	_, err := m.life.Close(func() (bool, error) {
		for _, free := range []func() error{m.freeOuter, m.freeInner, m.freeValues} {
			if err := free(); err != nil && !errors.Is(err, cuda.ErrClosed) {
				return false, calledas.Op(op, err)
			}
		}
		return true, nil
	})
	return err
}

func (m *Matrix[I, T]) freeOuter() error {
	if m.outer == nil {
		return nil
	}
	if err := m.outer.Free(); err != nil {
		return err
	}
	m.outer = nil
	return nil
}

func (m *Matrix[I, T]) freeInner() error {
	if m.inner == nil {
		return nil
	}
	if err := m.inner.Free(); err != nil {
		return err
	}
	m.inner = nil
	return nil
}

func (m *Matrix[I, T]) freeValues() error {
	if m.values == nil {
		return nil
	}
	if err := m.values.Free(); err != nil {
		return err
	}
	m.values = nil
	return nil
}

// valid returns the error for a nil or zero Matrix.
func (m *Matrix[I, T]) valid(op string) error {
	switch {
	case m == nil:
		return errorf(op, cuda.ErrInvalidValue, "nil *Matrix")
	case m.life.Status() == lifetime.Zero:
		return errorf(op, cuda.ErrInvalidValue, "a zero Matrix: make one with NewCSR, NewCSC, NewCOO, NewBSR, NewBlockedELL or FromDense")
	}
	return nil
}

// hold keeps m's arrays from being freed until m.life.Release.
func (m *Matrix[I, T]) hold(op string) error {
	if err := m.valid(op); err != nil {
		return err
	}
	if m.life.Hold() != lifetime.Held {
		return errorf(op, cuda.ErrClosed, "the matrix is freed")
	}
	return nil
}

// mem is m's memory, for Stream.Do.
func (m *Matrix[I, T]) mem() []cuda.Memory { return []cuda.Memory{m.outer, m.inner, m.values} }

// operand is m as an operand named name (Handle.sameContext).
func (m *Matrix[I, T]) operand(name string) libhandle.Operand { return libhandle.Arg(name, m.values) }

// hostMatrix is a matrix's arrays on the host.
type hostMatrix[I Index, T Value] struct {
	format          Format
	rows, cols, nnz int
	outer, inner    []I
	values          []T
	block           int // the blocked formats' block size
}

// download copies m's arrays to the host. Called with m held.
func (m *Matrix[I, T]) download(op string) (hostMatrix[I, T], error) {
	h := hostMatrix[I, T]{format: m.format, rows: m.rows, cols: m.cols, nnz: m.nnz, block: m.block,
		outer: make([]I, m.outerLen), inner: make([]I, m.innerLen()), values: make([]T, m.nnz)}
	for _, c := range []func() error{
		func() error { return copyOut(m.outer, h.outer) },
		func() error { return copyOut(m.inner, h.inner) },
		func() error { return copyOut(m.values, h.values) },
	} {
		if err := c(); err != nil {
			return h, calledas.Op(op, err)
		}
	}
	return h, nil
}

// copyOut copies the first len(dst) elements of b to dst.
func copyOut[E any](b *cuda.DeviceBuffer[E], dst []E) error {
	if len(dst) == 0 {
		return nil
	}
	v, err := b.Slice(0, len(dst))
	if err != nil {
		return err
	}
	return v.CopyToHost(dst)
}

// upload makes a Matrix of h's arrays in stream-ordered memory of s.
func upload[I Index, T Value](op string, s *cuda.Stream, h hostMatrix[I, T]) (*Matrix[I, T], error) {
	m := &Matrix[I, T]{format: h.format, rows: h.rows, cols: h.cols, nnz: len(h.values), stream: s, outerLen: len(h.outer),
		block: h.block, innerN: len(h.inner)}
	err := m.allocArrays(s)
	if err == nil {
		if err = errors.Join(copyIn(m.outer, h.outer), copyIn(m.inner, h.inner), copyIn(m.values, h.values)); err != nil {
			m.freeAll()
		}
	}
	if err != nil {
		return nil, calledas.Op(op, err)
	}
	m.life.ArmUntracked()
	return m, nil
}

// allocArrays allocates m's arrays of their lengths (outerLen, innerLen,
// nnz) in stream-ordered memory of s, each at least one element: cuSPARSE
// is never given a NULL array. What it allocated is freed where it fails.
func (m *Matrix[I, T]) allocArrays(s *cuda.Stream) error {
	var err error
	if m.outer, err = cuda.AllocAsync[I](s, max(m.outerLen, 1)); err == nil {
		if m.inner, err = cuda.AllocAsync[I](s, max(m.innerLen(), 1)); err == nil {
			m.values, err = cuda.AllocAsync[T](s, max(m.nnz, 1))
		}
	}
	if err != nil {
		m.freeAll()
	}
	return err
}

// copyIn copies src to the start of b.
func copyIn[E any](b *cuda.DeviceBuffer[E], src []E) error {
	if len(src) == 0 {
		return nil
	}
	v, err := b.Slice(0, len(src))
	if err != nil {
		return err
	}
	return v.CopyFromHost(src)
}

// freeAll frees what a matrix being made has allocated (each free tried
// twice, lifetime.CloseTemp): a matrix that was never the user's. Its
// error is the first failure, for a caller that has none of its own.
func (m *Matrix[I, T]) freeAll() error {
	var err error
	for _, free := range []func() error{m.freeOuter, m.freeInner, m.freeValues} {
		lifetime.CloseTemp(&err, free)
	}
	return err
}

// allocMatrix makes a Matrix of the given shape with uninitialized arrays,
// in stream-ordered memory of s. A negative nnz makes a CSR matrix whose
// number of non-zeros is not known yet: its offsets alone, the rest made
// by resize.
func allocMatrix[I Index, T Value](s *cuda.Stream, f Format, rows, cols, nnz int) (*Matrix[I, T], error) {
	m := &Matrix[I, T]{format: f, rows: rows, cols: cols, nnz: max(nnz, 0), stream: s, outerLen: outerLen(f, rows, cols, nnz)}
	var err error
	if m.outer, err = cuda.AllocAsync[I](s, max(m.outerLen, 1)); err == nil && nnz >= 0 {
		if m.inner, err = cuda.AllocAsync[I](s, max(nnz, 1)); err == nil {
			m.values, err = cuda.AllocAsync[T](s, max(nnz, 1))
		}
	}
	if err != nil {
		m.freeAll()
		return nil, err
	}
	m.life.ArmUntracked()
	return m, nil
}

// outerLen is the length of a format's first array.
func outerLen(f Format, rows, cols, nnz int) int {
	switch f {
	case CSR:
		return rows + 1
	case CSC:
		return cols + 1
	}
	return nnz
}

// maxIndex is the largest count or index I holds.
func maxIndex[I Index]() int {
	if reflect.TypeFor[I]().Kind() == reflect.Int32 {
		return math.MaxInt32
	}
	return math.MaxInt64
}

// checkShape checks the sizes of a matrix of I's indices.
func checkShape[I Index](op string, rows, cols, nnz int) error {
	switch lim := maxIndex[I](); {
	case rows < 0 || cols < 0:
		return errorf(op, cuda.ErrInvalidValue, "a %dx%d matrix: the sizes must not be negative", rows, cols)
	case rows > lim || cols > lim || nnz > lim:
		return errorf(op, cuda.ErrInvalidValue, "a %dx%d matrix of %d non-zeros: more than %v indices count", rows, cols, nnz, reflect.TypeFor[I]())
	}
	return nil
}

// NewCSR makes a Matrix in CSR format from Go slices, copied to
// stream-ordered memory of s: rows+1 row offsets (the first 0, the last
// len(indices)), the column indices, increasing within each row, and
// their values. Use NewCOO for entries in any order, or repeated. T may be
// a half type (Value), for SpMVHalf and SpMMHalf.
func NewCSR[I Index, T Value](s *cuda.Stream, rows, cols int, offsets, indices []I, values []T) (*Matrix[I, T], error) {
	return newCompressed("NewCSR", s, CSR, rows, cols, offsets, indices, values)
}

// NewCSC makes a Matrix in CSC format from Go slices, copied to
// stream-ordered memory of s: cols+1 column offsets (the first 0, the last
// len(indices)), the row indices, increasing within each column, and
// their values. Use NewCOO for entries in any order, or repeated.
func NewCSC[I Index, T Element](s *cuda.Stream, rows, cols int, offsets, indices []I, values []T) (*Matrix[I, T], error) {
	return newCompressed("NewCSC", s, CSC, rows, cols, offsets, indices, values)
}

func newCompressed[I Index, T Value](op string, s *cuda.Stream, f Format, rows, cols int, offsets, indices []I, values []T) (*Matrix[I, T], error) {
	if s == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	}
	if err := checkShape[I](op, rows, cols, len(indices)); err != nil {
		return nil, err
	}
	outer, inner, what := rows, cols, "row"
	if f == CSC {
		outer, inner, what = cols, rows, "column"
	}
	switch {
	case len(offsets) != outer+1:
		return nil, errorf(op, cuda.ErrInvalidValue, "len(offsets) is %d: want %d (%d %ss + 1)", len(offsets), outer+1, outer, what)
	case len(values) != len(indices):
		return nil, errorf(op, cuda.ErrInvalidValue, "len(values) is %d, len(indices) %d: want them equal", len(values), len(indices))
	case offsets[0] != 0 || int(offsets[outer]) != len(indices):
		return nil, errorf(op, cuda.ErrInvalidValue, "offsets run from %d to %d: want 0 to len(indices), %d", offsets[0], offsets[outer], len(indices))
	}
	for o := range outer {
		lo, hi := offsets[o], offsets[o+1]
		if hi < lo {
			return nil, errorf(op, cuda.ErrInvalidValue, "offsets[%d] is %d, less than offsets[%d], %d", o+1, hi, o, lo)
		}
		if int(hi) > len(indices) {
			return nil, errorf(op, cuda.ErrInvalidValue, "offsets[%d] is %d, past len(indices), %d", o+1, hi, len(indices))
		}
		for k := lo; k < hi; k++ {
			i := indices[k]
			if i < 0 || int(i) >= inner {
				return nil, errorf(op, cuda.ErrInvalidValue, "indices[%d] is %d, outside 0..%d", k, i, inner-1)
			}
			if k > lo && i <= indices[k-1] {
				return nil, errorf(op, cuda.ErrInvalidValue, "indices[%d] is %d, not more than indices[%d], %d: a %s's indices must increase (NewCOO sorts and sums)", k, i, k-1, indices[k-1], what)
			}
		}
	}
	return upload(op, s, hostMatrix[I, T]{format: f, rows: rows, cols: cols, nnz: len(indices),
		outer: slices.Clone(offsets), inner: slices.Clone(indices), values: slices.Clone(values)})
}

// NewCOO makes a Matrix in COO format from triplets (rowInd[k],
// colInd[k], values[k]) in any order, copied to stream-ordered memory of
// s: sorted by row, then column, on the host, and the values of a
// position given more than once summed into one non-zero (for the half
// types, each sum computed in float32 and rounded to T). Zeros are stored
// as given, as SciPy's COO keeps them: a triplet of value 0, or repeated
// ones that sum to 0, is a stored element NNZ counts (FromDense of the
// matrix written out dense finds none there). T may be a half type
// (Value), for SpMVHalf and SpMMHalf.
func NewCOO[I Index, T Value](s *cuda.Stream, rows, cols int, rowInd, colInd []I, values []T) (*Matrix[I, T], error) {
	const op = "NewCOO"
	if s == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	}
	if len(rowInd) != len(values) || len(colInd) != len(values) {
		return nil, errorf(op, cuda.ErrInvalidValue, "len(rowInd) %d, len(colInd) %d, len(values) %d: want them equal", len(rowInd), len(colInd), len(values))
	}
	if err := checkShape[I](op, rows, cols, len(values)); err != nil {
		return nil, err
	}
	for k := range values {
		if rowInd[k] < 0 || int(rowInd[k]) >= rows || colInd[k] < 0 || int(colInd[k]) >= cols {
			return nil, errorf(op, cuda.ErrInvalidValue, "triplet %d is at (%d, %d), outside the %dx%d matrix", k, rowInd[k], colInd[k], rows, cols)
		}
	}
	r, c, v := sortCOO(rowInd, colInd, values)
	return upload(op, s, hostMatrix[I, T]{format: COO, rows: rows, cols: cols, nnz: len(v), outer: r, inner: c, values: v})
}

// sortCOO returns triplets sorted by row, then column, with the values of
// repeated positions summed.
func sortCOO[I Index, T Value](rowInd, colInd []I, values []T) ([]I, []I, []T) {
	perm := make([]int, len(values))
	for k := range perm {
		perm[k] = k
	}
	slices.SortStableFunc(perm, func(a, b int) int {
		if rowInd[a] != rowInd[b] {
			return cmpIndex(rowInd[a], rowInd[b])
		}
		return cmpIndex(colInd[a], colInd[b])
	})
	r, c, v := make([]I, 0, len(perm)), make([]I, 0, len(perm)), make([]T, 0, len(perm))
	for _, k := range perm {
		if n := len(v); n > 0 && r[n-1] == rowInd[k] && c[n-1] == colInd[k] {
			v[n-1] = add(v[n-1], values[k])
			continue
		}
		r, c, v = append(r, rowInd[k]), append(c, colInd[k]), append(v, values[k])
	}
	return r, c, v
}

// add returns a+b: for the half types, computed in float32 and rounded to
// T (their bits are not numbers Go adds).
func add[T Value](a, b T) T {
	switch x := any(a).(type) {
	case cuda.Float16:
		return any(cuda.NewFloat16(x.Float32() + any(b).(cuda.Float16).Float32())).(T)
	case cuda.BFloat16:
		return any(cuda.NewBFloat16(x.Float32() + any(b).(cuda.BFloat16).Float32())).(T)
	}
	return a + b
}

func cmpIndex[I Index](a, b I) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

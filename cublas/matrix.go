package cublas

import (
	"fmt"
	"math"
	"unsafe"

	cuda "github.com/gocuda/cuda"
)

// Layout is how a Matrix lies in its buffer.
type Layout uint8

const (
	// RowMajor: row after row, Stride elements from the start of one row
	// to the next; Go's natural order, and the zero Layout.
	RowMajor Layout = iota
	// ColMajor: column after column, Stride elements from the start of one
	// column to the next; cuBLAS's, Fortran's and LAPACK's order.
	ColMajor
)

func (l Layout) String() string {
	switch l {
	case RowMajor:
		return "row-major"
	case ColMajor:
		return "column-major"
	}
	return "Layout(?)"
}

// Matrix describes a matrix of Rows×Cols elements held in Data (of any of
// cuda.AnyFloat's types: Gemm, its batched forms and Matmul take them all,
// the half types accumulating in float32; Gemv takes cuda.Float's): the
// element at row i, column j is Data[i*Stride+j] when row-major, and
// Data[j*Stride+i] when column-major. A zero Stride means packed: Cols for
// a row-major matrix, Rows for a column-major one. BatchStride is for
// GemmStridedBatched: the elements from one matrix of the batch to the
// next (0: the matrices are packed one after the other).
//
// A Matrix is a description, not an owner: Data stays the caller's to
// free, after the work that uses it.
type Matrix[T cuda.AnyFloat] struct {
	Data        *cuda.DeviceBuffer[T]
	Rows, Cols  int
	Stride      int
	Layout      Layout
	BatchStride int
}

// NewMatrix describes data as a packed row-major matrix of rows×cols.
func NewMatrix[T cuda.AnyFloat](data *cuda.DeviceBuffer[T], rows, cols int) Matrix[T] {
	return Matrix[T]{Data: data, Rows: rows, Cols: cols}
}

// T returns the transpose of m, on the same memory: a row-major matrix
// read column by column is its transpose, column-major.
func (m Matrix[T]) T() Matrix[T] {
	m.Rows, m.Cols = m.Cols, m.Rows
	m.Layout ^= 1
	return m
}

// maxDim is the largest dimension, stride or count cuBLAS's int arguments
// take.
const maxDim = math.MaxInt32

// ld returns the leading dimension: the stride, or the packed one.
func (m Matrix[T]) ld() int {
	if m.Stride != 0 {
		return m.Stride
	}
	return max(m.minor(), 1)
}

// major and minor are the number of rows and columns, in the order the
// layout stores them: rows of columns (major), or columns of rows.
func (m Matrix[T]) major() int {
	if m.Layout == ColMajor {
		return m.Cols
	}
	return m.Rows
}

func (m Matrix[T]) minor() int {
	if m.Layout == ColMajor {
		return m.Rows
	}
	return m.Cols
}

// size returns the elements a matrix spans: from its first to its last.
func (m Matrix[T]) size() int {
	if m.Rows == 0 || m.Cols == 0 {
		return 0
	}
	return (m.major()-1)*m.ld() + m.minor()
}

// batchStride returns the elements from one matrix of a batch to the next.
func (m Matrix[T]) batchStride() int {
	if m.BatchStride != 0 {
		return m.BatchStride
	}
	return m.size()
}

// span returns the elements count matrices of a batch span, from the first
// element of the first to the last of the last; false if that overflows.
func (m Matrix[T]) span(count int) (int, bool) {
	need := m.size()
	if count > 1 && need > 0 {
		step := m.batchStride()
		if step > (math.MaxInt-need)/(count-1) {
			return 0, false
		}
		need += (count - 1) * step
	}
	return need, true
}

// overlaps reports whether the memory count matrices of m span and that of
// o's share a byte. Called on checked matrices.
func (m Matrix[T]) overlaps(o Matrix[T], count int) bool {
	mn, _ := m.span(count)
	on, _ := o.span(count)
	if mn == 0 || on == 0 {
		return false
	}
	size := uint64(unsafe.Sizeof(*new(T)))
	mlo, olo := uint64(m.Data.Ptr()), uint64(o.Data.Ptr())
	return mlo < olo+uint64(on)*size && olo < mlo+uint64(mn)*size
}

// bytes returns the device addresses from the first byte of count
// matrices of m to after the last; lo == hi where they have no elements.
// Called on checked matrices.
func (m Matrix[T]) bytes(count int) (lo, hi uint64) {
	n, _ := m.span(count)
	lo = uint64(m.Data.Ptr())
	return lo, lo + uint64(n)*uint64(unsafe.Sizeof(*new(T)))
}

// batchOverlap returns how many elements apart two of count matrices of m's
// batch are that share an element (the first such distance), or 0 where
// none do: matrices closer than a matrix's span may still interleave
// without sharing an element (the rows of one between the rows of
// another). Called on checked matrices.
func (m Matrix[T]) batchOverlap(count int) int {
	size, step, ld, major, minor := m.size(), m.batchStride(), m.ld(), m.major(), m.minor()
	if size == 0 {
		return 0
	}
	// The k-th matrix is d = k·step elements after the first; they share
	// an element where d is within minor of a row's start, d - r·ld for
	// a row r of the first.
	for k := 1; k < count && k <= (size-1)/step; k++ {
		d := k * step
		r := min(d/ld, major-1)
		if d-r*ld < minor || r+1 < major && (r+1)*ld-d < minor {
			return d
		}
	}
	return 0
}

// check returns the error for a matrix, named name, that cannot be count
// matrices of a batch in ctx: no data, negative or too large dimensions, a
// stride shorter than a row (or column), a buffer too small, or another
// context.
func (m Matrix[T]) check(op, name string, ctx *cuda.Context, count int) error {
	minorName := map[Layout]string{RowMajor: "columns", ColMajor: "rows"}[m.Layout]
	switch {
	case m.Data == nil:
		return errorf(op, cuda.ErrInvalidValue, "%s has no data (a nil DeviceBuffer)", name)
	case m.Layout != RowMajor && m.Layout != ColMajor:
		return errorf(op, cuda.ErrInvalidValue, "%s has an unknown layout %d", name, m.Layout)
	case m.Rows < 0 || m.Cols < 0:
		return errorf(op, cuda.ErrInvalidValue, "%s is %d×%d: dimensions cannot be negative", name, m.Rows, m.Cols)
	case m.Rows > maxDim || m.Cols > maxDim || m.Stride > maxDim:
		return errorf(op, cuda.ErrInvalidValue, "%s is %d×%d with stride %d: cuBLAS takes at most %d", name, m.Rows, m.Cols, m.Stride, maxDim)
	case m.Stride < 0 || m.Stride != 0 && m.Stride < m.minor():
		return errorf(op, cuda.ErrInvalidValue, "%s's stride %d is less than its %d %s (%s)", name, m.Stride, m.minor(), minorName, m.Layout)
	case m.BatchStride < 0:
		return errorf(op, cuda.ErrInvalidValue, "%s's batch stride %d is negative", name, m.BatchStride)
	case m.Data.Context() != ctx:
		return contextError(op, name, m.Data.Context())
	}
	need, ok := m.span(count)
	if !ok {
		return errorf(op, cuda.ErrInvalidValue, "%s: %d matrices %d elements apart are beyond any buffer", name, count, m.batchStride())
	}
	if have := m.Data.Len(); need > have {
		batch := ""
		if count > 1 {
			batch = fmt.Sprintf(" for %d matrices", count)
		}
		return errorf(op, cuda.ErrInvalidValue, "%s (%d×%d, %s, stride %d) needs %d elements%s; its buffer holds %d",
			name, m.Rows, m.Cols, m.Layout, m.ld(), need, batch, have)
	}
	return nil
}

// op returns the cuBLAS operation (CUBLAS_OP_N or CUBLAS_OP_T) that reads
// m's memory, which cuBLAS sees column-major, as m, or as m's transpose
// when transposed: column-major memory is m itself, row-major memory m's
// transpose.
func (m Matrix[T]) op(transposed bool) int32 {
	if (m.Layout == RowMajor) == transposed {
		return opN
	}
	return opT
}

const (
	opN = 0 // CUBLAS_OP_N
	opT = 1 // CUBLAS_OP_T
)

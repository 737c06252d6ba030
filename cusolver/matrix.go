package cusolver

import (
	"math"
	"reflect"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/libhandle"
)

// Layout is how a Matrix lies in its buffer.
type Layout uint8

const (
	// RowMajor: row after row; Go's natural order, and the zero Layout.
	RowMajor Layout = iota
	// ColMajor: column after column; cuSOLVER's, Fortran's and LAPACK's
	// order.
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

// Triangle names the triangle of a symmetric matrix that is read (and,
// for Cholesky, written), as the matrix's own layout reads it.
type Triangle uint8

const (
	// Lower: on and below the diagonal; the zero Triangle.
	Lower Triangle = iota
	// Upper: on and above the diagonal.
	Upper
)

func (t Triangle) String() string {
	switch t {
	case Lower:
		return "lower"
	case Upper:
		return "upper"
	}
	return "Triangle(?)"
}

// Element is the element types of a Matrix: Go's floats and complex
// numbers, which every operation takes (Hermitian matrices where the real
// ones are symmetric); types defined on them count as theirs.
type Element interface {
	cuda.Float | ~complex64 | ~complex128
}

// Matrix describes a packed matrix of Rows×Cols elements at the start of
// Data: the element at row i, column j is Data[i*Cols+j] when row-major
// (the zero Layout), and Data[j*Rows+i] when column-major. The buffer may
// be longer. The operations that factor a matrix overwrite its elements.
//
// A Matrix is a description, not an owner: Data stays the caller's to
// free, after the work that uses it.
type Matrix[T Element] struct {
	Data       *cuda.DeviceBuffer[T]
	Rows, Cols int
	Layout     Layout
}

// NewMatrix describes data as a packed row-major matrix of rows×cols.
func NewMatrix[T Element](data *cuda.DeviceBuffer[T], rows, cols int) Matrix[T] {
	return Matrix[T]{Data: data, Rows: rows, Cols: cols}
}

// maxDim is the largest dimension the legacy API's int arguments take
// (and so the package's, for one rule).
const maxDim = math.MaxInt32

// cuRows and cuCols are the matrix's dimensions as cuSOLVER sees its
// memory, column-major: a row-major matrix is its transpose.
func (m Matrix[T]) cuRows() int {
	if m.Layout == ColMajor {
		return m.Rows
	}
	return m.Cols
}

func (m Matrix[T]) cuCols() int {
	if m.Layout == ColMajor {
		return m.Cols
	}
	return m.Rows
}

// ld is the leading dimension cuSOLVER is given: packed, at least 1.
func (m Matrix[T]) ld() int { return max(m.cuRows(), 1) }

func (m Matrix[T]) ptr() uintptr { return uintptr(m.Data.Ptr()) }

// check returns the error for a matrix named name that cannot be used in
// ctx: no data, an unknown layout, negative or too large dimensions, a
// buffer too small, or another context.
func (m Matrix[T]) check(op, name string, ctx *cuda.Context) error {
	if err := m.checkShape(op, name, ctx); err != nil {
		return err
	}
	if need, have := m.Rows*m.Cols, m.Data.Len(); need > have {
		return errorf(op, cuda.ErrInvalidValue, "%s (%d×%d) needs %d elements; its buffer holds %d", name, m.Rows, m.Cols, need, have)
	}
	return nil
}

// checkShape is check without the buffer's length: for a batch, whose
// buffer holds count matrices (none where count is 0).
func (m Matrix[T]) checkShape(op, name string, ctx *cuda.Context) error {
	switch {
	case m.Data == nil:
		return errorf(op, cuda.ErrInvalidValue, "%s has no data (a nil DeviceBuffer)", name)
	case m.Layout != RowMajor && m.Layout != ColMajor:
		return errorf(op, cuda.ErrInvalidValue, "%s has an unknown layout %d", name, m.Layout)
	case m.Rows < 0 || m.Cols < 0:
		return errorf(op, cuda.ErrInvalidValue, "%s is %d×%d: dimensions cannot be negative", name, m.Rows, m.Cols)
	case m.Rows > maxDim || m.Cols > maxDim:
		return errorf(op, cuda.ErrInvalidValue, "%s is %d×%d: cuSOLVER takes at most %d", name, m.Rows, m.Cols, maxDim)
	case m.Data.Context() != ctx:
		return errorf(op, cuda.ErrInvalidValue, "%s", libhandle.OtherContext(name, m.Data.Context()))
	}
	if m.Rows > 0 && m.Cols > math.MaxInt/m.Rows {
		return errorf(op, cuda.ErrInvalidValue, "%s is %d×%d: beyond any buffer", name, m.Rows, m.Cols)
	}
	return nil
}

// square returns the error for a matrix that is not square.
func (m Matrix[T]) square(op, name string) error {
	if m.Rows != m.Cols {
		return errorf(op, cuda.ErrInvalidValue, "%s is %d×%d: want a square matrix", name, m.Rows, m.Cols)
	}
	return nil
}

// checkVectors checks a buffer named name of count vectors of n elements each
// (right-hand sides, singular values, eigenvalues).
func checkVectors[T Element](op, name string, b *cuda.DeviceBuffer[T], n, count int, ctx *cuda.Context) error {
	switch {
	case b == nil:
		return errorf(op, cuda.ErrInvalidValue, "%s is a nil DeviceBuffer", name)
	case n < 0 || count < 0:
		return errorf(op, cuda.ErrInvalidValue, "%s: %d vectors of %d elements: counts cannot be negative", name, count, n)
	case count > maxDim:
		return errorf(op, cuda.ErrInvalidValue, "%s: %d vectors: cuSOLVER takes at most %d", name, count, maxDim)
	case b.Context() != ctx:
		return errorf(op, cuda.ErrInvalidValue, "%s", libhandle.OtherContext(name, b.Context()))
	}
	if n > 0 && count > math.MaxInt/n {
		return errorf(op, cuda.ErrInvalidValue, "%s: %d vectors of %d elements are beyond any buffer", name, count, n)
	}
	if need, have := n*count, b.Len(); need > have {
		return errorf(op, cuda.ErrInvalidValue, "%s: %d vectors of %d elements need %d; its buffer holds %d", name, count, n, need, have)
	}
	return nil
}

// overlap reports whether the first na elements of a and nb of b share a
// byte.
func overlap[T Element](a *cuda.DeviceBuffer[T], na int, b *cuda.DeviceBuffer[T], nb int) bool {
	if na == 0 || nb == 0 {
		return false
	}
	size := uint64(unsafe.Sizeof(*new(T)))
	alo, blo := uint64(a.Ptr()), uint64(b.Ptr())
	return alo < blo+uint64(nb)*size && blo < alo+uint64(na)*size
}

// overlapAny is overlap for buffers of two element types.
func overlapAny[A, B Element](a *cuda.DeviceBuffer[A], na int, b *cuda.DeviceBuffer[B], nb int) bool {
	if na == 0 || nb == 0 {
		return false
	}
	sa, sb := uint64(unsafe.Sizeof(*new(A))), uint64(unsafe.Sizeof(*new(B)))
	alo, blo := uint64(a.Ptr()), uint64(b.Ptr())
	return alo < blo+uint64(nb)*sb && blo < alo+uint64(na)*sa
}

// cudaDataType_t values, and cuSOLVER's enumerations.
const (
	typeF32 = 0 // CUDA_R_32F
	typeF64 = 1 // CUDA_R_64F
	typeC32 = 4 // CUDA_C_32F
	typeC64 = 5 // CUDA_C_64F

	fillLower = 0 // CUBLAS_FILL_MODE_LOWER
	fillUpper = 1 // CUBLAS_FILL_MODE_UPPER

	opN = 0 // CUBLAS_OP_N
	opT = 1 // CUBLAS_OP_T
	opC = 2 // CUBLAS_OP_C

	sideLeft = 0 // CUBLAS_SIDE_LEFT

	eigNoVector = 0 // CUSOLVER_EIG_MODE_NOVECTOR
	eigVector   = 1 // CUSOLVER_EIG_MODE_VECTOR
)

// dataType returns cuSOLVER's data type for T. The kind, not T itself,
// says which it is, so that types defined on Go's numbers count as
// theirs.
func dataType[T Element]() int32 {
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Float64:
		return typeF64
	case reflect.Complex64:
		return typeC32
	case reflect.Complex128:
		return typeC64
	}
	return typeF32
}

// isComplex reports whether T is complex.
func isComplex[T Element]() bool { t := dataType[T](); return t == typeC32 || t == typeC64 }

// realType returns cuSOLVER's data type for T's real numbers (singular
// values and eigenvalues are real): float32's for float32 and complex64,
// float64's for float64 and complex128.
func realType[T Element]() int32 {
	if dt := dataType[T](); dt == typeF64 || dt == typeC64 {
		return typeF64
	}
	return typeF32
}

// checkReal returns the error for a buffer of R, named name, that cannot
// hold T's real numbers: R must be float32 for float32 and complex64
// matrices, float64 for float64 and complex128 ones.
func checkReal[T Element, R cuda.Float](op, name string) error {
	if dataType[R]() != realType[T]() {
		want := "float32"
		if realType[T]() == typeF64 {
			want = "float64"
		}
		return errorf(op, cuda.ErrInvalidValue, "%s holds %s: a matrix of %s wants %s (or a type defined on it)", name, reflect.TypeFor[R](), reflect.TypeFor[T](), want)
	}
	return nil
}

// fill returns cuSOLVER's fill mode for triangle t of m as m's layout reads
// it: the other one for a row-major matrix, whose memory is its
// transpose.
func (m Matrix[T]) fill(t Triangle) int32 {
	if (t == Lower) == (m.Layout == ColMajor) {
		return fillLower
	}
	return fillUpper
}

package cusparse

import (
	"fmt"
	"math"
	"reflect"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/closed"
)

// Layout is how a Dense matrix lies in its buffer.
type Layout uint8

const (
	// RowMajor: row after row, Stride elements from the start of one row
	// to the next; Go's natural order, and the zero Layout.
	RowMajor Layout = iota
	// ColMajor: column after column, Stride elements from the start of one
	// column to the next.
	ColMajor
)

func (l Layout) String() string {
	switch l {
	case RowMajor:
		return "row-major"
	case ColMajor:
		return "column-major"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// Dense describes a dense matrix of Rows×Cols elements held in Data: the
// element at row i, column j is Data[i*Stride+j] when row-major, and
// Data[j*Stride+i] when column-major. A zero Stride means packed: Cols for
// a row-major matrix, Rows for a column-major one. A Dense is a
// description, not an owner: Data stays the caller's to free, after the
// work that uses it.
type Dense[T Value] struct {
	Data       *cuda.DeviceBuffer[T]
	Rows, Cols int
	Stride     int
	Layout     Layout
}

// NewDense describes data as a packed row-major matrix of rows×cols.
func NewDense[T Value](data *cuda.DeviceBuffer[T], rows, cols int) Dense[T] {
	return Dense[T]{Data: data, Rows: rows, Cols: cols}
}

// ld returns the leading dimension: the stride, or the packed one.
func (d Dense[T]) ld() int {
	if d.Stride != 0 {
		return d.Stride
	}
	if d.Layout == ColMajor {
		return max(d.Rows, 1)
	}
	return max(d.Cols, 1)
}

// check checks that d describes memory of its buffer; name is its
// parameter's.
func (d Dense[T]) check(op, name string) error {
	major, minor := d.Rows, d.Cols
	if d.Layout == ColMajor {
		major, minor = d.Cols, d.Rows
	}
	switch {
	case d.Data == nil:
		return errorf(op, cuda.ErrInvalidValue, "%s.Data is nil", name)
	case d.Layout != RowMajor && d.Layout != ColMajor:
		return errorf(op, cuda.ErrInvalidValue, "%s.Layout is %d: want RowMajor or ColMajor", name, int(d.Layout))
	case d.Rows < 0 || d.Cols < 0:
		return errorf(op, cuda.ErrInvalidValue, "%s is %dx%d: the sizes must not be negative", name, d.Rows, d.Cols)
	case d.Stride < 0 || d.Stride != 0 && d.Stride < minor:
		return errorf(op, cuda.ErrInvalidValue, "%s.Stride is %d: want 0 (packed) or at least %d", name, d.Stride, minor)
	}
	// A matrix with no rows or no columns needs no elements.
	if major == 0 || minor == 0 {
		return nil
	}
	if ld := d.ld(); major-1 > (math.MaxInt-minor)/ld {
		return errorf(op, cuda.ErrInvalidValue, "%s is %dx%d %v with stride %d: beyond any buffer", name, d.Rows, d.Cols, d.Layout, ld)
	}
	if need := (major-1)*d.ld() + minor; need > d.Data.Len() {
		return errorf(op, cuda.ErrInvalidValue, "%s is %dx%d %v with stride %d: it needs %d elements, and %s.Data holds %d", name, d.Rows, d.Cols, d.Layout, d.ld(), need, name, d.Data.Len())
	}
	return nil
}

// region is the memory of d's elements: its rows (columns, column-major)
// of Cols (Rows) elements, ld apart. Called after check.
func (d Dense[T]) region() region {
	major, minor := d.Rows, d.Cols
	if d.Layout == ColMajor {
		major, minor = d.Cols, d.Rows
	}
	es := uint64(unsafe.Sizeof(*new(T)))
	if major == 0 || minor == 0 {
		return region{}
	}
	return region{base: uint64(d.Data.Ptr()), width: uint64(minor) * es, ld: uint64(d.ld()) * es, lines: major, buf: closed.Of[T]{B: d.Data}}
}

// packed reports whether d's elements lie next to one another, Rows·Cols
// of them from the start of Data.
func (d Dense[T]) packed() bool {
	if d.Layout == ColMajor {
		return d.ld() == d.Rows || d.Cols <= 1
	}
	return d.ld() == d.Cols || d.Rows <= 1
}

// order is d's cusparseOrder_t: CUSPARSE_ORDER_COL 1, CUSPARSE_ORDER_ROW 2.
func (d Dense[T]) order() int32 {
	if d.Layout == ColMajor {
		return 1
	}
	return 2
}

// Op is what an operation does to a sparse matrix before using it
// (cusparseOperation_t).
type Op uint8

const (
	NoTrans   Op = iota // A itself; the zero Op
	Trans               // Aᵀ
	ConjTrans           // Aᴴ, the conjugate transpose (Aᵀ for real values)
)

func (o Op) String() string {
	switch o {
	case NoTrans:
		return "NoTrans"
	case Trans:
		return "Trans"
	case ConjTrans:
		return "ConjTrans"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Fill says which triangle of a matrix a triangular solve reads
// (cusparseFillMode_t): the other is ignored.
type Fill uint8

const (
	Lower Fill = iota // the lower triangle and the diagonal; the zero Fill
	Upper             // the upper triangle and the diagonal
)

func (f Fill) String() string {
	switch f {
	case Lower:
		return "Lower"
	case Upper:
		return "Upper"
	}
	return fmt.Sprintf("Fill(%d)", int(f))
}

// Diag says whether a triangular solve reads the diagonal
// (cusparseDiagType_t).
type Diag uint8

const (
	NonUnit Diag = iota // the diagonal as stored; the zero Diag
	Unit                // ones, whatever is stored
)

func (d Diag) String() string {
	switch d {
	case NonUnit:
		return "NonUnit"
	case Unit:
		return "Unit"
	}
	return fmt.Sprintf("Diag(%d)", int(d))
}

// valueType is T's cudaDataType: CUDA_R_32F 0, CUDA_R_64F 1, CUDA_C_32F
// 4, CUDA_C_64F 5, CUDA_R_16F 2, CUDA_R_16BF 14. The kind says which
// Element T is, so that types defined on Go's numbers count as theirs; the
// half types, both uint16 underneath, are told apart by name.
func valueType[T Value]() int32 {
	switch reflect.TypeFor[T]() {
	case reflect.TypeFor[cuda.Float16]():
		return typeF16
	case reflect.TypeFor[cuda.BFloat16]():
		return typeBF16
	}
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Float64:
		return 1
	case reflect.Complex64:
		return 4
	case reflect.Complex128:
		return 5
	}
	return 0
}

const (
	typeF32  = 0  // CUDA_R_32F
	typeF16  = 2  // CUDA_R_16F
	typeBF16 = 14 // CUDA_R_16BF
)

// isHalf reports whether T is cuda.Float16 or cuda.BFloat16.
func isHalf[T Value]() bool { t := valueType[T](); return t == typeF16 || t == typeBF16 }

// isComplexValue reports whether T is complex64 or complex128.
func isComplexValue[T Value]() bool {
	k := reflect.TypeFor[T]().Kind()
	return k == reflect.Complex64 || k == reflect.Complex128
}

// indexType is I's cusparseIndexType_t: CUSPARSE_INDEX_32I 2,
// CUSPARSE_INDEX_64I 3.
func indexType[I Index]() int32 {
	if reflect.TypeFor[I]().Kind() == reflect.Int64 {
		return 3
	}
	return 2
}

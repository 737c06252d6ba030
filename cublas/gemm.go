package cublas

import (
	"reflect"
	"slices"
	"sort"
	"strconv"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cublas"
	"github.com/gocuda/cuda/internal/lifetime"
)

// cudaDataType_t and cublasComputeType_t values.
const (
	typeF32  = 0  // CUDA_R_32F
	typeF64  = 1  // CUDA_R_64F
	typeF16  = 2  // CUDA_R_16F
	typeBF16 = 14 // CUDA_R_16BF

	compute32F     = 68 // CUBLAS_COMPUTE_32F
	compute64F     = 70 // CUBLAS_COMPUTE_64F
	compute32FTF32 = 77 // CUBLAS_COMPUTE_32F_FAST_TF32

	gemmDefault = -1 // CUBLAS_GEMM_DEFAULT
)

// dataType returns cuBLAS's data type for T. The kind, not T itself, says
// which float T is, so that types defined on Go's floats (type Celsius
// float32) are float32's; the half types, both uint16 underneath, are
// told apart by name.
func dataType[T cuda.AnyFloat]() int32 {
	switch t := reflect.TypeFor[T](); {
	case t.Kind() == reflect.Float32:
		return typeF32
	case t.Kind() == reflect.Float64:
		return typeF64
	case t == reflect.TypeFor[cuda.Float16]():
		return typeF16
	}
	return typeBF16 // AnyFloat allows nothing else
}

// computeType returns the compute type of a product of Ts under math, and
// its scalars alpha and beta in that type's memory.
func computeType[T cuda.AnyFloat](math MathMode, alpha, beta float64) (compute int32, a, b unsafe.Pointer) {
	kind := reflect.TypeFor[T]().Kind()
	if kind == reflect.Float64 {
		return compute64F, unsafe.Pointer(&alpha), unsafe.Pointer(&beta)
	}
	a32, b32 := float32(alpha), float32(beta)
	compute = compute32F
	if kind == reflect.Float32 && math == TF32Math {
		compute = compute32FTF32
	}
	return compute, unsafe.Pointer(&a32), unsafe.Pointer(&b32)
}

// product is a product C = alpha·A·B + beta·C as cuBLAS computes it, on
// column-major memory: C's memory is C itself, or Cᵀ when C is row-major,
// and then cuBLAS computes Cᵀ = Bᵀ·Aᵀ with B first.
type product[T cuda.AnyFloat] struct {
	transA, transB int32 // of the first and second operand
	m, n, k        int32
	first, second  Matrix[T] // A and B, or B and A
}

// shape checks that a, b and c agree (a is m×k, b k×n, c m×n) and returns
// the product cuBLAS computes.
func shape[T cuda.AnyFloat](op, suffix string, a, b, c Matrix[T]) (product[T], error) {
	switch {
	case a.Cols != b.Rows:
		return product[T]{}, errorf(op, cuda.ErrInvalidValue, "a%s is %d×%d and b%s %d×%d: a's columns must equal b's rows", suffix, a.Rows, a.Cols, suffix, b.Rows, b.Cols)
	case c.Rows != a.Rows || c.Cols != b.Cols:
		return product[T]{}, errorf(op, cuda.ErrInvalidValue, "c%s is %d×%d: want %d×%d (a's rows × b's columns)", suffix, c.Rows, c.Cols, a.Rows, b.Cols)
	}
	if c.Layout == RowMajor {
		return product[T]{transA: b.op(true), transB: a.op(true), m: int32(c.Cols), n: int32(c.Rows), k: int32(a.Cols), first: b, second: a}, nil
	}
	return product[T]{transA: a.op(false), transB: b.op(false), m: int32(c.Rows), n: int32(c.Cols), k: int32(a.Cols), first: a, second: b}, nil
}

// Gemm computes C = alpha·A·B + beta·C, with A the m×k matrix a, B the
// k×n matrix b and C the m×n matrix c (a.T() or b.T() for a transposed
// operand). Its arguments are in BLAS's order, the output (also an input)
// last. c may not share memory with a or b (ErrInvalidValue): cuBLAS's
// result would be undefined. Float16 and BFloat16 inputs are multiplied
// and summed in float32; float32 ones in TF32 where the handle's math mode
// allows. With beta 0, c is not read (it may hold anything). alpha and
// beta are float64 whatever T is: cuBLAS takes them in its compute type
// (float64 for float64, float32 otherwise), not in T. The work is queued
// on the handle's stream.
func Gemm[T cuda.AnyFloat](h *Handle, alpha float64, a, b Matrix[T], beta float64, c Matrix[T]) error {
	const op = "Gemm"
	if err := h.valid(op); err != nil {
		return err
	}
	p, err := checkProduct(op, h, a, b, c, 1, "")
	if err != nil {
		return err
	}
	dt := dataType[T]()
	return h.do(op, []cuda.Memory{a.Data, b.Data, c.Data}, func(uintptr) error {
		compute, al, be := computeType[T](h.math, alpha, beta)
		return check(op, "cublasGemmEx", clib.GemmEx(h.raw.blas, p.transA, p.transB, p.m, p.n, p.k,
			al, uintptr(p.first.Data.Ptr()), dt, int32(p.first.ld()),
			uintptr(p.second.Data.Ptr()), dt, int32(p.second.ld()),
			be, uintptr(c.Data.Ptr()), dt, int32(c.ld()), compute, gemmDefault))
	})
}

// checkProduct checks a product's operands, named a, b and c with suffix,
// for a batch of count, and returns the product cuBLAS computes.
func checkProduct[T cuda.AnyFloat](op string, h *Handle, a, b, c Matrix[T], count int, suffix string) (product[T], error) {
	for _, m := range []struct {
		name string
		m    Matrix[T]
	}{{"a", a}, {"b", b}, {"c", c}} {
		if err := m.m.check(op, m.name+suffix, h.base.Context(), count); err != nil {
			return product[T]{}, err
		}
	}
	// cuBLAS reads A and B while it writes C: an output that shares memory
	// with an input gives an undefined result.
	for _, in := range []struct {
		name string
		m    Matrix[T]
	}{{"a", a}, {"b", b}} {
		if c.overlaps(in.m, count) {
			return product[T]{}, aliasError(op, "c"+suffix, c.Data, in.name+suffix, in.m.Data, "c%s shares memory with %s%s: cuBLAS's result is undefined when the output aliases an input; write c elsewhere", suffix, in.name, suffix)
		}
	}
	return shape(op, suffix, a, b, c)
}

// GemmStridedBatched computes count products C = alpha·A·B + beta·C, as
// Gemm, the i-th of matrices BatchStride elements after the (i-1)-th in
// each of a's, b's and c's buffers (packed one after the other when
// BatchStride is 0), in one call. c's matrices may not share an element
// with each other (ErrInvalidValue: the products run side by side), but
// may interleave (the rows of one between another's, a BatchStride less
// than a matrix); a's and b's may overlap.
func GemmStridedBatched[T cuda.AnyFloat](h *Handle, count int, alpha float64, a, b Matrix[T], beta float64, c Matrix[T]) error {
	const op = "GemmStridedBatched"
	if err := h.valid(op); err != nil {
		return err
	}
	if count < 1 || count > maxDim {
		return errorf(op, cuda.ErrInvalidValue, "count is %d: want 1 to %d", count, maxDim)
	}
	p, err := checkProduct(op, h, a, b, c, count, "")
	if err != nil {
		return err
	}
	if d := c.batchOverlap(count); d != 0 {
		return errorf(op, cuda.ErrInvalidValue, "c's matrices %d %s apart share memory (batch stride %d, %d×%d, stride %d): the products run side by side, and their results are undefined",
			d, plural(d, "element"), c.batchStride(), c.Rows, c.Cols, c.ld())
	}
	dt := dataType[T]()
	return h.do(op, []cuda.Memory{a.Data, b.Data, c.Data}, func(uintptr) error {
		compute, al, be := computeType[T](h.math, alpha, beta)
		return check(op, "cublasGemmStridedBatchedEx", clib.GemmStridedBatchedEx(h.raw.blas, p.transA, p.transB, p.m, p.n, p.k,
			al, uintptr(p.first.Data.Ptr()), dt, int32(p.first.ld()), int64(p.first.batchStride()),
			uintptr(p.second.Data.Ptr()), dt, int32(p.second.ld()), int64(p.second.batchStride()),
			be, uintptr(c.Data.Ptr()), dt, int32(c.ld()), int64(c.batchStride()),
			int32(count), compute, gemmDefault))
	})
}

// GemmBatched computes the products c[i] = alpha·a[i]·b[i] + beta·c[i], as
// Gemm, of matrices of one shape anywhere in memory (a matrix may be used by several
// products as an input, but no product's c may share memory with another
// product's a, b or c: ErrInvalidValue), in one call. The arrays of pointers cuBLAS reads
// are stream-ordered device memory, allocated and freed on the handle's
// stream.
func GemmBatched[T cuda.AnyFloat](h *Handle, alpha float64, a, b []Matrix[T], beta float64, c []Matrix[T]) error {
	const op = "GemmBatched"
	if err := h.valid(op); err != nil {
		return err
	}
	n := len(c)
	switch {
	case n == 0:
		return errorf(op, cuda.ErrInvalidValue, "c is empty: a batch needs one product or more")
	case len(a) != n || len(b) != n:
		return errorf(op, cuda.ErrInvalidValue, "a has %d matrices, b %d and c %d: want as many in each", len(a), len(b), n)
	case n > maxDim:
		return errorf(op, cuda.ErrInvalidValue, "c has %d matrices: want at most %d", n, maxDim)
	}
	var p product[T]
	mem := make([]cuda.Memory, 0, 3*n)
	ptrs := make([]cuda.DevicePtr, 3*n) // first operands, second operands, Cs
	for i := range n {
		pi, err := checkProduct(op, h, a[i], b[i], c[i], 1, "["+strconv.Itoa(i)+"]")
		if err != nil {
			return err
		}
		if i == 0 {
			p = pi
		} else if err := sameShape(op, i, p, pi, c[0], c[i]); err != nil {
			return err
		}
		ptrs[i], ptrs[n+i], ptrs[2*n+i] = pi.first.Data.Ptr(), pi.second.Data.Ptr(), c[i].Data.Ptr()
		mem = append(mem, a[i].Data, b[i].Data, c[i].Data)
	}
	if err := batchAliases(op, a, b, c); err != nil {
		return err
	}
	dt := dataType[T]()
	return h.do(op, mem, func(uintptr) (err error) {
		arrays, err := cuda.AllocAsync[cuda.DevicePtr](h.base.Stream(), len(ptrs))
		if err != nil {
			return err
		}
		// Freed after the product, in the stream's order.
		defer lifetime.CloseTemp(&err, arrays.Free)
		if err := arrays.CopyFromHostAsync(ptrs, h.base.Stream()); err != nil {
			return err
		}
		base := uintptr(arrays.Ptr())
		size := unsafe.Sizeof(cuda.DevicePtr(0))
		compute, al, be := computeType[T](h.math, alpha, beta)
		return check(op, "cublasGemmBatchedEx", clib.GemmBatchedEx(h.raw.blas, p.transA, p.transB, p.m, p.n, p.k,
			al, base, dt, int32(p.first.ld()), base+uintptr(n)*size, dt, int32(p.second.ld()),
			be, base+2*uintptr(n)*size, dt, int32(c[0].ld()), int32(n), compute, gemmDefault))
	})
}

// sameShape returns the error for product i of a batch whose shape, layouts
// or strides differ from the first's: cuBLAS takes one of each.
func sameShape[T cuda.AnyFloat](op string, i int, p0, pi product[T], c0, ci Matrix[T]) error {
	if p0.transA != pi.transA || p0.transB != pi.transB || p0.m != pi.m || p0.n != pi.n || p0.k != pi.k ||
		p0.first.ld() != pi.first.ld() || p0.second.ld() != pi.second.ld() || c0.ld() != ci.ld() || c0.Layout != ci.Layout {
		return errorf(op, cuda.ErrInvalidValue, "product %d (a[%d], b[%d], c[%d]) differs from product 0 in shape, layout or stride: a batch has one of each", i, i, i, i)
	}
	return nil
}

// batchAliases returns the error for a batch of products (checked one by
// one) in which an output shares memory with another product's output or
// input: the products run side by side, and the result is undefined.
// Inputs may be shared. Sorting the outputs makes it O(n log n).
func batchAliases[T cuda.AnyFloat](op string, a, b, c []Matrix[T]) error {
	type span struct {
		lo, hi uint64
		i      int
	}
	outs := make([]span, 0, len(c))
	for i, m := range c {
		if lo, hi := m.bytes(1); lo < hi {
			outs = append(outs, span{lo, hi, i})
		}
	}
	slices.SortFunc(outs, func(x, y span) int {
		if x.lo != y.lo {
			if x.lo < y.lo {
				return -1
			}
			return 1
		}
		return x.i - y.i
	})
	for j := 1; j < len(outs); j++ {
		if outs[j].lo < outs[j-1].hi {
			i, k := min(outs[j].i, outs[j-1].i), max(outs[j].i, outs[j-1].i)
			return aliasError(op, "c["+strconv.Itoa(k)+"]", c[k].Data, "c["+strconv.Itoa(i)+"]", c[i].Data, "c[%d] shares memory with c[%d]: the products run side by side, and their results are undefined", k, i)
		}
	}
	// The outputs are disjoint and sorted: the first that ends after an
	// input starts is the only one that may overlap it.
	for _, in := range []struct {
		name string
		ms   []Matrix[T]
	}{{"a", a}, {"b", b}} {
		for j, m := range in.ms {
			lo, hi := m.bytes(1)
			if lo == hi {
				continue
			}
			k := sort.Search(len(outs), func(k int) bool { return outs[k].hi > lo })
			if k < len(outs) && outs[k].lo < hi {
				o := outs[k].i
				return aliasError(op, "c["+strconv.Itoa(o)+"]", c[o].Data, in.name+"["+strconv.Itoa(j)+"]", m.Data, "c[%d] shares memory with %s[%d]: product %d writes what product %d reads, side by side, and the result is undefined",
					o, in.name, j, o, j)
			}
		}
	}
	return nil
}

// plural returns word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

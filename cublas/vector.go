package cublas

import (
	"reflect"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cublas"
)

// The vector operations take whole DeviceBuffers, with unit stride: a
// DeviceBuffer.Slice is a part of one.

// is32 reports whether T is computed by cuBLAS's float32 functions (S)
// rather than its float64 ones (D), by T's kind: a type defined on float32
// is float32's.
func is32[T cuda.Float]() bool {
	return reflect.TypeFor[T]().Kind() == reflect.Float32
}

// scalar returns alpha in T's memory, for cuBLAS to read: a *float32 or a
// *float64 as is32 says, which is T's memory.
func scalar[T cuda.Float](alpha float64) unsafe.Pointer {
	v := T(alpha)
	return unsafe.Pointer(&v)
}

// checkVectors returns the error for vectors, named by names (one letter
// each, their parameters' names), that are nil, of different lengths, too
// long for cuBLAS, or of another context.
func checkVectors[T cuda.Float](op string, h *Handle, names string, xs ...*cuda.DeviceBuffer[T]) error {
	for i, x := range xs {
		name := names[i : i+1]
		switch {
		case x == nil:
			return errorf(op, cuda.ErrInvalidValue, "%s is nil", name)
		case x.Len() > maxDim:
			return errorf(op, cuda.ErrInvalidValue, "%s has %d elements: cuBLAS takes at most %d", name, x.Len(), maxDim)
		case x.Context() != h.base.Context():
			return contextError(op, name, x.Context())
		case x.Len() != xs[0].Len():
			return errorf(op, cuda.ErrInvalidValue, "%s has %d elements and %s %d: want the same", names[:1], xs[0].Len(), name, x.Len())
		}
	}
	return nil
}

// bufBytes returns the device addresses from x's first byte to after its
// last.
func bufBytes[T any](x *cuda.DeviceBuffer[T]) (lo, hi uint64) {
	lo = uint64(x.Ptr())
	return lo, lo + uint64(x.ByteSize())
}

// sharesMemory reports whether the output y and the input spanning lo to
// hi share a byte, other than by being the same elements (same is true),
// which each element's read before its write keeps defined.
func sharesMemory[T any](y *cuda.DeviceBuffer[T], lo, hi uint64, same bool) bool {
	ylo, yhi := bufBytes(y)
	if ylo == yhi || lo == hi || same && ylo == lo && yhi == hi {
		return false
	}
	return ylo < hi && lo < yhi
}

// hostResult refuses a call whose result cuBLAS hands to the host (and so
// waits for the stream) while the stream captures a graph.
func hostResult(op string, h *Handle) error {
	if h.base.Stream().Capturing() {
		return errorf(op, cuda.ErrInvalidValue, "the handle's stream is capturing a graph: a result cuBLAS hands to the host waits for work that does not run until the graph is launched")
	}
	return nil
}

// Axpy computes y = alpha·x + y. y may be x itself, but may not otherwise
// share memory with it (ErrInvalidValue).
func Axpy[T cuda.Float](h *Handle, alpha float64, x, y *cuda.DeviceBuffer[T]) error {
	const op = "Axpy"
	if err := h.valid(op); err != nil {
		return err
	}
	if err := checkVectors(op, h, "xy", x, y); err != nil {
		return err
	}
	if lo, hi := bufBytes(x); sharesMemory(y, lo, hi, true) {
		return aliasError(op, "y", y, "x", x, "y shares memory with x, %d bytes apart: cuBLAS's result is undefined (y and x may be the same buffer)", int64(uint64(y.Ptr())-lo))
	}
	return h.do(op, []cuda.Memory{x, y}, func(uintptr) error {
		n, a, xp, yp := int32(x.Len()), scalar[T](alpha), uintptr(x.Ptr()), uintptr(y.Ptr())
		if is32[T]() {
			return check(op, "cublasSaxpy_v2", clib.Saxpy(h.raw.blas, n, (*float32)(a), xp, 1, yp, 1))
		}
		return check(op, "cublasDaxpy_v2", clib.Daxpy(h.raw.blas, n, (*float64)(a), xp, 1, yp, 1))
	})
}

// Scal computes x = alpha·x.
func Scal[T cuda.Float](h *Handle, alpha float64, x *cuda.DeviceBuffer[T]) error {
	const op = "Scal"
	if err := h.valid(op); err != nil {
		return err
	}
	if err := checkVectors(op, h, "x", x); err != nil {
		return err
	}
	return h.do(op, []cuda.Memory{x}, func(uintptr) error {
		n, a, xp := int32(x.Len()), scalar[T](alpha), uintptr(x.Ptr())
		if is32[T]() {
			return check(op, "cublasSscal_v2", clib.Sscal(h.raw.blas, n, (*float32)(a), xp, 1))
		}
		return check(op, "cublasDscal_v2", clib.Dscal(h.raw.blas, n, (*float64)(a), xp, 1))
	})
}

// Dot returns the dot product of x and y. It waits for the work queued on
// the handle's stream before it, as cuBLAS does to hand the result back.
func Dot[T cuda.Float](h *Handle, x, y *cuda.DeviceBuffer[T]) (T, error) {
	const op = "Dot"
	if err := h.valid(op); err != nil {
		return 0, err
	}
	if err := checkVectors(op, h, "xy", x, y); err != nil {
		return 0, err
	}
	if err := hostResult(op, h); err != nil {
		return 0, err
	}
	r := new(T)
	err := h.do(op, []cuda.Memory{x, y}, func(uintptr) error {
		n, xp, yp, rp := int32(x.Len()), uintptr(x.Ptr()), uintptr(y.Ptr()), unsafe.Pointer(r)
		if is32[T]() {
			return check(op, "cublasSdot_v2", clib.Sdot(h.raw.blas, n, xp, 1, yp, 1, (*float32)(rp)))
		}
		return check(op, "cublasDdot_v2", clib.Ddot(h.raw.blas, n, xp, 1, yp, 1, (*float64)(rp)))
	})
	return *r, err
}

// reduce runs one of the reductions of a vector to a host scalar: call
// calls the function for T with x's length and address, and the result's
// memory, an R.
func reduce[T cuda.Float, R any](op string, h *Handle, x *cuda.DeviceBuffer[T], call func(n int32, xp uintptr, r unsafe.Pointer) error) (R, error) {
	r := new(R)
	if err := h.valid(op); err != nil {
		return *r, err
	}
	if err := checkVectors(op, h, "x", x); err != nil {
		return *r, err
	}
	if err := hostResult(op, h); err != nil {
		return *r, err
	}
	err := h.do(op, []cuda.Memory{x}, func(uintptr) error {
		return call(int32(x.Len()), uintptr(x.Ptr()), unsafe.Pointer(r))
	})
	return *r, err
}

// Nrm2 returns the Euclidean norm of x. It waits as Dot does.
func Nrm2[T cuda.Float](h *Handle, x *cuda.DeviceBuffer[T]) (T, error) {
	const op = "Nrm2"
	return reduce[T, T](op, h, x, func(n int32, xp uintptr, r unsafe.Pointer) error {
		if is32[T]() {
			return check(op, "cublasSnrm2_v2", clib.Snrm2(h.raw.blas, n, xp, 1, (*float32)(r)))
		}
		return check(op, "cublasDnrm2_v2", clib.Dnrm2(h.raw.blas, n, xp, 1, (*float64)(r)))
	})
}

// Asum returns the sum of the absolute values of x's elements. It waits as
// Dot does.
func Asum[T cuda.Float](h *Handle, x *cuda.DeviceBuffer[T]) (T, error) {
	const op = "Asum"
	return reduce[T, T](op, h, x, func(n int32, xp uintptr, r unsafe.Pointer) error {
		if is32[T]() {
			return check(op, "cublasSasum_v2", clib.Sasum(h.raw.blas, n, xp, 1, (*float32)(r)))
		}
		return check(op, "cublasDasum_v2", clib.Dasum(h.raw.blas, n, xp, 1, (*float64)(r)))
	})
}

// Iamax returns the index of the first element of x of largest absolute
// value, counting from 0 (cuBLAS counts from 1), or -1 for an empty x. It
// waits as Dot does.
func Iamax[T cuda.Float](h *Handle, x *cuda.DeviceBuffer[T]) (int, error) {
	const op = "Iamax"
	i, err := reduce[T, int32](op, h, x, func(n int32, xp uintptr, r unsafe.Pointer) error {
		if is32[T]() {
			return check(op, "cublasIsamax_v2", clib.Isamax(h.raw.blas, n, xp, 1, (*int32)(r)))
		}
		return check(op, "cublasIdamax_v2", clib.Idamax(h.raw.blas, n, xp, 1, (*int32)(r)))
	})
	return int(i) - 1, err
}

// Gemv computes y = alpha·A·x + beta·y, with A the m×n matrix a (a.T()
// for its transpose), x of n elements and y of m. With beta 0, y is not
// read. y may not share memory with a or x (ErrInvalidValue). An A of
// no columns (n 0) makes y = beta·y, as the formula says
// (BLAS's gemv would leave y as it was).
func Gemv[T cuda.Float](h *Handle, alpha float64, a Matrix[T], x *cuda.DeviceBuffer[T], beta float64, y *cuda.DeviceBuffer[T]) error {
	const op = "Gemv"
	if err := h.valid(op); err != nil {
		return err
	}
	if err := a.check(op, "a", h.base.Context(), 1); err != nil {
		return err
	}
	if err := checkVectors(op, h, "x", x); err != nil {
		return err
	}
	if err := checkVectors(op, h, "y", y); err != nil {
		return err
	}
	if x.Len() != a.Cols || y.Len() != a.Rows {
		return errorf(op, cuda.ErrInvalidValue, "a is %d×%d, x has %d elements and y %d: want %d and %d", a.Rows, a.Cols, x.Len(), y.Len(), a.Cols, a.Rows)
	}
	// cuBLAS reads A and x while it writes y.
	if lo, hi := bufBytes(x); sharesMemory(y, lo, hi, false) {
		return aliasError(op, "y", y, "x", x, "y shares memory with x: cuBLAS's result is undefined when the output aliases an input")
	}
	if lo, hi := a.bytes(1); sharesMemory(y, lo, hi, false) {
		return aliasError(op, "y", y, "a", a.Data, "y shares memory with a: cuBLAS's result is undefined when the output aliases an input")
	}
	mem := []cuda.Memory{a.Data, x, y}
	if a.Cols == 0 && a.Rows > 0 {
		return emptyGemv(op, h, beta, y, mem)
	}
	// cuBLAS reads A's memory column-major: A itself, or Aᵀ (n×m) when
	// A is row-major.
	trans, m, n := int32(opN), int32(a.Rows), int32(a.Cols)
	if a.Layout == RowMajor {
		trans, m, n = opT, int32(a.Cols), int32(a.Rows)
	}
	return h.do(op, mem, func(uintptr) error {
		al, be := scalar[T](alpha), scalar[T](beta)
		ap, lda, xp, yp := uintptr(a.Data.Ptr()), int32(a.ld()), uintptr(x.Ptr()), uintptr(y.Ptr())
		if is32[T]() {
			return check(op, "cublasSgemv_v2", clib.Sgemv(h.raw.blas, trans, m, n, (*float32)(al), ap, lda, xp, 1, (*float32)(be), yp, 1))
		}
		return check(op, "cublasDgemv_v2", clib.Dgemv(h.raw.blas, trans, m, n, (*float64)(al), ap, lda, xp, 1, (*float64)(be), yp, 1))
	})
}

// emptyGemv computes Gemv's y = beta·y for an A of no columns, which
// cuBLAS's gemv, returning at once as BLAS's does for an empty matrix,
// would leave as it was: y is zeroed for beta 0 (not read, as Gemv
// promises) and scaled otherwise, in the handle's stream's order. mem is
// Gemv's operands, A's and x's too, held as a call with work holds them
// (a closed handle or stream, or a freed operand, is ErrClosed), also for
// beta 1, which leaves y as it is.
func emptyGemv[T cuda.Float](op string, h *Handle, beta float64, y *cuda.DeviceBuffer[T], mem []cuda.Memory) error {
	switch beta {
	case 1:
		return h.core().Idle(op, mem)
	case 0:
		return h.do(op, mem, func(uintptr) error {
			return y.Memset8Async(0, h.base.Stream())
		})
	}
	return h.do(op, mem, func(uintptr) error {
		n, b, yp := int32(y.Len()), scalar[T](beta), uintptr(y.Ptr())
		if is32[T]() {
			return check(op, "cublasSscal_v2", clib.Sscal(h.raw.blas, n, (*float32)(b), yp, 1))
		}
		return check(op, "cublasDscal_v2", clib.Dscal(h.raw.blas, n, (*float64)(b), yp, 1))
	})
}

package cublas

import (
	"reflect"
	"unsafe"

	cuda "github.com/gocuda/cuda"
)

// The vector operations take whole DeviceBuffers, with unit stride: a
// DeviceBuffer.Slice is a part of one.

// pick returns the float32 or the float64 one of a pair (of functions, or
// of their names), by T's kind: a type defined on float32 is float32's.
func pick[T cuda.Float, V any](f32, f64 V) V {
	if reflect.TypeFor[T]().Kind() == reflect.Float32 {
		return f32
	}
	return f64
}

// scalar returns alpha in T's memory, for cuBLAS to read.
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
		case x.Context() != h.ctx:
			return errorf(op, cuda.ErrInvalidValue, "%s belongs to another context than the handle", name)
		case x.Len() != xs[0].Len():
			return errorf(op, cuda.ErrInvalidValue, "%s has %d elements and %s %d: want the same", names[:1], xs[0].Len(), name, x.Len())
		}
	}
	return nil
}

// hostResult refuses a call whose result cuBLAS hands to the host (and so
// waits for the stream) while the stream captures a graph.
func hostResult(op string, h *Handle) error {
	if h.stream.Capturing() {
		return errorf(op, cuda.ErrInvalidValue, "the handle's stream is capturing a graph: a result cuBLAS hands to the host waits for work that does not run until the graph is launched")
	}
	return nil
}

// Axpy computes y = alpha·x + y.
func Axpy[T cuda.Float](h *Handle, alpha float64, x, y *cuda.DeviceBuffer[T]) error {
	const op = "Axpy"
	if err := h.valid(op); err != nil {
		return err
	}
	if err := checkVectors(op, h, "xy", x, y); err != nil {
		return err
	}
	return h.do(op, []cuda.Memory{x, y}, func(uintptr) error {
		return call(op, pick[T]("cublasSaxpy_v2", "cublasDaxpy_v2"), pick[T](lib.fn.saxpy, lib.fn.daxpy), h.raw.blas,
			uintptr(x.Len()), uintptr(scalar[T](alpha)), uintptr(x.Ptr()), 1, uintptr(y.Ptr()), 1)
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
		return call(op, pick[T]("cublasSscal_v2", "cublasDscal_v2"), pick[T](lib.fn.sscal, lib.fn.dscal), h.raw.blas,
			uintptr(x.Len()), uintptr(scalar[T](alpha)), uintptr(x.Ptr()), 1)
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
		return call(op, pick[T]("cublasSdot_v2", "cublasDdot_v2"), pick[T](lib.fn.sdot, lib.fn.ddot), h.raw.blas,
			uintptr(x.Len()), uintptr(x.Ptr()), 1, uintptr(y.Ptr()), 1, uintptr(unsafe.Pointer(r)))
	})
	return *r, err
}

// reduce runs one of the reductions of a vector to a host scalar: the
// function fn, named name.
func reduce[T cuda.Float, R any](op, name string, fn uintptr, h *Handle, x *cuda.DeviceBuffer[T]) (R, error) {
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
		return call(op, name, fn, h.raw.blas, uintptr(x.Len()), uintptr(x.Ptr()), 1, uintptr(unsafe.Pointer(r)))
	})
	return *r, err
}

// Nrm2 returns the Euclidean norm of x. It waits as Dot does.
func Nrm2[T cuda.Float](h *Handle, x *cuda.DeviceBuffer[T]) (T, error) {
	return reduce[T, T]("Nrm2", pick[T]("cublasSnrm2_v2", "cublasDnrm2_v2"), pick[T](lib.fn.snrm2, lib.fn.dnrm2), h, x)
}

// Asum returns the sum of the absolute values of x's elements. It waits as
// Dot does.
func Asum[T cuda.Float](h *Handle, x *cuda.DeviceBuffer[T]) (T, error) {
	return reduce[T, T]("Asum", pick[T]("cublasSasum_v2", "cublasDasum_v2"), pick[T](lib.fn.sasum, lib.fn.dasum), h, x)
}

// Iamax returns the index of the first element of x of largest absolute
// value, counting from 0 (cuBLAS counts from 1), or -1 for an empty x. It
// waits as Dot does.
func Iamax[T cuda.Float](h *Handle, x *cuda.DeviceBuffer[T]) (int, error) {
	i, err := reduce[T, int32]("Iamax", pick[T]("cublasIsamax_v2", "cublasIdamax_v2"), pick[T](lib.fn.isamax, lib.fn.idamax), h, x)
	return int(i) - 1, err
}

// Gemv computes y = alpha·A·x + beta·y, with A the m×n matrix a (a.T()
// for its transpose), x of n elements and y of m. With beta 0, y is not
// read.
func Gemv[T cuda.Float](h *Handle, alpha float64, a Matrix[T], x *cuda.DeviceBuffer[T], beta float64, y *cuda.DeviceBuffer[T]) error {
	const op = "Gemv"
	if err := h.valid(op); err != nil {
		return err
	}
	if err := a.check(op, "a", h.ctx, 1); err != nil {
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
	// cuBLAS reads A's memory column-major: A itself, or Aᵀ (n×m) when
	// A is row-major.
	trans, m, n := uintptr(opN), a.Rows, a.Cols
	if a.Layout == RowMajor {
		trans, m, n = opT, a.Cols, a.Rows
	}
	return h.do(op, []cuda.Memory{a.Data, x, y}, func(uintptr) error {
		return call(op, pick[T]("cublasSgemv_v2", "cublasDgemv_v2"), pick[T](lib.fn.sgemv, lib.fn.dgemv), h.raw.blas,
			trans, uintptr(m), uintptr(n), uintptr(scalar[T](alpha)), uintptr(a.Data.Ptr()), uintptr(a.ld()),
			uintptr(x.Ptr()), 1, uintptr(scalar[T](beta)), uintptr(y.Ptr()), 1)
	})
}

package nd

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/curand"
)

// Uniform returns an array of the shape holding numbers uniform on (0, 1]
// (cuRAND's interval: 1 - x is uniform on [0, 1), NumPy's), the next of
// g's sequence, on g's stream. For Float16 and BFloat16, Cast a float32
// array.
func Uniform[T cuda.Float](g *curand.Generator, shape ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return random("Uniform", g, shape, func(b *cuda.DeviceBuffer[T]) error { return curand.Uniform(g, b) })
}

// Normal returns an array of the shape holding normally distributed
// numbers of the mean and standard deviation, the next of g's sequence, on
// g's stream.
func Normal[T cuda.Float](g *curand.Generator, mean, stddev T, shape ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return random("Normal", g, shape, func(b *cuda.DeviceBuffer[T]) error { return curand.Normal(g, b, mean, stddev) })
}

func random[T cuda.Float](op string, g *curand.Generator, shape []int, gen func(*cuda.DeviceBuffer[T]) error) (*Array[T], error) {
	switch {
	case g == nil:
		return nil, errorf(op, cuda.ErrInvalidValue, "g is a nil *curand.Generator")
	case g.Stream() == nil:
		return nil, errorf(op, cuda.ErrInvalidValue, "g is a zero *curand.Generator: make one with curand.New")
	}
	a, err := empty[T](op, g.Stream(), shape)
	if err != nil {
		return nil, err
	}
	if err := gen(a.buf); err != nil {
		a.Free()
		return nil, wrap(op, err)
	}
	return a, nil
}

// RandInt returns an array of the shape holding integers uniform on [lo,
// hi) (NumPy's randint), from g's uniform sequence in float64, on g's
// stream. lo and hi-1 must be values of T, as NumPy's.
func RandInt[T cuda.Integer](g *curand.Generator, lo, hi int64, shape ...int) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	const op = "RandInt"
	if hi <= lo {
		return nil, errorf(op, cuda.ErrInvalidValue, "lo %d and hi %d: want lo < hi", lo, hi)
	}
	// A value out of T's range would be converted by the kernel's float
	// to integer conversion, which is undefined there.
	fits := func(v int64) bool { return int64(T(v)) == v && (v >= 0 || T(0)-1 < 0) }
	if !fits(lo) || !fits(hi-1) {
		return nil, errorf(op, cuda.ErrInvalidValue, "lo %d and hi %d: [lo, hi) is not within the values of %s", lo, hi, typeName[T]())
	}
	u, err := random(op, g, shape, func(b *cuda.DeviceBuffer[float64]) error { return curand.Uniform(g, b) })
	if err != nil {
		return nil, err
	}
	defer freed(&failure, u)
	// u is on (0, 1]: 1 - u on [0, 1), scaled to [lo, hi) and floored (the
	// last guard for hi - lo past 2^53, where the product may round up).
	ins := make([]operand, 3)
	ins[0], _ = operandOf(op, "u", u)
	ins[1], _ = operandOf(op, "lo", Scalar(float64(lo)))
	ins[2], _ = operandOf(op, "span", Scalar(float64(hi)-float64(lo)))
	return run[T](op, expr{name: "randint", code: "const double v_ = floor(x1 + (1.0 - x0) * x2);\nr = v_ >= x1 + x2 ? x1 + x2 - 1 : v_;"}, ins...)
}

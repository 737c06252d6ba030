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
	if g == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "g is a nil *curand.Generator")
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

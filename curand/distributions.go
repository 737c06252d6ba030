package curand

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
	clib "github.com/gocuda/cuda/internal/lib/curand"
)

// Uniform fills dst with numbers uniform on (0, 1], continuing g's
// sequence. The interval is cuRAND's: 0 excluded, 1 included, the other way
// round from PyTorch's torch.rand and NumPy's random, which give [0, 1).
// Where 0 must be possible and 1 not, use 1 - x (package compute's Neg and
// AddScalar, say), which is uniform on [0, 1).
//
// T is float32 or float64, or a type defined on one (cuda.Float), as for
// Normal and LogNormal.
func Uniform[T cuda.Float](g *Generator, dst *cuda.DeviceBuffer[T]) error {
	const op = "Uniform"
	name, fn := "curandGenerateUniform", clib.GenerateUniform
	if isDouble[T]() {
		name, fn = "curandGenerateUniformDouble", clib.GenerateUniformDouble
	}
	return fill(g, op, dst, false, func(out, n uintptr) error { return check(op, name, fn(g.raw.h, out, n)) })
}

// Normal fills dst with normally distributed numbers of the given mean and
// standard deviation (finite, the deviation 0 or more), continuing g's
// sequence. cuRAND makes them in pairs (Box-Muller) and takes only even
// counts from a pseudo-random generator:
// for an odd count the last number is the first of a pair of its own,
// which continues the sequence by two.
func Normal[T cuda.Float](g *Generator, dst *cuda.DeviceBuffer[T], mean, stddev T) error {
	return normal(g, "Normal", dst, mean, stddev, false)
}

// LogNormal fills dst with numbers whose logarithms are normally
// distributed with the given mean and standard deviation; counts as for
// Normal.
func LogNormal[T cuda.Float](g *Generator, dst *cuda.DeviceBuffer[T], mean, stddev T) error {
	return normal(g, "LogNormal", dst, mean, stddev, true)
}

func normal[T cuda.Float](g *Generator, op string, dst *cuda.DeviceBuffer[T], mean, stddev T, logNormal bool) error {
	if stddev < 0 || !finite(float64(stddev)) || !finite(float64(mean)) {
		return errorf(op, cuda.ErrInvalidValue, "mean is %v and stddev %v: want finite numbers, and a stddev of 0 or more", mean, stddev)
	}
	name := "curandGenerate" + op
	if isDouble[T]() {
		name += "Double"
	}
	gen := func(out, n uintptr) error {
		var s clib.Result
		switch {
		case isDouble[T]() && logNormal:
			s = clib.GenerateLogNormalDouble(g.raw.h, out, n, float64(mean), float64(stddev))
		case isDouble[T]():
			s = clib.GenerateNormalDouble(g.raw.h, out, n, float64(mean), float64(stddev))
		case logNormal:
			s = clib.GenerateLogNormal(g.raw.h, out, n, float32(mean), float32(stddev))
		default:
			s = clib.GenerateNormal(g.raw.h, out, n, float32(mean), float32(stddev))
		}
		return check(op, name, s)
	}
	return fill(g, op, dst, true, gen)
}

// Poisson fills dst with numbers of the Poisson distribution of mean
// lambda (finite, more than 0), continuing g's sequence.
func (g *Generator) Poisson(dst *cuda.DeviceBuffer[uint32], lambda float64) error {
	const op = "Generator.Poisson"
	if !(lambda > 0) || !finite(lambda) {
		return errorf(op, cuda.ErrInvalidValue, "lambda is %v: want a finite number more than 0", lambda)
	}
	return fill(g, op, dst, false, func(out, n uintptr) error {
		return check(op, "curandGeneratePoisson", clib.GeneratePoisson(g.raw.h, out, n, lambda))
	})
}

// Bits fills dst with the generator's raw 32-bit numbers, continuing its
// sequence.
func (g *Generator) Bits(dst *cuda.DeviceBuffer[uint32]) error {
	const op = "Generator.Bits"
	return fill(g, op, dst, false, func(out, n uintptr) error { return check(op, "curandGenerate", clib.Generate(g.raw.h, out, n)) })
}

func isDouble[T cuda.Float]() bool { var z T; return unsafe.Sizeof(z) == 8 }

// fill checks dst and runs gen on it in g's turn, on g's stream. pairs
// says gen makes numbers in pairs: from a pseudo-random generator, for an
// odd count, gen fills all but the last, then a pair whose first number
// becomes the last. cuRAND stores a pair at once, so a dst not aligned to
// a pair (a slice starting at an odd element: a misaligned address, which
// ends the context, on the H100) is filled through scratch memory, with the
// same calls, so with the same numbers, as an allocation of its own gets.
func fill[T any](g *Generator, op string, dst *cuda.DeviceBuffer[T], pairs bool, gen func(out, n uintptr) error) error {
	if err := g.valid(op); err != nil {
		return err
	}
	if dst == nil {
		return errorf(op, cuda.ErrInvalidValue, "dst is a nil *cuda.DeviceBuffer")
	}
	if c := dst.Context(); c != nil && c != g.stream.Context() {
		return errorf(op, cuda.ErrInvalidValue, "dst belongs to another context than the generator's stream")
	}
	n := dst.Len()
	size := unsafe.Sizeof(*new(T))
	odd := pairs && !g.rng.quasi() && n%2 == 1
	whole, extra := n, 0
	if odd {
		whole, extra = n-1, 1
	}
	// dst's elements from on are made in stream-ordered scratch memory
	// and copied: all of them where dst is not aligned to a pair, the
	// last where only the count is odd.
	from := n
	switch {
	case pairs && n > 0 && uintptr(dst.Ptr())%(2*size) != 0:
		from = 0
	case odd:
		from = whole
	}
	var scratch *cuda.DeviceBuffer[T]
	if from < n {
		var err error
		if scratch, err = cuda.AllocAsync[T](g.stream, n-from+extra); err != nil {
			return calledas.Op(op, err)
		}
	}
	err := g.do(op, []cuda.Memory{dst}, func(uintptr) error {
		if m := min(from, whole); m > 0 {
			if err := gen(uintptr(dst.Ptr()), uintptr(m)); err != nil {
				return err
			}
		}
		if whole > from {
			if err := gen(uintptr(scratch.Ptr()), uintptr(whole-from)); err != nil {
				return err
			}
		}
		if odd {
			return gen(uintptr(scratch.Ptr())+uintptr(whole-from)*size, 2)
		}
		return nil
	})
	if scratch == nil {
		return err
	}
	if err == nil {
		err = calledas.Op(op, copyInto(dst, from, scratch, g.stream))
	}
	// The scratch memory is freed in the stream's order, after the copy;
	// a failed free is tried once more (so nothing is lost), and reported.
	freeErr := calledas.Op(op, scratch.Free())
	if freeErr != nil && scratch.Free() != nil {
		freeErr = fmt.Errorf("%w (and again)", freeErr)
	}
	return errors.Join(err, freeErr)
}

// copyInto copies src's first elements into dst's elements from i on, on s.
func copyInto[T any](dst *cuda.DeviceBuffer[T], i int, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	tail, err := dst.Slice(i, dst.Len()-i)
	if err != nil {
		return err
	}
	head, err := src.Slice(0, dst.Len()-i)
	if err != nil {
		return err
	}
	return tail.CopyFromDeviceAsync(head, s)
}

// finite reports whether v is neither infinite nor NaN.
func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

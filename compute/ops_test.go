package compute_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The numbers of the standard operations, against Go on the host, on the
// GPU, and on the fake driver, which runs the kernels compiled for the host
// (StandInOnFake) where a C++ compiler is found.

// sizes are the element counts every operation is checked at: on the fake
// driver, which runs kernels on the CPU, the largest is 100003, past a
// grid of blocks and with a tail after the vectors as 1000003.
func sizes() []int { return []int{0, 1, 31, onFake(1000003, 100003)} }

// toF and fromF convert between a Number and float64, as the device does:
// the halves through float32.
func toF[T cuda.Number](v T) float64 {
	switch x := any(v).(type) {
	case cuda.Float16:
		return float64(x.Float32())
	case cuda.BFloat16:
		return float64(x.Float32())
	case float32:
		return float64(x)
	case float64:
		return x
	case int8:
		return float64(x)
	case int16:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case uint8:
		return float64(x)
	case uint16:
		return float64(x)
	case uint32:
		return float64(x)
	case uint64:
		return float64(x)
	}
	panic("unreachable")
}

func fromF[T cuda.Number](f float64) T {
	var zero T
	switch any(zero).(type) {
	case cuda.Float16:
		return any(cuda.NewFloat16(float32(f))).(T)
	case cuda.BFloat16:
		return any(cuda.NewBFloat16(float32(f))).(T)
	case float32:
		return any(float32(f)).(T)
	case float64:
		return any(f).(T)
	case int8:
		return any(int8(f)).(T)
	case int16:
		return any(int16(f)).(T)
	case int32:
		return any(int32(f)).(T)
	case int64:
		return any(int64(f)).(T)
	case uint8:
		return any(uint8(f)).(T)
	case uint16:
		return any(uint16(f)).(T)
	case uint32:
		return any(uint32(f)).(T)
	case uint64:
		return any(uint64(f)).(T)
	}
	panic("unreachable")
}

// randoms returns n values of T in [lo, hi), rounded to T.
func randoms[T cuda.Number](n int, lo, hi float64) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = fromF[T](lo + rand.Float64()*(hi-lo))
	}
	return out
}

// tolerance is the relative error allowed of T's results computed in
// floating point: a few of T's units in the last place.
func tolerance[T cuda.Number]() float64 {
	var zero T
	switch any(zero).(type) {
	case cuda.Float16:
		return 2e-3
	case cuda.BFloat16:
		return 1.6e-2
	case float32:
		return 2e-6
	case float64:
		return 1e-14
	}
	return 0 // integers: exact
}

func near[T cuda.Number](got T, want float64, tol float64) bool {
	g := toF(got)
	if math.IsNaN(want) {
		return math.IsNaN(g)
	}
	if tol == 0 {
		return g == toF(fromF[T](want))
	}
	return math.Abs(g-want) <= tol*math.Max(1, math.Abs(want))
}

type env struct {
	ctx *cuda.Context
	s   *cuda.Stream
}

func gpu(t *testing.T) env {
	t.Helper()
	requireNVRTC(t)
	return newEnv(t)
}

// newEnv is a context and a stream, closed when t ends (and the kernels
// compute loaded in the context with it: no Release), with leaks checked.
func newEnv(t testing.TB) env {
	t.Helper()
	ctx := cudatest.Context(t)
	return env{ctx, cudatest.Stream(t, ctx)}
}

// checkBinary checks op against ref over T at every size, both buffers
// and a buffer and a scalar.
func checkBinary[T cuda.Number](t *testing.T, e env, name string, op func(dst, a, b *cuda.DeviceBuffer[T], s *cuda.Stream) error,
	opScalar func(dst, a *cuda.DeviceBuffer[T], v T, s *cuda.Stream) error, ref func(a, b float64) float64, lo, hi, bLo float64) {
	t.Run(fmt.Sprintf("%s/%T", name, *new(T)), func(t *testing.T) {
		for _, n := range sizes() {
			a, b := randoms[T](n, lo, hi), randoms[T](n, bLo, hi)
			da, db := cudatest.Upload(t, e.ctx, a), cudatest.Upload(t, e.ctx, b)
			dst := must(cuda.Alloc[T](e.ctx, n))(t)
			if err := op(dst, da, db, e.s); err != nil {
				t.Fatal(err)
			}
			got := cudatest.Download(t, dst)
			for i := range got {
				if want := ref(toF(a[i]), toF(b[i])); !near(got[i], want, tolerance[T]()) {
					t.Fatalf("n %d: element %d: %v op %v = %v, want %v", n, i, a[i], b[i], got[i], want)
				}
			}
			if n == 0 {
				dst.Free()
				continue
			}
			v := b[0]
			if err := opScalar(dst, da, v, e.s); err != nil {
				t.Fatal(err)
			}
			got = cudatest.Download(t, dst)
			for i := range got {
				if want := ref(toF(a[i]), toF(v)); !near(got[i], want, tolerance[T]()) {
					t.Fatalf("n %d, scalar: element %d: %v op %v = %v, want %v", n, i, a[i], v, got[i], want)
				}
			}
			dst.Free()
		}
	})
}

func binaries[T cuda.Number](t *testing.T, e env, lo, hi float64) {
	checkBinary(t, e, "Add", compute.Add[T], compute.AddScalar[T], func(a, b float64) float64 { return a + b }, lo, hi, lo)
	checkBinary(t, e, "Sub", compute.Sub[T], compute.SubScalar[T], func(a, b float64) float64 { return a - b }, lo, hi, lo)
	checkBinary(t, e, "Mul", compute.Mul[T], compute.MulScalar[T], func(a, b float64) float64 { return a * b }, lo, hi, lo)
	checkBinary(t, e, "Max", compute.Max[T], compute.MaxScalar[T], math.Max, lo, hi, lo)
	checkBinary(t, e, "Min", compute.Min[T], compute.MinScalar[T], math.Min, lo, hi, lo)
	checkBinary(t, e, "Div", compute.Div[T], compute.DivScalar[T], func(a, b float64) float64 {
		if tolerance[T]() == 0 {
			return math.Trunc(a / b)
		}
		return a / b
	}, lo, hi, 1) // divisors from 1: away from zero
}

func TestBinary(t *testing.T) {
	e := gpu(t)
	binaries[int8](t, e, -10, 10)
	binaries[int16](t, e, -100, 100)
	binaries[int32](t, e, -1000, 1000)
	binaries[int64](t, e, -1e6, 1e6)
	binaries[uint8](t, e, 1, 15)
	binaries[uint16](t, e, 1, 200)
	binaries[uint32](t, e, 1, 1e4)
	binaries[uint64](t, e, 1, 1e6)
	binaries[float32](t, e, -100, 100)
	binaries[float64](t, e, -100, 100)
	binaries[cuda.Float16](t, e, -10, 10)
	binaries[cuda.BFloat16](t, e, -10, 10)
}

// TestIntegerDivision: Div and DivScalar of integers by zero give 0 (as
// NumPy's), and the most negative value divided by -1 itself (as Go's),
// on the GPU and on the fake driver alike, whose host-compiled kernels
// trapped on both (SIGFPE ended the test binary), in the vector loop and
// in the elements after it.
func TestIntegerDivision(t *testing.T) {
	e := gpu(t)
	integerDivision[int8](t, e)
	integerDivision[int16](t, e)
	integerDivision[int32](t, e)
	integerDivision[int64](t, e)
	integerDivision[uint8](t, e)
	integerDivision[uint32](t, e)
	integerDivision[uint64](t, e)
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

func integerDivision[T integer](t *testing.T, e env) {
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		var zero T
		lowest := zero
		if minus := zero - 1; minus < 0 {
			lowest = T(1) << (8*unsafe.Sizeof(zero) - 1) // the most negative
		}
		as, bs := []T{7, 0, lowest, lowest, 9, lowest + 1, 5}, []T{0, 0, zero - 1, 0, 2, zero - 1, 3}
		const n = 37 // vectors of 16 bytes, then the elements after them
		a, b := make([]T, n), make([]T, n)
		for i := range n {
			a[i], b[i] = as[i%len(as)], bs[(i+i/len(bs))%len(bs)]
		}
		div := func(x, y T) T {
			if y == 0 {
				return 0
			}
			return x / y // Go's: the most negative / -1 is itself
		}
		dst := must(cuda.Alloc[T](e.ctx, n))(t)
		defer dst.Free()
		da, db := cudatest.Upload(t, e.ctx, a), cudatest.Upload(t, e.ctx, b)
		if err := compute.Div(dst, da, db, e.s); err != nil {
			t.Fatal(err)
		}
		for i, g := range cudatest.Download(t, dst) {
			if want := div(a[i], b[i]); g != want {
				t.Fatalf("Div: element %d: %v / %v = %v, want %v", i, a[i], b[i], g, want)
			}
		}
		for _, v := range []T{0, zero - 1} {
			if err := compute.DivScalar(dst, da, v, e.s); err != nil {
				t.Fatal(err)
			}
			for i, g := range cudatest.Download(t, dst) {
				if want := div(a[i], v); g != want {
					t.Fatalf("DivScalar: element %d: %v / %v = %v, want %v", i, a[i], v, g, want)
				}
			}
		}
	})
}

func checkUnary[T cuda.Number](t *testing.T, e env, name string, op func(dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error, ref func(float64) float64, lo, hi float64) {
	t.Run(fmt.Sprintf("%s/%T", name, *new(T)), func(t *testing.T) {
		for _, n := range sizes() {
			x := randoms[T](n, lo, hi)
			dst := must(cuda.Alloc[T](e.ctx, n))(t)
			if err := op(dst, cudatest.Upload(t, e.ctx, x), e.s); err != nil {
				t.Fatal(err)
			}
			tol := tolerance[T]() * 4 // the device's transcendental functions are within a few ulp
			for i, g := range cudatest.Download(t, dst) {
				if want := ref(toF(x[i])); !near(g, want, tol) {
					t.Fatalf("n %d: element %d: %s(%v) = %v, want %v", n, i, name, x[i], g, want)
				}
			}
			dst.Free()
		}
	})
}

func floatUnaries[T cuda.AnyFloat](t *testing.T, e env) {
	checkUnary(t, e, "Exp", compute.Exp[T], math.Exp, -5, 5)
	checkUnary(t, e, "Log", compute.Log[T], math.Log, 0.01, 100)
	checkUnary(t, e, "Sqrt", compute.Sqrt[T], math.Sqrt, 0, 100)
	checkUnary(t, e, "Tanh", compute.Tanh[T], math.Tanh, -5, 5)
	checkUnary(t, e, "Sigmoid", compute.Sigmoid[T], func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, -8, 8)
	checkUnary(t, e, "Gelu", compute.Gelu[T], func(x float64) float64 { return x * (1 + math.Erf(x/math.Sqrt2)) / 2 }, -5, 5)
	checkUnary(t, e, "Abs", compute.Abs[T], math.Abs, -5, 5)
	checkUnary(t, e, "Neg", compute.Neg[T], func(x float64) float64 { return -x }, -5, 5)
	checkUnary(t, e, "Relu", compute.Relu[T], func(x float64) float64 { return math.Max(x, 0) }, -5, 5)
}

func intUnaries[T cuda.Number](t *testing.T, e env, lo, hi float64) {
	checkUnary(t, e, "Abs", compute.Abs[T], math.Abs, lo, hi)
	checkUnary(t, e, "Relu", compute.Relu[T], func(x float64) float64 { return math.Max(x, 0) }, lo, hi)
}

func TestUnary(t *testing.T) {
	e := gpu(t)
	floatUnaries[float32](t, e)
	floatUnaries[float64](t, e)
	floatUnaries[cuda.Float16](t, e)
	floatUnaries[cuda.BFloat16](t, e)
	intUnaries[int8](t, e, -100, 100)
	intUnaries[int32](t, e, -1e6, 1e6)
	intUnaries[int64](t, e, -1e9, 1e9)
	intUnaries[uint16](t, e, 0, 6e4)
}

// TestCastBits: float32 to Float16 and BFloat16 on the device round bit for
// bit as cuda.NewFloat16 and cuda.NewBFloat16 on the host, over every
// class of float32 (random bits: normals, subnormals, infinities, NaNs,
// and the halves' ties), and every Float16 and BFloat16 widens exactly.
func TestCastBits(t *testing.T) {
	e := gpu(t)
	n := 1 << 20
	bits := make([]float32, n)
	for i := range bits {
		bits[i] = math.Float32frombits(rand.Uint32())
		if i%2 == 1 { // Float16's range, from below its subnormals to past its largest
			bits[i] = math.Float32frombits(rand.Uint32()&0x807fffff | uint32(100+rand.IntN(46))<<23)
		}
	}
	// Ties and edges: exactly halfway between two Float16s and BFloat16s,
	// the largest finite halves, the smallest subnormals.
	for i, b := range []uint32{0x33000000, 0x33000001, 0x387fe000, 0x477fe000, 0x477ff000, 0x3f808000, 0x3f818000, 0x7f7fffff, 0x00000001, 0x80000000, 0x7fc00001, 0xff800000} {
		bits[i] = math.Float32frombits(b)
	}
	src := cudatest.Upload(t, e.ctx, bits)
	h := must(cuda.Alloc[cuda.Float16](e.ctx, n))(t)
	defer h.Free()
	bf := must(cuda.Alloc[cuda.BFloat16](e.ctx, n))(t)
	defer bf.Free()
	if err := compute.Cast(h, src, e.s); err != nil {
		t.Fatal(err)
	}
	if err := compute.Cast(bf, src, e.s); err != nil {
		t.Fatal(err)
	}
	gh, gbf := cudatest.Download(t, h), cudatest.Download(t, bf)
	for i, f := range bits {
		if want := cuda.NewFloat16(f); gh[i] != want {
			t.Fatalf("float32 %#08x to Float16: %#04x, want %#04x", math.Float32bits(f), uint16(gh[i]), uint16(want))
		}
		if want := cuda.NewBFloat16(f); gbf[i] != want {
			t.Fatalf("float32 %#08x to BFloat16: %#04x, want %#04x", math.Float32bits(f), uint16(gbf[i]), uint16(want))
		}
	}
	all := make([]cuda.Float16, 1<<16)
	allB := make([]cuda.BFloat16, 1<<16)
	for i := range all {
		all[i], allB[i] = cuda.Float16(i), cuda.BFloat16(i)
	}
	wide := must(cuda.Alloc[float32](e.ctx, 1<<16))(t)
	defer wide.Free()
	for _, c := range []struct {
		name string
		cast func() error
		want func(int) float32
	}{
		{"Float16", func() error { return compute.Cast(wide, cudatest.Upload(t, e.ctx, all), e.s) }, func(i int) float32 { return all[i].Float32() }},
		{"BFloat16", func() error { return compute.Cast(wide, cudatest.Upload(t, e.ctx, allB), e.s) }, func(i int) float32 { return allB[i].Float32() }},
	} {
		if err := c.cast(); err != nil {
			t.Fatal(err)
		}
		for i, g := range cudatest.Download(t, wide) {
			if math.Float32bits(g) != math.Float32bits(c.want(i)) {
				t.Fatalf("%s %#04x to float32: %#08x, want %#08x", c.name, i, math.Float32bits(g), math.Float32bits(c.want(i)))
			}
		}
	}
}

// TestCastTypes: a cast between each pair of a set of types, as Go
// converts.
func TestCastTypes(t *testing.T) {
	e := gpu(t)
	x := randoms[float64](1000003, -100, 100)
	src := cudatest.Upload(t, e.ctx, x)
	check := func(name string, err error, got func(i int) float64, want func(float64) float64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range x {
			if g, w := got(i), want(x[i]); g != w {
				t.Fatalf("%s: element %d (%v): %v, want %v", name, i, x[i], g, w)
			}
		}
	}
	i32 := must(cuda.Alloc[int32](e.ctx, len(x)))(t)
	defer i32.Free()
	f32 := must(cuda.Alloc[float32](e.ctx, len(x)))(t)
	defer f32.Free()
	u8 := must(cuda.Alloc[uint8](e.ctx, len(x)))(t)
	defer u8.Free()
	err := compute.Cast(i32, src, e.s)
	gi := cudatest.Download(t, i32)
	check("float64 to int32", err, func(i int) float64 { return float64(gi[i]) }, func(v float64) float64 { return float64(int32(v)) })
	err = compute.Cast(f32, i32, e.s)
	gf := cudatest.Download(t, f32)
	check("int32 to float32", err, func(i int) float64 { return float64(gf[i]) }, func(v float64) float64 { return float64(float32(int32(v))) })
	err = compute.Cast(u8, i32, e.s)
	gu := cudatest.Download(t, u8)
	check("int32 to uint8", err, func(i int) float64 { return float64(gu[i]) }, func(v float64) float64 { return float64(uint8(int32(v))) })
}

func TestFillIotaAxpbyWhere(t *testing.T) {
	e := gpu(t)
	for _, n := range sizes() {
		b := must(cuda.Alloc[float32](e.ctx, n))(t)
		if err := compute.Fill(b, 2.5, e.s); err != nil {
			t.Fatal(err)
		}
		for i, v := range cudatest.Download(t, b) {
			if v != 2.5 {
				t.Fatalf("Fill: element %d is %v", i, v)
			}
		}
		if err := compute.Iota(b, 1, 0.5, e.s); err != nil {
			t.Fatal(err)
		}
		for i, v := range cudatest.Download(t, b) {
			if want := 1 + float32(i)*0.5; v != want {
				t.Fatalf("Iota: element %d is %v, want %v", i, v, want)
			}
		}
		x := randoms[float32](n, -1, 1)
		if err := compute.Axpby(2, cudatest.Upload(t, e.ctx, x), -1, b, e.s); err != nil {
			t.Fatal(err)
		}
		for i, v := range cudatest.Download(t, b) {
			if want := 2*x[i] - (1 + float32(i)*0.5); !near(v, float64(want), 2e-6) {
				t.Fatalf("Axpby: element %d is %v, want %v", i, v, want)
			}
		}
		mask := make([]uint8, n)
		for i := range mask {
			mask[i] = uint8(i % 3)
		}
		a, c := randoms[int64](n, -1e9, 1e9), randoms[int64](n, -1e9, 1e9)
		w := must(cuda.Alloc[int64](e.ctx, n))(t)
		if err := compute.Where(w, cudatest.Upload(t, e.ctx, mask), cudatest.Upload(t, e.ctx, a), cudatest.Upload(t, e.ctx, c), e.s); err != nil {
			t.Fatal(err)
		}
		for i, v := range cudatest.Download(t, w) {
			want := c[i]
			if mask[i] != 0 {
				want = a[i]
			}
			if v != want {
				t.Fatalf("Where: element %d is %v, want %v", i, v, want)
			}
		}
		b.Free()
		w.Free()
	}
	ints := must(cuda.Alloc[int16](e.ctx, 1000003))(t)
	defer ints.Free()
	if err := compute.Iota(ints, -500, 3, e.s); err != nil {
		t.Fatal(err)
	}
	for i, v := range cudatest.Download(t, ints) {
		if want := int16(-500 + 3*i); v != want {
			t.Fatalf("Iota int16: element %d is %v, want %v", i, v, want)
		}
	}
}

// checkReductions checks Sum, MaxOf, MinOf (and Mean for floats) of T, and
// their per-row and per-column forms.
func checkReductions[T cuda.Number](t *testing.T, e env, lo, hi float64, mean func(dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error) {
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		out := must(cuda.Alloc[T](e.ctx, 1))(t)
		defer out.Free()
		tol := tolerance[T]()
		for _, n := range sizes() {
			x := randoms[T](n, lo, hi)
			dx := cudatest.Upload(t, e.ctx, x)
			var sum float64
			mx, mn := math.Inf(-1), math.Inf(1)
			for _, v := range x {
				f := toF(v)
				sum += f
				mx, mn = math.Max(mx, f), math.Min(mn, f)
			}
			sumTol := tol * math.Sqrt(float64(max(n, 1))) * 4
			for name, c := range map[string]struct {
				op   func(dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error
				want float64
				tol  float64
			}{"Sum": {compute.Sum[T], sum, sumTol}, "MaxOf": {compute.MaxOf[T], mx, 0}, "MinOf": {compute.MinOf[T], mn, 0}} {
				if n == 0 && name != "Sum" {
					continue
				}
				if err := c.op(out, dx, e.s); err != nil {
					t.Fatalf("%s of %d: %v", name, n, err)
				}
				got := cudatest.Download(t, out)[0]
				if tol == 0 && name == "Sum" {
					// Integers sum in 64 bits, then wrap to T.
					var s int64
					for _, v := range x {
						s += int64(toF(v))
					}
					if fmt.Sprint(got) != fmt.Sprint(wrap[T](s)) {
						t.Fatalf("Sum of %d: %v, want %v", n, got, wrap[T](s))
					}
					continue
				}
				if !near(got, c.want, max(c.tol, tol)) {
					t.Fatalf("%s of %d: %v, want %v", name, n, got, c.want)
				}
			}
			if mean != nil {
				if err := mean(out, dx, e.s); err != nil {
					t.Fatal(err)
				}
				got := cudatest.Download(t, out)[0]
				if want := sum / float64(n); !near(got, want, max(tol*4, 1e-6)) {
					t.Fatalf("Mean of %d: %v, want %v", n, got, want)
				}
			}
		}
		// Per row and per column of odd shapes.
		for _, sh := range []compute.Shape{{Rows: 1, Cols: 1}, {Rows: 37, Cols: 1001}, {Rows: 1001, Cols: 3}, {Rows: 3, Cols: 100003}, {Rows: 200003, Cols: 5}, onFake(compute.Shape{Rows: 4099, Cols: 4099}, compute.Shape{Rows: 1031, Cols: 1029})} {
			x := randoms[T](sh.Rows*sh.Cols, lo, hi)
			dx := cudatest.Upload(t, e.ctx, x)
			for _, axis := range []compute.Axis{compute.PerRow, compute.PerColumn} {
				outer, inner, at := alongAxis(x, sh, axis)
				dst := must(cuda.Alloc[T](e.ctx, outer))(t)
				if err := compute.MaxAxis(dst, dx, sh, axis, e.s); err != nil {
					t.Fatal(err)
				}
				gotMax := cudatest.Download(t, dst)
				if err := compute.SumAxis(dst, dx, sh, axis, e.s); err != nil {
					t.Fatal(err)
				}
				gotSum := cudatest.Download(t, dst)
				for o := range outer {
					var s float64
					m := math.Inf(-1)
					var si int64
					for k := range inner {
						f := toF(at(o, k))
						s += f
						si += int64(f)
						m = math.Max(m, f)
					}
					if !near(gotMax[o], m, 0) {
						t.Fatalf("MaxAxis %v %v: %d: %v, want %v", sh, axis, o, gotMax[o], m)
					}
					if tol == 0 {
						if fmt.Sprint(gotSum[o]) != fmt.Sprint(wrap[T](si)) {
							t.Fatalf("SumAxis %v %v: %d: %v, want %v", sh, axis, o, gotSum[o], wrap[T](si))
						}
					} else if !near(gotSum[o], s, tol*math.Sqrt(float64(inner))*4) {
						t.Fatalf("SumAxis %v %v: %d: %v, want %v", sh, axis, o, gotSum[o], s)
					}
				}
				dst.Free()
			}
		}
	})
}

// alongAxis views x, a row-major matrix of shape sh, as the results of a
// reduction along axis: outer of them (rows, or columns), each folding
// inner elements, element k of result o at(o, k).
func alongAxis[T any](x []T, sh compute.Shape, axis compute.Axis) (outer, inner int, at func(o, k int) T) {
	if axis == compute.PerColumn {
		return sh.Cols, sh.Rows, func(o, k int) T { return x[k*sh.Cols+o] }
	}
	return sh.Rows, sh.Cols, func(o, k int) T { return x[o*sh.Cols+k] }
}

// wrap converts an int64 sum to T as the device's store does (modulo
// 2^bits for the integers).
func wrap[T cuda.Number](s int64) T {
	var zero T
	switch any(zero).(type) {
	case int8:
		return any(int8(s)).(T)
	case int16:
		return any(int16(s)).(T)
	case int32:
		return any(int32(s)).(T)
	case int64:
		return any(s).(T)
	case uint8:
		return any(uint8(s)).(T)
	case uint16:
		return any(uint16(s)).(T)
	case uint32:
		return any(uint32(s)).(T)
	case uint64:
		return any(uint64(s)).(T)
	}
	return fromF[T](float64(s))
}

func TestReductions(t *testing.T) {
	e := gpu(t)
	checkReductions[int8](t, e, -100, 100, nil)
	checkReductions[int32](t, e, -1e6, 1e6, nil)
	checkReductions[int64](t, e, -1e12, 1e12, nil)
	checkReductions[uint8](t, e, 0, 250, nil)
	checkReductions[uint64](t, e, 0, 1e12, nil)
	checkReductions[float32](t, e, -1, 1, compute.Mean[float32])
	checkReductions[float64](t, e, -1, 1, compute.Mean[float64])
	checkReductions[cuda.Float16](t, e, -1, 1, compute.Mean[cuda.Float16])
	checkReductions[cuda.BFloat16](t, e, -1, 1, compute.Mean[cuda.BFloat16])
}

// TestSumDeterministic: the same sum twice gives the same bits.
func TestSumDeterministic(t *testing.T) {
	e := gpu(t)
	x := cudatest.Upload(t, e.ctx, randoms[float32](1<<24+3, -1, 1))
	out := must(cuda.Alloc[float32](e.ctx, 1))(t)
	defer out.Free()
	var first uint32
	for r := range 5 {
		if err := compute.Sum(out, x, e.s); err != nil {
			t.Fatal(err)
		}
		got := math.Float32bits(cudatest.Download(t, out)[0])
		if r == 0 {
			first = got
		} else if got != first {
			t.Fatalf("round %d: %#08x, the first %#08x", r, got, first)
		}
	}
}

// TestSoftmax checks Softmax and LogSoftmax against float64 on the host:
// rows kept in shared memory 16 bytes at a time (1024, 8192 float32),
// one at a time (1001), rows too long to keep (12000, 100003), in place,
// and a row holding a NaN (all NaN) or an infinity.
func TestSoftmax(t *testing.T) {
	e := gpu(t)
	softmaxOf[float32](t, e, 2e-6)
	softmaxOf[float64](t, e, 1e-13)
	softmaxOf[cuda.BFloat16](t, e, 1.6e-2)
	softmaxOf[cuda.Float16](t, e, 2e-3)
}

func softmaxOf[T cuda.AnyFloat](t *testing.T, e env, tol float64) {
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		shapes := []compute.Shape{{Rows: 1, Cols: 1}, {Rows: 37, Cols: 1001}, {Rows: 5, Cols: 1024}, {Rows: 300, Cols: 8192},
			{Rows: 3, Cols: 12000}, {Rows: 2, Cols: 100003}}
		for i, sh := range shapes {
			x := randoms[T](sh.Rows*sh.Cols, -20, 20)
			if i == 2 {
				x[3] = fromF[T](math.NaN())       // row 0: all NaN
				x[1024+7] = fromF[T](math.Inf(1)) // row 1: NaN where +Inf, 0 elsewhere
			}
			dx := cudatest.Upload(t, e.ctx, x)
			sm := must(cuda.Alloc[T](e.ctx, len(x)))(t)
			if err := compute.Softmax(sm, dx, sh, e.s); err != nil {
				t.Fatal(err)
			}
			gs := cudatest.Download(t, sm)
			sm.Free()
			// In place: dst is src.
			if err := compute.LogSoftmax(dx, dx, sh, e.s); err != nil {
				t.Fatal(err)
			}
			gl := cudatest.Download(t, dx)
			for r := range sh.Rows {
				wants, lwants := softmaxWant(x[r*sh.Cols : (r+1)*sh.Cols])
				for c := range sh.Cols {
					want, lwant := wants[c], lwants[c]
					got := toF(gs[r*sh.Cols+c])
					if math.IsNaN(want) != math.IsNaN(got) || math.Abs(got-want) > tol*math.Max(want, 1e-3)*4 {
						t.Fatalf("Softmax %v: [%d,%d] = %v, want %v", sh, r, c, got, want)
					}
					lgot := toF(gl[r*sh.Cols+c])
					if math.IsNaN(lwant) != math.IsNaN(lgot) || lgot != lwant && math.Abs(lgot-lwant) > tol*4*math.Max(1, math.Abs(lwant)) {
						t.Fatalf("LogSoftmax %v: [%d,%d] = %v, want %v", sh, r, c, lgot, lwant)
					}
				}
			}
		}
	})
}

// softmaxWant is the Softmax and the LogSoftmax of row in float64, as the
// device computes them: e^(x-max) over the row's sum of them, and x - max
// - log(sum); a row whose largest is +Inf is NaN where +Inf and 0 (-Inf)
// elsewhere (+Inf - +Inf is NaN, as on the device and in PyTorch).
func softmaxWant[T cuda.Number](row []T) (want, logWant []float64) {
	m := math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, toF(v))
	}
	var sum float64
	for _, v := range row {
		sum += math.Exp(toF(v) - m)
	}
	want, logWant = make([]float64, len(row)), make([]float64, len(row))
	for c, v := range row {
		want[c], logWant[c] = math.Exp(toF(v)-m)/sum, toF(v)-m-math.Log(sum)
		if math.IsInf(m, 1) {
			want[c], logWant[c] = math.NaN(), math.NaN()
			if !math.IsInf(toF(v), 1) {
				want[c], logWant[c] = 0, math.Inf(-1)
			}
		}
	}
	return want, logWant
}

// TestTranspose: in tiles, and skinny (fewer than 8 rows or columns: a
// thread per element), on both sides of the change.
func TestTranspose(t *testing.T) {
	e := gpu(t)
	for _, sh := range []compute.Shape{{Rows: 1, Cols: 1}, {Rows: 33, Cols: 65}, {Rows: 1, Cols: 1000003}, {Rows: 1025, Cols: 999},
		{Rows: 1000003, Cols: 1}, {Rows: 7, Cols: 100003}, {Rows: 100003, Cols: 5}, {Rows: 8, Cols: 8}, {Rows: 7, Cols: 8}, {Rows: 8, Cols: 70001}} {
		x := randoms[int32](sh.Rows*sh.Cols, -1e9, 1e9)
		dst := must(cuda.Alloc[int32](e.ctx, len(x)))(t)
		if err := compute.Transpose(dst, cudatest.Upload(t, e.ctx, x), sh, e.s); err != nil {
			t.Fatal(err)
		}
		got := cudatest.Download(t, dst)
		for r := range sh.Rows {
			for c := range sh.Cols {
				if got[c*sh.Rows+r] != x[r*sh.Cols+c] {
					t.Fatalf("Transpose %v: [%d,%d]", sh, r, c)
				}
			}
		}
		dst.Free()
	}
}

// TestCompileError: a body that does not compile is the Launch's error,
// with NVRTC's log, wrapping ErrInvalidValue.
// TestNamesLikeTheGenerators: parameters named as the generated code's own
// locals, functions and kernel parameters (start, stride, partial, out,
// map, ...) compile and compute: the generator's names cannot collide
// with a user's.
func TestNamesLikeTheGenerators(t *testing.T) {
	e := gpu(t)
	ins := "float32 start, float32 stride, float32 vectors, float32 j, float32 k, float32 body, float32 vec, float32 partial"
	k := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "names", InParams: ins, OutParams: "float32 out", Operation: "out = start + stride + vectors + j + k + body + vec + partial;"}))(t)
	r := must(compute.NewReduction(compute.ReductionSpec{Name: "names_sum", InParams: ins + ", float32 map, float32 reduce, float32 identity, float32 post, float32 block, float32 at, float32 acc", OutParams: "float32 out", MapExpr: "start + map + at", ReduceExpr: "a + b", PostMapExpr: "out = a;", Identity: "0", ReduceType: "float32"}))(t)
	const n = 1001
	x := cudatest.Upload(t, e.ctx, randoms[float32](n, -1, 1))
	args := []any{x, float32(1), x, float32(2), x, float32(3), x, float32(4)}
	out := must(cuda.Alloc[float32](e.ctx, n))(t)
	defer out.Free()
	if err := k.Launch(e.s, append(args, out)...); err != nil {
		t.Fatal(err)
	}
	hx := cudatest.Download(t, x)
	for i, got := range cudatest.Download(t, out) {
		if want := 4*hx[i] + 10; math.Abs(float64(got-want)) > 1e-5 {
			t.Fatalf("element %d = %v, want %v", i, got, want)
		}
	}
	sum := must(cuda.Alloc[float32](e.ctx, 1))(t)
	defer sum.Free()
	if err := r.Launch(e.s, append(args, x, float32(0), float32(0), float32(0), float32(0), float32(1), float32(0), sum)...); err != nil {
		t.Fatal(err)
	}
	var want float64
	for _, v := range hx {
		want += 2*float64(v) + 1
	}
	if got := cudatest.Download(t, sum)[0]; math.Abs(float64(got)-want) > 1e-3 {
		t.Errorf("names_sum = %v, want %v", got, want)
	}
}

// TestWithoutSemicolonCompiles: an operation and a post-map without their
// last semicolon, or ending in a // comment, and expressions ending in a
// semicolon or a comment, compile and compute (TestWithoutSemicolon checks
// the source).
func TestWithoutSemicolonCompiles(t *testing.T) {
	e := gpu(t)
	k := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "fma1", InParams: "float32 x, float32 y", OutParams: "float32 z",
		Operation: "z = x * y + 1.0f // CuPy's way"}))(t)
	r := must(compute.NewReduction(compute.ReductionSpec{Name: "sumsq1", InParams: "float32 x", OutParams: "float32 y",
		MapExpr: "x * x // squares", ReduceExpr: "a + b;", PostMapExpr: "y = a", Identity: "0;", ReduceType: "float32"}))(t)
	x := cudatest.Upload(t, e.ctx, []float32{1, 2, 3, 4})
	z := must(cuda.Alloc[float32](e.ctx, 4))(t)
	defer z.Free()
	sum := must(cuda.Alloc[float32](e.ctx, 1))(t)
	defer sum.Free()
	if err := k.Launch(e.s, x, x, z); err != nil {
		t.Fatal(err)
	}
	if err := r.Launch(e.s, x, sum); err != nil {
		t.Fatal(err)
	}
	if got := cudatest.Download(t, z); fmt.Sprint(got) != "[2 5 10 17]" {
		t.Errorf("z = x*x + 1: %v", got)
	}
	if got := cudatest.Download(t, sum)[0]; got != 30 {
		t.Errorf("sum of squares: %v, want 30", got)
	}
}

func TestCompileError(t *testing.T) {
	e := gpu(t)
	k := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "broken", InParams: "float32 x", OutParams: "float32 y", Operation: "y = x +;"}))(t)
	b := must(cuda.Zeroed[float32](e.ctx, 4))(t)
	defer b.Free()
	err := k.Launch(e.s, b, b)
	if err == nil || !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "broken.cu") {
		t.Fatalf("a body that does not compile: %v", err)
	}
	t.Log(err)
}

// TestDiskCache: with a warm disk cache, a new context's first call of an
// operation compiles nothing, and takes milliseconds.
func TestDiskCache(t *testing.T) {
	requireNVRTC(t)
	t.Setenv(compute.EnvCache, t.TempDir())
	first := func() time.Duration {
		e := newEnv(t) // a context of its own: the memory cache is empty
		ctx, s := e.ctx, e.s
		b := must(cuda.Zeroed[float32](ctx, 1<<10))(t)
		defer b.Free()
		start := time.Now()
		if err := compute.Add(b, b, b, s); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	before := compute.Compiles()
	cold := first()
	if compute.Compiles() != before+1 {
		t.Fatalf("the cold call compiled %d kernels, want 1", compute.Compiles()-before)
	}
	warm := first()
	if compute.Compiles() != before+1 {
		t.Fatalf("the warm call compiled %d kernels, want none", compute.Compiles()-before-1)
	}
	t.Logf("first call of Add: %v compiling, %v from the disk cache", cold, warm)
	if os.Getenv(cudatest.EnvRequireGPU) == "1" {
		t.Logf("(warm first call goal: under 2 ms)")
	}
}

func checkArg[T cuda.Number](t *testing.T, e env, lo, hi float64) {
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		out := must(cuda.Alloc[int64](e.ctx, 1))(t)
		defer out.Free()
		for _, n := range []int{1, 31, 1000003} {
			x := randoms[T](n, lo, hi)
			best, worst := 0, 0
			for i := range x {
				if toF(x[i]) > toF(x[best]) {
					best = i
				}
				if toF(x[i]) < toF(x[worst]) {
					worst = i
				}
			}
			dx := cudatest.Upload(t, e.ctx, x)
			if err := compute.ArgMax(out, dx, e.s); err != nil {
				t.Fatal(err)
			}
			if got := cudatest.Download(t, out)[0]; got != int64(best) {
				t.Fatalf("ArgMax of %d: %d (%v), want %d (%v)", n, got, x[got], best, x[best])
			}
			if err := compute.ArgMin(out, dx, e.s); err != nil {
				t.Fatal(err)
			}
			if got := cudatest.Download(t, out)[0]; got != int64(worst) {
				t.Fatalf("ArgMin of %d: %d (%v), want %d (%v)", n, got, x[got], worst, x[worst])
			}
		}
	})
}

// TestArgMaxMin: the first index of the largest and smallest element, ties
// to the first (small integer ranges make many ties), a NaN first.
func TestArgMaxMin(t *testing.T) {
	e := gpu(t)
	checkArg[int8](t, e, -5, 5)
	checkArg[uint32](t, e, 0, 1e9)
	checkArg[float32](t, e, -1, 1)
	checkArg[float64](t, e, -1, 1)
	checkArg[cuda.BFloat16](t, e, -1, 1)
	x := []float32{1, 3, float32(math.NaN()), 3, float32(math.NaN())}
	out := must(cuda.Alloc[int64](e.ctx, 1))(t)
	defer out.Free()
	for name, op := range map[string]func(*cuda.DeviceBuffer[int64], *cuda.DeviceBuffer[float32], *cuda.Stream) error{
		"ArgMax": compute.ArgMax[float32], "ArgMin": compute.ArgMin[float32]} {
		if err := op(out, cudatest.Upload(t, e.ctx, x), e.s); err != nil {
			t.Fatal(err)
		}
		if got := cudatest.Download(t, out)[0]; got != 2 {
			t.Errorf("%s of %v: %d, want 2 (the first NaN)", name, x, got)
		}
	}
}

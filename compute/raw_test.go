package compute_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// Raw parameters ("raw float32 x"): buffers the operation indexes itself,
// as CuPy's.

// TestRawSource: a raw parameter is a pointer the operation indexes (const
// for an input only), passed to it whole in both loops; it is no part of
// the vectors, their alignment test or their width; a raw half is an
// accessor, whose C only the kernels with one carry.
func TestRawSource(t *testing.T) {
	for _, tt := range []struct {
		name    string
		spec    compute.ElementwiseSpec
		pattern []bool
		want    []string
		not     []string
	}{
		{
			name:    "gather",
			spec:    compute.ElementwiseSpec{Name: "gather", InParams: "raw float64 x, int32 idx", OutParams: "float32 y", Operation: "y = x[idx]"},
			pattern: []bool{true, true, true},
			want: []string{
				"void gocuda_body(const double* x, const int idx, float& y, const long long i, const long long n) {\ny = x[idx]\n;\n}",
				`extern "C" __global__ void gather(const double* __restrict__ gocudap_x, const int* __restrict__ gocudap_idx, float* gocudap_y, long long n)`,
				// 16 bytes of the widest buffer not raw: 4 of int32 and
				// float32, where the raw float64 would make it 2.
				"if ((unsigned long long)gocudap_idx % sizeof(gocuda_vec<int, 4>) == 0 && (unsigned long long)gocudap_y % sizeof(gocuda_vec<float, 4>) == 0) {",
				"const long long i = gocuda_j * 4 + gocuda_k;",
				"const int idx = gocudav_idx.v[gocuda_k];",
				"gocuda_body(gocudap_x, idx, y, i, n);",
				"gocudav_y.v[gocuda_k] = (float)(y);",
				"const int idx = gocudap_idx[i];",
				"gocudap_y[i] = (float)(y);",
			},
			not: []string{"gocudav_x", "gocudap_x[i]", "gocudap_x %", "gocuda_raw_in"},
		},
		{
			name:    "scatter",
			spec:    compute.ElementwiseSpec{Name: "scatter", InParams: "float32 v, int64 idx", OutParams: "raw float32 y", Operation: "y[idx] = v"},
			pattern: []bool{false, true, true},
			want: []string{
				"void gocuda_body(const float v, const long long idx, float* y, const long long i, const long long n) {\ny[idx] = v\n;\n}",
				`extern "C" __global__ void scatter(float gocudap_v, const long long* __restrict__ gocudap_idx, float* gocudap_y, long long n)`,
				"if ((unsigned long long)gocudap_idx % sizeof(gocuda_vec<long long, 2>) == 0) {",
				"const float v = gocudap_v;",
				"gocuda_body(v, idx, gocudap_y, i, n);",
			},
			// The operation sets a raw output itself: nothing is stored
			// after it.
			not: []string{"gocudav_y", "gocudap_y[i] =", "float y;"},
		},
		{
			name:    "halves",
			spec:    compute.ElementwiseSpec{Name: "hstencil", InParams: "raw float16 x, raw bfloat16 acc", OutParams: "float16 y, raw bfloat16 acc", Operation: "y = x[i] + x[i + 1]; acc[i] += y"},
			pattern: []bool{true, true, true},
			want: []string{
				"template <bool BF> struct gocuda_raw_in {",
				"template <bool BF> struct gocuda_raw_out {",
				"void gocuda_body(const gocuda_raw_in<false> x, const gocuda_raw_out<true> acc, float& y, const long long i, const long long n) {",
				`extern "C" __global__ void hstencil(const unsigned short* __restrict__ gocudap_x, unsigned short* gocudap_acc, unsigned short* gocudap_y, long long n)`,
				"if ((unsigned long long)gocudap_y % sizeof(gocuda_vec<unsigned short, 8>) == 0) {",
				"gocuda_body(gocuda_raw_in<false>{gocudap_x}, gocuda_raw_out<true>{gocudap_acc}, y, i, n);",
				"gocudaf_y[gocuda_k] = (float)(y);",
				"gocuda_store_f16(gocudav_y, gocudaf_y);",
			},
			not: []string{"gocudav_x", "gocudav_acc", "float acc"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := must(compute.NewElementwise(tt.spec))(t)
			src := compute.ElementwiseSource(k, tt.pattern...)
			for _, want := range tt.want {
				if !strings.Contains(src, want) {
					t.Errorf("source lacks %q:\n%s", want, src)
				}
			}
			for _, not := range tt.not {
				if strings.Contains(src, not) {
					t.Errorf("source has %q:\n%s", not, src)
				}
			}
		})
	}
	// A kernel without raw parameters is as it was: no accessors.
	k := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "k", InParams: "float16 x", OutParams: "float16 y", Operation: "y = x"}))(t)
	if src := compute.ElementwiseSource(k, true, true); strings.Contains(src, "gocuda_raw") {
		t.Errorf("a kernel without raw parameters has their accessors:\n%s", src)
	}
}

// TestRawDeclarationErrors: raw is a keyword before a type, of Elementwise
// alone; a kernel needs a parameter that is not raw, for its element
// count; an in-place parameter is raw in both lists or neither.
func TestRawDeclarationErrors(t *testing.T) {
	ew := func(in, out string) error {
		return second(compute.NewElementwise(compute.ElementwiseSpec{Name: "k", InParams: in, OutParams: out, Operation: "y = x"}))
	}
	for _, tt := range []struct {
		name, want string
		err        error
	}{
		{"no type", `InParams: "raw x" is not raw, a type and a name, such as "raw float32 x"`, ew("raw x", "float32 y")},
		{"after the type", `InParams: "float32 raw x" is not a type and a name: raw comes before the type`, ew("float32 raw x", "float32 y")},
		{"twice", `InParams: "raw raw float32 x" is not a type and a name, such as "float32 x" (or "raw float32 x")`, ew("raw raw float32 x", "float32 y")},
		{"capitalized", `OutParams: "Raw float32 y" is not a type and a name`, ew("float32 x", "Raw float32 y")},
		{"unknown type", `InParams: "float" is not a type`, ew("raw float x", "float32 y")},
		{"bad name", `OutParams: "_y" is not a name`, ew("float32 x", "raw float32 _y")},
		{"reserved name", `InParams: "i" is reserved`, ew("raw float32 i", "float32 y")},
		{"raw input, plain output", "OutParams: x is raw in one list and not in the other", ew("raw float32 x, float32 w", "float32 x")},
		{"plain input, raw output", "OutParams: x is raw in one list and not in the other", ew("float32 x, float32 w", "raw float32 x")},
		{"reduction", "NewReduction: invalid value: InParams: x is raw: only an Elementwise takes raw parameters", second(compute.NewReduction(compute.ReductionSpec{
			Name: "r", InParams: "raw float32 x, float32 w", OutParams: "float32 y", MapExpr: "w", ReduceExpr: "a + b", PostMapExpr: "y = a", Identity: "0", ReduceType: "float32"}))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, cuda.ErrInvalidValue) || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("got %v; want ErrInvalidValue saying %q", tt.err, tt.want)
			}
		})
	}
	// raw is a keyword only before a type: a parameter may be named raw,
	// and be raw.
	for _, in := range []string{"float32 raw, float32 x", "raw float32 raw, float32 x", " raw  float32\tx "} {
		if _, err := compute.NewElementwise(compute.ElementwiseSpec{Name: "k", InParams: in, OutParams: "float32 y", Operation: "y = x"}); err != nil {
			t.Errorf("InParams %q: %v", in, err)
		}
	}
}

// TestRawLaunchErrors: a raw parameter takes a buffer of s's context, of
// any length; the element count is the other buffers', and a launch
// without one is refused. Nothing compiles here (NVRTC put back, where the
// fake has none): a launch these checks let through fails, on the fake,
// with ErrNotSupported, or runs where there is NVRTC.
func TestRawLaunchErrors(t *testing.T) {
	ctx := cudatest.Contexts(t, 1)[0]
	compute.UseNVRTC(t)
	s := cudatest.Stream(t, ctx)
	gather := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "gather", InParams: "raw float32 x, int64 idx", OutParams: "float32 y", Operation: "y = x[idx]"}))(t)
	scatter := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "scatter", InParams: "float32 v, int64 idx", OutParams: "raw float32 y", Operation: "y[idx] = v"}))(t)
	allRaw := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "copy", InParams: "raw float32 x", OutParams: "raw float32 y", Operation: "y[i] = x[i]"}))(t)
	buf := func(n int) *cuda.DeviceBuffer[float32] {
		t.Helper()
		b := must(cuda.Zeroed[float32](ctx, n))(t)
		t.Cleanup(func() { b.Free() })
		return b
	}
	x, y, short := buf(3), buf(8), buf(7)
	idx := must(cuda.Zeroed[int64](ctx, 8))(t)
	defer idx.Free()
	ints := must(cuda.Zeroed[int32](ctx, 3))(t)
	defer ints.Free()
	var nilBuf *cuda.DeviceBuffer[float32]
	for _, tt := range []struct {
		name, want string
		err        error
	}{
		{"raw scalar", "x is raw: it must be a *cuda.DeviceBuffer[float32], not a float32", gather.Launch(s, float32(1), idx, y)},
		{"raw output scalar", "y is raw: it must be a *cuda.DeviceBuffer[float32], not a float32", scatter.Launch(s, x, idx, float32(0))},
		{"raw buffer type", "x is declared float32, and a buffer of int32", gather.Launch(s, ints, idx, y)},
		{"raw nil", "x is a nil *cuda.DeviceBuffer", gather.Launch(s, nilBuf, idx, y)},
		{"count", "takes 3 arguments (raw float32 x, int64 idx, float32 y), 2 given", gather.Launch(s, x, y)},
		{"lengths", "y has 7 elements, and idx 8: every buffer must have as many, raw ones aside", gather.Launch(s, x, idx, short)},
		{"only raw buffers", "every buffer given is raw: the element count n is the length of the buffers that are not raw; give one (float32 v) as a buffer",
			must(compute.NewElementwise(compute.ElementwiseSpec{Name: "fill", InParams: "float32 v", OutParams: "raw float32 y", Operation: "y[i] = v"}))(t).Launch(s, float32(1), y)},
		{"every parameter raw", "every parameter is raw: give the element count with LaunchN", allRaw.Launch(s, x, y)},
		{"negative n", "n is -1: the element count cannot be negative", allRaw.LaunchN(s, -1, x, y)},
		{"n and a buffer", "y has 7 elements, and n is 8: every buffer not raw must have n",
			must(compute.NewElementwise(compute.ElementwiseSpec{Name: "fill", InParams: "float32 v", OutParams: "float32 y", Operation: "y = v"}))(t).LaunchN(s, 8, float32(1), short)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, cuda.ErrInvalidValue) || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("got %v; want ErrInvalidValue saying %q", tt.err, tt.want)
			}
		})
	}
	// A raw buffer of another length than the element count passes the
	// checks: x has 3 elements, idx and y 8 (indices 0).
	if err := gather.Launch(s, x, idx, y); errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("a raw buffer of 3 elements beside 8: %v", err)
	}
	// Zero elements launch nothing, whatever the raw buffers' lengths.
	empty := must(cuda.Alloc[int64](ctx, 0))(t)
	defer empty.Free()
	if err := gather.Launch(s, x, empty, buf(0)); err != nil {
		t.Errorf("a gather of zero elements: %v", err)
	}
}

// rawSizes are the element counts the raw kernels are checked at: none,
// fewer than a vector, vectors and a tail, many blocks.
var rawSizes = []int{0, 1, 31, 1000003}

// TestRawGather: y[i] = x[idx[i]], x raw of another length than idx and y,
// an unaligned view of a buffer among them, against Go.
func TestRawGather(t *testing.T) {
	e := gpu(t)
	gather := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "gather", InParams: "raw float32 x, int64 idx", OutParams: "float32 y", Operation: "y = x[idx]"}))(t)
	for _, n := range rawSizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			x := randoms[float32](n/3+5, -100, 100)
			idx := make([]int64, n)
			for i := range idx {
				idx[i] = rand.Int64N(int64(len(x)))
			}
			// x a view at element 1: a raw buffer needs no alignment, and
			// the others still take the vector loop.
			whole := cudatest.Upload(t, e.ctx, append([]float32{-1}, x...))
			dx := must(whole.Slice(1, len(x)))(t)
			dy := cudatest.Upload(t, e.ctx, make([]float32, n))
			if err := gather.Launch(e.s, dx, cudatest.Upload(t, e.ctx, idx), dy); err != nil {
				t.Fatal(err)
			}
			for i, g := range cudatest.Download(t, dy) {
				if g != x[idx[i]] {
					t.Fatalf("y[%d] = %v, want x[%d] = %v", i, g, idx[i], x[idx[i]])
				}
			}
		})
	}
}

// TestLaunchN: a kernel whose every parameter is raw runs over the count
// LaunchN gives: a strided copy (every other element of x, reversed, into
// every third of y), the others of y untouched, against Go.
func TestLaunchN(t *testing.T) {
	e := gpu(t)
	k := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "strided", InParams: "raw float32 x, int64 xs", OutParams: "raw float32 y",
		Operation: "y[3 * i] = x[(n - 1 - i) * xs]"}))(t)
	for _, n := range rawSizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			x := randoms[float32](2*n, -100, 100)
			y := randoms[float32](3*n, -100, 100)
			dy := cudatest.Upload(t, e.ctx, y)
			if err := k.LaunchN(e.s, n, cudatest.Upload(t, e.ctx, x), int64(2), dy); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				y[3*i] = x[(n-1-i)*2]
			}
			for i, g := range cudatest.Download(t, dy) {
				if g != y[i] {
					t.Fatalf("y[%d] = %v, want %v", i, g, y[i])
				}
			}
		})
	}
}

// TestRawStencil: a 3-point stencil, its ends checked against n, with a
// scalar weight, over aligned buffers and unaligned views, against Go.
func TestRawStencil(t *testing.T) {
	e := gpu(t)
	stencil := must(compute.NewElementwise(compute.ElementwiseSpec{
		Name:      "stencil",
		InParams:  "raw float32 x, float32 w",
		OutParams: "float32 y",
		Operation: `const float l = i > 0 ? x[i - 1] : 0.0f;
			const float r = i + 1 < n ? x[i + 1] : 0.0f;
			y = l + w * x[i] + r`,
	}))(t)
	const w = float32(-2) // w·x exact: the same sum whether or not NVRTC fuses it into an FMA
	for _, n := range rawSizes {
		for _, off := range []int{0, 1} {
			t.Run(fmt.Sprintf("%d at %d", n, off), func(t *testing.T) {
				x := randoms[float32](n, -100, 100)
				dx := must(cudatest.Upload(t, e.ctx, append(make([]float32, off), x...)).Slice(off, n))(t)
				dy := must(cudatest.Upload(t, e.ctx, make([]float32, n+off)).Slice(off, n))(t)
				if err := stencil.Launch(e.s, dx, w, dy); err != nil {
					t.Fatal(err)
				}
				for i, g := range cudatest.Download(t, dy) {
					var l, r float32
					if i > 0 {
						l = x[i-1]
					}
					if i+1 < n {
						r = x[i+1]
					}
					if want := l + w*x[i] + r; g != want {
						t.Fatalf("y[%d] = %v, want %v", i, g, want)
					}
				}
			})
		}
	}
}

// TestRawScatter: a raw output, y[idx[i]] = v[i] by a permutation into
// every other element of y: the elements between keep their values.
func TestRawScatter(t *testing.T) {
	e := gpu(t)
	scatter := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "scatter", InParams: "float32 v, int64 idx", OutParams: "raw float32 y", Operation: "y[idx] = v"}))(t)
	for _, n := range rawSizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			v := randoms[float32](n, -100, 100)
			idx := make([]int64, n)
			for i, p := range rand.Perm(n) {
				idx[i] = 2 * int64(p)
			}
			const kept = float32(-12345)
			y := make([]float32, 2*n+1)
			for i := range y {
				y[i] = kept
			}
			dy := cudatest.Upload(t, e.ctx, y)
			if err := scatter.Launch(e.s, cudatest.Upload(t, e.ctx, v), cudatest.Upload(t, e.ctx, idx), dy); err != nil {
				t.Fatal(err)
			}
			for i := range v {
				y[idx[i]] = v[i]
			}
			for j, g := range cudatest.Download(t, dy) {
				if g != y[j] {
					t.Fatalf("y[%d] = %v, want %v", j, g, y[j])
				}
			}
		})
	}
}

// TestRawHalves: raw Float16 and BFloat16 are indexed as floats: a gather
// and a stencil of a raw float16 input, a scatter into a raw float16
// output, and a raw bfloat16 both input and output updated with +=, bit
// for bit against Go's conversions.
func TestRawHalves(t *testing.T) {
	e := gpu(t)
	kernel := func(name, in, out, op string) *compute.Elementwise {
		t.Helper()
		return must(compute.NewElementwise(compute.ElementwiseSpec{Name: name, InParams: in, OutParams: out, Operation: op}))(t)
	}
	gather := kernel("hgather", "raw float16 x, int64 idx", "float32 y", "y = x[idx + 3] * 2")
	stencil := kernel("hstencil", "raw float16 x", "float16 y", "y = (i > 0 ? x[i - 1] : 0.0f) + x[i] + (i + 1 < n ? x[i + 1] : 0.0f)")
	scatter := kernel("hscatter", "float32 v, int64 idx", "raw float16 y", "y[idx] = v")
	inc := kernel("binc", "int64 idx, raw bfloat16 h", "raw bfloat16 h", "h[idx] += 1")
	for _, n := range rawSizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			x := randoms[cuda.Float16](n+3, -100, 100)
			dx := cudatest.Upload(t, e.ctx, x)
			idx := make([]int64, n)
			for i, p := range rand.Perm(n) {
				idx[i] = int64(p)
			}
			didx := cudatest.Upload(t, e.ctx, idx)

			t.Run("gather", func(t *testing.T) {
				dy := cudatest.Upload(t, e.ctx, make([]float32, n))
				if err := gather.Launch(e.s, dx, didx, dy); err != nil {
					t.Fatal(err)
				}
				for i, g := range cudatest.Download(t, dy) {
					if want := x[idx[i]+3].Float32() * 2; g != want {
						t.Fatalf("y[%d] = %v, want %v", i, g, want)
					}
				}
			})
			t.Run("stencil", func(t *testing.T) {
				dy := cudatest.Upload(t, e.ctx, make([]cuda.Float16, n))
				if err := stencil.Launch(e.s, must(dx.Slice(0, n))(t), dy); err != nil {
					t.Fatal(err)
				}
				for i, g := range cudatest.Download(t, dy) {
					var l, r float32
					if i > 0 {
						l = x[i-1].Float32()
					}
					if i+1 < n {
						r = x[i+1].Float32()
					}
					if want := cuda.NewFloat16(l + x[i].Float32() + r); g != want {
						t.Fatalf("y[%d] = %#x, want %#x", i, g, want)
					}
				}
			})
			t.Run("scatter", func(t *testing.T) {
				v := randoms[float32](n, -100, 100)
				dy := cudatest.Upload(t, e.ctx, make([]cuda.Float16, n))
				if err := scatter.Launch(e.s, cudatest.Upload(t, e.ctx, v), didx, dy); err != nil {
					t.Fatal(err)
				}
				got := cudatest.Download(t, dy)
				for i := range v {
					if want := cuda.NewFloat16(v[i]); got[idx[i]] != want {
						t.Fatalf("y[%d] = %#x, want %#x", idx[i], got[idx[i]], want)
					}
				}
			})
			t.Run("in place", func(t *testing.T) {
				h := randoms[cuda.BFloat16](n, -100, 100)
				dh := cudatest.Upload(t, e.ctx, h)
				if err := inc.Launch(e.s, didx, dh); err != nil {
					t.Fatal(err)
				}
				for j, g := range cudatest.Download(t, dh) {
					if want := cuda.NewBFloat16(h[j].Float32() + 1); g != want {
						t.Fatalf("h[%d] = %#x, want %#x", j, g, want)
					}
				}
			})
		})
	}
}

package nn_test

import (
	"fmt"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

func TestActivations(t *testing.T) {
	layerTypes(t, func(t *testing.T, typ string) {
		switch typ {
		case "float32":
			testActivations[float32](t)
		case "float16":
			testActivations[cuda.Float16](t)
		default:
			testActivations[cuda.BFloat16](t)
		}
	})
}

func testActivations[T nn.Float](t *testing.T) {
	s := layerStream(t)
	sigmoid := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	refs := []struct {
		name string
		f    func(x, b float64) float64
		new  func(x, b *nd.Array[T]) (*nd.Array[T], error)
		into func(dst, x, b *nd.Array[T]) error
	}{
		{"GELU", func(x, _ float64) float64 { return x / 2 * (1 + math.Erf(x/math.Sqrt2)) },
			func(x, _ *nd.Array[T]) (*nd.Array[T], error) { return nn.GELU(x) },
			func(d, x, _ *nd.Array[T]) error { return nn.GELUInto(d, x) }},
		{"GELUTanh", func(x, _ float64) float64 {
			return x / 2 * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		},
			func(x, _ *nd.Array[T]) (*nd.Array[T], error) { return nn.GELUTanh(x) },
			func(d, x, _ *nd.Array[T]) error { return nn.GELUTanhInto(d, x) }},
		{"SiLU", func(x, _ float64) float64 { return x * sigmoid(x) },
			func(x, _ *nd.Array[T]) (*nd.Array[T], error) { return nn.SiLU(x) },
			func(d, x, _ *nd.Array[T]) error { return nn.SiLUInto(d, x) }},
		{"SwiGLU", func(x, b float64) float64 { return x * sigmoid(x) * b },
			nn.SwiGLU[T], nn.SwiGLUInto[T]},
	}
	for _, ref := range refs {
		for _, n := range []int{1, 7, 33, 1000, 4097} {
			t.Run(fmt.Sprintf("%s/%d", ref.name, n), func(t *testing.T) {
				xv := layerRound[T](layerData(n, uint64(n), -6, 6))
				bv := layerRound[T](layerData(n, uint64(n)+1, -2, 2))
				x := layerUp[T](t, s, xv, n)
				b := layerUp[T](t, s, bv, n)
				want := make([]float64, n)
				for i := range want {
					want[i] = ref.f(xv[i], bv[i])
				}
				y := layerFree(t, must(ref.new(x, b))(t))
				layerClose(t, "y", layerDown(t, y), want, layerTol[T]())
				// in place, through a view of an odd offset (unaligned)
				if n > 1 {
					xs := must(x.Slice(0, 1, n, 1))(t)
					bs := must(b.Slice(0, 1, n, 1))(t)
					if err := ref.into(xs, xs, bs); err != nil {
						t.Fatal(err)
					}
					layerClose(t, "in place", layerDown(t, x)[1:], want[1:], layerTol[T]())
				}
			})
		}
	}
}

func TestActivationErrors(t *testing.T) {
	s := layerStream(t)
	a := layerUp[float32](t, s, layerData(6, 1, -1, 1), 2, 3)
	b := layerUp[float32](t, s, layerData(6, 1, -1, 1), 3, 2)
	_, err := nn.SwiGLU(a, b)
	layerWantErr(t, err, cuda.ErrInvalidValue, "SwiGLU", "up has shape [3 2], want [2 3]")
	_, err = nn.SwiGLU(a, nil)
	layerWantErr(t, err, cuda.ErrInvalidValue, "up is a nil")
	_, err = nn.GELU[float32](nil)
	layerWantErr(t, err, cuda.ErrInvalidValue, "GELU", "x is a nil")
	err = nn.SiLUInto(b, a)
	layerWantErr(t, err, cuda.ErrInvalidValue, "SiLUInto", "dst has shape")
	_, err = nn.GELUTanh(a.T())
	layerWantErr(t, err, cuda.ErrInvalidValue, "not contiguous")
}

// TestActivationTails holds the GELUs to the float64 reference
// relatively, not only to within an absolute tolerance, on the negative
// side where 1 + erf and 1 + tanh cancel (gelu(-10) came out 0 where it
// is -7.6e-23, a float32 of full precision): float32 results within
// 2e-5 of the reference (the argument's rounding, magnified by the tail's
// steepness, is what is left).
func TestActivationTails(t *testing.T) {
	s := layerStream(t)
	var xv []float64
	for x := -12.0; x <= 3; x += 0.125 {
		xv = append(xv, x)
	}
	x := layerUp[float32](t, s, xv, len(xv))
	for _, tc := range []struct {
		name string
		f    func(*nd.Array[float32]) (*nd.Array[float32], error)
		ref  func(x float64) float64
	}{
		{"GELU", nn.GELU[float32], func(x float64) float64 { return x / 2 * math.Erfc(-x/math.Sqrt2) }},
		{"GELUTanh", nn.GELUTanh[float32], func(x float64) float64 {
			return x / (1 + math.Exp(-2*math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		}},
		{"SiLU", nn.SiLU[float32], func(x float64) float64 { return x / (1 + math.Exp(-x)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := layerDown(t, layerFree(t, must(tc.f(x))(t)))
			for i, v := range xv {
				want := tc.ref(v)
				if math.Abs(want) < 1e-37 { // past float32's normal numbers
					continue
				}
				if d := math.Abs(got[i]-want) / math.Abs(want); !(d <= 2e-5) {
					t.Errorf("%s(%v) = %v, want %v (relative error %.2g)", tc.name, v, got[i], want, d)
				}
			}
		})
	}
}

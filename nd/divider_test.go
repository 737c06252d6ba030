package nd

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/ndshape"
)

// TestDivider: the narrow strided kernel's division by multiplication
// (divider), done as its C does it, gives q / d for every d it is given
// (1 to 2^31 - 1) and q below 2^31: at the ends, around multiples of d,
// and at random.
func TestDivider(t *testing.T) {
	rng := rand.New(rand.NewPCG(50, 3))
	ds := []int{1, 2, 3, 5, 7, 31, 32, 33, 64, 1000, 1023, 1024, 1025, 4097, 65535, 65536, 100003, 1 << 30, 1<<30 + 1, math.MaxInt32 - 1, math.MaxInt32}
	for range 200 {
		ds = append(ds, 1+rng.IntN(math.MaxInt32))
		ds = append(ds, 1+rng.IntN(5000))
	}
	for _, d := range ds {
		packed := divider(d)
		dd, m := uint32(packed), uint32(uint64(packed)>>32)
		sh := 32 - bits.LeadingZeros32(dd-1)
		if dd-1 == 0 {
			sh = 0
		}
		qs := []uint32{0, 1, math.MaxInt32, math.MaxInt32 - 1}
		for range 50 {
			qs = append(qs, rng.Uint32()>>1)
			k := uint32(rng.IntN(math.MaxInt32/d + 1))
			for _, q := range []uint32{k*uint32(d) - 1, k * uint32(d), k*uint32(d) + 1} {
				if q <= math.MaxInt32 {
					qs = append(qs, q)
				}
			}
		}
		for _, q := range qs {
			hi, _ := bits.Mul32(q, m)
			if got, want := (hi+q)>>sh, q/uint32(d); got != want {
				t.Fatalf("%d / %d = %d by the divider (m %d, shift %d), want %d", q, d, got, m, sh, want)
			}
		}
	}
}

// TestVectorPlans: the strided kernel's plans have the vector variant
// where the last axis allows it (vectorWidth), and not where it does not.
func TestVectorPlans(t *testing.T) {
	f32, f16 := ctypePtr[float32](), ctypePtr[cuda.Float16]()
	arr := func(tp *ctype, shape, strides []int) operand {
		l, err := ndshape.New(shape, strides, 0)
		if err != nil {
			t.Fatal(err)
		}
		return operand{t: tp, layout: l}
	}
	for _, c := range []struct {
		name string
		out  operand
		ins  []operand
		vec  int
		vecs uint64
	}{
		{"a row broadcast down the middle", arr(f32, []int{64, 1024, 64}, []int{65536, 64, 1}),
			[]operand{arr(f32, []int{64, 1024, 64}, []int{65536, 64, 1}), arr(f32, []int{1024, 1}, []int{1, 1})}, 4, 0b011},
		{"a row added to every row", arr(f32, []int{4096, 4096}, []int{4096, 1}),
			[]operand{arr(f32, []int{4096, 4096}, []int{4096, 1}), arr(f32, []int{4096}, []int{1})}, 4, 0b111},
		{"33 columns", arr(f32, []int{4097, 33}, []int{33, 1}),
			[]operand{arr(f32, []int{4097, 33}, []int{33, 1}), arr(f32, []int{33}, []int{1})}, 0, 0},
		{"halves", arr(f16, []int{64, 64}, []int{64, 1}),
			[]operand{arr(f16, []int{64, 64}, []int{64, 1}), arr(f16, []int{64}, []int{1})}, 0, 0},
		{"a transposed input", arr(f32, []int{64, 64}, []int{64, 1}),
			[]operand{arr(f32, []int{64, 64}, []int{1, 64}), arr(f32, []int{64}, []int{1})}, 0, 0},
		{"rows of 9 apart", arr(f32, []int{64, 8}, []int{8, 1}),
			[]operand{arr(f32, []int{64, 8}, []int{9, 1}), arr(f32, []int{8}, []int{1})}, 0, 0},
	} {
		shape := c.out.layout.Shape()
		layouts := []ndshape.Layout{c.out.layout}
		for _, in := range c.ins {
			l, err := in.layout.BroadcastTo(shape)
			if err != nil {
				t.Fatal(err)
			}
			layouts = append(layouts, l)
		}
		co, err := ndshape.Coalesce(layouts...)
		if err != nil {
			t.Fatal(err)
		}
		if vec, vecs := vectorWidth(co, &c.out, c.ins); vec != c.vec || vecs != c.vecs {
			t.Errorf("%s: vectorWidth = %d, %b; want %d, %b", c.name, vec, vecs, c.vec, c.vecs)
		}
	}
}

package nn_test

import (
	"fmt"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

func TestEmbedding(t *testing.T) {
	layerTypes(t, func(t *testing.T, typ string) {
		switch typ {
		case "float32":
			testEmbedding[float32](t)
		case "float16":
			testEmbedding[cuda.Float16](t)
		default:
			testEmbedding[cuda.BFloat16](t)
		}
	})
}

func testEmbedding[T nn.Float](t *testing.T) {
	s := layerStream(t)
	for _, dim := range []int{1, 7, 33, 768, 1000} {
		t.Run(fmt.Sprint(dim), func(t *testing.T) {
			const vocab = 11
			tv := layerRound[T](layerData(vocab*dim, uint64(dim), -1, 1))
			table := layerUp[T](t, s, tv, vocab, dim)
			ids := []int64{3, 0, 10, 10, -1, 11, 5}
			want := make([]float64, 0, len(ids)*dim)
			for _, id := range ids {
				if id < 0 || id >= vocab {
					want = append(want, make([]float64, dim)...)
					continue
				}
				want = append(want, tv[int(id)*dim:int(id+1)*dim]...)
			}
			i64 := layerFree(t, must(nd.FromSlice(s, ids, 7))(t))
			y := layerFree(t, must(nn.Embedding(table, i64))(t))
			if got := y.Shape(); len(got) != 2 || got[0] != 7 || got[1] != dim {
				t.Fatalf("shape %v", got)
			}
			layerClose(t, "int64 ids", layerDown(t, y), want, 0)
			i32v := make([]int32, 6)
			for i := range i32v {
				i32v[i] = int32(ids[i])
			}
			i32 := layerFree(t, must(nd.FromSlice(s, i32v, 2, 3))(t))
			y32 := layerFree(t, must(nd.Empty[T](s, 2, 3, dim))(t))
			if err := nn.EmbeddingInto(y32, table, i32); err != nil {
				t.Fatal(err)
			}
			layerClose(t, "int32 ids", layerDown(t, y32), want[:6*dim], 0)
		})
	}
	t.Run("errors", func(t *testing.T) {
		table := layerUp[T](t, s, layerData(6, 1, -1, 1), 6)
		ids := layerFree(t, must(nd.FromSlice(s, []int32{1}, 1))(t))
		_, err := nn.Embedding(table, ids)
		layerWantErr(t, err, cuda.ErrInvalidValue, "Embedding", "want [V, D]")
		_, err = nn.Embedding[T, int32](must(table.Reshape(2, 3))(t), nil)
		layerWantErr(t, err, cuda.ErrInvalidValue, "ids is a nil")
	})
}

// ropeRef is RoPE in float64 of x [b, seq, heads, dim] (or heads first).
func ropeRef(x []float64, shape []int, offset int, base float64, rot int, headsFirst bool) []float64 {
	y := append([]float64(nil), x...)
	seq, heads, dim := shape[1], shape[2], shape[3]
	if headsFirst {
		seq, heads = heads, seq
	}
	rows := len(x) / dim
	for r := range rows {
		s := (r / heads) % seq
		if headsFirst {
			s = r % seq
		}
		for i := range rot / 2 {
			a := float64(offset+s) * math.Pow(base, -float64(2*i)/float64(rot))
			x1, x2 := x[r*dim+i], x[r*dim+i+rot/2]
			y[r*dim+i] = x1*math.Cos(a) - x2*math.Sin(a)
			y[r*dim+i+rot/2] = x2*math.Cos(a) + x1*math.Sin(a)
		}
	}
	return y
}

func TestRoPE(t *testing.T) {
	layerTypes(t, func(t *testing.T, typ string) {
		switch typ {
		case "float32":
			testRoPE[float32](t)
		case "float16":
			testRoPE[cuda.Float16](t)
		default:
			testRoPE[cuda.BFloat16](t)
		}
	})
}

func testRoPE[T nn.Float](t *testing.T) {
	s := layerStream(t)
	for _, c := range []struct {
		shape  []int
		offset int
		r      nn.Rotary
	}{
		{[]int{1, 1, 1, 2}, 0, nn.Rotary{}},
		{[]int{2, 7, 3, 64}, 0, nn.Rotary{}},
		{[]int{2, 5, 3, 64}, 17, nn.Rotary{HeadsFirst: true}},
		{[]int{1, 9, 2, 32}, 3, nn.Rotary{Dims: 8, Base: 500}},
		{[]int{3, 1, 4, 128}, 100, nn.Rotary{}},
	} {
		t.Run(fmt.Sprintf("%v/%d/%+v", c.shape, c.offset, c.r), func(t *testing.T) {
			n := c.shape[0] * c.shape[1] * c.shape[2] * c.shape[3]
			xv := layerRound[T](layerData(n, uint64(n), -2, 2))
			x := layerUp[T](t, s, xv, c.shape...)
			base := float64(c.r.Base)
			if base == 0 {
				base = 10000
			}
			rot := c.r.Dims
			if rot == 0 {
				rot = c.shape[3]
			}
			want := ropeRef(xv, c.shape, c.offset, base, rot, c.r.HeadsFirst)
			y := layerFree(t, must(nn.RoPE(x, c.offset, c.r))(t))
			tol := layerTol[T]() * 2
			layerClose(t, "y", layerDown(t, y), want, tol)
			if err := nn.RoPEInto(x, x, c.offset, c.r); err != nil {
				t.Fatal(err)
			}
			layerClose(t, "in place", layerDown(t, x), want, tol)
		})
	}
	t.Run("errors", func(t *testing.T) {
		x := layerUp[T](t, s, layerData(12, 1, -1, 1), 1, 2, 2, 3)
		_, err := nn.RoPE(x, 0, nn.Rotary{})
		layerWantErr(t, err, cuda.ErrInvalidValue, "RoPE", "must be even")
		x4 := must(x.Reshape(1, 3, 1, 4))(t)
		_, err = nn.RoPE(x4, 0, nn.Rotary{Dims: 6})
		layerWantErr(t, err, cuda.ErrInvalidValue, "r.Dims is 6")
		_, err = nn.RoPE(x4, -1, nn.Rotary{})
		layerWantErr(t, err, cuda.ErrInvalidValue, "offset is -1")
		_, err = nn.RoPE(must(x.Reshape(3, 4))(t), 0, nn.Rotary{})
		layerWantErr(t, err, cuda.ErrInvalidValue, "three axes or more")
	})
}

// TestRoPELongPositions: at the positions of long contexts the angle is
// still exact to float32's rounding (taken in float64: a float32 angle is
// off by position·2⁻²⁴ radians, 0.006 at 100,000), as the float64
// reference has it; in place too.
func TestRoPELongPositions(t *testing.T) {
	s := layerStream(t)
	shape := []int{1, 3, 2, 64}
	xv := layerData(3*2*64, 12, -2, 2)
	for _, offset := range []int{4093, 100000, 1 << 20, 1<<31 + 7} {
		t.Run(fmt.Sprint(offset), func(t *testing.T) {
			x := layerUp[float32](t, s, xv, shape...)
			want := ropeRef(layerRound[float32](xv), shape, offset, 10000, 64, false)
			layerClose(t, "y", layerDown(t, layerFree(t, must(nn.RoPE(x, offset, nn.Rotary{}))(t))), want, layerTol[float32]())
			if err := nn.RoPEInto(x, x, offset, nn.Rotary{}); err != nil {
				t.Fatal(err)
			}
			layerClose(t, "in place", layerDown(t, x), want, layerTol[float32]())
		})
	}
}

// dropoutKeep is the kernel's draw, in Go.
func dropoutKeep(seed, c uint64, p float32) bool {
	mix := func(z uint64) uint64 {
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		return z ^ z>>31
	}
	h := mix(mix(seed) + c*0x9e3779b97f4a7c15)
	if p == 1 {
		return false
	}
	return h>>32 >= uint64(float64(p)*(1<<32))
}

func TestDropout(t *testing.T) {
	layerTypes(t, func(t *testing.T, typ string) {
		switch typ {
		case "float32":
			testDropout[float32](t)
		case "float16":
			testDropout[cuda.Float16](t)
		default:
			testDropout[cuda.BFloat16](t)
		}
	})
}

func testDropout[T nn.Float](t *testing.T) {
	s := layerStream(t)
	for _, c := range []struct {
		n      int
		p      float32
		seed   uint64
		offset uint64
	}{{1, 0.5, 1, 0}, {1000, 0.1, 42, 0}, {4097, 0.5, 42, 1000}, {33, 0, 7, 0}, {33, 1, 7, 0}} {
		t.Run(fmt.Sprintf("%d/%v/%d/%d", c.n, c.p, c.seed, c.offset), func(t *testing.T) {
			xv := layerRound[T](layerData(c.n, 3, 0.5, 2))
			x := layerUp[T](t, s, xv, c.n)
			want := make([]float64, c.n)
			kept := 0
			for i := range want {
				if dropoutKeep(c.seed, c.offset+uint64(i), c.p) {
					want[i] = xv[i] / (1 - float64(c.p))
					kept++
				}
			}
			y := layerFree(t, must(nn.Dropout(x, c.p, c.seed, c.offset))(t))
			layerClose(t, "y", layerDown(t, y), want, layerTol[T]())
			again := layerFree(t, must(nn.DropoutBackward(x, c.p, c.seed, c.offset))(t))
			layerClose(t, "backward", layerDown(t, again), want, layerTol[T]())
			m := layerFree(t, must(nn.DropoutMask(s, c.p, c.seed, c.offset, c.n))(t))
			mv := must(m.ToSlice())(t)
			for i := range mv {
				if (mv[i] == 1) != (want[i] != 0) {
					t.Fatalf("mask[%d] = %v, want kept %v", i, mv[i], want[i] != 0)
				}
			}
			if c.n >= 1000 {
				frac := 1 - float64(kept)/float64(c.n)
				if math.Abs(frac-float64(c.p)) > 0.05 {
					t.Errorf("dropped %.3f, want about %v", frac, c.p)
				}
			}
		})
	}
	t.Run("errors", func(t *testing.T) {
		x := layerUp[T](t, s, layerData(3, 1, -1, 1), 3)
		_, err := nn.Dropout(x, 1.5, 1, 0)
		layerWantErr(t, err, cuda.ErrInvalidValue, "Dropout", "p is 1.5")
		_, err = nn.DropoutMask(nil, 0.5, 1, 0, 3)
		layerWantErr(t, err, cuda.ErrInvalidValue, "DropoutMask")
	})
}

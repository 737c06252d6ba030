package nn_test

import (
	"fmt"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// softmaxRef is the masked softmax in float64 of x [b, q, k].
func softmaxRef(x []float64, b, q, k int, scale float64, causal bool, lengths []int32) []float64 {
	y := make([]float64, len(x))
	for r := range b * q {
		keep := k
		if causal {
			keep = min(keep, max(0, r%q+k-q+1))
		}
		if lengths != nil {
			keep = min(keep, max(0, int(lengths[r/q])))
		}
		row := x[r*k : (r+1)*k]
		m := math.Inf(-1)
		for _, v := range row[:keep] {
			m = max(m, v*scale)
		}
		s := 0.0
		for _, v := range row[:keep] {
			s += math.Exp(v*scale - m)
		}
		for j := range keep {
			y[r*k+j] = math.Exp(row[j]*scale-m) / s
		}
	}
	return y
}

func TestSoftmax(t *testing.T) {
	layerTypes(t, func(t *testing.T, typ string) {
		switch typ {
		case "float32":
			testSoftmax[float32](t)
		case "float16":
			testSoftmax[cuda.Float16](t)
		default:
			testSoftmax[cuda.BFloat16](t)
		}
	})
}

func testSoftmax[T nn.Float](t *testing.T) {
	s := layerStream(t)
	for _, sz := range []struct{ b, q, k int }{{1, 1, 1}, {2, 3, 7}, {1, 5, 33}, {2, 4, 1000}, {1, 2, 4097}, {1, 3, 2048}, {3, 33, 33}, {2, 3, 5}} {
		for _, m := range []string{"none", "causal", "lengths", "both"} {
			t.Run(fmt.Sprintf("%dx%dx%d/%s", sz.b, sz.q, sz.k, m), func(t *testing.T) {
				n := sz.b * sz.q * sz.k
				xv := layerRound[T](layerData(n, uint64(n), -4, 4))
				x := layerUp[T](t, s, xv, sz.b, sz.q, sz.k)
				var mask nn.Mask
				var lengths []int32
				mask.Causal = m == "causal" || m == "both"
				if m == "lengths" || m == "both" {
					for i := range sz.b {
						lengths = append(lengths, int32((i*5+sz.k)%(sz.k+1))) // 0 for some: a row all masked
					}
					mask.Lengths = layerFree(t, must(nd.FromSlice(s, lengths, sz.b))(t))
				}
				const scale = 0.7
				y := layerFree(t, must(nn.Softmax(x, scale, mask))(t))
				want := softmaxRef(xv, sz.b, sz.q, sz.k, scale, mask.Causal, lengths)
				layerClose(t, "y", layerDown(t, y), want, layerTol[T]())
				if err := nn.SoftmaxInto(x, x, scale, mask); err != nil {
					t.Fatal(err)
				}
				layerClose(t, "in place", layerDown(t, x), want, layerTol[T]())
			})
		}
	}
}

func TestSoftmaxErrors(t *testing.T) {
	s := layerStream(t)
	x := layerUp[float32](t, s, layerData(12, 1, -1, 1), 2, 6)
	_, err := nn.Softmax(x, float32(math.NaN()), nn.Mask{})
	layerWantErr(t, err, cuda.ErrInvalidValue, "Softmax", "scale")
	_, err = nn.Softmax(must(x.Reshape(12))(t), 1, nn.Mask{Causal: true})
	layerWantErr(t, err, cuda.ErrInvalidValue, "causal mask needs x of two axes")
	l := layerFree(t, must(nd.FromSlice(s, []int32{1, 2, 3}, 3))(t))
	_, err = nn.Softmax(x, 1, nn.Mask{Lengths: l})
	layerWantErr(t, err, cuda.ErrInvalidValue, "mask.Lengths has shape [3], want [2]")
	_, err = nn.Softmax(x.T(), 1, nn.Mask{})
	layerWantErr(t, err, cuda.ErrInvalidValue, "not contiguous")
}

// crossEntropyRef is the mean loss and its gradient in float64.
func crossEntropyRef(x []float64, targets []int64, n, v int, ignore int64) (float64, []float64) {
	loss, count := 0.0, 0
	lse := make([]float64, n)
	for r := range n {
		row := x[r*v : (r+1)*v]
		m := math.Inf(-1)
		for _, e := range row {
			m = max(m, e)
		}
		s := 0.0
		for _, e := range row {
			s += math.Exp(e - m)
		}
		lse[r] = m + math.Log(s)
		if targets[r] != ignore {
			loss += lse[r] - row[targets[r]]
			count++
		}
	}
	grad := make([]float64, len(x))
	for r := range n {
		if targets[r] == ignore {
			continue
		}
		for j := range v {
			g := math.Exp(x[r*v+j] - lse[r])
			if int64(j) == targets[r] {
				g--
			}
			grad[r*v+j] = g / float64(count)
		}
	}
	return loss / float64(count), grad
}

func TestCrossEntropy(t *testing.T) {
	layerTypes(t, func(t *testing.T, typ string) {
		switch typ {
		case "float32":
			testCrossEntropy[float32](t)
		case "float16":
			testCrossEntropy[cuda.Float16](t)
		default:
			testCrossEntropy[cuda.BFloat16](t)
		}
	})
}

func testCrossEntropy[T nn.Float](t *testing.T) {
	s := layerStream(t)
	for _, sz := range []struct{ n, v int }{{1, 1}, {3, 7}, {5, 33}, {2, 1000}, {3, 4097}, {70, 50}} {
		t.Run(fmt.Sprintf("%dx%d", sz.n, sz.v), func(t *testing.T) {
			xv := layerRound[T](layerData(sz.n*sz.v, uint64(sz.v), -5, 5))
			x := layerUp[T](t, s, xv, sz.n, sz.v)
			tv := make([]int64, sz.n)
			for i := range tv {
				tv[i] = int64((i * 7919) % sz.v)
				if i%4 == 3 {
					tv[i] = -100
				}
			}
			t64 := layerFree(t, must(nd.FromSlice(s, tv, sz.n))(t))
			t32v := make([]int32, sz.n)
			for i := range tv {
				t32v[i] = int32(tv[i])
			}
			t32 := layerFree(t, must(nd.FromSlice(s, t32v, sz.n))(t))
			want, wantGrad := crossEntropyRef(xv, tv, sz.n, sz.v, -100)
			l64 := layerFree(t, must(nn.CrossEntropy(x, t64, -100))(t))
			l32 := layerFree(t, must(nn.CrossEntropy(x, t32, -100))(t))
			for _, l := range []*nd.Array[float32]{l64, l32} {
				got := must(l.Item())(t)
				layerClose(t, "loss", []float64{float64(got)}, []float64{want}, 1e-5)
			}
			g := layerFree(t, must(nn.CrossEntropyBackward(x, t32, -100, 2))(t))
			for i := range wantGrad {
				wantGrad[i] *= 2
			}
			layerClose(t, "grad", layerDown(t, g), wantGrad, layerTol[T]())
		})
	}
	t.Run("all ignored", func(t *testing.T) {
		x := layerUp[T](t, s, layerData(6, 1, -1, 1), 2, 3)
		tg := layerFree(t, must(nd.FromSlice(s, []int32{-1, -1}, 2))(t))
		l := layerFree(t, must(nn.CrossEntropy(x, tg, -1))(t))
		if v := must(l.Item())(t); !math.IsNaN(float64(v)) {
			t.Errorf("loss %v, want NaN", v)
		}
	})
}

// TestCrossEntropyFiniteDifferences holds the backward to the forward.
func TestCrossEntropyFiniteDifferences(t *testing.T) {
	s := layerStream(t)
	const n, v = 3, 5
	xv := layerData(n*v, 4, -2, 2)
	tv := []int64{1, -100, 4}
	x := layerUp[float32](t, s, xv, n, v)
	tg := layerFree(t, must(nd.FromSlice(s, tv, n))(t))
	g := layerDown(t, layerFree(t, must(nn.CrossEntropyBackward(x, tg, -100, 1))(t)))
	for i := range xv {
		const h = 1e-6
		p, m := append([]float64(nil), xv...), append([]float64(nil), xv...)
		p[i] += h
		m[i] -= h
		lp, _ := crossEntropyRef(p, tv, n, v, -100)
		lm, _ := crossEntropyRef(m, tv, n, v, -100)
		layerClose(t, fmt.Sprint("grad ", i), []float64{g[i]}, []float64{(lp - lm) / (2 * h)}, 1e-4)
	}
}

func TestCrossEntropyErrors(t *testing.T) {
	s := layerStream(t)
	x := layerUp[float32](t, s, layerData(12, 1, -1, 1), 2, 6)
	tg := layerFree(t, must(nd.FromSlice(s, []int32{1, 2, 3}, 3))(t))
	_, err := nn.CrossEntropy(x, tg, -100)
	layerWantErr(t, err, cuda.ErrInvalidValue, "CrossEntropy", "targets has shape [3], want [2]")
	_, err = nn.CrossEntropy[float32, int32](x, nil, -100)
	layerWantErr(t, err, cuda.ErrInvalidValue, "targets is a nil")
	_, err = nn.CrossEntropyBackward(must(x.Reshape(12))(t), tg, -100, 1)
	layerWantErr(t, err, cuda.ErrInvalidValue, "CrossEntropyBackward", "want [N, V]")
}

// TestCrossEntropyBadTargets: a target out of [0, V) that is not the
// ignore index makes the loss NaN and its row of the gradient NaN (not a
// softmax that looks like a gradient), the other rows' gradients as the
// reference's over the count of rows not ignored (the bad ones with them,
// as in the loss's mean); every row ignored gives a zero gradient. Rows of a warp and of a block.
func TestCrossEntropyBadTargets(t *testing.T) {
	s := layerStream(t)
	for _, tc := range []struct {
		name    string
		v       int
		targets []int64
	}{
		{"negative", 5, []int64{1, -3, 4}},
		{"V", 7, []int64{7, 0, -100}},
		{"past V, wide rows", 1500, []int64{3, 1499, 100000}},
		{"every row ignored", 3, []int64{-100, -100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(tc.targets)
			xv := layerData(n*tc.v, 9, -2, 2)
			x := layerUp[float32](t, s, xv, n, tc.v)
			tg := layerFree(t, must(nd.FromSlice(s, tc.targets, n))(t))
			g := layerDown(t, layerFree(t, must(nn.CrossEntropyBackward(x, tg, -100, 1))(t)))
			// the reference over the good rows, the bad ones ignored
			good := append([]int64(nil), tc.targets...)
			bad := false
			for i, c := range good {
				if c != -100 && (c < 0 || c >= int64(tc.v)) {
					good[i], bad = -100, true
				}
			}
			_, want := crossEntropyRef(xv, good, n, tc.v, -100)
			counted, kept := 0.0, 0.0 // the mean's count has the bad rows
			for i, c := range tc.targets {
				if c != -100 {
					counted++
				}
				if good[i] != -100 {
					kept++
				}
			}
			for i := range want {
				if counted > 0 {
					want[i] *= kept / counted
				}
			}
			loss := must(layerFree(t, must(nn.CrossEntropy(x, tg, -100))(t)).Item())(t)
			if math.IsNaN(float64(loss)) != (bad || counted == 0) {
				t.Errorf("loss %v", loss)
			}
			for r, c := range tc.targets {
				row := g[r*tc.v : (r+1)*tc.v]
				if good[r] != c { // out of range
					for j, e := range row {
						if !math.IsNaN(e) {
							t.Fatalf("row %d (target %d): gradient[%d] = %v, want NaN", r, c, j, e)
						}
					}
					continue
				}
				layerClose(t, fmt.Sprint("row ", r), row, want[r*tc.v:(r+1)*tc.v], 1e-5)
			}
		})
	}
}

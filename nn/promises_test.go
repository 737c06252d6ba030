package nn_test

import (
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// The docs' promises at their edges, as an outside reader takes them:
// odd sizes, empty axes, masks that hide everything, caches past their
// capacity, freed and closed objects.

// promiseAllNaN fails t unless every element of got is NaN.
func promiseAllNaN(t *testing.T, what string, got []float64) {
	t.Helper()
	for i, g := range got {
		if !math.IsNaN(g) {
			t.Fatalf("%s[%d] = %v, want NaN", what, i, g)
		}
	}
}

// TestPromiseAttentionOddHeads: D may be any size up to 256, odd ones
// included, causal with fewer queries than keys (a decoding step sees
// every key up to its own position) and with more (the first queries see
// none: zeros).
func TestPromiseAttentionOddHeads(t *testing.T) {
	s := layerStream(t)
	for i, c := range []attnShape{
		{1, 1, 1, 1, 1, 1, false},
		{1, 2, 1, 3, 5, 3, true},
		{2, 3, 3, 1, 9, 97, true},
		{1, 2, 2, 6, 2, 5, true},
		{1, 4, 2, 2, 11, 12, true},
	} {
		t.Run(c.String(), func(t *testing.T) {
			t.Run("float32", func(t *testing.T) { attnCheck[float32](t, s, c, uint64(2*i)) })
			t.Run("bfloat16", func(t *testing.T) { attnCheck[cuda.BFloat16](t, s, c, uint64(2*i+1)) })
		})
	}
}

// TestPromiseAttentionEmpty: no queries gives an empty result; no keys
// gives each query an output of zeros (the sum of no values), as a causal
// query that sees no key.
func TestPromiseAttentionEmpty(t *testing.T) {
	t.Run("float32", testPromiseAttentionEmpty[float32])
	t.Run("bfloat16", testPromiseAttentionEmpty[cuda.BFloat16])
}

func testPromiseAttentionEmpty[T nn.Float](t *testing.T) {
	s := layerStream(t)
	for _, c := range []struct {
		name            string
		B, H, Sq, Sk, D int
		causal          bool
	}{
		{"no queries", 1, 2, 0, 4, 8, false},
		{"no batch", 0, 2, 3, 4, 8, false},
		{"no keys", 1, 2, 3, 0, 8, false},
		{"no keys causal", 1, 2, 3, 0, 8, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := layerUp[T](t, s, layerData(c.B*c.H*c.Sq*c.D, 1, -1, 1), c.B, c.H, c.Sq, c.D)
			k := layerUp[T](t, s, layerData(c.B*c.H*c.Sk*c.D, 2, -1, 1), c.B, c.H, c.Sk, c.D)
			out := layerFree(t, must(nn.Attention(q, k, k, nn.AttentionOptions{Causal: c.causal}))(t))
			got := layerDown(t, out)
			if len(got) != c.B*c.H*c.Sq*c.D {
				t.Fatalf("%d elements, want %d", len(got), c.B*c.H*c.Sq*c.D)
			}
			layerClose(t, "out", got, make([]float64, len(got)), 0)
		})
	}
}

// TestPromiseAttentionShapeErrors: shapes that do not agree are
// ErrInvalidValue errors that name the shapes.
func TestPromiseAttentionShapeErrors(t *testing.T) {
	s := layerStream(t)
	z := func(shape ...int) *nd.Array[float32] { return layerFree(t, must(nd.Zeros[float32](s, shape...))(t)) }
	for _, c := range []struct {
		name    string
		q, k, v *nd.Array[float32]
		words   []string
	}{
		{"D", z(1, 2, 3, 8), z(1, 2, 4, 4), z(1, 2, 4, 4), []string{"[1 2 3 8]", "[1 2 4 4]"}},
		{"batch", z(1, 2, 3, 8), z(2, 2, 4, 8), z(2, 2, 4, 8), []string{"[1 2 3 8]", "[2 2 4 8]"}},
		{"v", z(1, 2, 3, 8), z(1, 2, 4, 8), z(1, 2, 5, 8), []string{"[1 2 4 8]", "[1 2 5 8]"}},
		{"groups", z(1, 3, 3, 8), z(1, 2, 4, 8), z(1, 2, 4, 8), []string{"3", "2", "divide"}},
		{"3-d", z(2, 3, 8), z(1, 2, 4, 8), z(1, 2, 4, 8), []string{"[2 3 8]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := nn.Attention(c.q, c.k, c.v, nn.AttentionOptions{})
			if out != nil {
				t.Errorf("result %v with the error", out)
			}
			layerWantErr(t, err, cuda.ErrInvalidValue, c.words...)
		})
	}
}

// TestPromiseKVCache: the cache's length after appends, an append past
// MaxLen refused with the cache unchanged, attention over an empty cache,
// Free twice, and every call after Free an error.
func TestPromiseKVCache(t *testing.T) {
	s := layerStream(t)
	const B, H, Hkv, D, max = 1, 2, 1, 5, 4
	c := must(nn.NewKVCache[float32](s, B, Hkv, max, D))(t)
	kv := func(n int, seed uint64) *nd.Array[float32] {
		return layerUp[float32](t, s, layerData(B*Hkv*n*D, seed, -1, 1), B, Hkv, n, D)
	}
	q := layerUp[float32](t, s, layerData(B*H*1*D, 9, -1, 1), B, H, 1, D)

	// Attention over no positions: zeros, as attention over no keys.
	out := layerFree(t, must(c.Attention(q, nn.AttentionOptions{}))(t))
	layerClose(t, "empty cache", layerDown(t, out), make([]float64, B*H*D), 0)

	k3, v3 := kv(3, 1), kv(3, 2)
	if err := c.Append(k3, v3); err != nil {
		t.Fatal(err)
	}
	layerWantErr(t, c.Append(k3, v3), cuda.ErrInvalidValue, "MaxLen")
	if n, err := c.Len(); n != 3 || err != nil {
		t.Fatalf("Len after a refused Append = %d, %v; want 3", n, err)
	}
	// The query is the last position's: it sees all 3 keys, causal or not.
	kh, vh, qh := layerDown(t, k3), layerDown(t, v3), layerDown(t, q)
	want := attnRef(attnShape{B, H, Hkv, 1, 3, D, true}, qh, kh, vh, 1/math.Sqrt(D))
	out = layerFree(t, must(c.Attention(q, nn.AttentionOptions{Causal: true}))(t))
	layerClose(t, "causal decode", layerDown(t, out), want, 3e-5)

	// Causal, 2 queries over 1 position: the first sees no key (zeros),
	// the second the one.
	c1 := must(nn.NewKVCache[float32](s, B, Hkv, max, D))(t)
	defer c1.Free()
	k1, v1 := kv(1, 5), kv(1, 6)
	if err := c1.Append(k1, v1); err != nil {
		t.Fatal(err)
	}
	q2h := layerData(B*H*2*D, 10, -1, 1)
	q2 := layerUp[float32](t, s, q2h, B, H, 2, D)
	want = attnRef(attnShape{B, H, Hkv, 2, 1, D, true}, q2h, layerDown(t, k1), layerDown(t, v1), 1/math.Sqrt(D))
	out = layerFree(t, must(c1.Attention(q2, nn.AttentionOptions{Causal: true}))(t))
	layerClose(t, "causal, more queries than positions", layerDown(t, out), want, 3e-5)

	// Wrong shapes name what was wanted.
	layerWantErr(t, c.Append(kv(1, 3), layerFree(t, must(nd.Zeros[float32](s, B, Hkv, 1, D+1))(t))), cuda.ErrInvalidValue, "[1 1 1 6]")
	layerWantErr(t, zeroErr(c.Attention(layerFree(t, must(nd.Zeros[float32](s, B, H, 1, D+1))(t)), nn.AttentionOptions{})), cuda.ErrInvalidValue, "[1 2 1 6]")

	if err := c.Free(); err != nil {
		t.Fatal(err)
	}
	if err := c.Free(); err != nil {
		t.Fatalf("second Free: %v", err)
	}
	one, none := kv(1, 4), kv(0, 4)
	for name, err := range map[string]error{
		"Append":            c.Append(one, one),
		"Append of none":    c.Append(none, none),
		"Attention of none": zeroErr(c.Attention(layerFree(t, must(nd.Zeros[float32](s, B, H, 0, D))(t)), nn.AttentionOptions{})),
		"Attention":         zeroErr(c.Attention(q, nn.AttentionOptions{})),
		"Reset":             c.Reset(),
		"Len":               zeroErr(c.Len()),
	} {
		t.Run(name, func(t *testing.T) { layerWantErr(t, err, cuda.ErrClosed) })
	}
	var zero nn.KVCache[float32]
	if err := zero.Free(); err != nil {
		t.Errorf("Free of the zero cache: %v", err)
	}
	layerWantErr(t, zero.Append(one, one), cuda.ErrInvalidValue)
	layerWantErr(t, zeroErr(zero.Len()), cuda.ErrInvalidValue)
}

// TestPromiseSoftmaxEdges: odd widths, a row every column of which is
// masked (zeros, not NaN), lengths of 0 and past the row, and more queries
// than keys under the causal mask.
func TestPromiseSoftmaxEdges(t *testing.T) {
	s := layerStream(t)
	for _, c := range []struct {
		name    string
		b, q, k int
		causal  bool
		lengths []int32
	}{
		{"width 1", 2, 3, 1, false, nil},
		{"width 97", 1, 2, 97, false, []int32{50}},
		{"causal q > k", 1, 5, 3, true, nil},
		{"length 0", 2, 2, 3, false, []int32{0, 3}},
		{"length past the row", 2, 2, 3, true, []int32{7, -1}},
		{"no batch", 0, 2, 3, true, []int32{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			xh := layerData(c.b*c.q*c.k, 5, -3, 3)
			x := layerUp[float32](t, s, xh, c.b, c.q, c.k)
			mask := nn.Mask{Causal: c.causal}
			if c.lengths != nil {
				mask.Lengths = layerFree(t, must(nd.FromSlice(s, c.lengths, len(c.lengths)))(t))
			}
			y := layerFree(t, must(nn.Softmax(x, 0.5, mask))(t))
			layerClose(t, "y", layerDown(t, y), softmaxRef(xh, c.b, c.q, c.k, 0.5, c.causal, c.lengths), 2e-5)
		})
	}
}

// TestPromiseCrossEntropyEdges: ignored rows leave the mean and the
// gradient, ignore may be a class (PyTorch's ignore_index is any int), a
// target out of range makes the loss and its row's gradient NaN, every
// row ignored and no rows at all give NaN, and a class count of 1.
func TestPromiseCrossEntropyEdges(t *testing.T) {
	s := layerStream(t)
	for _, c := range []struct {
		name    string
		n, v    int
		targets []int64
		ignore  int64
		nan     bool
	}{
		{"one class", 3, 1, []int64{0, 0, 0}, -100, false},
		{"ignore a class", 4, 97, []int64{3, 0, 96, 3}, 3, false},
		{"ignore -1", 3, 5, []int64{-1, 4, 0}, -1, false},
		{"all ignored", 2, 5, []int64{-100, -100}, -100, true},
		{"out of range", 2, 5, []int64{1, 5}, -100, true},
		{"negative", 2, 5, []int64{-2, 1}, -100, true},
		{"no rows", 0, 5, []int64{}, -100, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			xh := layerData(c.n*c.v, 7, -4, 4)
			x := layerUp[float32](t, s, xh, c.n, c.v)
			tg := layerFree(t, must(nd.FromSlice(s, c.targets, c.n))(t))
			loss := layerFree(t, must(nn.CrossEntropy(x, tg, int(c.ignore)))(t))
			got := layerFrom(must(loss.ToSlice())(t))
			if len(got) != 1 || len(loss.Shape()) != 0 {
				t.Fatalf("loss of shape %v", loss.Shape())
			}
			dx := layerFree(t, must(nn.CrossEntropyBackward(x, tg, int(c.ignore), 2))(t))
			dxh := layerDown(t, dx)
			if c.nan {
				if !math.IsNaN(got[0]) {
					t.Errorf("loss %v, want NaN", got[0])
				}
				for r, tr := range c.targets {
					if tr != c.ignore && (tr < 0 || tr >= int64(c.v)) {
						promiseAllNaN(t, "dx row", dxh[r*c.v:(r+1)*c.v])
					}
				}
				return
			}
			want, wantDx := crossEntropyRef(xh, c.targets, c.n, c.v, c.ignore)
			layerClose(t, "loss", got, []float64{want}, 2e-5)
			for i := range wantDx {
				wantDx[i] *= 2
			}
			layerClose(t, "dx", dxh, wantDx, 2e-5)
		})
	}
	x := layerUp[float32](t, s, layerData(6, 1, -1, 1), 2, 3)
	layerWantErr(t, zeroErr(nn.CrossEntropy(x, layerFree(t, must(nd.Zeros[int32](s, 3))(t)), -100)), cuda.ErrInvalidValue, "[3]", "[2]")
	layerWantErr(t, zeroErr(nn.CrossEntropy(layerUp[float32](t, s, layerData(6, 1, -1, 1), 6), layerFree(t, must(nd.Zeros[int32](s, 6))(t)), -100)), cuda.ErrInvalidValue, "[6]")
}

// TestPromiseDropoutEdges: p = 0 is the identity, p = 1 zeroes every
// element (even an infinite one), the same seed and offset give the same
// mask, DropoutMask shows the mask Dropout drew, DropoutBackward draws it
// again, and p outside [0, 1] is an error.
func TestPromiseDropoutEdges(t *testing.T) {
	s := layerStream(t)
	xh := layerRound[float32](layerData(97, 3, 0.5, 2))
	xh[5] = math.Inf(1)
	x := layerUp[float32](t, s, xh, 97)
	t.Run("p=0", func(t *testing.T) {
		for i, g := range layerDown(t, layerFree(t, must(nn.Dropout(x, 0, 1, 0))(t))) {
			if g != xh[i] {
				t.Fatalf("y[%d] = %v, want %v", i, g, xh[i])
			}
		}
	})
	t.Run("p=1", func(t *testing.T) {
		layerClose(t, "y", layerDown(t, layerFree(t, must(nn.Dropout(x, 1, 1, 0))(t))), make([]float64, 97), 0)
	})
	t.Run("mask", func(t *testing.T) {
		const p = 0.3
		y1 := layerDown(t, layerFree(t, must(nn.Dropout(x, p, 42, 7))(t)))
		y2 := layerDown(t, layerFree(t, must(nn.Dropout(x, p, 42, 7))(t)))
		m := must(layerFree(t, must(nn.DropoutMask(s, p, 42, 7, 97))(t)).ToSlice())(t)
		dx := layerDown(t, layerFree(t, must(nn.DropoutBackward(x, p, 42, 7))(t)))
		kept := 0
		for i := range y1 {
			want := 0.0
			if m[i] != 0 {
				want = float64(float32(xh[i]) * (1 / (1 - float32(p))))
				kept++
			}
			if y1[i] != y2[i] || y1[i] != want || dx[i] != want {
				t.Fatalf("element %d: %v, %v, backward %v; want %v (mask %v)", i, y1[i], y2[i], dx[i], want, m[i])
			}
		}
		if kept == 0 || kept == 97 {
			t.Errorf("%d of 97 kept at p = %v", kept, p)
		}
	})
	for _, p := range []float32{-0.1, 1.5, float32(math.NaN())} {
		layerWantErr(t, zeroErr(nn.Dropout(x, p, 1, 0)), cuda.ErrInvalidValue, "p")
		layerWantErr(t, zeroErr(nn.DropoutMask(s, p, 1, 0, 3)), cuda.ErrInvalidValue, "p")
	}
}

// TestPromiseNormEdges: a row of one element, odd widths, no rows, eps 0,
// in place, and the errors of mismatched shapes.
func TestPromiseNormEdges(t *testing.T) {
	s := layerStream(t)
	for _, c := range []struct {
		rows, cols int
		eps        float32
	}{{3, 1, 1e-5}, {2, 3, 0}, {4, 97, 1e-5}, {0, 5, 1e-5}, {1, 1, 0.5}} {
		for _, rms := range []bool{false, true} {
			name := "LayerNorm"
			if rms {
				name = "RMSNorm"
			}
			t.Run(name, func(t *testing.T) {
				xh := layerData(c.rows*c.cols, 11, -2, 2)
				wh, bh := layerData(c.cols, 12, 0.5, 1.5), layerData(c.cols, 13, -1, 1)
				x := layerUp[float32](t, s, xh, c.rows, c.cols)
				w := layerUp[float32](t, s, wh, c.cols)
				b := layerUp[float32](t, s, bh, c.cols)
				var y *nd.Array[float32]
				if rms {
					bh = nil
					y = layerFree(t, must(nn.RMSNorm(x, w, c.eps))(t))
				} else {
					y = layerFree(t, must(nn.LayerNorm(x, w, b, c.eps))(t))
				}
				want := normRef(rms, xh, wh, bh, c.rows, c.cols, float64(c.eps))
				if c.cols == 1 && c.eps == 0 && !rms {
					return // 0/0: NaN, as PyTorch's
				}
				layerClose(t, "y", layerDown(t, y), want, 1e-4)
				dyh := layerData(c.rows*c.cols, 14, -1, 1)
				dy := layerUp[float32](t, s, dyh, c.rows, c.cols)
				wantDx, wantDw, wantDb := normBackRef(rms, dyh, xh, wh, c.rows, c.cols, float64(c.eps))
				var dx, dw, db *nd.Array[float32]
				if rms {
					dx, dw = must2(nn.RMSNormBackward(dy, x, w, c.eps))(t)
				} else {
					var err error
					if dx, dw, db, err = nn.LayerNormBackward(dy, x, w, b, c.eps); err != nil {
						t.Fatal(err)
					}
					layerClose(t, "dbias", layerDown(t, layerFree(t, db)), wantDb, 1e-4)
				}
				// dx of a row of one is 0 (its normalised value is
				// constant): compared absolutely, as cancellation leaves
				// rounding there
				layerClose(t, "dx", layerDown(t, layerFree(t, dx)), wantDx, 1e-3)
				layerClose(t, "dweight", layerDown(t, layerFree(t, dw)), wantDw, 1e-4)
				// in place
				if rms {
					must(0, nn.RMSNormInto(x, x, w, c.eps))(t)
				} else {
					must(0, nn.LayerNormInto(x, x, w, b, c.eps))(t)
				}
				layerClose(t, "in place", layerDown(t, x), want, 1e-4)
			})
		}
	}
	x := layerUp[float32](t, s, layerData(6, 1, -1, 1), 2, 3)
	w := layerUp[float32](t, s, layerData(4, 1, -1, 1), 4)
	layerWantErr(t, zeroErr(nn.LayerNorm(x, w, nil, 1e-5)), cuda.ErrInvalidValue, "[4]", "[3]")
	dst := layerUp[float32](t, s, layerData(6, 1, -1, 1), 3, 2)
	layerWantErr(t, nn.RMSNormInto(dst, x, nil, 1e-5), cuda.ErrInvalidValue, "[3 2]", "[2 3]")
	for _, eps := range []float32{-1, float32(math.NaN())} {
		layerWantErr(t, zeroErr(nn.LayerNorm(x, nil, nil, eps)), cuda.ErrInvalidValue, "eps")
	}
	// A slice that starts one element on, as the output of x: overlapping,
	// not the same memory, refused.
	flat := layerUp[float32](t, s, layerData(7, 1, -1, 1), 7)
	a := must(flat.Slice(0, 0, 6, 1))(t)
	b := must(flat.Slice(0, 1, 7, 1))(t)
	layerWantErr(t, nn.LayerNormInto(must(b.Reshape(2, 3))(t), must(a.Reshape(2, 3))(t), nil, nil, 1e-5), cuda.ErrInvalidValue, "overlaps")
}

// TestPromiseFreed: every layer given a freed array returns ErrClosed.
func TestPromiseFreed(t *testing.T) {
	s := layerStream(t)
	freed := must(nd.Zeros[float32](s, 2, 4))(t)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	live := layerUp[float32](t, s, layerData(8, 1, -1, 1), 2, 4)
	ids := layerFree(t, must(nd.Zeros[int32](s, 2))(t))
	for name, err := range map[string]error{
		"LayerNorm":         zeroErr(nn.LayerNorm(freed, nil, nil, 1e-5)),
		"LayerNorm w":       zeroErr(nn.LayerNorm(live, must(freed.Reshape(8))(t), nil, 1e-5)),
		"GELUInto dst":      nn.GELUInto(freed, live),
		"SwiGLU up":         zeroErr(nn.SwiGLU(live, freed)),
		"Softmax":           zeroErr(nn.Softmax(freed, 1, nn.Mask{})),
		"CrossEntropy":      zeroErr(nn.CrossEntropy(freed, ids, -100)),
		"Embedding":         zeroErr(nn.Embedding(freed, ids)),
		"Dropout":           zeroErr(nn.Dropout(freed, 0.5, 1, 0)),
		"RoPE":              zeroErr(nn.RoPE(must(freed.Reshape(2, 1, 4))(t), 0, nn.Rotary{})),
		"Attention":         zeroErr(nn.Attention(must(freed.Reshape(1, 1, 2, 4))(t), must(live.Reshape(1, 1, 2, 4))(t), must(live.Reshape(1, 1, 2, 4))(t), nn.AttentionOptions{})),
		"AttentionInto":     nn.AttentionInto(must(freed.Reshape(1, 1, 2, 4))(t), must(live.Reshape(1, 1, 2, 4))(t), must(live.Reshape(1, 1, 2, 4))(t), must(live.Reshape(1, 1, 2, 4))(t), nn.AttentionOptions{}),
		"LayerNormBackward": zeroErr3(nn.LayerNormBackward(live, freed, nil, nil, 1e-5)),
	} {
		t.Run(name, func(t *testing.T) { layerWantErr(t, err, cuda.ErrClosed) })
	}
}

func zeroErr3[A, B, C any](_ A, _ B, _ C, err error) error { return err }

// TestPromiseEmbeddingRoPEEdges: a row length of 1 and 3, ids out of range
// (zeros), no ids, RoPE of a head dimension of 2 and an odd one refused.
func TestPromiseEmbeddingRoPEEdges(t *testing.T) {
	s := layerStream(t)
	for _, d := range []int{1, 3, 97} {
		th := layerRound[float32](layerData(4*d, 2, -1, 1))
		table := layerUp[float32](t, s, th, 4, d)
		ids := layerFree(t, must(nd.FromSlice(s, []int64{3, -1, 4, 0, 1 << 40}, 5))(t))
		got := layerDown(t, layerFree(t, must(nn.Embedding(table, ids))(t)))
		want := make([]float64, 5*d)
		copy(want[0:d], th[3*d:4*d])
		copy(want[3*d:4*d], th[0:d])
		layerClose(t, "rows", got, want, 0)
		empty := layerFree(t, must(nd.Zeros[int32](s, 0, 2))(t))
		if sh := layerFree(t, must(nn.Embedding(table, empty))(t)).Shape(); len(sh) != 3 || sh[0] != 0 || sh[2] != d {
			t.Errorf("shape %v of no ids", sh)
		}
	}
	xh := layerData(3*2*2, 4, -1, 1)
	x := layerUp[float32](t, s, xh, 3, 2, 2)
	y := layerFree(t, must(nn.RoPE(x, 5, nn.Rotary{}))(t))
	layerClose(t, "rope", layerDown(t, y), ropeRef(xh, []int{1, 3, 2, 2}, 5, 10000, 2, false), 2e-5)
	odd := layerUp[float32](t, s, layerData(3, 4, -1, 1), 1, 1, 3)
	layerWantErr(t, zeroErr(nn.RoPE(odd, 0, nn.Rotary{})), cuda.ErrInvalidValue, "even")
	layerWantErr(t, zeroErr(nn.RoPE(x, -1, nn.Rotary{})), cuda.ErrInvalidValue, "offset")
	layerWantErr(t, zeroErr(nn.RoPE(x, 0, nn.Rotary{Dims: 4})), cuda.ErrInvalidValue, "Dims")
}

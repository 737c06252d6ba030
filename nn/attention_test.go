package nn_test

import (
	"fmt"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// attnShape is one attention's shape: q [B, H, Sq, D], k and v [B, Hkv,
// Sk, D].
type attnShape struct {
	B, H, Hkv, Sq, Sk, D int
	causal               bool
}

func (c attnShape) String() string {
	mask := ""
	if c.causal {
		mask = "-causal"
	}
	return fmt.Sprintf("B%dH%dkv%dq%dk%dD%d%s", c.B, c.H, c.Hkv, c.Sq, c.Sk, c.D, mask)
}

// attnRef is softmax(QK^T * scale) V in float64, naively: the whole score
// row of each query, the causal mask aligned to the end of the keys (a
// query that sees no key gives zeros).
func attnRef(c attnShape, q, k, v []float64, scale float64) []float64 {
	out := make([]float64, c.B*c.H*c.Sq*c.D)
	g := c.H / c.Hkv
	scores := make([]float64, c.Sk)
	for b := 0; b < c.B; b++ {
		for h := 0; h < c.H; h++ {
			hk := h / g
			for i := 0; i < c.Sq; i++ {
				lim := c.Sk
				if c.causal {
					lim = min(c.Sk, c.Sk-c.Sq+i+1)
				}
				qr := q[((b*c.H+h)*c.Sq+i)*c.D:][:c.D]
				o := out[((b*c.H+h)*c.Sq+i)*c.D:][:c.D]
				if lim <= 0 {
					continue
				}
				mx := math.Inf(-1)
				for j := 0; j < lim; j++ {
					kr := k[((b*c.Hkv+hk)*c.Sk+j)*c.D:][:c.D]
					s := 0.0
					for d := range qr {
						s += qr[d] * kr[d]
					}
					scores[j] = s * scale
					mx = math.Max(mx, scores[j])
				}
				sum := 0.0
				for j := 0; j < lim; j++ {
					scores[j] = math.Exp(scores[j] - mx)
					sum += scores[j]
				}
				for j := 0; j < lim; j++ {
					vr := v[((b*c.Hkv+hk)*c.Sk+j)*c.D:][:c.D]
					p := scores[j] / sum
					for d := range o {
						o[d] += p * vr[d]
					}
				}
			}
		}
	}
	return out
}

// attnTol is the tolerance of attention's result in T: the halves' own
// rounding of the output, and on the tensor cores the probabilities
// rounded to T before they multiply V.
func attnTol[T nn.Float]() float64 {
	switch any(*new(T)).(type) {
	case cuda.Float16:
		return 4e-3
	case cuda.BFloat16:
		return 2.5e-2
	}
	return 3e-5
}

// attnShapes are the shapes checked: odd lengths (1, 7, 65, 200), Sq
// below, at and above Sk, grouped and multi-query heads, each D the fast
// path takes and two it does not.
var attnShapes = []attnShape{
	{1, 2, 2, 1, 1, 32, true},
	{1, 2, 2, 7, 7, 64, true},
	{2, 4, 2, 65, 65, 64, true},
	{1, 2, 2, 65, 65, 128, false},
	{1, 4, 1, 7, 200, 32, false},
	{1, 2, 2, 65, 200, 128, true},
	{1, 2, 2, 1, 200, 64, true},
	{1, 1, 1, 70, 7, 64, true},
	{1, 3, 3, 33, 47, 80, false},
	{1, 2, 1, 17, 30, 96, true},
	{1, 1, 1, 9, 13, 40, true},
	{1, 1, 1, 5, 9, 256, false},
}

// attnPaths are the kernels checked for T: the portable one, alone and
// with the keys split among blocks (for few query rows), and for the
// halves the tensor-core one (which the fake runs with its instructions
// emulated).
func attnPaths[T nn.Float]() []string {
	if _, ok := any(*new(T)).(float32); ok {
		return []string{"scalar", "split"}
	}
	return []string{"scalar", "split", "tc"}
}

func TestAttention(t *testing.T) {
	t.Run("float32", testAttention[float32])
	t.Run("float16", testAttention[cuda.Float16])
	t.Run("bfloat16", testAttention[cuda.BFloat16])
}

func testAttention[T nn.Float](t *testing.T) {
	s := layerStream(t)
	for _, path := range attnPaths[T]() {
		t.Run(path, func(t *testing.T) {
			defer nn.SetAttnPath(path)()
			for i, c := range attnShapes {
				if path == "tc" && (c.D%16 != 0 || c.D > 128) || path == "split" && c.H/c.Hkv*c.Sq > 16 {
					continue
				}
				t.Run(c.String(), func(t *testing.T) {
					attnCheck[T](t, s, c, uint64(i))
				})
			}
		})
	}
}

// attnCheck runs Attention of random q, k, v of shape c against attnRef.
func attnCheck[T nn.Float](t *testing.T, s *cuda.Stream, c attnShape, seed uint64) {
	t.Helper()
	qh := layerRound[T](layerData(c.B*c.H*c.Sq*c.D, 3*seed+1, -1, 1))
	kh := layerRound[T](layerData(c.B*c.Hkv*c.Sk*c.D, 3*seed+2, -1, 1))
	vh := layerRound[T](layerData(c.B*c.Hkv*c.Sk*c.D, 3*seed+3, -1, 1))
	scale := 1 / math.Sqrt(float64(c.D))
	if seed%3 == 1 {
		scale = 0.3 // a scale of one's own
	}
	opts := nn.AttentionOptions{Causal: c.causal}
	if seed%3 == 1 {
		opts.Scale = scale
	}
	want := attnRef(c, qh, kh, vh, scale)
	q := layerUp[T](t, s, qh, c.B, c.H, c.Sq, c.D)
	k := layerUp[T](t, s, kh, c.B, c.Hkv, c.Sk, c.D)
	v := layerUp[T](t, s, vh, c.B, c.Hkv, c.Sk, c.D)
	out := layerFree(t, must(nn.Attention(q, k, v, opts))(t))
	if got := out.Shape(); len(got) != 4 || got[0] != c.B || got[1] != c.H || got[2] != c.Sq || got[3] != c.D {
		t.Fatalf("shape %v", got)
	}
	layerClose(t, "out", layerDown(t, out), want, attnTol[T]())
	if seed%2 == 0 {
		return
	}
	// The same in LayoutBSHD: [B, S, heads, D].
	opts.Layout = nn.LayoutBSHD
	q = layerUp[T](t, s, attnSwap(qh, c.B, c.H, c.Sq, c.D), c.B, c.Sq, c.H, c.D)
	k = layerUp[T](t, s, attnSwap(kh, c.B, c.Hkv, c.Sk, c.D), c.B, c.Sk, c.Hkv, c.D)
	v = layerUp[T](t, s, attnSwap(vh, c.B, c.Hkv, c.Sk, c.D), c.B, c.Sk, c.Hkv, c.D)
	out = layerFree(t, must(nn.Attention(q, k, v, opts))(t))
	if got := out.Shape(); len(got) != 4 || got[0] != c.B || got[1] != c.Sq || got[2] != c.H || got[3] != c.D {
		t.Fatalf("BSHD: shape %v", got)
	}
	layerClose(t, "out (BSHD)", attnSwap(layerDown(t, out), c.B, c.Sq, c.H, c.D), want, attnTol[T]())
}

// attnSwap returns x [B, n1, n2, D] as [B, n2, n1, D].
func attnSwap(x []float64, B, n1, n2, D int) []float64 {
	out := make([]float64, len(x))
	for b := 0; b < B; b++ {
		for i := 0; i < n1; i++ {
			for j := 0; j < n2; j++ {
				copy(out[((b*n2+j)*n1+i)*D:][:D], x[((b*n1+i)*n2+j)*D:][:D])
			}
		}
	}
	return out
}

func TestAttentionInto(t *testing.T) {
	s := layerStream(t)
	c := attnShape{2, 2, 2, 9, 9, 64, true}
	qh, kh, vh := layerData(2*2*9*64, 7, -1, 1), layerData(2*2*9*64, 8, -1, 1), layerData(2*2*9*64, 9, -1, 1)
	q := layerUp[float32](t, s, qh, 2, 2, 9, 64)
	k := layerUp[float32](t, s, kh, 2, 2, 9, 64)
	v := layerUp[float32](t, s, vh, 2, 2, 9, 64)
	out := layerFree(t, must(nd.Empty[float32](s, 2, 2, 9, 64))(t))
	if err := nn.AttentionInto(out, q, k, v, nn.AttentionOptions{Causal: true}); err != nil {
		t.Fatal(err)
	}
	layerClose(t, "out", layerDown(t, out), attnRef(c, layerRound[float32](qh), layerRound[float32](kh), layerRound[float32](vh), 1/8.0), attnTol[float32]())
}

// TestAttentionEmpty: empty batches, heads and queries give empty
// results; no key gives zeros.
func TestAttentionEmpty(t *testing.T) {
	s := layerStream(t)
	for _, c := range []attnShape{{0, 2, 2, 3, 3, 32, false}, {1, 0, 0, 3, 3, 32, false}, {1, 2, 2, 0, 3, 32, true}, {1, 2, 2, 3, 0, 32, false}} {
		t.Run(c.String(), func(t *testing.T) {
			q := layerFree(t, must(nd.Ones[float32](s, c.B, c.H, c.Sq, c.D))(t))
			k := layerFree(t, must(nd.Ones[float32](s, c.B, c.Hkv, c.Sk, c.D))(t))
			out := layerFree(t, must(nn.Attention(q, k, k, nn.AttentionOptions{Causal: c.causal}))(t))
			got := layerDown(t, out)
			if len(got) != c.B*c.H*c.Sq*c.D {
				t.Fatalf("%d elements", len(got))
			}
			for i, x := range got {
				if x != 0 {
					t.Fatalf("out[%d] = %v, want 0 (no key)", i, x)
				}
			}
		})
	}
}

func TestAttentionErrors(t *testing.T) {
	s := layerStream(t)
	ok := func(shape ...int) *nd.Array[float32] { return layerFree(t, must(nd.Zeros[float32](s, shape...))(t)) }
	q, k := ok(1, 4, 5, 32), ok(1, 2, 6, 32)
	freed := must(nd.Zeros[float32](s, 1, 4, 5, 32))(t)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	other := cudatest.Stream(t, s.Context())
	elsewhere := layerFree(t, must(nd.Zeros[float32](other, 1, 2, 6, 32))(t))
	for _, tc := range []struct {
		name     string
		q, k, v  *nd.Array[float32]
		opts     nn.AttentionOptions
		sentinel error
		words    []string
	}{
		{"nil q", nil, k, k, nn.AttentionOptions{}, cuda.ErrInvalidValue, []string{"Attention", "q is a nil"}},
		{"nil v", q, k, nil, nn.AttentionOptions{}, cuda.ErrInvalidValue, []string{"v is a nil"}},
		{"zero k", q, new(nd.Array[float32]), k, nn.AttentionOptions{}, cuda.ErrInvalidValue, []string{"operand k"}},
		{"freed q", freed, k, k, nn.AttentionOptions{}, cuda.ErrClosed, []string{"operand q"}},
		{"3-d", ok(4, 5, 32), k, k, nn.AttentionOptions{}, cuda.ErrInvalidValue, []string{"4 dimensions"}},
		{"D differs", q, ok(1, 2, 6, 64), ok(1, 2, 6, 64), nn.AttentionOptions{}, cuda.ErrInvalidValue, []string{"shapes"}},
		{"k and v differ", q, k, ok(1, 2, 7, 32), nn.AttentionOptions{}, cuda.ErrInvalidValue, []string{"shapes"}},
		{"batch differs", q, ok(2, 2, 6, 32), ok(2, 2, 6, 32), nn.AttentionOptions{}, cuda.ErrInvalidValue, []string{"shapes"}},
		{"heads", q, ok(1, 3, 6, 32), ok(1, 3, 6, 32), nn.AttentionOptions{}, cuda.ErrInvalidValue, []string{"Hkv must divide H"}},
		{"D 0", ok(1, 4, 5, 0), ok(1, 2, 6, 0), ok(1, 2, 6, 0), nn.AttentionOptions{}, cuda.ErrInvalidValue, []string{"D is 0"}},
		{"D 512", ok(1, 1, 1, 512), ok(1, 1, 1, 512), ok(1, 1, 1, 512), nn.AttentionOptions{}, cuda.ErrNotSupported, []string{"D = 512"}},
		{"NaN scale", q, k, k, nn.AttentionOptions{Scale: math.NaN()}, cuda.ErrInvalidValue, []string{"scale"}},
		{"scale past float32", q, k, k, nn.AttentionOptions{Scale: -1e300}, cuda.ErrInvalidValue, []string{"scale -1e+300", "float32"}},
		{"streams", q, elsewhere, elsewhere, nn.AttentionOptions{}, cuda.ErrInvalidValue, []string{"different streams"}},
		{"layout", q, k, k, nn.AttentionOptions{Layout: 2}, cuda.ErrInvalidValue, []string{"AttentionLayout(2)"}},
		{"BSHD shapes", q, ok(1, 2, 6, 64), ok(1, 2, 6, 64), nn.AttentionOptions{Layout: nn.LayoutBSHD}, cuda.ErrInvalidValue, []string{"[B, Sq, H, D]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := nn.Attention(tc.q, tc.k, tc.v, tc.opts)
			if out != nil {
				t.Errorf("a result beside the error")
			}
			layerWantErr(t, err, tc.sentinel, tc.words...)
		})
	}
	t.Run("Into", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			out   *nd.Array[float32]
			words string
		}{
			{"nil", nil, "out is a nil"},
			{"shape", ok(1, 4, 5, 16), "out has shape"},
			{"stream", layerFree(t, must(nd.Zeros[float32](other, 1, 4, 5, 32))(t)), "another stream"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				layerWantErr(t, nn.AttentionInto(tc.out, q, k, k, nn.AttentionOptions{}), cuda.ErrInvalidValue, tc.words)
			})
		}
	})
}

// attnSlice returns positions from..to-1 of a host array [B, Hs, S, D].
func attnSlice(x []float64, B, Hs, S, D, from, to int) []float64 {
	var out []float64
	for b := 0; b < B; b++ {
		for h := 0; h < Hs; h++ {
			base := ((b*Hs+h)*S + from) * D
			out = append(out, x[base:base+(to-from)*D]...)
		}
	}
	return out
}

func TestKVCache(t *testing.T) {
	for _, path := range []string{"", "split"} {
		for _, l := range []nn.AttentionLayout{nn.LayoutBHSD, nn.LayoutBSHD} {
			t.Run(fmt.Sprintf("float32/%s/%v", path, l), func(t *testing.T) {
				defer nn.SetAttnPath(path)()
				testKVCache[float32](t, l)
			})
			t.Run(fmt.Sprintf("bfloat16/%s/%v", path, l), func(t *testing.T) {
				defer nn.SetAttnPath(path)()
				testKVCache[cuda.BFloat16](t, l)
			})
		}
	}
}

// testKVCache fills a cache with a prompt, then decodes a position at a
// time, each step checked against the full causal attention of the
// positions so far.
func testKVCache[T nn.Float](t *testing.T, l nn.AttentionLayout) {
	s := layerStream(t)
	const B, H, Hkv, D, max, prompt, total = 2, 4, 2, 64, 24, 13, 17
	full := attnShape{B, H, Hkv, total, total, D, true}
	qh := layerRound[T](layerData(B*H*total*D, 21, -1, 1))
	kh := layerRound[T](layerData(B*Hkv*total*D, 22, -1, 1))
	vh := layerRound[T](layerData(B*Hkv*total*D, 23, -1, 1))
	want := attnRef(full, qh, kh, vh, 1/8.0)
	c := must(nn.NewKVCache[T](s, B, Hkv, max, D))(t)
	t.Cleanup(func() { c.Free() })
	if c.MaxLen() != max || c.Stream() != s || c.K().Shape()[2] != max || c.V().Shape()[3] != D {
		t.Fatalf("MaxLen %d, K %v, V %v", c.MaxLen(), c.K().Shape(), c.V().Shape())
	}
	opts := nn.AttentionOptions{Causal: true, Layout: l}
	up := func(x []float64, heads, n int) *nd.Array[T] {
		if l == nn.LayoutBSHD {
			return layerUp[T](t, s, attnSwap(x, B, heads, n, D), B, n, heads, D)
		}
		return layerUp[T](t, s, x, B, heads, n, D)
	}
	step := func(from, to int) {
		t.Helper()
		k := up(attnSlice(kh, B, Hkv, total, D, from, to), Hkv, to-from)
		v := up(attnSlice(vh, B, Hkv, total, D, from, to), Hkv, to-from)
		q := up(attnSlice(qh, B, H, total, D, from, to), H, to-from)
		if err := c.AppendLayout(k, v, l); err != nil {
			t.Fatal(err)
		}
		out := layerFree(t, must(c.Attention(q, opts))(t))
		got := layerDown(t, out)
		if l == nn.LayoutBSHD {
			got = attnSwap(got, B, to-from, H, D)
		}
		layerClose(t, fmt.Sprintf("positions %d-%d", from, to-1), got, attnSlice(want, B, H, total, D, from, to), attnTol[T]())
		if n, err := c.Len(); n != to || err != nil {
			t.Fatalf("Len = %d, %v; want %d", n, err, to)
		}
	}
	step(0, prompt)
	for p := prompt; p < total; p++ {
		step(p, p+1)
	}
	// Past MaxLen: the host knows.
	big := layerFree(t, must(nd.Zeros[T](s, B, Hkv, max-total+1, D))(t))
	layerWantErr(t, c.Append(big, big), cuda.ErrInvalidValue, "MaxLen")
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Len(); n != 0 || err != nil {
		t.Fatalf("Len after Reset = %d, %v", n, err)
	}
}

// TestKVCacheGraph captures one decoding step (Append of a position's key
// and value, AttentionInto of its query) and replays it: each replay
// attends to one more position; the split-K form too, whose workspace is
// allocated and freed in the graph.
func TestKVCacheGraph(t *testing.T) {
	for _, path := range []string{"", "split"} {
		t.Run("path="+path, func(t *testing.T) {
			defer nn.SetAttnPath(path)()
			testKVCacheGraph(t)
		})
	}
}

func testKVCacheGraph(t *testing.T) {
	s := layerStream(t)
	const B, H, Hkv, D, max, total = 1, 2, 1, 32, 16, 9
	full := attnShape{B, H, Hkv, total, total, D, true}
	qh := layerRound[float32](layerData(B*H*total*D, 31, -1, 1))
	kh := layerRound[float32](layerData(B*Hkv*total*D, 32, -1, 1))
	vh := layerRound[float32](layerData(B*Hkv*total*D, 33, -1, 1))
	want := attnRef(full, qh, kh, vh, 1/math.Sqrt(D))
	c := must(nn.NewKVCache[float32](s, B, Hkv, max, D))(t)
	t.Cleanup(func() { c.Free() })
	q := layerFree(t, must(nd.Zeros[float32](s, B, H, 1, D))(t))
	k := layerFree(t, must(nd.Zeros[float32](s, B, Hkv, 1, D))(t))
	v := layerFree(t, must(nd.Zeros[float32](s, B, Hkv, 1, D))(t))
	out := layerFree(t, must(nd.Empty[float32](s, B, H, 1, D))(t))
	qb, kb, vb := must(q.Buffer())(t), must(k.Buffer())(t), must(v.Buffer())(t)
	set := func(p int) {
		t.Helper()
		for _, x := range []struct {
			b   *cuda.DeviceBuffer[float32]
			src []float64
			hs  int
		}{{qb, qh, H}, {kb, kh, Hkv}, {vb, vh, Hkv}} {
			if err := x.b.CopyFromHost(layerTo[float32](attnSlice(x.src, B, x.hs, total, D, p, p+1))); err != nil {
				t.Fatal(err)
			}
		}
	}
	opts := nn.AttentionOptions{Causal: true}
	decode := func() error {
		if err := c.Append(k, v); err != nil {
			return err
		}
		return c.AttentionInto(out, q, opts)
	}
	// Position 0 outside the capture (which compiles the kernels), then
	// the rest by the graph.
	set(0)
	if err := decode(); err != nil {
		t.Fatal(err)
	}
	layerClose(t, "position 0", layerDown(t, out), attnSlice(want, B, H, total, D, 0, 1), attnTol[float32]())
	g := must(s.Capture(cuda.CaptureGlobal, decode))(t)
	defer g.Close()
	exec := must(g.Instantiate())(t)
	defer exec.Close()
	for p := 1; p < total; p++ {
		set(p)
		if err := exec.Launch(s); err != nil {
			t.Fatal(err)
		}
		layerClose(t, fmt.Sprintf("position %d", p), layerDown(t, out), attnSlice(want, B, H, total, D, p, p+1), attnTol[float32]())
	}
	if n, err := c.Len(); n != total || err != nil {
		t.Fatalf("Len = %d, %v; want %d", n, err, total)
	}
	// Replays past MaxLen write nothing, and Len says so.
	for p := total; p <= max; p++ {
		if err := exec.Launch(s); err != nil {
			t.Fatal(err)
		}
	}
	n, err := c.Len()
	layerWantErr(t, err, cuda.ErrInvalidValue, "MaxLen")
	if n != max {
		t.Errorf("Len = %d after the overflow, want %d", n, max)
	}
}

func TestKVCacheErrors(t *testing.T) {
	s := layerStream(t)
	for _, tc := range []struct {
		name                 string
		batch, heads, n, dim int
		sentinel             error
	}{
		{"zero batch", 0, 1, 4, 32, cuda.ErrInvalidValue},
		{"negative length", 1, 1, -1, 32, cuda.ErrInvalidValue},
		{"D 300", 1, 1, 4, 300, cuda.ErrNotSupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := nn.NewKVCache[float32](s, tc.batch, tc.heads, tc.n, tc.dim)
			if c != nil {
				t.Error("a cache beside the error")
			}
			layerWantErr(t, err, tc.sentinel, "NewKVCache")
		})
	}
	if _, err := nn.NewKVCache[float32](nil, 1, 1, 1, 32); err == nil {
		t.Error("nil stream: no error")
	}
	c := must(nn.NewKVCache[float32](s, 1, 2, 8, 32))(t)
	t.Cleanup(func() { c.Free() })
	ok := func(shape ...int) *nd.Array[float32] { return layerFree(t, must(nd.Zeros[float32](s, shape...))(t)) }
	layerWantErr(t, c.Append(ok(1, 2, 3, 16), ok(1, 2, 3, 16)), cuda.ErrInvalidValue, "want [1 2 -1 32]")
	layerWantErr(t, c.AppendLayout(ok(1, 3, 2, 32), ok(1, 3, 2, 32), nn.AttentionLayout(7)), cuda.ErrInvalidValue, "Layout")
	layerWantErr(t, c.Append(ok(1, 2, 3, 32), ok(1, 2, 2, 32)), cuda.ErrInvalidValue, "alike")
	layerWantErr(t, c.Append(nil, ok(1, 2, 3, 32)), cuda.ErrInvalidValue, "k is a nil")
	_, err := c.Attention(ok(1, 4, 1, 16), nn.AttentionOptions{})
	layerWantErr(t, err, cuda.ErrInvalidValue, "q has shape")
	_, err = c.Attention(ok(1, 3, 1, 32), nn.AttentionOptions{})
	layerWantErr(t, err, cuda.ErrInvalidValue, "Hkv must divide H")
}

func TestKVCacheZero(t *testing.T) {
	var zero nn.KVCache[float32]
	for _, c := range []*nn.KVCache[float32]{nil, &zero} {
		if _, err := c.Len(); err == nil {
			t.Error("Len: no error")
		}
		if err := c.Reset(); err == nil {
			t.Error("Reset: no error")
		}
		if err := c.Append(nil, nil); err == nil {
			t.Error("Append: no error")
		}
		if _, err := c.Attention(nil, nn.AttentionOptions{}); err == nil {
			t.Error("Attention: no error")
		}
		if err := c.AttentionInto(nil, nil, nn.AttentionOptions{}); err == nil {
			t.Error("AttentionInto: no error")
		}
		if err := c.Free(); err != nil {
			t.Errorf("Free: %v", err)
		}
		if c.K() != nil || c.V() != nil || c.MaxLen() != 0 || c.Stream() != nil {
			t.Error("accessors of a nil or zero cache")
		}
	}
}

// TestAttentionNegativeScale: a negative scale (which the tensor-core
// kernel does not take) gives the reference's result too.
func TestAttentionNegativeScale(t *testing.T) {
	s := layerStream(t)
	c := attnShape{1, 2, 2, 17, 33, 64, true}
	qh := layerRound[cuda.BFloat16](layerData(2*17*64, 41, -1, 1))
	kh := layerRound[cuda.BFloat16](layerData(2*33*64, 42, -1, 1))
	vh := layerRound[cuda.BFloat16](layerData(2*33*64, 43, -1, 1))
	q := layerUp[cuda.BFloat16](t, s, qh, 1, 2, 17, 64)
	k := layerUp[cuda.BFloat16](t, s, kh, 1, 2, 33, 64)
	v := layerUp[cuda.BFloat16](t, s, vh, 1, 2, 33, 64)
	out := layerFree(t, must(nn.Attention(q, k, v, nn.AttentionOptions{Causal: true, Scale: -0.25}))(t))
	layerClose(t, "out", layerDown(t, out), attnRef(c, qh, kh, vh, -0.25), attnTol[cuda.BFloat16]())
}

// TestAttentionLarge checks the default kernels at sizes of many tiles
// (the tensor-core kernel's pipeline of key tiles, blocks of rows from two
// heads), in every type: on a GPU only, where it takes a second, the
// fake's emulation of the tensor cores minutes.
func TestAttentionLarge(t *testing.T) {
	if cudatest.IsFake() {
		t.Skip("minutes on the fake driver's CPU; the small shapes check the same indexing")
	}
	t.Run("float32", testAttentionLarge[float32])
	t.Run("float16", testAttentionLarge[cuda.Float16])
	t.Run("bfloat16", testAttentionLarge[cuda.BFloat16])
}

func testAttentionLarge[T nn.Float](t *testing.T) {
	s := layerStream(t)
	for i, c := range []attnShape{
		{1, 2, 1, 1000, 1000, 128, true},
		{1, 2, 2, 777, 1031, 64, true},
		{2, 3, 3, 513, 513, 64, false},
		{1, 4, 2, 300, 2000, 96, false},
		{1, 8, 2, 1, 3000, 128, true},
	} {
		t.Run(c.String(), func(t *testing.T) { attnCheck[T](t, s, c, uint64(100+i)) })
	}
}

// TestAttentionTiles runs the tensor-core kernel with the other tiles the
// benchmarks may try (GOCUDA_ATTN_TILES), so that a faster choice found
// on the GPU is a checked one.
func TestAttentionTiles(t *testing.T) {
	s := layerStream(t)
	defer nn.SetAttnPath("tc")()
	for _, tiles := range [][3]int{{4, 1, 32}, {4, 1, 128}, {4, 2, 32}, {4, 2, 64}, {8, 1, 64}, {8, 1, 128}} {
		t.Run(fmt.Sprintf("%dx%dx%d", tiles[0], tiles[1], tiles[2]), func(t *testing.T) {
			defer nn.SetAttnTiles(tiles[0], tiles[1], tiles[2])()
			for i, c := range []attnShape{{1, 4, 2, 65, 200, 64, true}, {1, 1, 1, 130, 130, 128, false}} {
				t.Run(c.String(), func(t *testing.T) { attnCheck[cuda.BFloat16](t, s, c, uint64(200+2*i)) })
			}
		})
	}
}

// TestKVCacheCaptureUnlaunched: an Append captured in a graph adds its
// positions when the graph is launched, not when it is captured, so that
// the host's count does not refuse an Append that fits before then; the
// graph's launch past MaxLen then writes nothing, and Len says so.
func TestKVCacheCaptureUnlaunched(t *testing.T) {
	s := layerStream(t)
	const maxLen, D = 4, 8
	c := must(nn.NewKVCache[float32](s, 1, 1, maxLen, D))(t)
	t.Cleanup(func() { c.Free() })
	kv := func(n int) *nd.Array[float32] {
		return layerUp[float32](t, s, layerData(n*D, uint64(n), -1, 1), 1, 1, n, D)
	}
	one := kv(1)
	if err := c.Append(one, one); err != nil { // compiles the kernels outside the capture
		t.Fatal(err)
	}
	g := must(s.Capture(cuda.CaptureGlobal, func() error { return c.Append(one, one) }))(t)
	defer g.Close()
	three := kv(maxLen - 1)
	if err := c.Append(three, three); err != nil {
		t.Fatalf("an Append that fits, after a capture not launched: %v", err)
	}
	if n, err := c.Len(); n != maxLen || err != nil {
		t.Fatalf("Len = %d, %v; want %d", n, err, maxLen)
	}
	exec := must(g.Instantiate())(t)
	defer exec.Close()
	if err := exec.Launch(s); err != nil {
		t.Fatal(err)
	}
	n, err := c.Len()
	layerWantErr(t, err, cuda.ErrInvalidValue, "MaxLen")
	if n != maxLen {
		t.Errorf("Len = %d after the graph's Append past MaxLen, want %d", n, maxLen)
	}
}

package cudnn_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/cudatest"
)

// attnCase is one attention's shape: q [B, H, Sq, D], k and v [B, Hkv,
// Sk, D], the mask, and whether the operands are laid out [B, S, heads,
// D] (BSHD) rather than [B, heads, S, D].
type attnCase struct {
	B, H, Hkv, Sq, Sk, D int
	causal, bshd, stats  bool
}

func (c attnCase) String() string {
	s := fmt.Sprintf("%dx%dx%dx%d kv %dx%d", c.B, c.H, c.Sq, c.D, c.Hkv, c.Sk)
	if c.causal {
		s += " causal"
	}
	if c.bshd {
		s += " BSHD"
	}
	if c.stats {
		s += " stats"
	}
	return s
}

var attnCases = []attnCase{
	{B: 1, H: 1, Hkv: 1, Sq: 1, Sk: 1, D: 64},
	{B: 2, H: 3, Hkv: 3, Sq: 17, Sk: 17, D: 64},
	{B: 2, H: 3, Hkv: 3, Sq: 17, Sk: 17, D: 64, causal: true, stats: true},
	{B: 2, H: 4, Hkv: 4, Sq: 128, Sk: 128, D: 128, causal: true},
	{B: 1, H: 2, Hkv: 2, Sq: 257, Sk: 257, D: 64},
	{B: 1, H: 2, Hkv: 2, Sq: 257, Sk: 257, D: 64, causal: true, bshd: true},
	{B: 2, H: 4, Hkv: 2, Sq: 33, Sk: 33, D: 64, causal: true, bshd: true, stats: true}, // grouped-query
	{B: 2, H: 4, Hkv: 1, Sq: 1, Sk: 77, D: 64, causal: true},                           // decoding: one query, multi-query
	{B: 2, H: 2, Hkv: 2, Sq: 5, Sk: 40, D: 32, causal: true, bshd: true},               // bottom-right
	{B: 1, H: 2, Hkv: 2, Sq: 9, Sk: 23, D: 16, stats: true},                            // Sq != Sk, no mask
}

// attnStrides returns the strides of (B, heads, S, D) for an array laid
// out BHSD or BSHD.
func attnStrides(b, h, s, d int, bshd bool) [4]int {
	if bshd {
		return [4]int{s * h * d, d, h * d, 1}
	}
	return [4]int{h * s * d, s * d, d, 1}
}

// attnRef is attention in float64: o and the statistics (max + log sum)
// of each row, reading q, k, v at the strides given.
func attnRef(c attnCase, q, k, v []float64, qs, ks [4]int, scale float64) (o []float64, stats []float64) {
	o = make([]float64, c.B*c.H*c.Sq*c.D) // contiguous BHSD
	stats = make([]float64, c.B*c.H*c.Sq)
	group := c.H / c.Hkv
	s := make([]float64, c.Sk)
	for b := range c.B {
		for h := range c.H {
			hk := h / group
			for i := range c.Sq {
				mx := math.Inf(-1)
				for j := range c.Sk {
					dot := 0.0
					for x := range c.D {
						dot += q[b*qs[0]+h*qs[1]+i*qs[2]+x] * k[b*ks[0]+hk*ks[1]+j*ks[2]+x]
					}
					s[j] = dot * scale
					if c.causal && j > c.Sk-c.Sq+i {
						s[j] = math.Inf(-1)
					}
					mx = math.Max(mx, s[j])
				}
				z := 0.0
				for j := range c.Sk {
					s[j] = math.Exp(s[j] - mx)
					z += s[j]
				}
				for x := range c.D {
					acc := 0.0
					for j := range c.Sk {
						acc += s[j] / z * v[b*ks[0]+hk*ks[1]+j*ks[2]+x]
					}
					o[((b*c.H+h)*c.Sq+i)*c.D+x] = acc
				}
				stats[(b*c.H+h)*c.Sq+i] = mx + math.Log(z)
			}
		}
	}
	return o, stats
}

// TestAttention runs each case in both half types against the float64
// reference, the output and (where asked) the statistics.
func TestAttention(t *testing.T) {
	ctx, _, h := handle(t)
	t.Run("bfloat16", func(t *testing.T) { testAttention[cuda.BFloat16](t, ctx, h, true) })
	t.Run("float16", func(t *testing.T) { testAttention[cuda.Float16](t, ctx, h, true) })
	// Each encoding of the causal mask alone, on a handle of its own (the
	// plans are kept): the current frontend's, the earlier one (−FLT_MAX,
	// the index generators in int32). A GPU's cuDNN may take one only
	// (logged: attention asks for the second where the first is refused).
	for i, name := range []string{"current mask", "earlier mask"} {
		t.Run(name, func(t *testing.T) {
			defer cudnn.SetAttentionMasks(i)()
			ctx, _, h := handle(t)
			testAttention[cuda.BFloat16](t, ctx, h, cudatest.IsFake())
		})
	}
}

func testAttention[T cudnn.Half](t *testing.T, ctx *cuda.Context, h *cudnn.Handle, mustRun bool) {
	r := rand.New(rand.NewPCG(3, 4))
	refused := 0
	defer func() {
		// A GPU's cuDNN may refuse a shape (logged), not all of them: that
		// would be a graph it does not recognise.
		if refused == len(attnCases) && mustRun {
			t.Errorf("cuDNN refused every shape")
		}
		t.Logf("cuDNN refused %d of %d shapes", refused, len(attnCases))
	}()
	for _, c := range attnCases {
		t.Run(c.String(), func(t *testing.T) {
			qt, qf := random[T](r, c.B*c.H*c.Sq*c.D)
			kt, kf := random[T](r, c.B*c.Hkv*c.Sk*c.D)
			vt, vf := random[T](r, c.B*c.Hkv*c.Sk*c.D)
			qs, ks := attnStrides(c.B, c.H, c.Sq, c.D, c.bshd), attnStrides(c.B, c.Hkv, c.Sk, c.D, c.bshd)
			nan := make([]T, len(qt))
			for i := range nan {
				nan[i] = of[T](math.NaN())
			}
			q := cudnn.AttentionTensor[T]{Data: cudatest.Upload(t, ctx, qt), Shape: [4]int{c.B, c.H, c.Sq, c.D}, Strides: qs}
			k := cudnn.AttentionTensor[T]{Data: cudatest.Upload(t, ctx, kt), Shape: [4]int{c.B, c.Hkv, c.Sk, c.D}, Strides: ks}
			v := cudnn.AttentionTensor[T]{Data: cudatest.Upload(t, ctx, vt), Shape: k.Shape, Strides: ks}
			o := cudnn.AttentionTensor[T]{Data: cudatest.Upload(t, ctx, nan), Shape: q.Shape, Strides: qs}
			opts := cudnn.AttentionOptions{Causal: c.causal}
			if c.stats {
				opts.Stats = cudatest.Upload(t, ctx, make([]float32, c.B*c.H*c.Sq))
			}
			if err := cudnn.Attention(h, o, q, k, v, opts); err != nil {
				if errors.Is(err, cuda.ErrNotSupported) && !cudatest.IsFake() {
					refused++
					t.Skipf("cuDNN refused the shape: %v", err)
				}
				t.Fatalf("Attention: %v", err)
			}
			wantO, wantS := attnRef(c, qf, kf, vf, qs, ks, 1/math.Sqrt(float64(c.D)))
			host := must(o.Data.ToHost())(t)
			got := make([]float64, len(wantO))
			for b := range c.B {
				for hh := range c.H {
					for i := range c.Sq {
						for x := range c.D {
							got[((b*c.H+hh)*c.Sq+i)*c.D+x] = val(host[b*qs[0]+hh*qs[1]+i*qs[2]+x])
						}
					}
				}
			}
			// Each output is a weighted mean of values in [-1, 1): an
			// absolute tolerance of the type's rounding of P and O.
			scale := make([]float64, len(wantO))
			for i := range scale {
				scale[i] = 1
			}
			near(t, "o", got, wantO, scale, 2*tol[T]())
			if c.stats {
				st := must(opts.Stats.ToHost())(t)
				gs := make([]float64, len(st))
				for i, x := range st {
					gs[i] = float64(x)
				}
				sc := make([]float64, len(wantS))
				for i := range sc {
					sc[i] = math.Abs(wantS[i]) + 1
				}
				near(t, "stats", gs, wantS, sc, 1e-2)
			}
		})
	}
}

// TestAttentionScale checks that the scale is passed by value at each
// call: one plan, two scales, two results.
func TestAttentionScale(t *testing.T) {
	ctx, _, h := handle(t)
	c := attnCase{B: 1, H: 2, Hkv: 2, Sq: 7, Sk: 7, D: 16}
	r := rand.New(rand.NewPCG(5, 6))
	qt, qf := random[cuda.BFloat16](r, c.B*c.H*c.Sq*c.D)
	kt, kf := random[cuda.BFloat16](r, len(qt))
	vt, vf := random[cuda.BFloat16](r, len(qt))
	sh := [4]int{c.B, c.H, c.Sq, c.D}
	q := cudnn.AttentionTensor[cuda.BFloat16]{Data: cudatest.Upload(t, ctx, qt), Shape: sh}
	k := cudnn.AttentionTensor[cuda.BFloat16]{Data: cudatest.Upload(t, ctx, kt), Shape: sh}
	v := cudnn.AttentionTensor[cuda.BFloat16]{Data: cudatest.Upload(t, ctx, vt), Shape: sh}
	o := cudnn.AttentionTensor[cuda.BFloat16]{Data: cudatest.Upload(t, ctx, make([]cuda.BFloat16, len(qt))), Shape: sh}
	st := attnStrides(c.B, c.H, c.Sq, c.D, false)
	for _, scale := range []float32{0.1, 2} {
		if err := cudnn.Attention(h, o, q, k, v, cudnn.AttentionOptions{Scale: scale}); err != nil {
			if errors.Is(err, cuda.ErrNotSupported) && !cudatest.IsFake() {
				t.Skipf("cuDNN refused the shape: %v", err)
			}
			t.Fatalf("Attention: %v", err)
		}
		want, _ := attnRef(c, qf, kf, vf, st, st, float64(scale))
		host := must(o.Data.ToHost())(t)
		got := make([]float64, len(host))
		ones := make([]float64, len(host))
		for i, x := range host {
			got[i], ones[i] = val(x), 1
		}
		near(t, fmt.Sprintf("o (scale %v)", scale), got, want, ones, 2e-2)
	}
}

// TestAttentionBadArguments checks that bad operands are refused before
// cuDNN is called, with the sentinel that fits.
func TestAttentionBadArguments(t *testing.T) {
	ctx, _, h := handle(t)
	buf := func(n int) *cuda.DeviceBuffer[cuda.BFloat16] {
		return cudatest.Upload(t, ctx, make([]cuda.BFloat16, n))
	}
	ten := func(b, hh, s, d int) cudnn.AttentionTensor[cuda.BFloat16] {
		return cudnn.AttentionTensor[cuda.BFloat16]{Data: buf(b * hh * s * d), Shape: [4]int{b, hh, s, d}}
	}
	q, k := ten(2, 4, 8, 64), ten(2, 2, 8, 64)
	o := ten(2, 4, 8, 64)
	stats := cudatest.Upload(t, ctx, make([]float32, 3))
	bad := ten(2, 4, 8, 64)
	bad.Strides = [4]int{2048, 512, 64, 2}
	short := q
	short.Strides = [4]int{4096, 512, 64, 1}
	// An operand 2 bytes off 16 (a view one element in), for which cuDNN
	// gave wrong results rather than refusing it, and rows 68 elements
	// (136 bytes) apart.
	offData := must(buf(2*4*8*64+1).Slice(1, 2*4*8*64))(t)
	off := cudnn.AttentionTensor[cuda.BFloat16]{Data: offData, Shape: q.Shape}
	narrow := cudnn.AttentionTensor[cuda.BFloat16]{Data: buf(2 * 4 * 8 * 68), Shape: [4]int{2, 4, 8, 64}, Strides: [4]int{4 * 8 * 68, 8 * 68, 68, 1}}
	for _, c := range []struct {
		name       string
		h          *cudnn.Handle
		o, q, k, v cudnn.AttentionTensor[cuda.BFloat16]
		opts       cudnn.AttentionOptions
		want       error
	}{
		{"nil handle", nil, o, q, k, k, cudnn.AttentionOptions{}, cuda.ErrInvalidValue},
		{"zero handle", &cudnn.Handle{}, o, q, k, k, cudnn.AttentionOptions{}, cuda.ErrInvalidValue},
		{"nil q", h, o, cudnn.AttentionTensor[cuda.BFloat16]{Shape: q.Shape}, k, k, cudnn.AttentionOptions{}, cuda.ErrInvalidValue},
		{"nil o", h, cudnn.AttentionTensor[cuda.BFloat16]{Shape: q.Shape}, q, k, k, cudnn.AttentionOptions{}, cuda.ErrInvalidValue},
		{"zero shape", h, o, cudnn.AttentionTensor[cuda.BFloat16]{Data: q.Data}, k, k, cudnn.AttentionOptions{}, cuda.ErrInvalidValue},
		{"k and v differ", h, o, q, k, ten(2, 2, 9, 64), cudnn.AttentionOptions{}, cuda.ErrInvalidValue},
		{"batch differs", h, o, q, ten(1, 2, 8, 64), ten(1, 2, 8, 64), cudnn.AttentionOptions{}, cuda.ErrInvalidValue},
		{"D differs", h, o, q, ten(2, 2, 8, 32), ten(2, 2, 8, 32), cudnn.AttentionOptions{}, cuda.ErrInvalidValue},
		{"o's shape", h, ten(2, 4, 7, 64), q, k, k, cudnn.AttentionOptions{}, cuda.ErrInvalidValue},
		{"Hkv does not divide H", h, o, q, ten(2, 3, 8, 64), ten(2, 3, 8, 64), cudnn.AttentionOptions{}, cuda.ErrInvalidValue},
		{"D not a multiple of 8", h, ten(1, 1, 4, 12), ten(1, 1, 4, 12), ten(1, 1, 4, 12), ten(1, 1, 4, 12), cudnn.AttentionOptions{}, cuda.ErrNotSupported},
		{"D above 256", h, ten(1, 1, 2, 264), ten(1, 1, 2, 264), ten(1, 1, 2, 264), ten(1, 1, 2, 264), cudnn.AttentionOptions{}, cuda.ErrNotSupported},
		{"D's stride not 1", h, o, bad, k, k, cudnn.AttentionOptions{}, cuda.ErrNotSupported},
		{"strides past the buffer", h, o, short, k, k, cudnn.AttentionOptions{}, cuda.ErrInvalidValue},
		{"causal with more queries than keys", h, o, q, ten(2, 2, 4, 64), ten(2, 2, 4, 64), cudnn.AttentionOptions{Causal: true}, cuda.ErrNotSupported},
		{"NaN scale", h, o, q, k, k, cudnn.AttentionOptions{Scale: float32(math.NaN())}, cuda.ErrInvalidValue},
		{"negative scale", h, o, q, k, k, cudnn.AttentionOptions{Scale: -0.25}, cuda.ErrNotSupported},
		{"q 2 bytes off 16", h, o, off, k, k, cudnn.AttentionOptions{}, cuda.ErrNotSupported},
		{"o 2 bytes off 16", h, off, q, k, k, cudnn.AttentionOptions{}, cuda.ErrNotSupported},
		{"rows 68 elements apart", h, o, narrow, k, k, cudnn.AttentionOptions{}, cuda.ErrNotSupported},
		{"stats' length", h, o, q, k, k, cudnn.AttentionOptions{Stats: stats}, cuda.ErrInvalidValue},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := cudnn.Attention(c.h, c.o, c.q, c.k, c.v, c.opts)
			if !errors.Is(err, c.want) {
				t.Fatalf("Attention: %v, want %v", err, c.want)
			}
			var e *cudnn.Error
			if !errors.As(err, &e) || e.Op != "Attention" {
				t.Errorf("error %v: want a *cudnn.Error of op Attention", err)
			}
		})
	}
}

// TestAttentionFake checks the fake's side: the graph cuDNN's engine
// refuses first is passed over, a plan is kept per shape, a failed graph
// finalize is cuDNN's error, the engine's refusal of a shape an error
// wrapping cuda.ErrNotSupported remembered, and a failed execution
// returns cuDNN's status.
func TestAttentionFake(t *testing.T) {
	c := cudatest.Fake(t)
	if c == nil {
		return // ran in a child process against the fake
	}
	ctx, _, h := handle(t)
	sh := [4]int{1, 2, 8, 16}
	ten := func() cudnn.AttentionTensor[cuda.Float16] {
		return cudnn.AttentionTensor[cuda.Float16]{Data: cudatest.Upload(t, ctx, make([]cuda.Float16, 256)), Shape: sh}
	}
	q, k, v, o := ten(), ten(), ten(), ten()
	run := func() error { return cudnn.Attention(h, o, q, k, v, cudnn.AttentionOptions{Causal: true}) }
	if err := run(); err != nil {
		t.Fatalf("Attention: %v", err)
	}
	if n := cudnn.AttentionPlans(h); n != 1 {
		t.Errorf("%d attention plans after one shape, want 1", n)
	}
	if err := run(); err != nil {
		t.Fatalf("Attention again: %v", err)
	}
	if n := cudnn.AttentionPlans(h); n != 1 {
		t.Errorf("%d attention plans after the same shape twice, want 1", n)
	}
	c.Fail("cudnnBackendExecute", 1, 3000)
	if err := run(); !errors.Is(err, cuda.ErrNotSupported) || !errors.Is(err, cudnn.Result(3000)) {
		t.Errorf("Attention with Execute failing: %v, want cuDNN's status 3000", err)
	}
	// A new shape whose graph cuDNN refuses at its finalize: not
	// supported, in words, and remembered.
	sh2 := [4]int{1, 2, 4, 16}
	q2 := cudnn.AttentionTensor[cuda.Float16]{Data: q.Data, Shape: sh2}
	o2 := cudnn.AttentionTensor[cuda.Float16]{Data: o.Data, Shape: sh2} // an output over an input is refused
	c.Fail("cudnnBackendFinalize", 1, 3001)
	err := cudnn.Attention(h, o2, q2, q2, q2, cudnn.AttentionOptions{})
	if !errors.Is(err, cuda.ErrNotSupported) {
		t.Fatalf("Attention with the graph refused: %v, want cuda.ErrNotSupported", err)
	}
	if err2 := cudnn.Attention(h, o2, q2, q2, q2, cudnn.AttentionOptions{}); !errors.Is(err2, cuda.ErrNotSupported) {
		t.Errorf("the refused shape again: %v, want the refusal remembered", err2)
	}
	// Operands aligned to less than 16 bytes: the fused engine refuses
	// them (its plan does not build), an error wrapping
	// cuda.ErrNotSupported.
	off := must(q.Data.Slice(1, 128))(t)
	q4 := cudnn.AttentionTensor[cuda.Float16]{Data: off, Shape: [4]int{1, 2, 4, 16}}
	if err := cudnn.Attention(h, q4, q4, q4, q4, cudnn.AttentionOptions{}); !errors.Is(err, cuda.ErrNotSupported) {
		t.Errorf("Attention of operands aligned to 2 bytes: %v, want cuda.ErrNotSupported", err)
	}
	// A bad parameter at the graph's finalize is cuDNN's error, not a
	// refusal.
	sh3 := [4]int{1, 1, 4, 16}
	q3 := cudnn.AttentionTensor[cuda.Float16]{Data: q.Data, Shape: sh3}
	o3 := cudnn.AttentionTensor[cuda.Float16]{Data: o.Data, Shape: sh3}
	c.Fail("cudnnBackendFinalize", 1, 2000)
	if err := cudnn.Attention(h, o3, q3, q3, q3, cudnn.AttentionOptions{}); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Attention with a bad parameter: %v, want cuda.ErrInvalidValue", err)
	}
	if err := cudnn.Attention(h, o3, q3, q3, q3, cudnn.AttentionOptions{}); err != nil {
		t.Errorf("Attention after the failure: %v", err)
	}
}

// TestAttentionFakeStrict checks that the fake refuses graphs that are
// not the attention graph's, so that the tests above prove the graph
// Attention builds (cudnn.AttentionGraphVariant builds a wrong one).
func TestAttentionFakeStrict(t *testing.T) {
	if cudatest.Fake(t) == nil {
		return // ran in a child process against the fake
	}
	_, _, h := handle(t)
	for _, variant := range cudnn.AttentionGraphVariants() {
		t.Run(variant, func(t *testing.T) {
			if err := cudnn.AttentionGraphVariant(h, variant); !errors.Is(err, cuda.ErrNotSupported) && !errors.Is(err, cuda.ErrInvalidValue) {
				t.Errorf("graph %s: %v, want a refusal", variant, err)
			}
		})
	}
	if err := cudnn.AttentionGraphVariant(h, ""); err != nil {
		t.Errorf("the graph itself: %v", err)
	}
}

// TestAttentionCapture checks attention inside a CUDA graph: a shape run
// before the capture is captured, with its scale as of the capture, and
// its replays read the inputs of each replay; a new shape is refused
// inside the capture, in words.
func TestAttentionCapture(t *testing.T) {
	ctx, s, h := handle(t)
	const S, D = 3, 8
	zeros := make([]cuda.BFloat16, S*D)
	q := cudnn.AttentionTensor[cuda.BFloat16]{Data: cudatest.Upload(t, ctx, zeros), Shape: [4]int{1, 1, S, D}}
	v := cudnn.AttentionTensor[cuda.BFloat16]{Data: cudatest.Upload(t, ctx, zeros), Shape: q.Shape}
	o := cudnn.AttentionTensor[cuda.BFloat16]{Data: cudatest.Upload(t, ctx, zeros), Shape: q.Shape}
	run := func() error { return cudnn.Attention(h, o, q, q, v, cudnn.AttentionOptions{Causal: true}) }
	if err := run(); err != nil {
		if errors.Is(err, cuda.ErrNotSupported) && !cudatest.IsFake() {
			t.Skipf("cuDNN refused the shape: %v", err)
		}
		t.Fatal(err)
	}
	q2 := cudnn.AttentionTensor[cuda.BFloat16]{Data: q.Data, Shape: [4]int{1, 1, 2, D}}
	g, err := s.Capture(cuda.CaptureThreadLocal, func() error {
		if err := run(); err != nil {
			return err
		}
		o2 := cudnn.AttentionTensor[cuda.BFloat16]{Data: o.Data, Shape: q2.Shape} // an output over an input is refused
		if err := cudnn.Attention(h, o2, q2, q2, q2, cudnn.AttentionOptions{}); !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "before the capture") {
			t.Errorf("a new shape inside a capture: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	exec := must(g.Instantiate())(t)
	defer exec.Close()
	for _, k := range []float32{1, 3} {
		vals := make([]cuda.BFloat16, S*D)
		for i := range vals {
			vals[i] = cuda.NewBFloat16(k * float32(i/D+1))
		}
		must(0, v.Data.CopyFromHost(vals))(t)
		must(0, exec.Launch(s))(t)
		must(0, s.Synchronize())(t)
		out := must(o.Data.ToHost())(t)
		// Equal scores: each query averages the values it sees.
		for i, want := range []float32{k, 1.5 * k, 2 * k} {
			if got := out[i*D].Float32(); got != want {
				t.Errorf("replay with values ·%v: o[%d] = %v, want %v", k, i, got, want)
			}
		}
	}
}

// TestAttentionConcurrent: goroutines sharing a Handle take turns, two of
// each shape (a plan built by one is found by the other), each checked
// against the reference.
func TestAttentionConcurrent(t *testing.T) {
	ctx, s, h := handle(t)
	shapes := []attnCase{
		{B: 1, H: 2, Hkv: 2, Sq: 7, Sk: 7, D: 16},
		{B: 1, H: 2, Hkv: 1, Sq: 5, Sk: 9, D: 32, causal: true},
		{B: 2, H: 1, Hkv: 1, Sq: 3, Sk: 3, D: 64, bshd: true},
	}
	type job struct {
		c          attnCase
		q, k, v, o cudnn.AttentionTensor[cuda.Float16]
		want       []float64
	}
	r := rand.New(rand.NewPCG(7, 8))
	var jobs []job
	for i := range 2 * len(shapes) {
		c := shapes[i%len(shapes)]
		qt, qf := random[cuda.Float16](r, c.B*c.H*c.Sq*c.D)
		kt, kf := random[cuda.Float16](r, c.B*c.Hkv*c.Sk*c.D)
		vt, vf := random[cuda.Float16](r, c.B*c.Hkv*c.Sk*c.D)
		qs, ks := attnStrides(c.B, c.H, c.Sq, c.D, c.bshd), attnStrides(c.B, c.Hkv, c.Sk, c.D, c.bshd)
		want, _ := attnRef(c, qf, kf, vf, qs, ks, 1/math.Sqrt(float64(c.D)))
		jobs = append(jobs, job{c: c,
			q:    cudnn.AttentionTensor[cuda.Float16]{Data: cudatest.Upload(t, ctx, qt), Shape: [4]int{c.B, c.H, c.Sq, c.D}, Strides: qs},
			k:    cudnn.AttentionTensor[cuda.Float16]{Data: cudatest.Upload(t, ctx, kt), Shape: [4]int{c.B, c.Hkv, c.Sk, c.D}, Strides: ks},
			v:    cudnn.AttentionTensor[cuda.Float16]{Data: cudatest.Upload(t, ctx, vt), Shape: [4]int{c.B, c.Hkv, c.Sk, c.D}, Strides: ks},
			o:    cudnn.AttentionTensor[cuda.Float16]{Data: cudatest.Upload(t, ctx, make([]cuda.Float16, len(qt))), Shape: [4]int{c.B, c.H, c.Sq, c.D}, Strides: qs},
			want: want,
		})
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			for range 10 {
				if errs[i] = cudnn.Attention(h, j.o, j.q, j.k, j.v, cudnn.AttentionOptions{Causal: j.c.causal}); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if errors.Is(err, cuda.ErrNotSupported) && !cudatest.IsFake() {
			t.Logf("cuDNN refused %v: %v", jobs[i].c, err)
		} else if err != nil {
			t.Errorf("%v: %v", jobs[i].c, err)
		}
	}
	if t.Failed() {
		return
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i, j := range jobs {
		if errs[i] != nil {
			continue
		}
		c, qs := j.c, j.o.Strides
		host := must(j.o.Data.ToHost())(t)
		got := make([]float64, len(j.want))
		ones := make([]float64, len(j.want))
		for b := range c.B {
			for hh := range c.H {
				for i := range c.Sq {
					for x := range c.D {
						n := ((b*c.H+hh)*c.Sq+i)*c.D + x
						got[n], ones[n] = val(host[b*qs[0]+hh*qs[1]+i*qs[2]+x]), 1
					}
				}
			}
		}
		near(t, c.String(), got, j.want, ones, 2*tol[cuda.Float16]())
	}
}

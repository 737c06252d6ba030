package main

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/safetensors"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

// tiny is the tests' model: every path of GPT-2 small's at a size the fake
// driver runs in seconds.
var tiny = Config{Layers: 2, Heads: 2, Width: 16, Vocab: 50, Context: 32}

// requireKernels skips where the model's kernels cannot run (the fake
// driver without a C++ compiler, or no NVRTC); on the GPU machine
// (GOCUDA_REQUIRE_GPU=1) they must run.
func requireKernels(t *testing.T) {
	t.Helper()
	switch {
	case cudatest.KernelsRun():
	case os.Getenv(cudatest.EnvRequireGPU) == "1":
		t.Fatal("GOCUDA_REQUIRE_GPU=1 and kernels cannot run: no NVRTC")
	default:
		t.Skip("kernels cannot run here: no NVRTC, or the fake driver without a C++ compiler")
	}
}

// tinyWeights returns random weights of cfg under Hugging Face's names,
// as gpt2_ref.py makes them (std 0.02, the layer norms' weights about 1),
// but larger, so that the layers matter in a model this small.
func tinyWeights(cfg Config, seed uint64) (map[string][]float32, map[string][]int) {
	r := rand.New(rand.NewPCG(seed, 1))
	w, shapes := map[string][]float32{}, map[string][]int{}
	add := func(name string, scale, center float64, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(center + scale*r.NormFloat64())
		}
		w[name], shapes[name] = v, shape
	}
	C := cfg.Width
	add("wte.weight", 0.5, 0, cfg.Vocab, C)
	add("wpe.weight", 0.5, 0, cfg.Context, C)
	add("ln_f.weight", 0.1, 1, C)
	add("ln_f.bias", 0.1, 0, C)
	for i := range cfg.Layers {
		p := fmt.Sprintf("h.%d.", i)
		add(p+"ln_1.weight", 0.1, 1, C)
		add(p+"ln_1.bias", 0.1, 0, C)
		add(p+"attn.c_attn.weight", 0.3, 0, C, 3*C)
		add(p+"attn.c_attn.bias", 0.1, 0, 3*C)
		add(p+"attn.c_proj.weight", 0.3, 0, C, C)
		add(p+"attn.c_proj.bias", 0.1, 0, C)
		add(p+"ln_2.weight", 0.1, 1, C)
		add(p+"ln_2.bias", 0.1, 0, C)
		add(p+"mlp.c_fc.weight", 0.3, 0, C, 4*C)
		add(p+"mlp.c_fc.bias", 0.1, 0, 4*C)
		add(p+"mlp.c_proj.weight", 0.3, 0, 4*C, C)
		add(p+"mlp.c_proj.bias", 0.1, 0, C)
	}
	return w, shapes
}

// writeModel writes the weights as a safetensors file, through the device
// (safetensors.SaveFile), and opens it.
func writeModel(t *testing.T, ctx *cuda.Context, w map[string][]float32, shapes map[string][]int) *safetensors.File {
	t.Helper()
	var src []safetensors.Source
	for _, name := range slices.Sorted(maps.Keys(w)) {
		src = append(src, safetensors.From(name, cudatest.Upload(t, ctx, w[name]), shapes[name]...))
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := safetensors.SaveFile(path, src, map[string]string{"format": "pt"}, cuda.IOConfig{}); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// cpuLogits is the reference: GPT-2's forward pass in float64, the logits
// of every position of b sequences of t tokens, [b·t, V].
func cpuLogits(cfg Config, w map[string][]float32, tokens []int64, b, t int) []float64 {
	C, H, D, V := cfg.Width, cfg.Heads, cfg.Width/cfg.Heads, cfg.Vocab
	f := func(name string) []float64 {
		out := make([]float64, len(w[name]))
		for i, v := range w[name] {
			out[i] = float64(v)
		}
		return out
	}
	norm := func(x []float64, g, bias []float64) []float64 {
		y := make([]float64, len(x))
		for r := 0; r < len(x)/C; r++ {
			row := x[r*C : (r+1)*C]
			var mean, v float64
			for _, e := range row {
				mean += e
			}
			mean /= float64(C)
			for _, e := range row {
				v += (e - mean) * (e - mean)
			}
			rstd := 1 / math.Sqrt(v/float64(C)+1e-5)
			for i, e := range row {
				y[r*C+i] = (e-mean)*rstd*g[i] + bias[i]
			}
		}
		return y
	}
	linear := func(x []float64, in int, wt, bias []float64) []float64 {
		out := len(bias)
		rows := len(x) / in
		y := make([]float64, rows*out)
		for r := range rows {
			for o := range out {
				s := bias[o]
				for k := range in {
					s += x[r*in+k] * wt[k*out+o]
				}
				y[r*out+o] = s
			}
		}
		return y
	}
	wte, wpe := f("wte.weight"), f("wpe.weight")
	n := b * t
	x := make([]float64, n*C)
	for r := range n {
		for i := range C {
			x[r*C+i] = wte[int(tokens[r])*C+i] + wpe[(r%t)*C+i]
		}
	}
	for l := range cfg.Layers {
		p := fmt.Sprintf("h.%d.", l)
		qkv := linear(norm(x, f(p+"ln_1.weight"), f(p+"ln_1.bias")), C, f(p+"attn.c_attn.weight"), f(p+"attn.c_attn.bias"))
		y := make([]float64, n*C)
		for s := range b {
			for h := range H {
				for i := range t {
					q := qkv[(s*t+i)*3*C+h*D:][:D]
					scores := make([]float64, i+1)
					peak := math.Inf(-1)
					for j := range i + 1 {
						k := qkv[(s*t+j)*3*C+C+h*D:][:D]
						for d := range D {
							scores[j] += q[d] * k[d]
						}
						scores[j] /= math.Sqrt(float64(D))
						peak = max(peak, scores[j])
					}
					var z float64
					for j := range scores {
						scores[j] = math.Exp(scores[j] - peak)
						z += scores[j]
					}
					for j := range scores {
						v := qkv[(s*t+j)*3*C+2*C+h*D:][:D]
						for d := range D {
							y[(s*t+i)*C+h*D+d] += scores[j] / z * v[d]
						}
					}
				}
			}
		}
		a := linear(y, C, f(p+"attn.c_proj.weight"), f(p+"attn.c_proj.bias"))
		for i := range x {
			x[i] += a[i]
		}
		fc := linear(norm(x, f(p+"ln_2.weight"), f(p+"ln_2.bias")), C, f(p+"mlp.c_fc.weight"), f(p+"mlp.c_fc.bias"))
		for i, v := range fc {
			fc[i] = 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
		}
		m := linear(fc, 4*C, f(p+"mlp.c_proj.weight"), f(p+"mlp.c_proj.bias"))
		for i := range x {
			x[i] += m[i]
		}
	}
	h := norm(x, f("ln_f.weight"), f("ln_f.bias"))
	logits := make([]float64, n*V)
	for r := range n {
		for v := range V {
			var s float64
			for i := range C {
				s += h[r*C+i] * wte[v*C+i]
			}
			logits[r*V+v] = s
		}
	}
	return logits
}

// cpuGreedy is the reference of greedy generation: n new tokens of each
// prompt, each from the logits of the whole sequence so far (no cache), and
// the smallest lead of a chosen token over the next.
func cpuGreedy(cfg Config, w map[string][]float32, prompt []int64, b, p, n int) ([]int64, float64) {
	seqs := make([][]int64, b)
	for i := range b {
		seqs[i] = slices.Clone(prompt[i*p : (i+1)*p])
	}
	out := make([]int64, b*n)
	lead := math.Inf(1)
	for k := range n {
		for i := range b {
			t := len(seqs[i])
			l := cpuLogits(cfg, w, seqs[i], 1, t)[(t-1)*cfg.Vocab:]
			best := 0
			for v := range l {
				if l[v] > l[best] {
					best = v
				}
			}
			second := math.Inf(-1)
			for v := range l {
				if v != best {
					second = max(second, l[v])
				}
			}
			lead = min(lead, l[best]-second)
			out[i*n+k] = int64(best)
			seqs[i] = append(seqs[i], int64(best))
		}
	}
	return out, lead
}

func randomTokens(r *rand.Rand, n, vocab int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = r.Int64N(int64(vocab))
	}
	return out
}

// TestForward compares the logits of the model's batch pass with the CPU's,
// in float32 (as the example's -compare: the largest |Δ| of a position over
// its largest |logit|) and bfloat16.
func TestForward(t *testing.T) {
	requireKernels(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	w, shapes := tinyWeights(tiny, 1)
	f := writeModel(t, ctx, w, shapes)
	cfg, err := configOf(f, tiny.Heads)
	if err != nil || cfg != tiny {
		t.Fatalf("configOf = %+v, %v; want %+v", cfg, err, tiny)
	}
	const b, tt = 3, 7 // odd sizes: no tile divides them
	tokens := randomTokens(rand.New(rand.NewPCG(2, 2)), b*tt, tiny.Vocab)
	want := cpuLogits(tiny, w, tokens, b, tt)
	wantF := make([]float32, len(want))
	for i, v := range want {
		wantF[i] = float32(v)
	}
	for _, tc := range []struct {
		name string
		tol  float64
		run  func() ([]float32, error)
	}{
		{"f32", 1e-5, func() ([]float32, error) {
			m, err := Load[float32](s, f, tiny.Heads)
			if err != nil {
				return nil, err
			}
			defer m.Close()
			logits, err := m.Logits(tokens, b, tt)
			if err != nil {
				return nil, err
			}
			// The device's argmax (-compare's bf16 top-1) is the host's.
			top, err := m.Top1(tokens, b, tt)
			if err == nil && !slices.Equal(top, argmaxRows(logits, tiny.Vocab)) {
				err = fmt.Errorf("Top1 = %v, the logits' argmax %v", top, argmaxRows(logits, tiny.Vocab))
			}
			return logits, err
		}},
		// bfloat16 keeps 8 bits: the activations' roundings, layer after
		// layer, leave about 2^-6 of the largest logit.
		{"bf16", 3e-2, func() ([]float32, error) {
			m, err := Load[cuda.BFloat16](s, f, tiny.Heads)
			if err != nil {
				return nil, err
			}
			defer m.Close()
			return m.Logits(tokens, b, tt)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.run()
			if err != nil {
				t.Fatal(err)
			}
			e := logitError(got, wantF, tiny.Vocab)
			if e.rowRel > tc.tol || math.IsNaN(e.rowRel) {
				t.Errorf("max |Δ|/max|logit| of a position = %.3g (max |Δ| %.3g), want <= %g", e.rowRel, e.abs, tc.tol)
			}
		})
	}
}

// TestGenerate checks greedy generation with the key/value cache against
// the CPU's generation without one, with the step's graph and without
// (which must give the same tokens), and that a second Prefill starts
// over.
func TestGenerate(t *testing.T) {
	requireKernels(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	w, shapes := tinyWeights(tiny, 3)
	f := writeModel(t, ctx, w, shapes)
	m, err := Load[float32](s, f, tiny.Heads)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	const b, p, n = 2, 5, 6
	prompt := randomTokens(rand.New(rand.NewPCG(4, 4)), b*p, tiny.Vocab)
	want, lead := cpuGreedy(tiny, w, prompt, b, p, n)
	for _, graph := range []bool{false, true} {
		t.Run(fmt.Sprintf("graph=%v", graph), func(t *testing.T) {
			d, err := m.NewDecoder(b, p, n)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			got, err := d.Generate(prompt, graph)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				if lead < 1e-4 {
					t.Skipf("the CPU's greedy choice led by %g only: float32 may choose otherwise", lead)
				}
				t.Fatalf("tokens %v, the CPU's %v", got, want)
			}
			// Again from the prompts: the same steps (the graph's replays
			// read the position and the caches' lengths on the device).
			if err := d.Prefill(prompt); err != nil {
				t.Fatal(err)
			}
			if err := d.Steps(n-1, graph); err != nil {
				t.Fatal(err)
			}
			again, err := d.Tokens()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(again, want) {
				t.Fatalf("after Prefill again: tokens %v, want %v", again, want)
			}
		})
	}
}

// TestBadInput checks that bad shapes and tokens are errors, not panics.
func TestBadInput(t *testing.T) {
	requireKernels(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	w, shapes := tinyWeights(tiny, 5)
	f := writeModel(t, ctx, w, shapes)
	if _, err := configOf(f, 3); err == nil {
		t.Error("configOf with 3 heads of a width of 16: no error")
	}
	m, err := Load[float32](s, f, tiny.Heads)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"token past the vocabulary", func() error { _, err := m.Logits([]int64{1, int64(tiny.Vocab)}, 1, 2); return err }},
		{"negative token", func() error { _, err := m.Logits([]int64{-1}, 1, 1); return err }},
		{"tokens of another shape", func() error { _, err := m.Logits([]int64{1, 2, 3}, 2, 2); return err }},
		{"past the context", func() error { _, err := m.NewDecoder(1, tiny.Context, 1); return err }},
		{"a cache past the context", func() error { _, err := m.NewCache(1, tiny.Context+1); return err }},
		{"a prompt of another length", func() error {
			d, err := m.NewDecoder(1, 2, 2)
			if err != nil {
				return nil
			}
			defer d.Close()
			return d.Prefill([]int64{1})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); err == nil {
				t.Error("no error")
			}
		})
	}
}

// TestCommands runs -compare and -generate's code on files as gpt2_ref.py
// writes them (the references here from the CPU's model): their readers,
// figures and output.
func TestCommands(t *testing.T) {
	requireKernels(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	w, shapes := tinyWeights(tiny, 7)
	f := writeModel(t, ctx, w, shapes)
	const b, tt, p, n = 2, 9, 4, 5
	r := rand.New(rand.NewPCG(8, 8))
	tokens, prompt := randomTokens(r, b*tt, tiny.Vocab), randomTokens(r, b*p, tiny.Vocab)
	logits := cpuLogits(tiny, w, tokens, b, tt)
	logits32 := make([]float32, len(logits))
	for i, v := range logits {
		logits32[i] = float32(v)
	}
	gen, _ := cpuGreedy(tiny, w, prompt, b, p, n)
	refs := filepath.Join(t.TempDir(), "refs.safetensors")
	src := []safetensors.Source{
		safetensors.From("tokens", cudatest.Upload(t, ctx, tokens), b, tt),
		safetensors.From("logits_f32", cudatest.Upload(t, ctx, logits32), b, tt, tiny.Vocab),
		safetensors.From("top1_bf16", cudatest.Upload(t, ctx, argmaxRows(logits32, tiny.Vocab)), b, tt),
		safetensors.From("gen_prompt", cudatest.Upload(t, ctx, prompt), b, p),
		safetensors.From("gen_f32", cudatest.Upload(t, ctx, gen), b, n),
	}
	if err := safetensors.SaveFile(refs, src, nil, cuda.IOConfig{}); err != nil {
		t.Fatal(err)
	}
	got, shape, err := readRef[float32](refs, "logits_f32")
	if err != nil || !slices.Equal(got, logits32) || !slices.Equal(shape, []int{b, tt, tiny.Vocab}) {
		t.Fatalf("readRef(logits_f32) = %d values of shape %v, %v", len(got), shape, err)
	}
	if _, _, err := readRef[int64](refs, "logits_f32"); err == nil {
		t.Error("readRef[int64] of a float32 tensor: no error")
	}
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"compare f32", func() error { return compareF32(s, f, tiny.Heads, refs) }},
		{"compare bf16", func() error { return compareBF16(s, f, tiny.Heads, refs) }},
		{"generate f32", func() error { return runGenerate[float32](s, f, tiny.Heads, refs, n, 0, 0, true, true) }},
		{"generate bf16", func() error { return runGenerate[cuda.BFloat16](s, f, tiny.Heads, "", n, 3, 2, false, false) }},
		{"bench", func() error { return runBench(s, f, tiny.Heads, 1, benchSizes{B: 2, T: tiny.Context, P: 3, N: 6}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

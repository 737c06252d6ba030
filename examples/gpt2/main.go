// GPT-2: a GPT-2-shaped decoder on the GPU, from a safetensors file of
// Hugging Face's GPT-2 tensor names, built on package nd's arrays,
// package nn's layers (LayerNorm; fused causal attention over a KVCache
// whose length lives on the device), cuBLAS (cuBLASLt's bias and GELU
// epilogues, the residual added by its beta) and a few kernels of its own
// (compute.RawKernel: the embedding, argmax, the position's advance). It compares its logits with PyTorch's, generates
// greedily with the key/value cache (the decoding step captured once as a
// CUDA graph and replayed), and times prefill and decoding in bfloat16.
//
// bench/pyref/gpt2_ref.py makes the weights (random, GPT-2 small's shape)
// and PyTorch's references; scripts/gpu-gpt2.sh runs both on a GPU.
//
//	python bench/pyref/gpt2_ref.py /tmp/gpt2 --no-bench
//	go run ./examples/gpt2 -compare /tmp/gpt2
//	go run ./examples/gpt2 -weights /tmp/gpt2/model.safetensors -generate 32
//	go run ./examples/gpt2 -weights /tmp/gpt2/model.safetensors -bench
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/safetensors"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gpt2: ")
	var (
		compareDir = flag.String("compare", "", "compare the logits of `DIR`/refs.safetensors's tokens with PyTorch's (weights: DIR/model.safetensors unless -weights)")
		weights    = flag.String("weights", "", "the model: a safetensors `FILE` of Hugging Face's GPT-2 names")
		refs       = flag.String("refs", "", "PyTorch's references (`FILE`, refs.safetensors): -generate's prompts and float32 tokens (default: beside -weights, if there)")
		dtypes     = flag.String("dtype", "f32,bf16", "the element types to run, of f32 and bf16 (-compare and -generate)")
		generate   = flag.Int("generate", 0, "generate `N` tokens greedily for each prompt, with the key/value cache and the step's CUDA graph")
		noGraph    = flag.Bool("nograph", false, "-generate without the graph: each step's kernels launched one by one")
		batch      = flag.Int("batch", 4, "-generate's sequences, where the references give no prompts")
		promptLen  = flag.Int("prompt", 16, "-generate's prompt tokens, where the references give no prompts")
		bench      = flag.Bool("bench", false, "time bfloat16 prefill (8 sequences x 1024 tokens) and decoding (8 sequences, 256 tokens after a prompt of 64), printing JSON lines")
		runs       = flag.Int("runs", 5, "-bench's timed runs of each case (the median is printed)")
		heads      = flag.Int("heads", 12, "attention heads (the file does not say)")
		device     = flag.Int("device", 0, "the GPU's ordinal")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: gpt2 [-compare DIR | -weights FILE] [-generate N] [-bench] [flags]\n\n"+
			"A GPT-2 on the GPU from a safetensors file (bench/pyref/gpt2_ref.py makes one, with PyTorch's references).\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *weights == "" && *compareDir != "" {
		*weights = filepath.Join(*compareDir, "model.safetensors")
	}
	if *refs == "" && *weights != "" {
		if p := filepath.Join(filepath.Dir(*weights), "refs.safetensors"); exists(p) {
			*refs = p
		}
	}
	if *compareDir != "" {
		*refs = filepath.Join(*compareDir, "refs.safetensors")
	}
	if *weights == "" || (*compareDir == "" && *generate == 0 && !*bench) {
		flag.Usage()
		os.Exit(2)
	}
	ctx, s, err := cuda.Open(*device)
	check(err)
	defer ctx.Close()
	defer s.Close()
	f, err := safetensors.Open(*weights)
	check(err)
	defer f.Close()
	name, _ := ctx.Device().Name()
	cfg, err := configOf(f, *heads)
	check(err)
	fmt.Printf("# %s: %d layers, %d heads, %d wide, vocabulary %d, context %d, on %s\n", *weights, cfg.Layers, cfg.Heads, cfg.Width, cfg.Vocab, cfg.Context, name)

	for _, dt := range splitList(*dtypes) {
		if *compareDir != "" {
			if dt == "f32" {
				check(compareF32(s, f, *heads, *refs))
			} else {
				check(compareBF16(s, f, *heads, *refs))
			}
		}
		if *generate > 0 {
			if dt == "f32" {
				check(runGenerate[float32](s, f, *heads, *refs, *generate, *batch, *promptLen, !*noGraph, true))
			} else {
				check(runGenerate[cuda.BFloat16](s, f, *heads, *refs, *generate, *batch, *promptLen, !*noGraph, false))
			}
		}
	}
	if *bench {
		check(runBench(s, f, *heads, *runs, issueSizes))
	}
}

// compareF32 runs the references' tokens through the float32 model and
// prints the logits' error against PyTorch's float32 logits: the largest
// |Δ| over the largest |logit|, of each position (the figure checked
// against 1e-4, the worst position's) and of the whole batch.
func compareF32(s *cuda.Stream, f *safetensors.File, heads int, refs string) error {
	tokens, shape, err := readRef[int64](refs, "tokens")
	if err != nil {
		return err
	}
	want, _, err := readRef[float32](refs, "logits_f32")
	if err != nil {
		return err
	}
	m, err := Load[float32](s, f, heads)
	if err != nil {
		return err
	}
	defer m.Close()
	got, err := m.Logits(tokens, shape[0], shape[1])
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d logits, PyTorch's %d", len(got), len(want))
	}
	e := logitError(got, want, m.Vocab)
	top := agreement(argmaxRows(got, m.Vocab), argmaxRows(want, m.Vocab))
	fmt.Printf("compare f32: %d sequences x %d tokens: max |Δ|/max|logit| per position %.3g (worst position; goal <= 1e-4: %s), over the batch %.3g; max |Δ| %.3g; top-1 equal %.4f\n",
		shape[0], shape[1], e.rowRel, verdict(e.rowRel <= 1e-4), e.rel, e.abs, top)
	printJSON(map[string]any{"impl": "gocuda", "case": "compare-f32", "max_rel_per_position": e.rowRel, "max_rel_batch": e.rel, "max_abs": e.abs, "top1_equal": top, "pass": e.rowRel <= 1e-4})
	return nil
}

// compareBF16 runs the references' tokens through the bfloat16 model and
// prints how often its top-1 token is PyTorch's bfloat16 model's (the
// figure checked against 99%), and float32's.
func compareBF16(s *cuda.Stream, f *safetensors.File, heads int, refs string) error {
	tokens, shape, err := readRef[int64](refs, "tokens")
	if err != nil {
		return err
	}
	want16, _, err := readRef[int64](refs, "top1_bf16")
	if err != nil {
		return err
	}
	want32, _, err := readRef[float32](refs, "logits_f32")
	if err != nil {
		return err
	}
	m, err := Load[cuda.BFloat16](s, f, heads)
	if err != nil {
		return err
	}
	defer m.Close()
	got, err := m.Top1(tokens, shape[0], shape[1])
	if err != nil {
		return err
	}
	top32 := argmaxRows(want32, m.Vocab)
	vs16, vs32, torch := agreement(got, want16), agreement(got, top32), agreement(want16, top32)
	// The positions whose float32 top-1 leads the second by more than
	// bfloat16's resolution there (2^-7 of the logit): where rounding to
	// bfloat16 cannot decide the order alone.
	var clear []int
	for r := range len(top32) {
		a, b := top2(want32[r*m.Vocab : (r+1)*m.Vocab])
		if a-b > math.Abs(a)/128 {
			clear = append(clear, r)
		}
	}
	pick := func(x []int64) []int64 {
		out := make([]int64, len(clear))
		for i, r := range clear {
			out[i] = x[r]
		}
		return out
	}
	clearVs16 := agreement(pick(got), pick(want16))
	// How often the token chosen is, by the float32 logits, within
	// bfloat16's resolution of the best: a tie that bfloat16 cannot break.
	near := func(top []int64) float64 {
		n := 0
		for r, t := range top {
			row := want32[r*m.Vocab : (r+1)*m.Vocab]
			best := float64(slices.Max(row))
			if float64(row[t]) >= best-math.Abs(best)/128 {
				n++
			}
		}
		return float64(n) / float64(len(top))
	}
	fmt.Printf("compare bf16: top-1 equal to PyTorch bf16's on %.4f of %d positions (goal >= 0.99: %s), to PyTorch f32's on %.4f (PyTorch bf16's own: %.4f); on the %d positions whose f32 lead exceeds bf16's resolution: %.4f; top-1 within bf16's resolution of the f32 best: %.4f (PyTorch bf16's: %.4f)\n",
		vs16, len(got), verdict(vs16 >= 0.99), vs32, torch, len(clear), clearVs16, near(got), near(want16))
	printJSON(map[string]any{"impl": "gocuda", "case": "compare-bf16", "top1_equal_torch_bf16": vs16, "top1_equal_torch_f32": vs32,
		"torch_bf16_vs_f32": torch, "clear_positions": len(clear), "top1_equal_clear": clearVs16,
		"top1_near_f32_best": near(got), "torch_bf16_near_f32_best": near(want16), "pass": vs16 >= 0.99})
	return nil
}

// runGenerate generates n tokens for each prompt (the references' or random
// ones) and prints them; in float32, with how many match PyTorch's.
func runGenerate[T Float](s *cuda.Stream, f *safetensors.File, heads int, refs string, n, b, p int, graph, f32 bool) error {
	m, err := Load[T](s, f, heads)
	if err != nil {
		return err
	}
	defer m.Close()
	var prompt, want []int64
	if refs != "" {
		var shape []int
		if prompt, shape, err = readRef[int64](refs, "gen_prompt"); err != nil {
			return err
		}
		b, p = shape[0], shape[1]
		var wshape []int
		if want, wshape, err = readRef[int64](refs, "gen_f32"); err != nil {
			return err
		}
		if wshape[1] < n {
			want = nil // fewer than n: nothing to compare
		} else {
			w := make([]int64, 0, b*n)
			for i := range b {
				w = append(w, want[i*wshape[1]:i*wshape[1]+n]...)
			}
			want = w
		}
	} else {
		r := rand.New(rand.NewPCG(1, 2))
		for range b * p {
			prompt = append(prompt, r.Int64N(int64(m.Vocab)))
		}
	}
	d, err := m.NewDecoder(b, p, n)
	if err != nil {
		return err
	}
	defer d.Close()
	start := time.Now()
	got, err := d.Generate(prompt, graph)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	how := "the step's graph replayed"
	if !graph {
		how = "no graph"
	}
	fmt.Printf("generate %s: %d sequences, %d prompt tokens, %d new (%s), %v\n", suffixOf[T](), b, p, n, how, elapsed.Round(time.Millisecond))
	for i := range min(b, 4) {
		fmt.Printf("  %d: %v\n", i, got[i*n:(i+1)*n])
	}
	if f32 && want != nil {
		same := agreement(got, want)
		// The first position where each sequence leaves PyTorch's.
		first := n
		for i := range b {
			for j := range n {
				if got[i*n+j] != want[i*n+j] {
					first = min(first, j)
					break
				}
			}
		}
		fmt.Printf("  tokens equal to PyTorch's float32 greedy generation: %.4f (all sequences equal up to token %d of %d)\n", same, first, n)
		printJSON(map[string]any{"impl": "gocuda", "case": "generate-f32", "tokens_equal": same, "equal_prefix": first, "n": n, "graph": graph})
	}
	return nil
}

// benchSizes are -bench's cases: prefill of B sequences of T tokens, and
// N decoding steps of B sequences after P prompt tokens.
type benchSizes struct{ B, T, P, N int }

// issueSizes are issue 52's.
var issueSizes = benchSizes{B: 8, T: 1024, P: 64, N: 256}

// runBench times bfloat16 prefill of 8 sequences of 1024 tokens and 256
// decoding steps of 8 sequences after 64 prompt tokens (the graph's
// replays, and the same steps launched one by one), each the median of
// runs between CUDA events after warm-up runs, as gpt2_ref.py times
// PyTorch.
func runBench(s *cuda.Stream, f *safetensors.File, heads, runs int, z benchSizes) error {
	m, err := Load[cuda.BFloat16](s, f, heads)
	if err != nil {
		return err
	}
	defer m.Close()
	ctx := s.Context()
	begin, err := ctx.NewEvent()
	if err != nil {
		return err
	}
	defer begin.Close()
	end, err := ctx.NewEvent()
	if err != nil {
		return err
	}
	defer end.Close()
	// timed returns the median milliseconds of queue's work, after
	// setup's (off the clock) each time.
	timed := func(warm int, setup, queue func() error) (float64, error) {
		var ms []float64
		for i := range warm + runs {
			if err := setup(); err != nil {
				return 0, err
			}
			if err := begin.Record(s); err != nil {
				return 0, err
			}
			if err := queue(); err != nil {
				return 0, err
			}
			if err := end.Record(s); err != nil {
				return 0, err
			}
			if err := end.Synchronize(); err != nil {
				return 0, err
			}
			d, err := cuda.ElapsedTime(begin, end)
			if err != nil {
				return 0, err
			}
			if i >= warm {
				ms = append(ms, float64(d.Microseconds())/1e3)
			}
		}
		sort.Float64s(ms)
		return ms[len(ms)/2], nil
	}
	name, _ := ctx.Device().Name()
	row := func(c string, b, t int, ms float64, extra map[string]any) {
		r := map[string]any{"impl": "gocuda", "device": name, "case": c, "batch": b, "tokens": t, "ms": ms, "tokens_per_s": math.Round(float64(b*t)/(ms/1e3)*10) / 10}
		for k, v := range extra {
			r[k] = v
		}
		printJSON(r)
	}

	B, T := z.B, z.T
	if T > m.Context {
		return fmt.Errorf("the model's context is %d: the prefill case takes %d", m.Context, T)
	}
	w, err := m.newWork(B, T, false)
	if err != nil {
		return err
	}
	c, err := m.NewCache(B, T)
	if err != nil {
		w.free()
		return err
	}
	r := rand.New(rand.NewPCG(7, 7))
	tokens := make([]int64, B*T)
	for i := range tokens {
		tokens[i] = r.Int64N(int64(m.Vocab))
	}
	err = w.tok.CopyFromHost(tokens)
	var ms float64
	if err == nil {
		ms, err = timed(3, func() error { return nil }, func() error { return m.forward(w, c) })
	}
	w.free()
	c.Free()
	if err != nil {
		return err
	}
	row("prefill", B, T, ms, nil)

	P, N := z.P, z.N
	d, err := m.NewDecoder(B, P, N+1)
	if err != nil {
		return err
	}
	defer d.Close()
	prompt := tokens[:B*P]
	if err := d.Prefill(prompt); err != nil {
		return err
	}
	for _, graph := range []bool{true, false} {
		if err := d.Steps(1, graph); err != nil { // compiles, and makes the graph
			return err
		}
		ms, err := timed(2, func() error { return d.Prefill(prompt) }, func() error { return d.Steps(N, graph) })
		if err != nil {
			return err
		}
		c := "decode"
		if !graph {
			c = "decode-nograph"
		}
		row(c, B, N, ms, map[string]any{"prompt": P})
	}
	return nil
}

// Logits returns the float32 logits of b sequences of t tokens, [b·t, V].
func (m *Model[T]) Logits(tokens []int64, b, t int) ([]float32, error) {
	w, c, err := m.batch(tokens, b, t)
	if err != nil {
		return nil, err
	}
	defer w.free()
	defer c.Free()
	out := make([]T, b*t*m.Vocab)
	if err := w.logits.CopyToHost(out); err != nil {
		return nil, err
	}
	f := make([]float32, len(out))
	for i, v := range out {
		f[i] = toFloat(v)
	}
	return f, nil
}

// Top1 returns the top-1 token of each of b sequences of t tokens, chosen
// on the device.
func (m *Model[T]) Top1(tokens []int64, b, t int) ([]int64, error) {
	w, c, err := m.batch(tokens, b, t)
	if err != nil {
		return nil, err
	}
	defer w.free()
	defer c.Free()
	if err := m.k.argmax.Launch(rows(b*t, 1024, m.s), w.logits, w.tok, int32(m.Vocab)); err != nil {
		return nil, err
	}
	out := make([]int64, b*t)
	return out, w.tok.CopyToHost(out)
}

// batch queues the forward pass of b sequences of t tokens.
func (m *Model[T]) batch(tokens []int64, b, t int) (*work[T], *Cache[T], error) {
	if len(tokens) != b*t || t > m.Context {
		return nil, nil, fmt.Errorf("%d tokens for %d sequences of %d (context %d)", len(tokens), b, t, m.Context)
	}
	for _, v := range tokens {
		if v < 0 || v >= int64(m.Vocab) {
			return nil, nil, fmt.Errorf("token %d is not in the vocabulary of %d", v, m.Vocab)
		}
	}
	w, err := m.newWork(b, t, false)
	if err != nil {
		return nil, nil, err
	}
	c, err := m.NewCache(b, t)
	if err == nil {
		err = w.tok.CopyFromHost(tokens)
	}
	if err == nil {
		err = m.forward(w, c)
	}
	if err != nil {
		w.free()
		if c != nil {
			c.Free()
		}
		return nil, nil, err
	}
	return w, c, nil
}

func toFloat[T Float](v T) float32 {
	switch x := any(v).(type) {
	case cuda.BFloat16:
		return x.Float32()
	case float32:
		return x
	}
	return 0
}

type logitErr struct{ abs, rel, rowRel float64 }

// logitError compares rows of v logits.
func logitError(got, want []float32, v int) logitErr {
	var e logitErr
	var peak float64
	for r := 0; r < len(want)/v; r++ {
		var d, p float64
		for i := r * v; i < (r+1)*v; i++ {
			d = max(d, math.Abs(float64(got[i])-float64(want[i])))
			p = max(p, math.Abs(float64(want[i])))
		}
		e.abs, peak = max(e.abs, d), max(peak, p)
		if p > 0 {
			e.rowRel = max(e.rowRel, d/p)
		} else if d > 0 {
			e.rowRel = math.Inf(1)
		}
	}
	if peak > 0 {
		e.rel = e.abs / peak
	}
	return e
}

func argmaxRows(x []float32, v int) []int64 {
	out := make([]int64, len(x)/v)
	for r := range out {
		row := x[r*v : (r+1)*v]
		out[r] = int64(slices.Index(row, slices.Max(row)))
	}
	return out
}

// top2 returns the largest two values.
func top2(x []float32) (a, b float64) {
	a, b = math.Inf(-1), math.Inf(-1)
	for _, v := range x {
		f := float64(v)
		if f > a {
			a, b = f, a
		} else if f > b {
			b = f
		}
	}
	return a, b
}

func agreement(a, b []int64) float64 {
	if len(a) == 0 || len(a) != len(b) {
		return 0
	}
	n := 0
	for i := range a {
		if a[i] == b[i] {
			n++
		}
	}
	return float64(n) / float64(len(a))
}

// readRef reads tensor name of the safetensors file path into memory.
func readRef[T int64 | float32](path, name string) ([]T, []int, error) {
	if path == "" {
		return nil, nil, errors.New("no references: give -compare DIR or -refs FILE")
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	t, ok := f.Tensor(name)
	want := map[bool]safetensors.DType{true: "I64", false: "F32"}[isInt[T]()]
	if !ok || t.DType != want {
		return nil, nil, fmt.Errorf("%s has no %s tensor %s", path, want, name)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	data := raw[f.DataOffset+t.Begin : f.DataOffset+t.End]
	out := make([]T, t.Elements())
	for i := range out {
		var u uint64
		if isInt[T]() {
			for k := range 8 {
				u |= uint64(data[8*i+k]) << (8 * k)
			}
			out[i] = T(int64(u))
		} else {
			for k := range 4 {
				u |= uint64(data[4*i+k]) << (8 * k)
			}
			*any(&out[i]).(*float32) = math.Float32frombits(uint32(u))
		}
	}
	return out, t.Shape, nil
}

func isInt[T int64 | float32]() bool {
	_, ok := any(*new(T)).(int64)
	return ok
}

// splitList returns -dtype's types.
func splitList(s string) (out []string) {
	for _, x := range strings.Split(s, ",") {
		switch x = strings.TrimSpace(x); x {
		case "f32", "bf16":
			out = append(out, x)
		default:
			log.Fatalf("-dtype: %q is neither f32 nor bf16", x)
		}
	}
	return out
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func printJSON(v map[string]any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
	"github.com/gocuda/cuda/safetensors"
)

// Float is the model's element types: float32, and bfloat16 with float32
// accumulation (cuBLAS's, and the kernels').
type Float interface{ float32 | cuda.BFloat16 }

// Config is a GPT-2's shape.
type Config struct {
	Layers, Heads, Width, Vocab, Context int
}

// GPT2Small is the shape of OpenAI's smallest GPT-2.
var GPT2Small = Config{Layers: 12, Heads: 12, Width: 768, Vocab: 50257, Context: 1024}

// configOf reads the shape from the file's tensors (the heads are not in
// it).
func configOf(f *safetensors.File, heads int) (Config, error) {
	wte, ok1 := f.Tensor("wte.weight")
	wpe, ok2 := f.Tensor("wpe.weight")
	if !ok1 || !ok2 || len(wte.Shape) != 2 || len(wpe.Shape) != 2 {
		return Config{}, errors.New("gpt2: the file has no wte.weight or wpe.weight of two dimensions: not a GPT-2 of Hugging Face's names")
	}
	layer := regexp.MustCompile(`^h\.(\d+)\.`)
	n := 0
	for _, t := range f.Tensors {
		if m := layer.FindStringSubmatch(t.Name); m != nil {
			i, _ := strconv.Atoi(m[1])
			n = max(n, i+1)
		}
	}
	c := Config{Layers: n, Heads: heads, Width: wte.Shape[1], Vocab: wte.Shape[0], Context: wpe.Shape[0]}
	if heads <= 0 || c.Width%heads != 0 {
		return Config{}, fmt.Errorf("gpt2: %d heads do not divide the width %d", heads, c.Width)
	}
	return c, nil
}

// layer is one transformer block's weights, under Hugging Face's names
// (h.N.ln_1.weight ...). The linear layers' weights are [in, out], as
// GPT-2's Conv1D: y = x·W + b.
type layer[T Float] struct {
	ln1w, ln1b, attnW, attnB, attnProjW, attnProjB *cuda.DeviceBuffer[T]
	ln2w, ln2b, fcW, fcB, mlpProjW, mlpProjB       *cuda.DeviceBuffer[T]
}

// Model is a GPT-2 on the GPU, its weights in T.
type Model[T Float] struct {
	Config
	s      *cuda.Stream
	blas   *cublas.Handle
	k      *kernels
	arrays []*nd.Array[T] // the weights, freed by Close
	zero   *cuda.DeviceBuffer[int32]

	wte, wpe, lnfW, lnfB *cuda.DeviceBuffer[T]
	layers               []layer[T]
}

// Load reads a GPT-2 of Hugging Face's tensor names (float32 or bfloat16)
// from f into device memory on s, as T.
func Load[T Float](s *cuda.Stream, f *safetensors.File, heads int) (m *Model[T], err error) {
	cfg, err := configOf(f, heads)
	if err != nil {
		return nil, err
	}
	k, err := newKernels(suffixOf[T]())
	if err != nil {
		return nil, err
	}
	w, err := f.Load(s.Context(), cuda.IOConfig{})
	if err != nil {
		return nil, err
	}
	defer w.Free() // each weight is copied (cast) into an array of the model's own
	m = &Model[T]{Config: cfg, s: s, k: k}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	if m.blas, err = cublas.New(s); err != nil {
		return nil, err
	}
	if m.zero, err = cuda.Zeroed[int32](s.Context(), 1); err != nil {
		return nil, err
	}
	get := func(name string, shape ...int) *cuda.DeviceBuffer[T] {
		if err != nil {
			return nil
		}
		var a *nd.Array[T]
		if a, err = weight[T](s, w, name, shape); err != nil {
			return nil
		}
		m.arrays = append(m.arrays, a)
		var b *cuda.DeviceBuffer[T]
		b, err = a.Buffer()
		return b
	}
	C := cfg.Width
	m.wte, m.wpe = get("wte.weight", cfg.Vocab, C), get("wpe.weight", cfg.Context, C)
	m.lnfW, m.lnfB = get("ln_f.weight", C), get("ln_f.bias", C)
	for i := range cfg.Layers {
		p := fmt.Sprintf("h.%d.", i)
		m.layers = append(m.layers, layer[T]{
			ln1w: get(p+"ln_1.weight", C), ln1b: get(p+"ln_1.bias", C),
			attnW: get(p+"attn.c_attn.weight", C, 3*C), attnB: get(p+"attn.c_attn.bias", 3*C),
			attnProjW: get(p+"attn.c_proj.weight", C, C), attnProjB: get(p+"attn.c_proj.bias", C),
			ln2w: get(p+"ln_2.weight", C), ln2b: get(p+"ln_2.bias", C),
			fcW: get(p+"mlp.c_fc.weight", C, 4*C), fcB: get(p+"mlp.c_fc.bias", 4*C),
			mlpProjW: get(p+"mlp.c_proj.weight", 4*C, C), mlpProjB: get(p+"mlp.c_proj.bias", C),
		})
	}
	if err != nil {
		return nil, err
	}
	return m, s.Synchronize()
}

// weight returns the tensor name of w as a new array of T: copied, or
// cast (by nd.Cast) from the file's float32 or bfloat16.
func weight[T Float](s *cuda.Stream, w *safetensors.Weights, name string, shape []int) (*nd.Array[T], error) {
	t, ok := w.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("gpt2: the file has no tensor %s", name)
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	if int(t.Elements()) != n || len(t.Shape) != len(shape) {
		return nil, fmt.Errorf("gpt2: %s has shape %v, want %v", name, t.Shape, shape)
	}
	switch t.DType {
	case "F32":
		return castFrom[T, float32](s, w, name, n)
	case "BF16":
		return castFrom[T, cuda.BFloat16](s, w, name, n)
	}
	return nil, fmt.Errorf("gpt2: %s is %s: float32 or bfloat16 weights only", name, t.DType)
}

// castFrom returns tensor name of w, of U, as a new array of T.
func castFrom[T Float, U Float](s *cuda.Stream, w *safetensors.Weights, name string, n int) (*nd.Array[T], error) {
	b, err := safetensors.Get[U](w, name)
	if err != nil {
		return nil, err
	}
	a, err := nd.FromBuffer(s, b, n)
	if err != nil {
		return nil, err
	}
	return nd.Cast[T](a) // a new array even where T is U
}

// Close frees the model's memory.
func (m *Model[T]) Close() error {
	var errs []error
	if m.blas != nil {
		errs = append(errs, m.blas.Close())
	}
	for _, a := range m.arrays {
		errs = append(errs, a.Free())
	}
	if m.zero != nil {
		errs = append(errs, m.zero.Free())
	}
	return errors.Join(errs...)
}

// Cache is the keys and values of every layer for B sequences of up to L
// positions: package nn's KVCache, whose length lives on the device.
type Cache[T Float] struct {
	B, L   int
	layers []*nn.KVCache[T]
}

// NewCache makes a cache for b sequences of up to l positions.
func (m *Model[T]) NewCache(b, l int) (*Cache[T], error) {
	if l > m.Context {
		return nil, fmt.Errorf("gpt2: a cache of %d positions, past the model's context of %d", l, m.Context)
	}
	c := &Cache[T]{B: b, L: l}
	for range m.Layers {
		kv, err := nn.NewKVCache[T](m.s, b, m.Heads, l, m.Width/m.Heads)
		if err != nil {
			c.Free()
			return nil, err
		}
		c.layers = append(c.layers, kv)
	}
	return c, nil
}

// Reset empties the cache, in stream order.
func (c *Cache[T]) Reset() error {
	for _, kv := range c.layers {
		if err := kv.Reset(); err != nil {
			return err
		}
	}
	return nil
}

// Free frees the cache's memory.
func (c *Cache[T]) Free() error {
	var errs []error
	for _, kv := range c.layers {
		errs = append(errs, kv.Free())
	}
	return errors.Join(errs...)
}

// work is the memory of a forward pass of b sequences of t tokens.
type work[T Float] struct {
	b, t            int
	tok             *cuda.DeviceBuffer[int64]
	x, h, qkv, y, f *cuda.DeviceBuffer[T]
	// q, k and v are the heads in qkv, [b, t, H, D] views of its rows
	// (strided: a row holds q's, k's and v's heads side by side), which
	// the attention reads where they lie; y4 is y as [b, t, H, D].
	q, k, v, y4 *nd.Array[T]
	logits      *cuda.DeviceBuffer[T]
	arrays      []*nd.Array[T]
	tokArray    *nd.Array[int64]
	lastOnly    bool
}

// newWork allocates a pass's memory; the logits are of every position, or
// of each sequence's last (lastOnly).
func (m *Model[T]) newWork(b, t int, lastOnly bool) (w *work[T], err error) {
	C, H, D := m.Width, m.Heads, m.Width/m.Heads
	w = &work[T]{b: b, t: t, lastOnly: lastOnly}
	arr := func(shape ...int) *nd.Array[T] {
		if err != nil {
			return nil
		}
		var a *nd.Array[T]
		a, err = nd.Empty[T](m.s, shape...)
		if err == nil {
			w.arrays = append(w.arrays, a)
		}
		return a
	}
	buf := func(shape ...int) *cuda.DeviceBuffer[T] {
		a := arr(shape...)
		if err != nil {
			return nil
		}
		var b *cuda.DeviceBuffer[T]
		b, err = a.Buffer()
		return b
	}
	w.x, w.h, w.qkv, w.y, w.f = buf(b*t, C), buf(b*t, C), buf(b*t, 3*C), buf(b*t, C), buf(b*t, 4*C)
	if err == nil {
		var qkv *nd.Array[T]
		if qkv, err = nd.FromBuffer(m.s, w.qkv, b, t, 3, H, D); err == nil {
			w.q, w.k, w.v = head(qkv, 0, &err), head(qkv, 1, &err), head(qkv, 2, &err)
		}
	}
	if err == nil {
		w.y4, err = nd.FromBuffer(m.s, w.y, b, t, H, D)
	}
	if lastOnly {
		w.logits = buf(b, m.Vocab)
	} else {
		w.logits = buf(b*t, m.Vocab)
	}
	if err == nil {
		w.tokArray, err = nd.Zeros[int64](m.s, b*t)
	}
	if err == nil {
		w.tok, err = w.tokArray.Buffer()
	}
	if err != nil {
		w.free()
		return nil, err
	}
	return w, nil
}

func (w *work[T]) free() error {
	var errs []error
	for _, a := range w.arrays {
		errs = append(errs, a.Free())
	}
	if w.tokArray != nil {
		errs = append(errs, w.tokArray.Free())
	}
	return errors.Join(errs...)
}

// linear queues y = epi(x·W + b) + beta·y for x of rows×in, W of in×out.
func (m *Model[T]) linear(x *cuda.DeviceBuffer[T], rows, in int, w, b *cuda.DeviceBuffer[T], out int, beta float64, y *cuda.DeviceBuffer[T], epi cublas.Epilogue) error {
	return cublas.Matmul(m.blas, 1, cublas.NewMatrix(x, rows, in), cublas.NewMatrix(w, in, out), beta, cublas.NewMatrix(y, rows, out), epi, b)
}

// layernorm queues y = LayerNorm(x) over n rows of the model's width
// (package nn's, over nd's views of the buffers).
func (m *Model[T]) layernorm(x, w, b, y *cuda.DeviceBuffer[T], n int) error {
	xa, err := nd.FromBuffer(m.s, x, n, m.Width)
	if err != nil {
		return err
	}
	ya, err := nd.FromBuffer(m.s, y, n, m.Width)
	if err != nil {
		return err
	}
	wa, err := nd.FromBuffer(m.s, w)
	if err != nil {
		return err
	}
	ba, err := nd.FromBuffer(m.s, b)
	if err != nil {
		return err
	}
	return nn.LayerNormInto(ya, xa, wa, ba, 1e-5)
}

// forward queues the pass of w.tok (b sequences of t tokens) at positions
// 0 ... t-1, the cache emptied first and given their keys and values, and
// the logits into w.logits.
func (m *Model[T]) forward(w *work[T], c *Cache[T]) error {
	if c.B != w.b || c.L < w.t {
		return fmt.Errorf("gpt2: a cache of %d sequences of %d positions for a pass of %d of %d", c.B, c.L, w.b, w.t)
	}
	if err := c.Reset(); err != nil {
		return err
	}
	return m.pass(w, c, m.zero)
}

// pass queues the pass of w.tok, b sequences of t tokens at positions *pos
// ... *pos+t-1, their keys and values appended to c, and the logits into
// w.logits.
func (m *Model[T]) pass(w *work[T], c *Cache[T], pos *cuda.DeviceBuffer[int32]) error {
	C, n := m.Width, w.b*w.t
	if err := m.k.embed.Launch(cuda.LaunchConfigFor(n*C, m.s), w.tok, m.wte, m.wpe, w.x, pos, int32(w.t), int32(C), int64(n*C)); err != nil {
		return err
	}
	for i, l := range m.layers {
		if err := m.layernorm(w.x, l.ln1w, l.ln1b, w.h, n); err != nil {
			return err
		}
		if err := m.linear(w.h, n, C, l.attnW, l.attnB, 3*C, 0, w.qkv, cublas.NoEpilogue); err != nil {
			return err
		}
		if err := m.attention(w, c.layers[i]); err != nil {
			return err
		}
		// The residual added by cuBLAS: x = y·W + b + 1·x.
		if err := m.linear(w.y, n, C, l.attnProjW, l.attnProjB, C, 1, w.x, cublas.NoEpilogue); err != nil {
			return err
		}
		if err := m.layernorm(w.x, l.ln2w, l.ln2b, w.h, n); err != nil {
			return err
		}
		if err := m.linear(w.h, n, C, l.fcW, l.fcB, 4*C, 0, w.f, cublas.GELU); err != nil {
			return err
		}
		if err := m.linear(w.f, n, 4*C, l.mlpProjW, l.mlpProjB, C, 1, w.x, cublas.NoEpilogue); err != nil {
			return err
		}
	}
	if err := m.layernorm(w.x, m.lnfW, m.lnfB, w.h, n); err != nil {
		return err
	}
	hm, rows := cublas.NewMatrix(w.h, n, C), n
	if w.lastOnly { // each sequence's last row: a matrix of stride t·C
		last, err := w.h.Slice((w.t-1)*C, (w.b-1)*w.t*C+C)
		if err != nil {
			return err
		}
		hm, rows = cublas.Matrix[T]{Data: last, Rows: w.b, Cols: C, Stride: w.t * C, Layout: cublas.RowMajor}, w.b
	}
	return cublas.Matmul(m.blas, 1, hm, cublas.NewMatrix(m.wte, m.Vocab, C).T(), 0, cublas.NewMatrix(w.logits, rows, m.Vocab), cublas.NoEpilogue, nil)
}

// attention queues a layer's attention of the pass, from w.qkv, into w.y
// ([b·t, C], the heads side by side), in LayoutBSHD: k and v appended to
// the layer's cache and package nn's fused attention of q over it
// (causal, the queries the cache's last t positions), each read from
// qkv's rows where it lies and written to y's, with no copy on the way
// in or out.
func (m *Model[T]) attention(w *work[T], kv *nn.KVCache[T]) error {
	if err := kv.AppendLayout(w.k, w.v, nn.LayoutBSHD); err != nil {
		return err
	}
	return kv.AttentionInto(w.y4, w.q, nn.AttentionOptions{Causal: true, Layout: nn.LayoutBSHD})
}

// head returns qkv[:, :, i] ([b, t, H, D]), or nil with *err set where
// *err was nil.
func head[T Float](qkv *nd.Array[T], i int, err *error) *nd.Array[T] {
	if *err != nil {
		return nil
	}
	var h *nd.Array[T]
	h, *err = qkv.Index(2, i)
	return h
}

package nn

import (
	"errors"
	"sync/atomic"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/closed"
	"github.com/gocuda/cuda/nd"
)

// KVCache is one attention layer's keys and values of the positions
// decoded so far: arrays [B, Hkv, MaxLen, D] allocated once, and a length,
// kept on the device. Append writes new positions in place after the
// length and advances it; Attention attends new queries to the first
// Len positions.
//
// The length lives in device memory, read and advanced by the kernels
// themselves, never by the host: so a decoding step (Append of one
// position's keys and values, then AttentionInto of its query) can be
// captured once in a CUDA graph and replayed, each replay writing the
// next position and attending to one more key:
//
//	cache.Append(k, v)                  // once outside the capture: compiles the kernels
//	cache.AttentionInto(out, q, opts)
//	g, err := s.Capture(cuda.CaptureGlobal, func() error {
//		if err := cache.Append(k, v); err != nil {
//			return err
//		}
//		return cache.AttentionInto(out, q, opts)
//	})
//	for step := ...; {
//		// write the step's q, k and v in place (the graph reads those arrays)
//		g.Launch(s)
//	}
//
// Reset (in stream order) starts a new sequence. An Append that would
// pass MaxLen writes nothing and leaves the length; Len then reports the
// overflow. Where the host can tell (the appends it queued alone pass
// MaxLen), Append returns the error at once.
//
// A KVCache belongs to the stream it was made on: its work is queued
// there, and its arguments must be of that stream. The zero KVCache, and
// a nil one, return errors wrapping cuda.ErrInvalidValue.
type KVCache[T Float] struct {
	k, v              *nd.Array[T]
	kb                *cuda.DeviceBuffer[T]
	vb                *cuda.DeviceBuffer[T]
	state             *cuda.DeviceBuffer[int32] // [length, overflowed]
	s                 *cuda.Stream
	b, hkv, maxLen, d int
	// queued counts the positions the host has appended since the last
	// Reset: a lower bound of the length (graph replays add to it
	// unseen), so that an Append past MaxLen it alone makes is an error
	// at once.
	queued atomic.Int64
	// replayed records that an Append was captured: a graph's replays
	// lengthen the cache unseen, so that queued is no longer its length.
	// Until then the host knows the length, and cuDNN's fused attention
	// (EnvAttention "cudnn") may run over it.
	replayed atomic.Bool
}

// NewKVCache returns an empty cache of batch sequences, kvHeads key/value
// heads, maxLen positions and head dimension headDim, allocated in stream
// order on s.
func NewKVCache[T Float](s *cuda.Stream, batch, kvHeads, maxLen, headDim int) (*KVCache[T], error) {
	const op = "NewKVCache"
	switch {
	case s == nil:
		return nil, errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	case batch <= 0 || kvHeads <= 0 || maxLen <= 0 || headDim <= 0:
		return nil, errorf(op, cuda.ErrInvalidValue, "batch %d, kvHeads %d, maxLen %d, headDim %d: each must be positive", batch, kvHeads, maxLen, headDim)
	case headDim > attnMaxD:
		return nil, errorf(op, cuda.ErrNotSupported, "head dimension %d: attention takes D up to %d", headDim, attnMaxD)
	case batch > 65535 || kvHeads > 65535:
		return nil, errorf(op, cuda.ErrNotSupported, "batch %d, kvHeads %d: attention takes 65535 of each at most (a grid's y and z)", batch, kvHeads)
	case maxLen > 1<<30:
		return nil, errorf(op, cuda.ErrInvalidValue, "maxLen %d too large", maxLen)
	}
	c := &KVCache[T]{s: s, b: batch, hkv: kvHeads, maxLen: maxLen, d: headDim}
	var err error
	fail := func(e error) (*KVCache[T], error) {
		if ferr := c.Free(); ferr != nil {
			c.Free() // a refusal leaves it allocated: once more
			e = errors.Join(e, ferr)
		}
		return nil, wrap(op, e)
	}
	if c.k, err = nd.Zeros[T](s, batch, kvHeads, maxLen, headDim); err != nil {
		c.k = nil
		return fail(err)
	}
	if c.v, err = nd.Zeros[T](s, batch, kvHeads, maxLen, headDim); err != nil {
		c.v = nil
		return fail(err)
	}
	if c.kb, err = c.k.Buffer(); err != nil {
		return fail(err)
	}
	if c.vb, err = c.v.Buffer(); err != nil {
		return fail(err)
	}
	if c.state, err = cuda.AllocAsync[int32](s, 2); err != nil {
		c.state = nil
		return fail(err)
	}
	if err = c.state.Memset32Async(0, s); err != nil {
		return fail(err)
	}
	return c, nil
}

// valid returns op's error for a nil or zero cache.
func (c *KVCache[T]) valid(op string) error {
	if c == nil || c.state == nil {
		return errorf(op, cuda.ErrInvalidValue, "a nil or zero *KVCache: make one with NewKVCache")
	}
	return nil
}

// live returns op's cuda.ErrClosed error for a freed cache (its length's
// memory freed, or its context closed), for the calls that queue nothing
// (no positions, no queries): those that queue work find it closed as
// they launch.
func (c *KVCache[T]) live(op string) error {
	if closed.Buffer(c.state) {
		return errorf(op, cuda.ErrClosed, "the cache is freed (or its context closed)")
	}
	return nil
}

// K returns the cache's keys, [B, Hkv, MaxLen, D]: positions past the
// length hold what was last written there (zeros at first).
func (c *KVCache[T]) K() *nd.Array[T] {
	if c == nil {
		return nil
	}
	return c.k
}

// V returns the cache's values, as K.
func (c *KVCache[T]) V() *nd.Array[T] {
	if c == nil {
		return nil
	}
	return c.v
}

// MaxLen returns the positions the cache holds at most (0 for a nil or
// zero cache).
func (c *KVCache[T]) MaxLen() int {
	if c == nil {
		return 0
	}
	return c.maxLen
}

// Stream returns the stream the cache's work is queued on.
func (c *KVCache[T]) Stream() *cuda.Stream {
	if c == nil {
		return nil
	}
	return c.s
}

// Len returns the cache's length, read from the device once the work
// queued on its stream is done. An Append that would have passed MaxLen
// (and wrote nothing) makes it an error wrapping cuda.ErrInvalidValue,
// until Reset.
func (c *KVCache[T]) Len() (int, error) {
	const op = "KVCache.Len"
	if err := c.valid(op); err != nil {
		return 0, err
	}
	if err := c.s.Synchronize(); err != nil {
		return 0, wrap(op, err)
	}
	var st [2]int32
	if err := c.state.CopyToHost(st[:]); err != nil {
		return 0, wrap(op, err)
	}
	if st[1] != 0 {
		return int(st[0]), errorf(op, cuda.ErrInvalidValue, "an Append would have passed MaxLen %d (at length %d) and wrote nothing", c.maxLen, st[0])
	}
	return int(st[0]), nil
}

// Reset empties the cache, in stream order: its length becomes 0 and the
// overflow is forgotten (the arrays keep their contents).
func (c *KVCache[T]) Reset() error {
	const op = "KVCache.Reset"
	if err := c.valid(op); err != nil {
		return err
	}
	if err := c.state.Memset32Async(0, c.s); err != nil {
		return wrap(op, err)
	}
	c.queued.Store(0) // a lower bound, whether this runs now or at a replay
	if c.s.Capturing() {
		c.replayed.Store(true) // the length is 0 at a replay only: the host no longer knows it
	}
	return nil
}

// Append writes k and v, [B, Hkv, n, D] (of the cache's stream, not views
// of K or V; views with strides of other arrays, D's stride 1, as
// Attention's q, k and v), to positions Len .. Len+n-1 of the cache, and adds n to the
// length, in stream order: two kernels, which read the length on the
// device (so a captured Append writes one position further at each
// replay).
func (c *KVCache[T]) Append(k, v *nd.Array[T]) error {
	return c.appendIn("KVCache.Append", k, v, LayoutBHSD)
}

// AppendLayout is Append of k and v in layout l: with LayoutBSHD, [B, n,
// Hkv, D] (a projection's output reshaped).
func (c *KVCache[T]) AppendLayout(k, v *nd.Array[T], l AttentionLayout) error {
	return c.appendIn("KVCache.AppendLayout", k, v, l)
}

func (c *KVCache[T]) appendIn(op string, k, v *nd.Array[T], l AttentionLayout) error {
	if err := c.valid(op); err != nil {
		return err
	}
	if err := attnLayoutValid(op, l); err != nil {
		return err
	}
	kb, ks, kst, err := attnOperand(op, "k", k, l, true)
	if err != nil {
		return err
	}
	vb, vs, vst, err := attnOperand(op, "v", v, l, true)
	if err != nil {
		return err
	}
	if k.Stream() != c.s || v.Stream() != c.s {
		return errorf(op, cuda.ErrInvalidValue, "k and v must belong to the cache's stream")
	}
	want := [4]int{c.b, c.hkv, ks[2], c.d}
	if ks != want || vs != want {
		return errorf(op, cuda.ErrInvalidValue, "k %v and v %v: want %v, alike", k.Shape(), v.Shape(), l.shape(c.b, c.hkv, -1, c.d))
	}
	// k and v are read while the cache is written: not views of it.
	for _, dst := range []struct {
		name string
		span layerSpan
	}{{"the cache's K", layerSpanOf(c.kb)}, {"the cache's V", layerSpanOf(c.vb)}} {
		if err := layerAliased(op, dst.name, dst.span, layerIn{"k", layerSpanOf(kb), false}, layerIn{"v", layerSpanOf(vb), false}); err != nil {
			return err
		}
	}
	n := ks[2]
	if n == 0 {
		return c.live(op) // nothing to queue, but a freed cache is still an error
	}
	if q := c.queued.Load(); q+int64(n) > int64(c.maxLen) {
		return errorf(op, cuda.ErrInvalidValue, "%d positions after the %d appended since Reset pass MaxLen %d", n, q, c.maxLen)
	}
	m, err := attnKernels(attnVariant{kind: attnKind[T](), d: c.d, tiles: attnDefaultTiles(c.d)})
	if err != nil {
		return wrap(op, err)
	}
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: n, Y: c.hkv, Z: c.b}, Block: cuda.Dim3{X: min(c.d, 128), Y: 1, Z: 1}, Stream: c.s}
	if err := m.kvAppend.Launch(cfg, c.kb, c.vb, kb, vb, kst[0], kst[1], kst[2], vst[0], vst[1], vst[2], c.state, int32(n), int32(c.maxLen)); err != nil {
		return wrap(op, err)
	}
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	if err := m.kvAdvance.Launch(cuda.LaunchConfig{Grid: one, Block: one, Stream: c.s}, c.state, int32(n), int32(c.maxLen)); err != nil {
		return wrap(op, err)
	}
	if c.s.Capturing() {
		// captured, not run: the positions come with the replays, unseen,
		// and counting them now would make queued more than the length
		// (an Append that fits refused) until the graph is launched
		c.replayed.Store(true)
	} else {
		c.queued.Add(int64(n))
	}
	return nil
}

// launch runs the attention p over the cache into ob: through cuDNN's
// fused attention over the length the host knows, where EnvAttention
// allows it (always under "cudnn"; under "auto" for a prompt's pass, of
// attnCacheQueries queries or more), the host knows the length (no Append
// captured) and the shape allows, else by nn's kernels, which read the
// length on the device.
func (c *KVCache[T]) launch(op string, ob *cuda.DeviceBuffer[T], p *attnParams[T]) error {
	mode := attnMode()
	if (mode == "cudnn" || mode == "auto" && p.Sq >= attnCacheQueries) && !c.replayed.Load() && !c.s.Capturing() {
		if ran, err := attnCUDNNOver(op, ob, p, int(c.queued.Load())); ran {
			return err
		}
	}
	return attnLaunch(op, ob, p)
}

// attnCacheQueries is the fewest queries "auto" sends a KV cache's
// attention to cuDNN with: a prompt's pass, where cuDNN's kernel is the
// faster (1.4-1.9x FlashAttention's at 512-4096 positions on an H100,
// nn's own 0.7-0.9x), and cuDNN's plan is made once per prompt length.
// Decoding steps (a query or a few) stay nn's kernel: the cache's length
// changes at every step, and cuDNN makes a plan for each (eager GPT-2
// decoding ran 7,917 tokens/s through cuDNN, 9,836 through nn's kernel).
const attnCacheQueries = 64

// Attention returns the attention of q, [B, H, Sq, D] with Hkv dividing
// H, over the cache's first Len positions (read on the device), as
// Attention(q, K[:, :, :Len], V[:, :, :Len], opts): with opts.Causal, the
// queries are the last Sq positions (append their keys and values
// first).
func (c *KVCache[T]) Attention(q *nd.Array[T], opts AttentionOptions) (*nd.Array[T], error) {
	const op = "KVCache.Attention"
	p, err := c.prepare(op, q, opts)
	if err != nil {
		return nil, err
	}
	out, err := nd.Empty[T](c.s, opts.Layout.shape(p.B, p.H, p.Sq, p.D)...)
	if err != nil {
		return nil, wrap(op, err)
	}
	ob, err := out.Buffer()
	if err == nil {
		err = c.launch(op, ob, p)
	}
	if err != nil {
		if e := out.Free(); e != nil {
			out.Free() // a refusal leaves it allocated: once more
			err = errors.Join(err, e)
		}
		return nil, wrap(op, err)
	}
	return out, nil
}

// AttentionInto writes c.Attention(q, opts) into out, [B, H, Sq, D] (or
// [B, Sq, H, D] with LayoutBSHD) sharing no memory with q or the cache,
// allocating nothing: the form to capture.
func (c *KVCache[T]) AttentionInto(out, q *nd.Array[T], opts AttentionOptions) error {
	const op = "KVCache.AttentionInto"
	p, err := c.prepare(op, q, opts)
	if err != nil {
		return err
	}
	ob, err := attnOut(op, out, p, opts.Layout)
	if err != nil {
		return err
	}
	return wrap(op, c.launch(op, ob, p))
}

// prepare returns the launch of q's attention over the cache.
func (c *KVCache[T]) prepare(op string, q *nd.Array[T], opts AttentionOptions) (*attnParams[T], error) {
	if err := c.valid(op); err != nil {
		return nil, err
	}
	if err := attnLayoutValid(op, opts.Layout); err != nil {
		return nil, err
	}
	l := opts.Layout
	qb, qs, qst, err := attnOperand(op, "q", q, l, true)
	if err != nil {
		return nil, err
	}
	if q.Stream() != c.s {
		return nil, errorf(op, cuda.ErrInvalidValue, "q must belong to the cache's stream")
	}
	if qs[0] != c.b || qs[3] != c.d {
		return nil, errorf(op, cuda.ErrInvalidValue, "q has shape %v: want %s with B %d and D %d", q.Shape(), l.names("H", "Sq"), c.b, c.d)
	}
	_, kst := LayoutBHSD.dims([]int{c.b, c.hkv, c.maxLen, c.d})
	p := &attnParams[T]{s: c.s, q: qb, k: c.kb, v: c.vb, lenp: c.state, B: c.b, H: qs[1], Hkv: c.hkv, Sq: qs[2], Sk: c.maxLen, D: c.d, causal: opts.Causal,
		qst: qst, kst: kst, vst: kst}
	_, p.ost = l.dims(l.shape(p.B, p.H, p.Sq, p.D))
	if err := p.check(op, opts); err != nil {
		return nil, err
	}
	if p.B == 0 || p.H == 0 || p.Sq == 0 {
		// attnLaunch queues nothing for no queries, whose launch would
		// have found the cache freed: it is an error all the same
		if err := c.live(op); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Free releases the cache's memory, in stream order; its calls then
// return errors. Free of a nil or zero cache, or a second time, does
// nothing.
func (c *KVCache[T]) Free() error {
	if c == nil {
		return nil
	}
	var first error
	for _, f := range []func() error{c.k.Free, c.v.Free} {
		if err := f(); err != nil && first == nil {
			first = err
		}
	}
	if c.state != nil {
		if err := c.state.Free(); err != nil && first == nil {
			first = err
		}
	}
	return wrap("KVCache.Free", first)
}

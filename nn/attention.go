package nn

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"weak"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/nd"
)

// AttentionOptions tune Attention. The zero value is attention without a
// mask, scaled by 1/sqrt(D).
type AttentionOptions struct {
	// Causal masks each query from the keys after its position. The
	// queries are aligned to the end of the keys, as decoding needs: with
	// Sq queries and Sk keys, query i is at position Sk-Sq+i and sees keys
	// 0 through Sk-Sq+i (PyTorch's is_causal aligns them to the start
	// instead; the two agree where Sq == Sk). Where Sq > Sk, the first
	// Sq-Sk queries see no key and their output is zero.
	Causal bool
	// Scale multiplies QK^T before the softmax; 0 means 1/sqrt(D). It
	// must be finite as a float32 (the kernels compute in float32).
	Scale float64
	// Layout is the order of the arrays' axes (q, k, v and the result
	// alike): LayoutBHSD (the zero value) or LayoutBSHD.
	Layout AttentionLayout
}

// AttentionLayout is the order of the axes of attention's arrays.
type AttentionLayout int

const (
	// LayoutBHSD is [batch, heads, positions, D], PyTorch's
	// scaled_dot_product_attention's.
	LayoutBHSD AttentionLayout = iota
	// LayoutBSHD is [batch, positions, heads, D], FlashAttention's own: a
	// projection's output [B, S, H*D] reshaped, with no transpose on the
	// way in, and the result reshaped to [B, S, H*D] for the next
	// projection, with none on the way out.
	LayoutBSHD
)

// String names the layout, as "BHSD".
func (l AttentionLayout) String() string {
	switch l {
	case LayoutBHSD:
		return "BHSD"
	case LayoutBSHD:
		return "BSHD"
	}
	return fmt.Sprintf("AttentionLayout(%d)", int(l))
}

// dims returns an array's shape in this layout as (B, heads, positions,
// D), and its strides of B, heads and positions, contiguous. (Of an
// array's strides, d is them in the order of (B, heads, positions, D).)
func (l AttentionLayout) dims(shape []int) (d [4]int, st [3]int64) {
	if l == LayoutBSHD {
		d = [4]int{shape[0], shape[2], shape[1], shape[3]}
		return d, [3]int64{int64(shape[1]) * int64(shape[2]) * int64(shape[3]), int64(shape[3]), int64(shape[2]) * int64(shape[3])}
	}
	d = [4]int{shape[0], shape[1], shape[2], shape[3]}
	return d, [3]int64{int64(shape[1]) * int64(shape[2]) * int64(shape[3]), int64(shape[2]) * int64(shape[3]), int64(shape[3])}
}

// shape is the array shape of (b, heads, positions, d) in this layout.
func (l AttentionLayout) shape(b, heads, positions, d int) []int {
	if l == LayoutBSHD {
		return []int{b, positions, heads, d}
	}
	return []int{b, heads, positions, d}
}

// names are the axes' names in this layout, for errors: [B, heads, S, D].
func (l AttentionLayout) names(heads, positions string) string {
	if l == LayoutBSHD {
		return "[B, " + positions + ", " + heads + ", D]"
	}
	return "[B, " + heads + ", " + positions + ", D]"
}

// Attention returns scaled dot-product attention, softmax(Q K^T * scale) V,
// of q [B, H, Sq, D] over keys k and values v [B, Hkv, Sk, D], as
// PyTorch's scaled_dot_product_attention: a result [B, H, Sq, D],
// allocated in stream order on q's stream (with opts.Layout LayoutBSHD,
// every array [B, positions, heads, D] instead). Hkv must divide H: query
// head h reads key/value head h/(H/Hkv), each group of H/Hkv consecutive
// query heads sharing one (grouped-query attention; Hkv == H is the
// classic kind, Hkv == 1 multi-query).
//
// The element type is float32, cuda.Float16 or cuda.BFloat16, the sums in
// float32 whatever it is. D may be any size up to 256 (more is an error
// wrapping cuda.ErrNotSupported); the fast path is for D a multiple of 16
// up to 128 (32, 64, 80, 96, 128: the usual heads).
//
// It is one fused kernel in the manner of FlashAttention: tiles of Q, K
// and V in shared memory and a softmax kept online, so that no Sq x Sk
// matrix is ever in memory. For float16 and bfloat16 on sm_80 and later
// the products run on the tensor cores (mma.sync); float32, and the
// halves elsewhere, take a portable kernel of scalar arithmetic, as do
// the few query rows of decoding. (A form that splits many keys among
// blocks, as FlashDecoding does, is written and tested but off: on an
// H100 it was slower than the portable kernel it was to speed up.)
//
// q, k and v may be views with strides, read where they lie with no copy
// (the heads of a projection's packed output [B, S, 3, H, D], taken with
// Index or Slice, in LayoutBSHD), as long as D's stride is 1 and none is
// negative (nd.Contiguous makes a copy that is); they share a stream. To capture attention in a CUDA graph, use
// AttentionInto, which allocates nothing, after one launch outside the
// capture (which compiles the kernel).
func Attention[T Float](q, k, v *nd.Array[T], opts AttentionOptions) (*nd.Array[T], error) {
	const op = "Attention"
	p, err := attnPrepare(op, q, k, v, opts)
	if err != nil {
		return nil, err
	}
	out, err := nd.Empty[T](q.Stream(), opts.Layout.shape(p.B, p.H, p.Sq, p.D)...)
	if err != nil {
		return nil, wrap(op, err)
	}
	ob, err := out.Buffer()
	if err == nil {
		err = attnLaunch(op, ob, p)
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

// AttentionInto writes Attention(q, k, v, opts) into out, a contiguous
// array [B, H, Sq, D] (or [B, Sq, H, D]) of q's stream that shares no
// memory with q, k or v (which may be views with strides, as Attention's),
// allocating nothing: the form to capture in a CUDA graph.
func AttentionInto[T Float](out, q, k, v *nd.Array[T], opts AttentionOptions) error {
	const op = "AttentionInto"
	p, err := attnPrepare(op, q, k, v, opts)
	if err != nil {
		return err
	}
	ob, err := attnOut(op, out, p, opts.Layout)
	if err != nil {
		return err
	}
	return wrap(op, attnLaunch(op, ob, p))
}

// attnParams is one attention's launch: its operands' memory, shape and
// strides in elements, and the kernels of its element type and D.
type attnParams[T Float] struct {
	s                 *cuda.Stream
	q, k, v           *cuda.DeviceBuffer[T]
	lenp              *cuda.DeviceBuffer[int32] // the KV cache's length, or nil
	B, H, Hkv, Sq, Sk int
	D                 int
	qst, kst, vst     [3]int64 // strides of the batch, head and position axes
	ost               [3]int64 // the result's
	scaleLog2         float32
	causal            bool
}

// attnPrepare checks q, k and v and returns the launch they make.
func attnPrepare[T Float](op string, q, k, v *nd.Array[T], opts AttentionOptions) (*attnParams[T], error) {
	if err := attnLayoutValid(op, opts.Layout); err != nil {
		return nil, err
	}
	l := opts.Layout
	qb, qs, qst, err := attnOperand(op, "q", q, l, true)
	if err != nil {
		return nil, err
	}
	kb, ks, kst, err := attnOperand(op, "k", k, l, true)
	if err != nil {
		return nil, err
	}
	vb, vs, vst, err := attnOperand(op, "v", v, l, true)
	if err != nil {
		return nil, err
	}
	if k.Stream() != q.Stream() || v.Stream() != q.Stream() {
		return nil, errorf(op, cuda.ErrInvalidValue, "q, k and v belong to different streams: order them with events and make them on one")
	}
	if ks[0] != qs[0] || ks[3] != qs[3] || vs != ks {
		return nil, errorf(op, cuda.ErrInvalidValue, "shapes q %v, k %v, v %v: want q %s and k, v %s", q.Shape(), k.Shape(), v.Shape(), l.names("H", "Sq"), l.names("Hkv", "Sk"))
	}
	p := &attnParams[T]{s: q.Stream(), q: qb, k: kb, v: vb, B: qs[0], H: qs[1], Hkv: ks[1], Sq: qs[2], Sk: ks[2], D: qs[3], causal: opts.Causal,
		qst: qst, kst: kst, vst: vst}
	_, p.ost = l.dims(l.shape(p.B, p.H, p.Sq, p.D))
	if err := p.check(op, opts); err != nil {
		return nil, err
	}
	return p, nil
}

// attnLayoutValid returns op's error for a layout not of the constants.
func attnLayoutValid(op string, l AttentionLayout) error {
	if l != LayoutBHSD && l != LayoutBSHD {
		return errorf(op, cuda.ErrInvalidValue, "opts.Layout is %v: LayoutBHSD or LayoutBSHD", l)
	}
	return nil
}

// check checks the shape's sizes and sets the scale.
func (p *attnParams[T]) check(op string, opts AttentionOptions) error {
	switch {
	case p.D == 0:
		return errorf(op, cuda.ErrInvalidValue, "head dimension D is 0")
	case p.D > attnMaxD:
		return errorf(op, cuda.ErrNotSupported, "head dimension D = %d: attention takes D up to %d", p.D, attnMaxD)
	case p.Hkv == 0 && p.H != 0, p.Hkv != 0 && p.H%p.Hkv != 0:
		return errorf(op, cuda.ErrInvalidValue, "%d query heads and %d key/value heads: Hkv must divide H", p.H, p.Hkv)
	case p.B*p.H > math.MaxInt32, p.Sq > math.MaxInt32/(p.H/max(p.Hkv, 1)+1), p.Sk > math.MaxInt32:
		return errorf(op, cuda.ErrInvalidValue, "shape [%d, %d, %d, %d] too large", p.B, p.H, p.Sq, p.D)
	case p.B > 65535 || p.Hkv > 65535:
		return errorf(op, cuda.ErrNotSupported, "batch %d, %d key/value heads: attention takes 65535 of each at most (a grid's y and z)", p.B, p.Hkv)
	case math.IsNaN(opts.Scale) || math.IsInf(opts.Scale, 0):
		return errorf(op, cuda.ErrInvalidValue, "scale %v", opts.Scale)
	}
	scale := opts.Scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(p.D))
	}
	p.scaleLog2 = float32(scale * math.Log2E)
	if math.IsInf(float64(p.scaleLog2), 0) { // finite in float64, not in the float32 the kernels take: every score NaN
		return errorf(op, cuda.ErrInvalidValue, "scale %v: past float32's range, in which the kernels compute", opts.Scale)
	}
	return nil
}

// attnMaxD is the largest head dimension: the portable kernel keeps
// D/32 columns of each of its rows in registers.
const attnMaxD = 256

// attnOperand returns a's memory, its shape as (B, heads, positions, D)
// in layout l and the strides of the first three, or op's error naming it
// where it is not a contiguous 4-d array. read says a is only read (q, k,
// v): it may then be a strided view (of a projection's output, whose
// heads lie side by side in rows of q, k and v), with D's stride 1; its
// memory is its span (nd.Array.Span), the strides its own.
func attnOperand[T Float](op, name string, a *nd.Array[T], l AttentionLayout, read bool) (*cuda.DeviceBuffer[T], [4]int, [3]int64, error) {
	if a == nil {
		return nil, [4]int{}, [3]int64{}, errorf(op, cuda.ErrInvalidValue, "%s is a nil *nd.Array", name)
	}
	var b *cuda.DeviceBuffer[T]
	var strides []int
	var err error
	if read {
		b, strides, err = a.Span() // a zero, failed or freed array's error, or a negative stride's
	} else {
		b, err = a.Buffer() // a zero, failed, freed or strided array's error
	}
	if err != nil {
		return nil, [4]int{}, [3]int64{}, &Error{Op: op, Err: err, Detail: "operand " + name}
	}
	shape := a.Shape()
	if len(shape) != 4 {
		return nil, [4]int{}, [3]int64{}, errorf(op, cuda.ErrInvalidValue, "%s has shape %v: want 4 dimensions %s", name, shape, l.names("heads", "positions"))
	}
	d, st := l.dims(shape)
	if read {
		if shape[3] > 1 && strides[3] != 1 {
			return nil, [4]int{}, [3]int64{}, errorf(op, cuda.ErrInvalidValue, "%s has strides %v: D's stride must be 1 (each head's row is read whole)", name, strides)
		}
		// An axis of one index keeps the contiguous stride, whatever the
		// view's: the kernels' alignment checks and cuDNN's plans then
		// see the same strides as for a contiguous array.
		own, _ := l.dims(strides) // the strides in (B, heads, positions, D) order
		for i := range st {
			if d[i] > 1 {
				st[i] = int64(own[i])
			}
		}
	}
	return b, d, st, nil
}

// attnOut returns the memory of out, Attention's result for p, or op's
// error where it is not one.
func attnOut[T Float](op string, out *nd.Array[T], p *attnParams[T], l AttentionLayout) (*cuda.DeviceBuffer[T], error) {
	ob, os, _, err := attnOperand(op, "out", out, l, false)
	if err != nil {
		return nil, err
	}
	if out.Stream() != p.s {
		return nil, errorf(op, cuda.ErrInvalidValue, "out belongs to another stream than q")
	}
	if os != [4]int{p.B, p.H, p.Sq, p.D} {
		return nil, errorf(op, cuda.ErrInvalidValue, "out has shape %v: want %v", out.Shape(), l.shape(p.B, p.H, p.Sq, p.D))
	}
	// Blocks read rows of q and every row of k and v while others write
	// out: no in place, not even of q.
	k, v := "k", "v"
	if p.lenp != nil {
		k, v = "the cache's K", "the cache's V"
	}
	if err := layerAliased(op, "out", layerSpanOf(ob), layerIn{"q", layerSpanOf(p.q), false}, layerIn{k, layerSpanOf(p.k), false}, layerIn{v, layerSpanOf(p.v), false}); err != nil {
		return nil, err
	}
	return ob, nil
}

// attnKind is T's ATTN_T: 0 float32 (or a type defined on it), 1
// float16, 2 bfloat16.
func attnKind[T Float]() int {
	switch any(*new(T)).(type) {
	case cuda.Float16:
		return 1
	case cuda.BFloat16:
		return 2
	}
	return 0
}

// attnTiles are the tensor-core kernel's tiles: warps a block (NW), m-
// tiles of 16 query rows a warp (MT), keys a tile (BN).
type attnTiles struct{ NW, MT, BN int }

// attnDefaultTiles returns the tiles for head dimension d: 4 warps of
// 16 rows and 64 keys a tile, as FlashAttention-2's sm_80 choices for
// the shapes where registers allow it.
func attnDefaultTiles(d int) attnTiles {
	if t, ok := attnTune.Load().(attnTiles); ok && t.NW > 0 {
		return t
	}
	if d <= 64 {
		return attnTiles{NW: 4, MT: 2, BN: 64}
	}
	return attnTiles{NW: 4, MT: 1, BN: 64}
}

// attnTune overrides attnDefaultTiles (an attnTiles), for the
// benchmarks' search.
var attnTune atomic.Value

// attnVariant names a compiled source.
type attnVariant struct {
	kind, d int
	tiles   attnTiles
}

// attnModule is a variant's kernels: one source, one module.
type attnModule struct {
	scalar, tc, combine, kvAppend, kvAdvance *compute.RawKernel
}

// attnModules are the variants made so far (attnVariant -> *attnModule).
var attnModules sync.Map

// attnSBM is the portable kernel's rows a block.
const attnSBM = 16

// attnVariantSource is variant v's source: its #defines, then attnSource.
func attnVariantSource(v attnVariant) string {
	return fmt.Sprintf("#define ATTN_T %d\n#define ATTN_D %d\n#define ATTN_SBM %d\n#define ATTN_NW %d\n#define ATTN_MT %d\n#define ATTN_BN %d\n",
		v.kind, v.d, attnSBM, v.tiles.NW, v.tiles.MT, v.tiles.BN) + attnSource
}

// attnKernels returns variant v's kernels.
func attnKernels(v attnVariant) (*attnModule, error) {
	if m, ok := attnModules.Load(v); ok {
		return m.(*attnModule), nil
	}
	src := attnVariantSource(v)
	m := &attnModule{}
	var err error
	for _, k := range []struct {
		p    **compute.RawKernel
		name string
	}{{&m.scalar, "attn_fwd_scalar"}, {&m.tc, "attn_fwd_tc"}, {&m.combine, "attn_split_combine"}, {&m.kvAppend, "attn_kv_append"}, {&m.kvAdvance, "attn_kv_advance"}} {
		if *k.p, err = compute.NewRawKernel(src, k.name); err != nil {
			return nil, err
		}
	}
	got, _ := attnModules.LoadOrStore(v, m)
	return got.(*attnModule), nil
}

// attnTCMin is the compute capability of mma.sync on halves with float
// accumulation, ldmatrix and cp.async.
const attnTCMin = 80

// attnCapability returns the compute capability of ctx's device, as 90
// for 9.0, asked once per context.
func attnCapability(ctx *cuda.Context) (int, error) {
	if cc, ok := attnCaps.Load(weak.Make(ctx)); ok {
		return cc.(int), nil
	}
	v, err := ctx.Device().ComputeCapability()
	if err != nil {
		return 0, err
	}
	cc := v.Major*10 + v.Minor
	attnCaps.Store(weak.Make(ctx), cc)
	return cc, nil
}

// attnCaps holds each context's compute capability, by a weak pointer
// (a closed context's entry is only a few words).
var attnCaps sync.Map // weak.Pointer[cuda.Context] -> int

// attnPath forces a kernel, for the tests: "scalar", "tc" or "split" (a
// string; "" lets attnLaunch choose).
var attnPath atomic.Value

// attnUseTC reports whether p takes the tensor-core kernel.
func (p *attnParams[T]) useTC(kind int, out *cuda.DeviceBuffer[T]) (bool, error) {
	if kind == 0 || p.D%16 != 0 || p.D > 128 || !(p.scaleLog2 > 0) {
		return false, nil // the kernel folds a positive scale into its exponent
	}
	if f, _ := attnPath.Load().(string); f != "" {
		return f == "tc", nil
	}
	if p.split() > 1 {
		return false, nil
	}
	// cp.async and the 4-byte stores need 16-byte rows and bases.
	for _, b := range []uintptr{uintptr(p.q.Ptr()), uintptr(p.k.Ptr()), uintptr(p.v.Ptr()), uintptr(out.Ptr())} {
		if b%16 != 0 {
			return false, nil
		}
	}
	for _, st := range [][3]int64{p.qst, p.kst, p.vst, p.ost} {
		if st[0]%8 != 0 || st[1]%8 != 0 || st[2]%8 != 0 {
			return false, nil
		}
	}
	cc, err := attnCapability(p.s.Context())
	if err != nil {
		return false, err
	}
	return cc >= attnTCMin, nil
}

// attnLaunch queues the attention of p into o.
func attnLaunch[T Float](op string, o *cuda.DeviceBuffer[T], p *attnParams[T]) error {
	if p.B == 0 || p.H == 0 || p.Sq == 0 {
		return nil // nothing to compute (and a grid's Y or Z of 0 would mean 1)
	}
	if ran, err := attnCUDNN(op, o, p); ran { // cuDNN's fused attention, where EnvAttention and the shape allow
		return err
	}
	kind := attnKind[T]()
	tc, err := p.useTC(kind, o)
	if err != nil {
		return err
	}
	tiles := attnDefaultTiles(p.D)
	m, err := attnKernels(attnVariant{kind: kind, d: p.D, tiles: tiles})
	if err != nil {
		return err
	}
	G := p.H / p.Hkv
	rows := G * p.Sq
	var lenp any = cuda.DevicePtr(0)
	if p.lenp != nil {
		lenp = p.lenp
	}
	causal := int32(0)
	if p.causal {
		causal = 1
	}
	args := []any{o, p.q, p.k, p.v, lenp, int32(p.H), int32(G), int32(p.Sq), int32(p.Sk),
		p.qst[0], p.qst[1], p.qst[2], p.kst[0], p.kst[1], p.kst[2], p.vst[0], p.vst[1], p.vst[2],
		p.ost[0], p.ost[1], p.ost[2], p.scaleLog2, causal}
	if splits := p.split(); splits > 1 {
		return attnLaunchSplit(op, m, o, p, splits, args)
	}
	args = append(args, cuda.DevicePtr(0), int32(0))
	k, block, rowsPer, shared := m.scalar, 128, attnSBM, attnScalarShared(p.D)
	if tc {
		k, block, rowsPer, shared = m.tc, tiles.NW*32, 16*tiles.MT*tiles.NW, attnTCShared(p.D, tiles)
	}
	if err := attnShared(k, p.s.Context(), shared); err != nil {
		return err
	}
	cfg := cuda.LaunchConfig{
		Grid:           cuda.Dim3{X: (rows + rowsPer - 1) / rowsPer, Y: p.Hkv, Z: p.B},
		Block:          cuda.Dim3{X: block, Y: 1, Z: 1},
		SharedMemBytes: shared,
		Stream:         p.s,
	}
	return k.Launch(cfg, args...)
}

// attnSplitMinKeys is the fewest keys (their bound, for a KV cache) for
// which few query rows split the keys among blocks.
const attnSplitMinKeys = 256

// attnSplitAuto turns the split form on for the shapes split chooses it
// for; off, only a forced "split" path (the tests) takes it.
const attnSplitAuto = false

// attnSplitBlocks is about the blocks a split launch aims at: four a
// multiprocessor of an H100 or H200.
const attnSplitBlocks = 4 * 132

// split returns how many blocks share each row's keys: 1 (no split) but
// for few query rows (decoding: G*Sq of at most one block's rows) over
// many keys, where the row tiles alone would make too few blocks to keep
// the device busy, FlashDecoding's split-K.
func (p *attnParams[T]) split() int {
	rows := p.H / p.Hkv * p.Sq
	forced, _ := attnPath.Load().(string)
	// Off unless forced: on an H100 the split form took 847 µs where the
	// unsplit portable kernel had taken 140 µs (one bfloat16 query a
	// sequence, 8x16 heads of 128 over 4,096 keys), and GPT-2's decoding
	// (heads of 64 over up to 1,024 keys) lost a quarter of its tokens/s.
	// It stays tested (the "split" path) until a profile says where its
	// time goes.
	if !attnSplitAuto && forced == "" {
		return 1
	}
	if rows > attnSBM || forced != "" && forced != "split" || forced == "" && p.Sk < attnSplitMinKeys || p.Sk == 0 {
		return 1
	}
	heads := p.B * p.Hkv
	want := (attnSplitBlocks + heads - 1) / heads
	return (p.Sk + p.chunk(want) - 1) / p.chunk(want)
}

// chunk is the keys a block of a split into about want blocks takes: a
// multiple of the portable kernel's tile, 64 at least.
func (p *attnParams[T]) chunk(want int) int {
	c := (p.Sk + want - 1) / want
	c = (c + 31) / 32 * 32
	return max(c, 64)
}

// attnLaunchSplit queues the split-K form: the portable kernel over
// splits blocks a row, into a workspace of partial results, then
// attn_split_combine.
func attnLaunchSplit[T Float](op string, m *attnModule, o *cuda.DeviceBuffer[T], p *attnParams[T], splits int, args []any) error {
	heads := p.B * p.Hkv
	chunk := p.chunk((attnSplitBlocks + heads - 1) / heads)
	rows := p.H / p.Hkv * p.Sq
	ws, err := cuda.AllocAsync[float32](p.s, heads*splits*rows*(p.D+2))
	if err != nil {
		return err
	}
	args = append(args, ws, int32(chunk))
	shared := attnScalarShared(p.D)
	err = attnShared(m.scalar, p.s.Context(), shared)
	if err == nil {
		err = m.scalar.Launch(cuda.LaunchConfig{
			Grid:           cuda.Dim3{X: splits, Y: p.Hkv, Z: p.B},
			Block:          cuda.Dim3{X: 128, Y: 1, Z: 1},
			SharedMemBytes: shared,
			Stream:         p.s,
		}, args...)
	}
	if err == nil {
		err = m.combine.Launch(cuda.LaunchConfig{
			Grid:   cuda.Dim3{X: rows, Y: p.Hkv, Z: p.B},
			Block:  cuda.Dim3{X: min(p.D, 256), Y: 1, Z: 1},
			Stream: p.s,
		}, o, ws, p.ost[0], p.ost[1], p.ost[2], int32(p.H/p.Hkv), int32(p.Sq), int32(splits))
	}
	if ferr := ws.FreeOn(p.s); ferr != nil {
		ws.FreeOn(p.s) // a refusal leaves it allocated: once more, as nd's temporaries
		err = errors.Join(err, ferr)
	}
	return err
}

// attnScalarShared is the portable kernel's shared memory: Q's rows,
// a tile of keys (padded) and of values, the tile's probabilities.
func attnScalarShared(d int) int {
	return 4 * (attnSBM*d + 32*(d+1) + 32*d + attnSBM*32)
}

// attnTCShared is the tensor-core kernel's: Q's rows and two tiles each
// of keys and values, in rows of D+8 halves.
func attnTCShared(d int, t attnTiles) int {
	return 2 * (d + 8) * (16*t.MT*t.NW + 4*t.BN)
}

// attnShared lets k use shared bytes of dynamic shared memory in ctx,
// where that is more than the 48 KiB every kernel may.
func attnShared(k *compute.RawKernel, ctx *cuda.Context, shared int) error {
	if shared <= 48<<10 {
		return nil
	}
	f, err := k.Function(ctx)
	if err != nil {
		return err
	}
	if got, ok := attnSharedSet.Load(weak.Make(f)); ok && got.(int) >= shared {
		return nil
	}
	if err := f.SetAttribute(cuda.FuncMaxDynamicSharedSize, shared); err != nil {
		return err
	}
	attnSharedSet.Store(weak.Make(f), shared)
	return nil
}

var attnSharedSet sync.Map // weak.Pointer[cuda.Function] -> int

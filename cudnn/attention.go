package cudnn

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cudnn"
)

// Scaled dot-product attention through cuDNN's fused attention engine:
// the operation graph cuDNN's frontend builds for its sdpa node (forward,
// inference, no dropout), which the engine recognises as a whole and runs
// as one FlashAttention-style kernel:
//
//	S  = matmul(Q, Kᵀ)                    float, virtual (Kᵀ: K's view with its last two axes swapped)
//	S  = S · scale                        pointwise MUL by a scalar passed by value
//	   causal: row = gen_index(S, axis 2) [+ Sk − Sq, bottom-right], col = gen_index(S, axis 3),
//	   S = select(row ≥ col, S, −inf)      (or −FLT_MAX and int32 indices: attnMasks)
//	M  = reduce_max(S) over the keys      [B, H, Sq, 1]
//	E  = exp(S − M)
//	Z  = reduce_add(E)                    [B, H, Sq, 1]
//	   Stats = M + log(Z)                 float32, real where asked for, else virtual
//	P  = E / Z                            virtual, of the inputs' type (the second matmul's A)
//	O  = matmul(P, V)
//
// The intermediates are virtual (never in memory); the scale, the masked
// scores' value and the causal offsets are tensors passed by value (host
// scalars in the variant pack). The masked scores' value and the index
// generators' precision follow the frontend of cuDNN 9.10 and later, the
// earlier frontend's encoding tried where cuDNN refuses that one.
// Grouped-query attention is K and V with fewer heads than Q, broadcast by
// the first matmul's and the second's batch axes.

// The attention graph's tensors' ids: the real ones (the variant pack's),
// those passed by value, then the virtual ones from attnVirtual on.
const (
	attnQ = 1 + iota
	attnK
	attnV
	attnO
	attnStats
	attnScale
	attnNegInf
	attnSk
	attnSq
	attnVirtual = 100
)

// Half is the element types of Attention: cuDNN's fused attention takes
// the two half types (float32 has no fused engine).
type Half interface {
	cuda.Float16 | cuda.BFloat16
}

// AttentionTensor is an operand of Attention: a 4-D tensor in device
// memory, its Shape counted as [batch, heads, positions, D] whatever its
// order in memory, which its Strides (in elements, of the same four axes)
// say. The zero Strides mean contiguous [B, heads, positions, D] (PyTorch's
// scaled_dot_product_attention's layout); an array [B, positions, heads,
// D] (FlashAttention's, a projection's output reshaped) has Strides
// {S·H·D, D, H·D, 1}. D's stride must be 1. It owns nothing: its buffer is
// the caller's.
type AttentionTensor[T Half] struct {
	Data    *cuda.DeviceBuffer[T]
	Shape   [4]int
	Strides [4]int
}

// strides returns t's strides, the zero value's made contiguous.
func (t AttentionTensor[T]) strides() [4]int64 {
	if t.Strides == [4]int{} {
		s := t.Shape
		return [4]int64{int64(s[1] * s[2] * s[3]), int64(s[2] * s[3]), int64(s[3]), 1}
	}
	return [4]int64{int64(t.Strides[0]), int64(t.Strides[1]), int64(t.Strides[2]), int64(t.Strides[3])}
}

// AttentionOptions are Attention's settings. The zero value is attention
// without a mask, scaled by 1/sqrt(D), with no statistics.
type AttentionOptions struct {
	// Causal masks each query from the keys after its position, the
	// queries aligned to the end of the keys (cuDNN's bottom-right
	// diagonal, as decoding needs): query i of Sq is at position
	// Sk−Sq+i and sees keys 0 through Sk−Sq+i; with Sq == Sk that is
	// PyTorch's is_causal. Sq > Sk is refused (cuda.ErrNotSupported):
	// its first queries would see no key.
	Causal bool
	// Scale multiplies QKᵀ before the softmax; 0 means 1/sqrt(D).
	Scale float32
	// Stats, where not nil, receives the softmax's statistics of each
	// query row, max + ln(Σ exp(s − max)) of its scaled scores s (the
	// log-sum-exp a backward pass needs): B·H·Sq float32, contiguous
	// [B, H, Sq].
	Stats *cuda.DeviceBuffer[float32]
}

// attnKey says which plan a call needs: the type, each operand's shape
// and strides and alignment, the mask and whether the statistics are
// written. The scale is not part of it: it is passed by value.
type attnKey struct {
	dt            int32
	shapes        [4][4]int64 // q, k, v, o
	strides       [4][4]int64
	align         [5]uint8 // q, k, v, o, stats
	causal, stats bool
}

// attnScalars are the values a plan's tensors passed by value point at:
// pinned, their addresses in the variant pack.
type attnScalars struct {
	scale, negInf float32
	sk, sq        int32
}

// attnPlan is one shape's plan, or why cuDNN has none (err: the shape is
// refused at once from then on).
type attnPlan struct {
	g   *graphPlan
	err error
	// vals are the scalars passed by value, pinned while the plan lives.
	vals   *attnScalars
	pinner runtime.Pinner
	uids   []int64
	// pack is the variant pack of the last call, for its pointers (q, k,
	// v, o, stats, the work area).
	pack   clib.BackendDescriptor
	packed [6]uintptr
}

func (p *attnPlan) destroy(op string) error {
	if p.pack != 0 {
		if err := check(op, "cudnnBackendDestroyDescriptor", clib.BackendDestroyDescriptor(p.pack)); err != nil {
			return err
		}
		p.pack = 0
	}
	if p.g != nil {
		if err := p.g.destroy(op); err != nil {
			return err
		}
		p.g = nil
	}
	p.pinner.Unpin()
	return nil
}

// Attention computes scaled dot-product attention, o = softmax(q kᵀ ·
// scale) v, queued on h's stream, through cuDNN's fused attention (one
// kernel in the manner of FlashAttention, as PyTorch's cuDNN backend of
// scaled_dot_product_attention runs it): q and o [B, H, Sq, D], k and v
// [B, Hkv, Sk, D], each in its own order in memory (AttentionTensor's
// Strides). Hkv must divide H: query head j reads key/value head
// j/(H/Hkv) (grouped-query attention; Hkv == 1 is multi-query). The
// products and the softmax are computed in float32. o's and
// opts.Stats's buffers share no memory with q's, k's and v's, nor with
// each other (refused with cuda.ErrInvalidValue, as every operation's
// output over an input is); q, k and v may share one buffer.
//
// cuDNN's fused engine needs an sm_80 GPU or later, D a multiple of 8 (up
// to 128 on sm_80 and up to 256 on sm_90 and later, by cuDNN's version),
// operands and their strides aligned to 16 bytes, and a scale not
// negative (cuDNN gives NaN for one); operands it cannot take, or a shape
// or GPU it has no engine for, are refused with an error wrapping
// cuda.ErrNotSupported (and then at once,
// by the plan remembered), for the caller to run its own kernel instead.
// The Handle keeps the plan of each shape, strides and mask it has run,
// and its work area comes from the Handle's stream-ordered memory.
func Attention[T Half](h *Handle, o, q, k, v AttentionTensor[T], opts AttentionOptions) error {
	const op = "Attention"
	if err := h.valid(op); err != nil {
		return err
	}
	key, scale, err := attnArgs(op, o, q, k, v, opts)
	if err != nil {
		return err
	}
	// The engine writes o and the statistics tile by tile while other
	// tiles still read q, k and v: an output over an input gives undefined
	// results, as the other operations' do (by the buffers, as aliased
	// compares them: the inputs, read alone, may be views of one).
	outs, ins := []named{buf("o.Data", o.Data), buf("opts.Stats", opts.Stats)}, []named{buf("q.Data", q.Data), buf("k.Data", k.Data), buf("v.Data", v.Data)}
	if err := aliased(op, outs, ins...); err != nil {
		return err
	}
	var statsPtr uintptr
	if opts.Stats != nil {
		statsPtr = uintptr(opts.Stats.Ptr())
	}
	return h.do(op, append(outs, ins...), func(c *call) error {
		ptrs := [5]uintptr{uintptr(q.Data.Ptr()), uintptr(k.Data.Ptr()), uintptr(v.Data.Ptr()), uintptr(o.Data.Ptr()), statsPtr}
		for i, p := range ptrs {
			key.align[i] = alignment(p)
		}
		if !key.stats {
			key.align[4] = 0
		}
		p, err := c.attnPlan(key)
		if err != nil {
			return err
		}
		if p.err != nil {
			return p.err
		}
		return c.attnRun(p, ptrs, scale)
	})
}

// attnArgs checks Attention's operands and options and returns the
// plan's key (its alignments unset) and the scale.
func attnArgs[T Half](op string, o, q, k, v AttentionTensor[T], opts AttentionOptions) (attnKey, float32, error) {
	names := [4]string{"q", "k", "v", "o"}
	ts := [4]AttentionTensor[T]{q, k, v, o}
	for i, t := range ts {
		if err := checkAttnTensor(op, names[i], t); err != nil {
			return attnKey{}, 0, err
		}
	}
	B, H, Sq, D := q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
	Hkv, Sk := k.Shape[1], k.Shape[2]
	switch {
	case k.Shape[0] != B || k.Shape[3] != D || v.Shape != k.Shape || o.Shape != q.Shape:
		return attnKey{}, 0, errorf(op, cuda.ErrInvalidValue, "shapes q %v, k %v, v %v, o %v: want q and o [B, H, Sq, D], k and v [B, Hkv, Sk, D]", q.Shape, k.Shape, v.Shape, o.Shape)
	case H%Hkv != 0:
		return attnKey{}, 0, errorf(op, cuda.ErrInvalidValue, "%d query heads and %d key/value heads: Hkv must divide H", H, Hkv)
	case D%8 != 0:
		return attnKey{}, 0, errorf(op, cuda.ErrNotSupported, "head dimension D = %d: cuDNN's fused attention takes D a multiple of 8", D)
	case D > 256:
		return attnKey{}, 0, errorf(op, cuda.ErrNotSupported, "head dimension D = %d: cuDNN's fused attention takes D up to 256", D)
	case opts.Causal && Sq > Sk:
		return attnKey{}, 0, errorf(op, cuda.ErrNotSupported, "causal attention of %d queries over %d keys: the first %d queries would see no key (the mask is aligned to the end of the keys)", Sq, Sk, Sq-Sk)
	case math.IsNaN(float64(opts.Scale)) || math.IsInf(float64(opts.Scale), 0):
		return attnKey{}, 0, errorf(op, cuda.ErrInvalidValue, "opts.Scale is %v", opts.Scale)
	case opts.Scale < 0:
		// cuDNN takes the plan and returns NaN everywhere (an H100, cuDNN
		// 9, causal): refused, for the caller's own kernel.
		return attnKey{}, 0, errorf(op, cuda.ErrNotSupported, "opts.Scale is %v: cuDNN's fused attention gives NaN for a negative scale", opts.Scale)
	case opts.Stats != nil && opts.Stats.Len() != B*H*Sq:
		return attnKey{}, 0, errorf(op, cuda.ErrInvalidValue, "len(opts.Stats) is %d: want %d (B·H·Sq)", opts.Stats.Len(), B*H*Sq)
	}
	for i, t := range ts {
		if err := attnAligned(op, names[i], t); err != nil {
			return attnKey{}, 0, err
		}
	}
	key := attnKey{dt: dataType[T](), causal: opts.Causal, stats: opts.Stats != nil}
	for i, t := range ts {
		for j := range 4 {
			key.shapes[i][j] = int64(t.Shape[j])
		}
		key.strides[i] = t.strides()
	}
	scale := opts.Scale
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(D)))
	}
	return key, scale, nil
}

// checkAttnTensor says what is wrong with t, named name: its buffer, its
// sizes (at least 1), its strides (at least 1, D's 1) and that every
// element it spans lies in its buffer.
func checkAttnTensor[T Half](op, name string, t AttentionTensor[T]) error {
	if t.Data == nil {
		return errorf(op, cuda.ErrInvalidValue, "%s.Data is nil", name)
	}
	for _, n := range t.Shape {
		if n < 1 || n > math.MaxInt32 {
			return errorf(op, cuda.ErrInvalidValue, "%s.Shape %v: each size from 1 to 2³¹−1", name, t.Shape)
		}
	}
	st := t.strides()
	if st[3] != 1 {
		return errorf(op, cuda.ErrNotSupported, "%s.Strides %v: D's stride must be 1 (cuDNN reads each head's row whole)", name, t.Strides)
	}
	last := 0.0
	for i, s := range st {
		if s < 1 {
			return errorf(op, cuda.ErrInvalidValue, "%s.Strides %v: each stride at least 1", name, t.Strides)
		}
		last += float64(t.Shape[i]-1) * float64(s)
	}
	if last >= float64(t.Data.Len()) {
		return errorf(op, cuda.ErrInvalidValue, "%s: shape %v with strides %v spans %.0f elements, more than len(%s.Data) = %d", name, t.Shape, st, last+1, name, t.Data.Len())
	}
	return nil
}

// attnAligned returns ErrNotSupported's error where t's memory or a
// stride of an axis of more than one index is not a multiple of 16 bytes:
// cuDNN's engine reads and writes 16 bytes at a time, and given a
// smaller alignment in the tensor's descriptor it still made a plan, whose
// results were wrong (an output 2 bytes off 16, on an H100).
func attnAligned[T Half](op, name string, t AttentionTensor[T]) error {
	const size = 2 // a Half's bytes
	if p := uintptr(t.Data.Ptr()); p%16 != 0 {
		return errorf(op, cuda.ErrNotSupported, "%s.Data at %#x: cuDNN's fused attention takes operands aligned to 16 bytes", name, p)
	}
	st := t.strides()
	for i := range 3 {
		if t.Shape[i] > 1 && st[i]*size%16 != 0 {
			return errorf(op, cuda.ErrNotSupported, "%s.Strides %v: cuDNN's fused attention takes strides of 16 bytes' multiples (8 elements)", name, st)
		}
	}
	return nil
}

// attnPlan returns the plan of k, made the first time k is seen: the
// graph, its engine configuration and execution plan, or, where cuDNN has
// none for it, a plan holding the error that says so.
func (c *call) attnPlan(k attnKey) (_ *attnPlan, err error) {
	if c.raw.attn == nil {
		c.raw.attn = map[attnKey]*attnPlan{}
	}
	if p := c.raw.attn[k]; p != nil {
		return p, nil
	}
	if !backendAPI() {
		return nil, errorf(c.op, cuda.ErrNotSupported, "the cuDNN opened lacks the backend API, or %s=1 asks for the legacy calls alone: attention has no legacy form", EnvLegacy)
	}
	if c.capturing {
		return nil, errorf(c.op, cuda.ErrNotSupported, "the stream captures, and a new shape's plan (cuDNN compiles its kernel) is not made inside a capture: run the call once before the capture")
	}
	g := &graphPlan{}
	p := &attnPlan{vals: &attnScalars{sk: int32(k.shapes[1][2]), sq: int32(k.shapes[0][2])}}
	p.pinner.Pin(p.vals)
	b := &builder{op: c.op, g: g}
	defer func() {
		if err != nil || p.g == nil {
			if derr := g.destroy(c.op); err == nil && derr != nil {
				err = derr
			}
		}
		if err != nil {
			p.pinner.Unpin()
		}
	}()
	refuse := func(why string, cause error) (*attnPlan, error) {
		p.pinner.Unpin()
		if cause != nil {
			why += " (" + cause.Error() + ")"
		}
		p.err = errorf(c.op, cuda.ErrNotSupported, "cuDNN has no fused attention engine for %s: %s", k, why)
		c.raw.attn[k] = p
		return p, nil
	}
	// The causal mask's two encodings, the current frontend's first (see
	// attnMasks); a mask-free graph has one.
	masks := attnMasks
	if !k.causal {
		masks = masks[:1]
	}
	var refused error
	for _, mask := range masks {
		opGraph := b.attnGraph(c.lh, k, mask, "")
		if b.err != nil {
			if !fallsBack(b.err) {
				return nil, b.err
			}
			refused, b.err = b.err, nil
			continue
		}
		for _, mode := range []int32{heurModeA, heurModeFallback} {
			cfgs, _, err := c.configs(b, opGraph, convKey{dt: k.dt}, mode, false)
			if err != nil {
				return nil, err
			}
			for _, cfg := range cfgs {
				plan := b.create(bdExecutionPlan)
				b.set(plan, attrPlanHandle, atHandle, 1, unsafe.Pointer(&c.lh))
				b.desc(plan, attrPlanConfig, cfg)
				b.finalize(plan)
				var ws, m int64
				if b.err == nil {
					b.err = check(c.op, "cudnnBackendGetAttribute", clib.BackendGetAttribute(plan, attrPlanWorkspace, atInt64, 1, &m, unsafe.Pointer(&ws)))
				}
				if err := b.err; err != nil {
					if !fallsBack(err) {
						return nil, err
					}
					refused, b.err = err, nil
					continue
				}
				if ws < 0 || ws > workLimit {
					continue
				}
				g.plan, g.work = plan, uintptr(ws)
				p.g, p.vals.negInf = g, mask.negInf
				p.uids = []int64{attnQ, attnK, attnV, attnO, attnScale}
				if k.causal {
					p.uids = append(p.uids, attnNegInf)
					if k.shapes[0][2] != k.shapes[1][2] {
						p.uids = append(p.uids, attnSk, attnSq)
					}
				}
				if k.stats {
					p.uids = append(p.uids, attnStats)
				}
				c.raw.attn[k] = p
				return p, nil
			}
		}
	}
	if refused != nil {
		return refuse("it refused the graph or every plan of it (its fused attention needs an sm_80 GPU or later, and takes some shapes only)", refused)
	}
	return refuse("no engine configuration of its heuristics builds a plan (its fused attention needs an sm_80 GPU or later, and takes some shapes only)", nil)
}

// String describes an attention plan's key, for errors.
func (k attnKey) String() string {
	mask := ""
	if k.causal {
		mask = ", causal"
	}
	return fmt.Sprintf("q %v, k %v (%s%s)", k.shapes[0], k.shapes[1], typeName(k.dt), mask)
}

// tensorND makes a finalized 4-D tensor descriptor.
func (b *builder) tensorND(uid int64, dims, strides [4]int64, dt int32, align uint8, virtual, byValue bool) clib.BackendDescriptor {
	d := b.create(bdTensor)
	b.i32(d, attrTensorType, atDataType, dt)
	b.i64(d, attrTensorDims, dims[:]...)
	b.i64(d, attrTensorStrides, strides[:]...)
	b.i64(d, attrTensorUID, uid)
	b.i64(d, attrTensorAlign, int64(align))
	if virtual {
		t := true
		b.set(d, attrTensorVirtual, atBoolean, 1, unsafe.Pointer(&t))
	}
	if byValue {
		t := true
		b.set(d, attrTensorByValue, atBoolean, 1, unsafe.Pointer(&t))
	}
	b.finalize(d)
	return d
}

// pointwise makes a finalized pointwise operation y = mode(x, in2, t) of
// math precision prec (axis ≥ 0: GEN_INDEX's axis; in2 and t 0 where the
// mode takes none).
func (b *builder) pointwise(mode, prec int32, axis int64, x, in2, t, y clib.BackendDescriptor) clib.BackendDescriptor {
	pw := b.create(bdPointwise)
	b.i32(pw, attrPointwiseMode, atPointwiseMode, mode)
	b.i32(pw, attrPointwiseMathPrec, atDataType, prec)
	if axis >= 0 {
		b.i64(pw, attrPointwiseAxis, axis)
	}
	b.finalize(pw)
	o := b.create(bdOpPointwise)
	b.desc(o, attrPwDescriptor, pw)
	b.desc(o, attrPwX, x)
	if in2 != 0 {
		b.desc(o, attrPwB, in2)
	}
	if t != 0 {
		b.desc(o, attrPwT, t)
	}
	b.desc(o, attrPwY, y)
	b.finalize(o)
	return o
}

// matmul makes a finalized matmul operation c = a·b, computed in float.
func (b *builder) matmul(a, bm, c clib.BackendDescriptor) clib.BackendDescriptor {
	mm := b.create(bdMatmul)
	b.i32(mm, attrMatmulCompType, atDataType, dataFloat)
	b.finalize(mm)
	o := b.create(bdOpMatmul)
	b.desc(o, attrMatmulA, a)
	b.desc(o, attrMatmulB, bm)
	b.desc(o, attrMatmulC, c)
	b.desc(o, attrMatmulDesc, mm)
	b.finalize(o)
	return o
}

// reduction makes a finalized reduction y = op(x) over the axes where y
// has size 1, computed in float.
func (b *builder) reduction(op int32, x, y clib.BackendDescriptor) clib.BackendDescriptor {
	r := b.create(bdReduction)
	b.i32(r, attrReductionOp, atReductionOp, op)
	b.i32(r, attrReductionComp, atDataType, dataFloat)
	b.finalize(r)
	o := b.create(bdOpReduction)
	b.desc(o, attrRedX, x)
	b.desc(o, attrRedY, y)
	b.desc(o, attrRedDesc, r)
	b.finalize(o)
	return o
}

// attnMask is an encoding of the causal mask, as a version of cuDNN's
// frontend builds it: the value of the masked scores, the math precision
// of the index generators, and whether the bottom-right offset's add and
// subtract name an axis (3, as the frontend sets it; it means nothing to
// them).
type attnMask struct {
	negInf     float32
	indexPrec  int32
	offsetAxis int64
}

// attnMasks are the encodings tried, in order: the current frontend's for
// cuDNN 9.10 and later (−inf, the index generators in float, as its
// diagonal band mask composite builds them), then the earlier one
// (−FLT_MAX, the index generators in int32). A cuDNN that refuses the
// first is asked for the second.
var attnMasks = []attnMask{
	{negInf: float32(math.Inf(-1)), indexPrec: dataFloat, offsetAxis: 3},
	{negInf: -math.MaxFloat32, indexPrec: dataInt32, offsetAxis: -1},
}

// attnGraph makes the finalized operation graph of k (see the comment at
// the top of the file), its causal mask encoded as mask says. defect, for
// the tests of the fake's strictness, names a mistake to make ("" for
// none: attnDefects lists them).
func (b *builder) attnGraph(lh clib.Handle, k attnKey, mask attnMask, defect string) clib.BackendDescriptor {
	qs, ks := k.shapes[0], k.shapes[1]
	B, H, Sq, Sk := qs[0], qs[1], qs[2], ks[2]
	q := b.tensorND(attnQ, qs, k.strides[0], k.dt, k.align[0], false, false)
	// Kᵀ: K's view [B, Hkv, D, Sk], its last two axes swapped.
	kst := k.strides[1]
	ktDims, ktStrides := [4]int64{ks[0], ks[1], ks[3], ks[2]}, [4]int64{kst[0], kst[1], kst[3], kst[2]}
	if defect == "k not transposed" {
		ktDims, ktStrides = ks, kst
	}
	kt := b.tensorND(attnK, ktDims, ktStrides, k.dt, k.align[1], false, false)
	v := b.tensorND(attnV, k.shapes[2], k.strides[2], k.dt, k.align[2], false, false)
	o := b.tensorND(attnO, k.shapes[3], k.strides[3], k.dt, k.align[3], defect == "o virtual", false)
	one := [4]int64{1, 1, 1, 1}
	scalar := func(uid int64, dt int32) clib.BackendDescriptor {
		return b.tensorND(uid, one, one, dt, 16, false, true)
	}
	uid := int64(attnVirtual)
	sDims, sStrides := [4]int64{B, H, Sq, Sk}, [4]int64{H * Sq * Sk, Sq * Sk, Sk, 1}
	rDims, rStrides := [4]int64{B, H, Sq, 1}, [4]int64{H * Sq, Sq, 1, 1}
	virt := func(dims, strides [4]int64, dt int32) clib.BackendDescriptor {
		uid++
		return b.tensorND(uid, dims, strides, dt, 16, true, false)
	}
	var ops []clib.BackendDescriptor
	s := virt(sDims, sStrides, dataFloat)
	ops = append(ops, b.matmul(q, kt, s))
	if defect != "no scale" {
		scaled := virt(sDims, sStrides, dataFloat)
		ops = append(ops, b.pointwise(pointwiseMul, dataFloat, -1, s, scalar(attnScale, dataFloat), 0, scaled))
		s = scaled
	}
	if k.causal {
		row := virt(sDims, sStrides, dataInt32)
		axis := int64(2)
		if defect == "row axis 1" {
			axis = 1
		}
		ops = append(ops, b.pointwise(pointwiseGenIndex, mask.indexPrec, axis, s, 0, 0, row))
		if Sq != Sk {
			// Bottom-right: row + Sk − Sq, as the frontend adds them.
			plus := virt(sDims, sStrides, dataInt32)
			ops = append(ops, b.pointwise(pointwiseAdd, dataInt32, mask.offsetAxis, row, scalar(attnSk, dataInt32), 0, plus))
			minus := virt(sDims, sStrides, dataInt32)
			ops = append(ops, b.pointwise(pointwiseSub, dataInt32, mask.offsetAxis, plus, scalar(attnSq, dataInt32), 0, minus))
			row = minus
		}
		col := virt(sDims, sStrides, dataInt32)
		ops = append(ops, b.pointwise(pointwiseGenIndex, mask.indexPrec, 3, s, 0, 0, col))
		mask := virt(sDims, sStrides, dataBoolean)
		ops = append(ops, b.pointwise(pointwiseCmpGE, dataBoolean, -1, row, col, 0, mask))
		masked := virt(sDims, sStrides, dataFloat)
		ops = append(ops, b.pointwise(pointwiseSelect, dataFloat, -1, s, scalar(attnNegInf, dataFloat), mask, masked))
		if defect != "mask unused" {
			s = masked
		}
	}
	mx := virt(rDims, rStrides, dataFloat)
	maxOp := int32(reduceMax)
	if defect == "sum for max" {
		maxOp = reduceAdd
	}
	ops = append(ops, b.reduction(maxOp, s, mx))
	sub := virt(sDims, sStrides, dataFloat)
	ops = append(ops, b.pointwise(pointwiseSub, dataFloat, -1, s, mx, 0, sub))
	e := virt(sDims, sStrides, dataFloat)
	ops = append(ops, b.pointwise(pointwiseExp, dataFloat, -1, sub, 0, 0, e))
	z := virt(rDims, rStrides, dataFloat)
	ops = append(ops, b.reduction(reduceAdd, e, z))
	// The statistics, in the graph whether or not they are asked for
	// (virtual where not), as the frontend builds them: cuDNN's fused
	// engine takes no graph without them (the H100's cuDNN 9 had no
	// engine configuration for any such graph).
	if defect != "no stats" {
		lg := virt(rDims, rStrides, dataFloat)
		ops = append(ops, b.pointwise(pointwiseLog, dataFloat, -1, z, 0, 0, lg))
		var st clib.BackendDescriptor
		if k.stats {
			st = b.tensorND(attnStats, rDims, rStrides, dataFloat, k.align[4], false, false)
		} else {
			st = virt(rDims, rStrides, dataFloat)
		}
		ops = append(ops, b.pointwise(pointwiseAdd, dataFloat, -1, mx, lg, 0, st))
	}
	// The probabilities in the inputs' type: the second matmul's A.
	pdt := k.dt
	if defect == "float P" {
		pdt = dataFloat
	}
	prob := virt(sDims, sStrides, pdt)
	ops = append(ops, b.pointwise(pointwiseDiv, dataFloat, -1, e, z, 0, prob))
	ops = append(ops, b.matmul(prob, v, o))
	if defect == "extra op" {
		extra := virt(sDims, sStrides, dataFloat)
		ops = append(ops, b.pointwise(pointwiseExp, dataFloat, -1, e, 0, 0, extra))
	}
	g := b.create(bdOperationGraph)
	b.set(g, attrGraphHandle, atHandle, 1, unsafe.Pointer(&lh))
	if b.err == nil {
		b.desc(g, attrGraphOps, ops...)
	}
	b.finalize(g)
	return g
}

// attnDefects are the mistakes attnGraph can make for the tests.
var attnDefects = []string{"k not transposed", "o virtual", "no scale", "row axis 1", "mask unused", "sum for max", "float P", "extra op", "no stats"}

// attnRun runs plan p on the call's tensors (q, k, v, o, stats) with the
// scale, through the variant pack of the last call where the pointers
// are the same.
func (c *call) attnRun(p *attnPlan, ptrs [5]uintptr, scale float32) error {
	wp, err := c.work(p.g.work)
	if err != nil {
		return err
	}
	key := [6]uintptr{ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[4], wp}
	if p.pack == 0 || p.packed != key {
		if p.pack != 0 {
			if err := check(c.op, "cudnnBackendDestroyDescriptor", clib.BackendDestroyDescriptor(p.pack)); err != nil {
				return err
			}
			p.pack = 0
		}
		byUID := map[int64]uintptr{attnQ: ptrs[0], attnK: ptrs[1], attnV: ptrs[2], attnO: ptrs[3], attnStats: ptrs[4],
			attnScale: uintptr(unsafe.Pointer(&p.vals.scale)), attnNegInf: uintptr(unsafe.Pointer(&p.vals.negInf)),
			attnSk: uintptr(unsafe.Pointer(&p.vals.sk)), attnSq: uintptr(unsafe.Pointer(&p.vals.sq))}
		vp := make([]uintptr, len(p.uids))
		for i, u := range p.uids {
			vp[i] = byUID[u]
		}
		t := &graphPlan{}
		pack, err := c.pack(t, p.uids, vp, wp)
		if err != nil {
			if derr := t.destroy(c.op); derr != nil {
				return errors.Join(err, derr)
			}
			return err
		}
		p.pack, p.packed = pack, key
	}
	// cuDNN reads the values passed by value when it queues the work.
	p.vals.scale = scale
	return check(c.op, "cudnnBackendExecute", clib.BackendExecute(c.lh, p.g.plan, p.pack))
}

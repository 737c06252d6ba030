package cudnn

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cudnn"
	"github.com/gocuda/cuda/internal/lifetime"
)

// The convolutions run through cuDNN's backend (graph) API where it can
// build a plan for the shape, as PyTorch 2 runs them: an operation graph
// of the convolution (the fused forward: the convolution, a pointwise add
// of the bias and a pointwise ReLU, their results virtual), the engine
// configurations cuDNN's heuristics rank for it (CUDNN_HEUR_MODE_A, then
// the fallback list), and the execution plan of the first that finalizes
// and whose work area fits, or, after SetBenchmark(true), of the fastest
// of the first few, each timed once. The legacy calls
// (cudnnConvolutionForward and friends), which reach only the legacy
// algorithms, are the fallback where no plan can be built (every engine
// refused the shape) or the library lacks the backend API.

// EnvLegacy is the environment variable that, set to 1, makes the
// convolutions use cuDNN's legacy calls only, never the backend API.
const EnvLegacy = "GOCUDA_CUDNN_LEGACY"

// cudnnBackendDescriptorType_t values.
const (
	bdPointwise         = 0  // CUDNN_BACKEND_POINTWISE_DESCRIPTOR
	bdConvolution       = 1  // CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR
	bdEngine            = 2  // CUDNN_BACKEND_ENGINE_DESCRIPTOR
	bdEngineCfg         = 3  // CUDNN_BACKEND_ENGINECFG_DESCRIPTOR
	bdEngineHeur        = 4  // CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR
	bdExecutionPlan     = 5  // CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR
	bdOpConvForward     = 10 // CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR
	bdOpConvBackFilter  = 11 // CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR
	bdOpConvBackData    = 12 // CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
	bdOpPointwise       = 13 // CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR
	bdOperationGraph    = 15 // CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR
	bdVariantPack       = 16 // CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR
	bdTensor            = 17 // CUDNN_BACKEND_TENSOR_DESCRIPTOR
	bdMatmul            = 18 // CUDNN_BACKEND_MATMUL_DESCRIPTOR
	bdOpMatmul          = 19 // CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR
	bdReduction         = 21 // CUDNN_BACKEND_REDUCTION_DESCRIPTOR
	bdOpReduction       = 22 // CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR
	heurModeA           = 3  // CUDNN_HEUR_MODE_A
	heurModeFallback    = 2  // CUDNN_HEUR_MODE_FALLBACK
	noteTensorCore      = 0  // CUDNN_NUMERICAL_NOTE_TENSOR_CORE
	noteDownConvert     = 1  // CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS
	noteRuntimeCompiled = 0  // CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION
	crossCorrelationMod = 1  // CUDNN_CROSS_CORRELATION
)

// cudnnBackendAttributeType_t values.
const (
	atHandle        = 0  // CUDNN_TYPE_HANDLE
	atDataType      = 1  // CUDNN_TYPE_DATA_TYPE
	atBoolean       = 2  // CUDNN_TYPE_BOOLEAN
	atInt64         = 3  // CUDNN_TYPE_INT64
	atFloat         = 4  // CUDNN_TYPE_FLOAT
	atVoidPtr       = 6  // CUDNN_TYPE_VOID_PTR
	atConvMode      = 7  // CUDNN_TYPE_CONVOLUTION_MODE
	atHeurMode      = 8  // CUDNN_TYPE_HEUR_MODE
	atNumericalNote = 11 // CUDNN_TYPE_NUMERICAL_NOTE
	atPointwiseMode = 14 // CUDNN_TYPE_POINTWISE_MODE
	atBehaviorNote  = 19 // CUDNN_TYPE_BEHAVIOR_NOTE
	atDescriptor    = 15 // CUDNN_TYPE_BACKEND_DESCRIPTOR
	atReductionOp   = 18 // CUDNN_TYPE_REDUCTION_OPERATOR_TYPE
)

// cudnnBackendAttributeName_t values.
const (
	attrPointwiseMode     = 0   // CUDNN_ATTR_POINTWISE_MODE
	attrPointwiseMathPrec = 1   // CUDNN_ATTR_POINTWISE_MATH_PREC
	attrPointwiseAxis     = 9   // CUDNN_ATTR_POINTWISE_AXIS
	attrConvCompType      = 100 // CUDNN_ATTR_CONVOLUTION_COMP_TYPE
	attrConvMode          = 101 // CUDNN_ATTR_CONVOLUTION_CONV_MODE
	attrConvDilations     = 102 // CUDNN_ATTR_CONVOLUTION_DILATIONS
	attrConvStrides       = 103 // CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES
	attrConvPostPaddings  = 104 // CUDNN_ATTR_CONVOLUTION_POST_PADDINGS
	attrConvPrePaddings   = 105 // CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS
	attrConvSpatialDims   = 106 // CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS
	attrHeurMode          = 200 // CUDNN_ATTR_ENGINEHEUR_MODE
	attrHeurGraph         = 201 // CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH
	attrHeurResults       = 202 // CUDNN_ATTR_ENGINEHEUR_RESULTS
	attrCfgEngine         = 300 // CUDNN_ATTR_ENGINECFG_ENGINE
	attrPlanHandle        = 400 // CUDNN_ATTR_EXECUTION_PLAN_HANDLE
	attrPlanConfig        = 401 // CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG
	attrPlanWorkspace     = 402 // CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE
	// CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA (700) and the rest:
	// forward 700-705 (alpha, beta, conv, w, x, y), backward data 706-711
	// (alpha, beta, conv, w, dx, dy), backward filter 712-717 (alpha, beta,
	// conv, dw, x, dy).
	attrPwDescriptor   = 750 // CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR
	attrPwX            = 751 // CUDNN_ATTR_OPERATION_POINTWISE_XDESC
	attrPwB            = 752 // CUDNN_ATTR_OPERATION_POINTWISE_BDESC
	attrPwY            = 753 // CUDNN_ATTR_OPERATION_POINTWISE_YDESC
	attrPwT            = 758 // CUDNN_ATTR_OPERATION_POINTWISE_TDESC
	attrGraphHandle    = 800 // CUDNN_ATTR_OPERATIONGRAPH_HANDLE
	attrGraphOps       = 801 // CUDNN_ATTR_OPERATIONGRAPH_OPS
	attrTensorAlign    = 900 // CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT
	attrTensorType     = 901 // CUDNN_ATTR_TENSOR_DATA_TYPE
	attrTensorDims     = 902 // CUDNN_ATTR_TENSOR_DIMENSIONS
	attrTensorStrides  = 903 // CUDNN_ATTR_TENSOR_STRIDES
	attrTensorUID      = 906 // CUDNN_ATTR_TENSOR_UNIQUE_ID
	attrTensorVirtual  = 907 // CUDNN_ATTR_TENSOR_IS_VIRTUAL
	attrTensorByValue  = 908 // CUDNN_ATTR_TENSOR_IS_BY_VALUE
	attrPackUIDs       = 1000
	attrPackPointers   = 1001
	attrPackWorkspace  = 1003
	attrEngineIndex    = 1301 // CUDNN_ATTR_ENGINE_GLOBAL_INDEX
	attrEngineNotes    = 1303 // CUDNN_ATTR_ENGINE_NUMERICAL_NOTE
	attrEngineBehavior = 1305 // CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE
	attrMatmulCompType = 1500 // CUDNN_ATTR_MATMUL_COMP_TYPE
	attrMatmulA        = 1520 // CUDNN_ATTR_OPERATION_MATMUL_ADESC
	attrMatmulB        = 1521
	attrMatmulC        = 1522
	attrMatmulDesc     = 1523
	attrReductionOp    = 1600 // CUDNN_ATTR_REDUCTION_OPERATOR
	attrReductionComp  = 1601
	attrRedX           = 1610 // CUDNN_ATTR_OPERATION_REDUCTION_XDESC
	attrRedY           = 1611
	attrRedDesc        = 1612
)

// cudnnPointwiseMode_t and cudnnReduceTensorOp_t values.
const (
	pointwiseAdd      = 0   // CUDNN_POINTWISE_ADD
	pointwiseMul      = 1   // CUDNN_POINTWISE_MUL
	pointwiseDiv      = 6   // CUDNN_POINTWISE_DIV
	pointwiseSub      = 9   // CUDNN_POINTWISE_SUB
	pointwiseExp      = 13  // CUDNN_POINTWISE_EXP
	pointwiseLog      = 15  // CUDNN_POINTWISE_LOG
	pointwiseReLU     = 100 // CUDNN_POINTWISE_RELU_FWD
	pointwiseCmpGE    = 303 // CUDNN_POINTWISE_CMP_GE
	pointwiseGenIndex = 501 // CUDNN_POINTWISE_GEN_INDEX
	pointwiseSelect   = 601 // CUDNN_POINTWISE_BINARY_SELECT
	reduceAdd         = 0   // CUDNN_REDUCE_TENSOR_ADD
	reduceMax         = 3   // CUDNN_REDUCE_TENSOR_MAX
)

// convAttrs are the attribute names of a convolution operation of each
// pass: alpha, beta, the convolution, then the tensors x, w, y by their
// forward roles (backward data: dx, w, dy; backward filter: x, dw, dy).
var convAttrs = [3]struct{ alpha, beta, conv, x, w, y int32 }{
	passForward:        {700, 701, 702, 704, 703, 705},
	passBackwardData:   {706, 707, 708, 710, 709, 711},
	passBackwardFilter: {712, 713, 714, 716, 715, 717},
}

// The tensors' unique ids in a graph, and the roles of a call's pointers:
// x, w, y by their forward roles, the fused forward's bias.
const (
	roleX = iota
	roleW
	roleY
	roleBias
	nRoles
)

const (
	uidBase    = 1 // roleX+uidBase ... roleBias+uidBase
	uidConv    = 10
	uidBiased  = 11
	maxTimed   = 32      // engine configurations SetBenchmark times
	maxConfigs = 64      // heuristics' results read at most
	workLimit  = 1 << 30 // a plan's work area above this is skipped
	timedRuns  = 3
)

// alignment returns the largest power of two up to 16 that divides p.
func alignment(p uintptr) uint8 {
	a := uintptr(16)
	for a > 1 && p%a != 0 {
		a /= 2
	}
	return uint8(a)
}

// graphPlan is a convolution's execution plan and the descriptors it was
// built from, destroyed together.
type graphPlan struct {
	plan  clib.BackendDescriptor
	work  uintptr
	uids  []int64 // the tensors the variant pack names, by role
	descs []clib.BackendDescriptor
	// pack is the variant pack of the last call, for the pointers packed
	// (the tensors', then the work area's): a call on the same buffers
	// runs it again, asking cuDNN for nothing but the execution.
	pack   clib.BackendDescriptor
	packed [nRoles + 1]uintptr
}

func (g *graphPlan) destroy(op string) error {
	if g.pack != 0 {
		if err := check(op, "cudnnBackendDestroyDescriptor", clib.BackendDestroyDescriptor(g.pack)); err != nil {
			return err
		}
		g.pack = 0
	}
	var first error
	g.descs = destroyAll(g.descs, func(d clib.BackendDescriptor) bool {
		err := check(op, "cudnnBackendDestroyDescriptor", clib.BackendDestroyDescriptor(d))
		if err != nil && first == nil {
			first = err
		}
		return err != nil
	})
	return first
}

// builder makes backend descriptors into g, its first error sticky: each
// call after one does nothing.
type builder struct {
	op  string
	g   *graphPlan
	err error
	// types are the descriptors' types, for the errors' details.
	types map[clib.BackendDescriptor]int32
}

// detail adds to b.err, where it is cuDNN's, what was being done.
func (b *builder) detail(format string, args ...any) {
	var e *Error
	if errors.As(b.err, &e) && e.Detail == "" {
		e.Detail = fmt.Sprintf(format, args...)
	}
}

func (b *builder) create(t int32) clib.BackendDescriptor {
	if b.err != nil {
		return 0
	}
	var d clib.BackendDescriptor
	if b.err = check(b.op, "cudnnBackendCreateDescriptor", clib.BackendCreateDescriptor(t, &d)); b.err != nil {
		b.detail("descriptor type %d", t)
		return 0
	}
	b.g.descs = append(b.g.descs, d)
	if b.types == nil {
		b.types = map[clib.BackendDescriptor]int32{}
	}
	b.types[d] = t
	return d
}

func (b *builder) set(d clib.BackendDescriptor, name, typ int32, n int, p unsafe.Pointer) {
	if b.err == nil {
		b.err = check(b.op, "cudnnBackendSetAttribute", clib.BackendSetAttribute(d, name, typ, int64(n), p))
		b.detail("attribute %d (type %d, %d element(s)) of a descriptor of type %d", name, typ, n, b.types[d])
	}
}

func (b *builder) i64(d clib.BackendDescriptor, name int32, v ...int64) {
	b.set(d, name, atInt64, len(v), unsafe.Pointer(&v[0]))
}

func (b *builder) i32(d clib.BackendDescriptor, name, typ int32, v int32) {
	b.set(d, name, typ, 1, unsafe.Pointer(&v))
}

func (b *builder) desc(d clib.BackendDescriptor, name int32, v ...clib.BackendDescriptor) {
	b.set(d, name, atDescriptor, len(v), unsafe.Pointer(&v[0]))
}

func (b *builder) finalize(d clib.BackendDescriptor) {
	if b.err == nil {
		b.err = check(b.op, "cudnnBackendFinalize", clib.BackendFinalize(d))
		b.detail("a descriptor of type %d", b.types[d])
	}
}

// tensor makes a finalized tensor descriptor of s in layout l (its
// dimensions in N, C, H, W order, the layout in its strides).
func (b *builder) tensor(uid int64, s Shape, l Layout, dt int32, align uint8, virtual bool) clib.BackendDescriptor {
	d := b.create(bdTensor)
	dims := []int64{int64(s.N), int64(s.C), int64(s.H), int64(s.W)}
	strides := []int64{int64(s.C * s.H * s.W), int64(s.H * s.W), int64(s.W), 1}
	if l == NHWC {
		strides = []int64{int64(s.H * s.W * s.C), 1, int64(s.W * s.C), int64(s.C)}
	}
	b.i32(d, attrTensorType, atDataType, dt)
	b.i64(d, attrTensorDims, dims...)
	b.i64(d, attrTensorStrides, strides...)
	b.i64(d, attrTensorUID, uid)
	b.i64(d, attrTensorAlign, int64(align))
	if virtual {
		v := true
		b.set(d, attrTensorVirtual, atBoolean, 1, unsafe.Pointer(&v))
	}
	b.finalize(d)
	return d
}

// fallsBack reports whether err is cuDNN saying that it cannot do what
// was asked (not supported, or an engine that failed to build, as
// runtime compilation can): the plan or configuration is passed over, not
// an error. A missing function is such a refusal too.
func fallsBack(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	if e.Code == 0 {
		return errors.Is(err, cuda.ErrNotSupported) // the library lacks the call
	}
	switch c := int(e.Code); {
	case c >= 3000 && c < 4000:
		return true
	case c == 4000, c == 4001, c == 4002, c == 4005, c == 4006:
		return true
	}
	return false
}

// backendAPI reports whether the library opened has the backend API's
// functions, and the environment does not ask for the legacy calls.
func backendAPI() bool {
	if os.Getenv(EnvLegacy) == "1" {
		return false
	}
	for _, s := range clib.Table.Symbols {
		if strings.HasPrefix(s.Name, "cudnnBackend") && *s.Addr == 0 {
			return false
		}
	}
	return true
}

// graph builds the execution plan of k through the backend API: nil and
// no error where cuDNN cannot (the legacy calls then run the shape). ptrs
// are the call's tensors by role, which SetBenchmark's timing runs on.
func (c *call) graph(k convKey, y Shape, ptrs [nRoles]uintptr) (_ *graphPlan, err error) {
	if k.legacy || !backendAPI() {
		return nil, nil
	}
	g := &graphPlan{}
	b := &builder{op: c.op, g: g}
	defer func() {
		if err != nil || g.plan == 0 {
			if derr := g.destroy(c.op); err == nil && derr != nil {
				err = derr
			}
		}
	}()
	opGraph := b.opGraph(c.lh, k, y)
	if b.err != nil {
		if fallsBack(b.err) {
			return nil, nil
		}
		return nil, b.err
	}
	// Without SetBenchmark the heuristics' first plan that builds is
	// taken, the fallback list's only where mode A has none. With it, the
	// plans of both lists are timed together, as PyTorch's benchmark mode
	// takes plans from both: with mode A's first 16 alone, six forward
	// NCHW shapes measured 0.79x-0.97x PyTorch's on an H100. The engines
	// cuDNN compiles at run time are timed only where no other runs
	// (compiled): one (engine 71, float32 with TF32, a 7x7 filter of
	// stride 2 on 13x11) faulted on the H100 and the H200,
	// CUDA_ERROR_MISALIGNED_ADDRESS, which leaves the context unusable,
	// where every engine cuDNN ships compiled ran; and each costs a
	// compilation in the timing besides.
	var all, compiled []clib.BackendDescriptor
	for _, mode := range []int32{heurModeA, heurModeFallback} {
		cfgs, rtc, err := c.configs(b, opGraph, k, mode, c.benchmark)
		if err != nil {
			return nil, err
		}
		if c.benchmark {
			all = append(all, cfgs...)
			compiled = append(compiled, rtc...)
			if mode == heurModeA {
				continue
			}
			cfgs = all
		}
		if err := c.choosePlan(b, g, cfgs, ptrs); err != nil {
			return nil, err
		}
		if g.plan == 0 && len(compiled) > 0 {
			if err := c.choosePlan(b, g, compiled, ptrs); err != nil {
				return nil, err
			}
		}
		if g.plan != 0 {
			g.uids = []int64{roleX + uidBase, roleW + uidBase, roleY + uidBase}
			if k.pass == passFused {
				g.uids = append(g.uids, roleBias+uidBase)
			}
			return g, nil
		}
	}
	return nil, nil
}

// opGraph makes the finalized operation graph of k.
func (b *builder) opGraph(lh clib.Handle, k convKey, y Shape) clib.BackendDescriptor {
	p := k.p
	x := b.tensor(roleX+uidBase, k.x, k.layout, k.dt, k.align[roleX], false)
	w := b.tensor(roleW+uidBase, k.w, k.layout, k.dt, k.align[roleW], false)
	conv := b.create(bdConvolution)
	b.i32(conv, attrConvCompType, atDataType, dataFloat)
	b.i32(conv, attrConvMode, atConvMode, crossCorrelationMod)
	b.i64(conv, attrConvSpatialDims, 2)
	b.i64(conv, attrConvDilations, int64(p.DilationH), int64(p.DilationW))
	b.i64(conv, attrConvStrides, int64(p.StrideH), int64(p.StrideW))
	b.i64(conv, attrConvPrePaddings, int64(p.PadH), int64(p.PadW))
	b.i64(conv, attrConvPostPaddings, int64(p.PadH), int64(p.PadW))
	b.finalize(conv)
	pass := k.pass
	if pass == passFused {
		pass = passForward
	}
	// The convolution's output: y, or, fused, a virtual float tensor.
	var out clib.BackendDescriptor
	if k.pass == passFused {
		out = b.tensor(uidConv, y, k.layout, dataFloat, 16, true)
	} else {
		out = b.tensor(roleY+uidBase, y, k.layout, k.dt, k.align[roleY], false)
	}
	opType := [...]int32{passForward: bdOpConvForward, passBackwardData: bdOpConvBackData, passBackwardFilter: bdOpConvBackFilter}[pass]
	a := convAttrs[pass]
	op := b.create(opType)
	b.desc(op, a.conv, conv)
	b.desc(op, a.x, x)
	b.desc(op, a.w, w)
	b.desc(op, a.y, out)
	one, zero := float32(1), float32(0)
	b.set(op, a.alpha, atFloat, 1, unsafe.Pointer(&one))
	b.set(op, a.beta, atFloat, 1, unsafe.Pointer(&zero))
	b.finalize(op)
	ops := []clib.BackendDescriptor{op}
	if k.pass == passFused {
		bias := b.tensor(roleBias+uidBase, Shape{N: 1, C: y.C, H: 1, W: 1}, k.layout, k.dt, k.align[roleBias], false)
		pointwise := func(mode int32, in, bias, out clib.BackendDescriptor) clib.BackendDescriptor {
			pw := b.create(bdPointwise)
			b.i32(pw, attrPointwiseMode, atPointwiseMode, mode)
			b.i32(pw, attrPointwiseMathPrec, atDataType, dataFloat)
			b.finalize(pw)
			o := b.create(bdOpPointwise)
			b.desc(o, attrPwDescriptor, pw)
			b.desc(o, attrPwX, in)
			if bias != 0 {
				b.desc(o, attrPwB, bias)
			}
			b.desc(o, attrPwY, out)
			b.finalize(o)
			return o
		}
		yt := b.tensor(roleY+uidBase, y, k.layout, k.dt, k.align[roleY], false)
		if k.act == ReLU {
			biased := b.tensor(uidBiased, y, k.layout, dataFloat, 16, true)
			ops = append(ops, pointwise(pointwiseAdd, out, bias, biased), pointwise(pointwiseReLU, biased, 0, yt))
		} else {
			ops = append(ops, pointwise(pointwiseAdd, out, bias, yt))
		}
	}
	g := b.create(bdOperationGraph)
	b.set(g, attrGraphHandle, atHandle, 1, unsafe.Pointer(&lh))
	if b.err == nil {
		b.desc(g, attrGraphOps, ops...)
	}
	b.finalize(g)
	return g
}

// configs returns the engine configurations the heuristics of mode rank
// for the graph, best first, less those whose numerics k does not allow
// (allowedNotes). nil where cuDNN has none for the graph. Where
// splitCompiled, the engines cuDNN compiles at run time come apart, in
// rtc.
func (c *call) configs(b *builder, opGraph clib.BackendDescriptor, k convKey, mode int32, splitCompiled bool) (cfgs, rtc []clib.BackendDescriptor, err error) {
	heur := b.create(bdEngineHeur)
	b.desc(heur, attrHeurGraph, opGraph)
	b.i32(heur, attrHeurMode, atHeurMode, mode)
	b.finalize(heur)
	var n int64
	if b.err == nil {
		b.err = check(c.op, "cudnnBackendGetAttribute", clib.BackendGetAttribute(heur, attrHeurResults, atDescriptor, 0, &n, nil))
	}
	if b.err != nil {
		err := b.err
		b.err = nil
		if fallsBack(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	n = min(n, maxConfigs)
	if n <= 0 {
		return nil, nil, nil
	}
	cfgs = make([]clib.BackendDescriptor, n)
	for i := range cfgs {
		cfgs[i] = b.create(bdEngineCfg)
	}
	var got int64
	if b.err == nil {
		b.err = check(c.op, "cudnnBackendGetAttribute", clib.BackendGetAttribute(heur, attrHeurResults, atDescriptor, n, &got, unsafe.Pointer(&cfgs[0])))
	}
	if b.err != nil {
		return nil, nil, b.err
	}
	cfgs = cfgs[:min(got, n)]
	kept := cfgs[:0:0]
	for _, cfg := range cfgs {
		engine := b.create(bdEngine)
		var m int64
		if b.err == nil {
			b.err = check(c.op, "cudnnBackendGetAttribute", clib.BackendGetAttribute(cfg, attrCfgEngine, atDescriptor, 1, &m, unsafe.Pointer(&engine)))
		}
		var notes [16]int32
		if b.err == nil {
			b.err = check(c.op, "cudnnBackendGetAttribute", clib.BackendGetAttribute(engine, attrEngineNotes, atNumericalNote, int64(len(notes)), &m, unsafe.Pointer(&notes[0])))
		}
		if b.err != nil {
			return nil, nil, b.err
		}
		if !allowedNotes(notes[:min(m, int64(len(notes)))], k.dt == dataFloat && !k.tf32) {
			continue
		}
		if splitCompiled {
			var behavior [8]int32
			b.err = check(c.op, "cudnnBackendGetAttribute", clib.BackendGetAttribute(engine, attrEngineBehavior, atBehaviorNote, int64(len(behavior)), &m, unsafe.Pointer(&behavior[0])))
			if b.err != nil {
				return nil, nil, b.err
			}
			if slices.Contains(behavior[:min(m, int64(len(behavior)))], noteRuntimeCompiled) {
				rtc = append(rtc, cfg)
				continue
			}
		}
		kept = append(kept, cfg)
	}
	return kept, rtc, nil
}

// engineIndex returns cuDNN's global index of cfg's engine, in words: "?"
// where cuDNN does not say.
func engineIndex(b *builder, cfg clib.BackendDescriptor) string {
	if b.err != nil {
		return "?"
	}
	engine := b.create(bdEngine)
	var m, index int64
	err := check(b.op, "cudnnBackendGetAttribute", clib.BackendGetAttribute(cfg, attrCfgEngine, atDescriptor, 1, &m, unsafe.Pointer(&engine)))
	if err == nil {
		err = check(b.op, "cudnnBackendGetAttribute", clib.BackendGetAttribute(engine, attrEngineIndex, atInt64, 1, &m, unsafe.Pointer(&index)))
	}
	b.err = nil
	if err != nil || m != 1 {
		return "?"
	}
	return strconv.FormatInt(index, 10)
}

// namedEngine returns err, an engine's timed run's, with the engine
// named: in its Detail where err is this package's Error without one.
func namedEngine(err error, engine string) error {
	var e *Error
	if errors.As(err, &e) && e.Detail == "" {
		e.Detail = "timing engine " + engine + " (SetBenchmark)"
		return err
	}
	return fmt.Errorf("timing engine %s (SetBenchmark): %w", engine, err)
}

// allowedNotes reports whether an engine of these numerical notes may
// run a call: never one that converts its inputs down (float32 to a half,
// a half to fewer bits: more rounding than the call's type, or TF32,
// allows), and, where strict (float32 without SetTF32), none on the
// tensor cores, whose float32 products are TF32's. PyTorch's filter is
// the same. With TF32 allowed, float32 had kept the engines that convert
// down too, and the halves always had.
func allowedNotes(notes []int32, strict bool) bool {
	for _, note := range notes {
		if note == noteDownConvert || strict && note == noteTensorCore {
			return false
		}
	}
	return true
}

// choosePlan sets g.plan to the plan of the first of cfgs that finalizes
// with a work area of at most workLimit, or, with SetBenchmark, to the
// fastest of the first maxTimed that do, each run on ptrs. Plans that
// cannot be built are passed over; g.plan stays 0 where none can.
func (c *call) choosePlan(b *builder, g *graphPlan, cfgs []clib.BackendDescriptor, ptrs [nRoles]uintptr) error {
	best, bestTime := clib.BackendDescriptor(0), time.Duration(0)
	var bestWork uintptr
	tried := 0
	timed := map[clib.BackendDescriptor]bool{}
	for _, cfg := range cfgs {
		if tried == maxTimed || (!c.benchmark && best != 0) {
			break
		}
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
				return err
			}
			b.err = nil
			continue
		}
		if ws < 0 || ws > workLimit {
			continue
		}
		tried++
		if !c.benchmark {
			best, bestWork = plan, uintptr(ws)
			break
		}
		timed[plan] = true
		d, err := c.time(plan, uintptr(ws), ptrs)
		if err != nil {
			if fallsBack(err) {
				continue
			}
			// Which engine failed, for a report: an engine that faults
			// leaves the context unusable, and only its number tells it
			// from the others the heuristics offered.
			return namedEngine(err, engineIndex(b, cfg))
		}
		if best == 0 || d < bestTime {
			best, bestTime, bestWork = plan, d, uintptr(ws)
		}
	}
	g.plan, g.work = best, bestWork
	if c.benchmark {
		return g.drop(c.op, func(d clib.BackendDescriptor) bool { return d != best && timed[d] })
	}
	return nil
}

// drop destroys the descriptors of g that lose says may go (the plans
// SetBenchmark timed and passed over), each tried twice; the first
// failure is the error, and what could not be destroyed stays in g.
func (g *graphPlan) drop(op string, lose func(clib.BackendDescriptor) bool) error {
	var first error
	kept := g.descs[:0]
	for _, d := range g.descs {
		if !lose(d) {
			kept = append(kept, d)
			continue
		}
		err := check(op, "cudnnBackendDestroyDescriptor", clib.BackendDestroyDescriptor(d))
		if err != nil {
			if first == nil {
				first = err
			}
			if check(op, "cudnnBackendDestroyDescriptor", clib.BackendDestroyDescriptor(d)) != nil {
				kept = append(kept, d)
			}
		}
	}
	g.descs = kept
	return first
}

// time runs plan on ptrs once, then timedRuns times between two events
// on h's stream, and returns the time the runs took.
func (c *call) time(plan clib.BackendDescriptor, ws uintptr, ptrs [nRoles]uintptr) (_ time.Duration, err error) {
	n := 3
	if ptrs[roleBias] != 0 {
		n = 4
	}
	uids := []int64{roleX + uidBase, roleW + uidBase, roleY + uidBase, roleBias + uidBase}[:n]
	run := func() error { return c.execute(plan, ws, uids, ptrs[:n]) }
	if err := run(); err != nil {
		return 0, err
	}
	start, err := c.ctx.NewEvent()
	if err != nil {
		return 0, err
	}
	defer lifetime.CloseTemp(&err, start.Close)
	end, err := c.ctx.NewEvent()
	if err != nil {
		return 0, err
	}
	defer lifetime.CloseTemp(&err, end.Close)
	if err := start.Record(c.stream); err != nil {
		return 0, err
	}
	for range timedRuns {
		if err := run(); err != nil {
			return 0, err
		}
	}
	if err := end.Record(c.stream); err != nil {
		return 0, err
	}
	if err := end.Synchronize(); err != nil {
		return 0, err
	}
	return cuda.ElapsedTime(start, end)
}

// execute runs plan on the tensors ptrs (their ids uids) with a work area
// of ws bytes, through a variant pack made for the call.
func (c *call) execute(plan clib.BackendDescriptor, ws uintptr, uids []int64, ptrs []uintptr) (err error) {
	wp, err := c.work(ws)
	if err != nil {
		return err
	}
	g := &graphPlan{}
	defer func() {
		if derr := g.destroy(c.op); err == nil {
			err = derr
		}
	}()
	pack, err := c.pack(g, uids, ptrs, wp)
	if err != nil {
		return err
	}
	return check(c.op, "cudnnBackendExecute", clib.BackendExecute(c.lh, plan, pack))
}

// pack makes a finalized variant pack, into g.
func (c *call) pack(g *graphPlan, uids []int64, ptrs []uintptr, wp uintptr) (clib.BackendDescriptor, error) {
	b := &builder{op: c.op, g: g}
	pack := b.create(bdVariantPack)
	b.set(pack, attrPackUIDs, atInt64, len(uids), unsafe.Pointer(&uids[0]))
	b.set(pack, attrPackPointers, atVoidPtr, len(ptrs), unsafe.Pointer(&ptrs[0]))
	b.set(pack, attrPackWorkspace, atVoidPtr, 1, unsafe.Pointer(&wp))
	b.finalize(pack)
	return pack, b.err
}

// run runs a plan built by graph on the call's tensors, with the variant
// pack of the last call where the pointers are the same.
func (c *call) run(g *graphPlan, ptrs [nRoles]uintptr) error {
	wp, err := c.work(g.work)
	if err != nil {
		return err
	}
	key := [nRoles + 1]uintptr{ptrs[0], ptrs[1], ptrs[2], ptrs[3], wp}
	if g.pack == 0 || g.packed != key {
		if g.pack != 0 {
			if err := check(c.op, "cudnnBackendDestroyDescriptor", clib.BackendDestroyDescriptor(g.pack)); err != nil {
				return err
			}
			g.pack = 0
		}
		t := &graphPlan{}
		pack, err := c.pack(t, g.uids, ptrs[:len(g.uids)], wp)
		if err != nil {
			if derr := t.destroy(c.op); derr != nil {
				return errors.Join(err, derr)
			}
			return err
		}
		g.pack, g.packed = pack, key
	}
	return check(c.op, "cudnnBackendExecute", clib.BackendExecute(c.lh, g.plan, g.pack))
}

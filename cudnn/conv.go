package cudnn

import (
	"errors"
	"fmt"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cudnn"
)

// Conv2D is a 2-D convolution's parameters. Its zero value is a plain
// convolution: no padding, stride 1, no dilation, one group. Like
// PyTorch's conv2d (and cuDNN's CUDNN_CROSS_CORRELATION), the filter is
// not flipped.
type Conv2D struct {
	PadH, PadW           int // zeros added at each side of the input; 0 or more
	StrideH, StrideW     int // the filter's step; 0 means 1
	DilationH, DilationW int // the spacing of the filter's taps; 0 means 1
	// Groups splits the input's and the output's channels into as many
	// groups, each convolved with its own filters (the filter's C is the
	// input's channels per group); 0 means 1. Groups equal to the input's
	// channels is a depthwise convolution.
	Groups int
}

// norm returns p with its defaults in place, or what is wrong with it.
func (p Conv2D) norm() (Conv2D, string) {
	one := func(v *int) {
		if *v == 0 {
			*v = 1
		}
	}
	one(&p.StrideH)
	one(&p.StrideW)
	one(&p.DilationH)
	one(&p.DilationW)
	one(&p.Groups)
	switch {
	case p.PadH < 0 || p.PadW < 0:
		return p, fmt.Sprintf("padding %d×%d is negative", p.PadH, p.PadW)
	case p.StrideH < 0 || p.StrideW < 0:
		return p, fmt.Sprintf("stride %d×%d is negative", p.StrideH, p.StrideW)
	case p.DilationH < 0 || p.DilationW < 0:
		return p, fmt.Sprintf("dilation %d×%d is negative", p.DilationH, p.DilationW)
	case p.Groups < 0:
		return p, fmt.Sprintf("Groups is %d", p.Groups)
	case p.PadH > 1<<20 || p.PadW > 1<<20 || p.StrideH > 1<<20 || p.StrideW > 1<<20 || p.DilationH > 1<<20 || p.DilationW > 1<<20:
		return p, "a padding, stride or dilation is above 2²⁰"
	}
	return p, ""
}

// ConvOutput returns the shape of the output of a convolution of an input
// of shape x with a filter of shape w (K, C/groups, R, S) under p: N×K×P×Q
// with P = (H + 2·PadH − DilationH·(R−1) − 1)/StrideH + 1 (Q likewise),
// as cuDNN computes it (cudnnGetConvolution2dForwardOutputDim). It fails
// where the channels do not agree with the groups or the output is empty.
func ConvOutput(x, w Shape, p Conv2D) (Shape, error) {
	const op = "ConvOutput"
	p, why := p.norm()
	if why != "" {
		return Shape{}, errorf(op, cuda.ErrInvalidValue, "p: %s", why)
	}
	return convOutput(op, x, w, p)
}

func convOutput(op string, x, w Shape, p Conv2D) (Shape, error) {
	if why := x.check(); why != "" {
		return Shape{}, errorf(op, cuda.ErrInvalidValue, "x: %s", why)
	}
	if why := w.check(); why != "" {
		return Shape{}, errorf(op, cuda.ErrInvalidValue, "w: %s", why)
	}
	switch {
	case x.C != w.C*p.Groups:
		return Shape{}, errorf(op, cuda.ErrInvalidValue, "x has %d channels and w %d in each of %d group(s): want x's channels = w's × groups", x.C, w.C, p.Groups)
	case w.N%p.Groups != 0:
		return Shape{}, errorf(op, cuda.ErrInvalidValue, "w has %d filters: not a multiple of the %d groups", w.N, p.Groups)
	}
	eh, ew := p.DilationH*(w.H-1)+1, p.DilationW*(w.W-1)+1
	if x.H+2*p.PadH < eh || x.W+2*p.PadW < ew {
		return Shape{}, errorf(op, cuda.ErrInvalidValue, "the filter spans %d×%d, more than the padded input's %d×%d", eh, ew, x.H+2*p.PadH, x.W+2*p.PadW)
	}
	return Shape{N: x.N, C: w.N, H: (x.H+2*p.PadH-eh)/p.StrideH + 1, W: (x.W+2*p.PadW-ew)/p.StrideW + 1}, nil
}

// Activation is the function ConvBiasActivation applies last.
type Activation int

const (
	Identity Activation = iota // y = x ⋆ w + bias
	ReLU                       // y = max(0, x ⋆ w + bias)
)

// String returns "Identity" or "ReLU".
func (a Activation) String() string {
	switch a {
	case Identity:
		return "Identity"
	case ReLU:
		return "ReLU"
	}
	return fmt.Sprintf("Activation(%d)", int(a))
}

// cudnnActivationMode_t values.
const (
	actReLU     = 1 // CUDNN_ACTIVATION_RELU
	actIdentity = 5 // CUDNN_ACTIVATION_IDENTITY
)

// The passes of a convolution, and the fused forward.
const (
	passForward = iota
	passBackwardData
	passBackwardFilter
	passFused
)

var passNames = [...]string{"forward", "backward data", "backward filter", "fused forward"}

// convKey says which plan a call needs: the pass, the type, the layout,
// the shapes, the parameters and the math allowed (SetTF32). SetBenchmark
// is not part of it: it says how a new shape's algorithm is chosen, and
// the choice stays with the shape.
type convKey struct {
	pass   int
	dt     int32
	layout Layout
	x, w   Shape
	p      Conv2D
	act    Activation
	tf32   bool
	// align is each tensor's alignment in bytes (up to 16), by role
	// (roleX, roleW, roleY, roleBias): a plan of the backend API is
	// built for it.
	align [nRoles]uint8
	// legacy makes the plan the legacy calls', never the backend API's.
	legacy bool
}

// convPlan is what a shape's calls reuse: the descriptors (the forward
// convolution's x, w and y: for backward data, x is dx and y dy; for
// backward filter, w is dw and y dy), the algorithm and its work area's
// size.
type convPlan struct {
	// g is the backend API's plan; nil where the legacy calls run the
	// shape, with the fields below.
	g       *graphPlan
	d       descs
	x, y, b clib.TensorDescriptor
	w       clib.FilterDescriptor
	c       clib.ConvolutionDescriptor
	a       clib.ActivationDescriptor
	algo    int32
	work    uintptr
	// The fused forward's algorithm and work size (IMPLICIT_PRECOMP_GEMM
	// for the identity, else algo), set by its first call; unfused is set
	// where cuDNN refused to fuse the shape: its calls run the
	// convolution, the bias and the activation apart.
	fusedAlgo  int32
	fusedWork  uintptr
	fusedReady bool
	unfused    bool
}

func (p *convPlan) destroy(op string) error {
	if p.g != nil {
		if err := p.g.destroy(op); err != nil {
			return err
		}
	}
	return p.d.destroy(op)
}

// cudnnMathType_t values.
const (
	mathDefault  = 0 // CUDNN_DEFAULT_MATH: TF32 allowed for float32
	mathTensorOp = 1 // CUDNN_TENSOR_OP_MATH
	mathFMA      = 3 // CUDNN_FMA_MATH: no tensor cores, no TF32
)

// mathType is the math type a plan starts with.
func (k convKey) mathType() int32 {
	switch {
	case k.dt != dataFloat:
		return mathTensorOp
	case k.tf32:
		return mathDefault
	}
	return mathFMA
}

// perf is one of the algorithm results cuDNN returns (all three perf
// structs have this layout).
type perf = clib.FwdAlgoPerf

// maxAlgos is how many results an algorithm query asks for: more than any
// pass has algorithms.
const maxAlgos = 10

// plan returns the plan of k, made the first time k is seen: the backend
// API's (graph), else the legacy calls' (descriptors, algorithm, work
// size). ptrs are the call's tensors by role, which SetBenchmark's timing
// runs on.
func (c *call) plan(k convKey, y Shape, ptrs [nRoles]uintptr) (_ *convPlan, err error) {
	if pl := c.raw.plans[k]; pl != nil {
		return pl, nil
	}
	if c.benchmark && c.capturing {
		return nil, errorf(c.op, cuda.ErrNotSupported, "the stream captures, and timing the algorithms of a new shape (SetBenchmark) cannot be captured: run the call once before the capture")
	}
	g, err := c.graph(k, y, ptrs)
	if err != nil {
		return nil, err
	}
	if g != nil {
		pl := &convPlan{g: g, d: descs{op: c.op}}
		c.raw.plans[k] = pl
		return pl, nil
	}
	pl := &convPlan{d: descs{op: c.op}}
	defer func() {
		if err != nil {
			pl.destroy(c.op)
		}
	}()
	if pl.x, err = pl.d.tensor(k.x, k.layout, k.dt); err != nil {
		return nil, err
	}
	if pl.w, err = pl.d.filter(k.w, k.layout, k.dt); err != nil {
		return nil, err
	}
	if pl.y, err = pl.d.tensor(y, k.layout, k.dt); err != nil {
		return nil, err
	}
	var cd clib.ConvolutionDescriptor
	if err := check(c.op, "cudnnCreateConvolutionDescriptor", clib.CreateConvolutionDescriptor(&cd)); err != nil {
		return nil, err
	}
	pl.d.convs = append(pl.d.convs, cd)
	pl.c = cd
	p := k.p
	const crossCorrelation = 1 // CUDNN_CROSS_CORRELATION
	if err := check(c.op, "cudnnSetConvolution2dDescriptor", clib.SetConvolution2dDescriptor(cd, int32(p.PadH), int32(p.PadW), int32(p.StrideH), int32(p.StrideW), int32(p.DilationH), int32(p.DilationW), crossCorrelation, dataFloat)); err != nil {
		return nil, err
	}
	if p.Groups != 1 {
		if err := check(c.op, "cudnnSetConvolutionGroupCount", clib.SetConvolutionGroupCount(cd, int32(p.Groups))); err != nil {
			return nil, err
		}
	}
	math := k.mathType()
	if err := check(c.op, "cudnnSetConvolutionMathType", clib.SetConvolutionMathType(cd, math)); err != nil {
		return nil, err
	}
	if k.pass == passFused {
		if pl.b, err = pl.d.tensor(Shape{N: 1, C: y.C, H: 1, W: 1}, k.layout, k.dt); err != nil {
			return nil, err
		}
		var a clib.ActivationDescriptor
		if err := check(c.op, "cudnnCreateActivationDescriptor", clib.CreateActivationDescriptor(&a)); err != nil {
			return nil, err
		}
		pl.d.acts = append(pl.d.acts, a)
		pl.a = a
		mode := int32(actReLU)
		if k.act == Identity {
			mode = actIdentity
		}
		const propagateNaN = 1 // CUDNN_PROPAGATE_NAN
		if err := check(c.op, "cudnnSetActivationDescriptor", clib.SetActivationDescriptor(a, mode, propagateNaN, 0)); err != nil {
			return nil, err
		}
	}
	if err := c.choose(k, pl, math); err != nil {
		return nil, err
	}
	if err := c.workSize(k, pl, pl.algo, &pl.work); err != nil {
		return nil, err
	}
	c.raw.plans[k] = pl
	return pl, nil
}

// CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM
const algoImplicitPrecompGemm = 1

// choose asks cuDNN for the algorithm of k's pass (heuristics or timing),
// takes the first that succeeded, and sets its math type on the
// descriptor (as PyTorch does) unless that would allow TF32 where k does
// not.
func (c *call) choose(k convKey, pl *convPlan, math int32) error {
	var res [maxAlgos]perf
	var n int32
	var name string
	var r clib.Result
	switch k.pass {
	case passForward, passFused:
		if c.benchmark {
			name, r = "cudnnFindConvolutionForwardAlgorithm", clib.FindConvolutionForwardAlgorithm(c.lh, pl.x, pl.w, pl.c, pl.y, maxAlgos, &n, &res[0])
		} else {
			name, r = "cudnnGetConvolutionForwardAlgorithm_v7", clib.GetConvolutionForwardAlgorithm(c.lh, pl.x, pl.w, pl.c, pl.y, maxAlgos, &n, &res[0])
		}
	case passBackwardData:
		out := (*clib.BwdDataAlgoPerf)(unsafe.Pointer(&res[0]))
		if c.benchmark {
			name, r = "cudnnFindConvolutionBackwardDataAlgorithm", clib.FindConvolutionBackwardDataAlgorithm(c.lh, pl.w, pl.y, pl.c, pl.x, maxAlgos, &n, out)
		} else {
			name, r = "cudnnGetConvolutionBackwardDataAlgorithm_v7", clib.GetConvolutionBackwardDataAlgorithm(c.lh, pl.w, pl.y, pl.c, pl.x, maxAlgos, &n, out)
		}
	default:
		out := (*clib.BwdFilterAlgoPerf)(unsafe.Pointer(&res[0]))
		if c.benchmark {
			name, r = "cudnnFindConvolutionBackwardFilterAlgorithm", clib.FindConvolutionBackwardFilterAlgorithm(c.lh, pl.x, pl.y, pl.c, pl.w, maxAlgos, &n, out)
		} else {
			name, r = "cudnnGetConvolutionBackwardFilterAlgorithm_v7", clib.GetConvolutionBackwardFilterAlgorithm(c.lh, pl.x, pl.y, pl.c, pl.w, maxAlgos, &n, out)
		}
	}
	if err := check(c.op, name, r); err != nil {
		return err
	}
	for _, p := range res[:min(int(n), maxAlgos)] {
		if p.Status != 0 {
			continue
		}
		pl.algo = p.Algo
		if p.MathType != math && math != mathFMA {
			if err := check(c.op, "cudnnSetConvolutionMathType", clib.SetConvolutionMathType(pl.c, p.MathType)); err != nil {
				return err
			}
		}
		return nil
	}
	return errorf(c.op, cuda.ErrNotSupported, "cuDNN has no %s algorithm for x %v, w %v (%s, %s)", passNames[k.pass], k.x, k.w, k.layout, typeName(k.dt))
}

// workSize asks cuDNN for the work area of algo for the plan's pass.
func (c *call) workSize(k convKey, pl *convPlan, algo int32, n *uintptr) error {
	switch k.pass {
	case passForward, passFused:
		return check(c.op, "cudnnGetConvolutionForwardWorkspaceSize", clib.GetConvolutionForwardWorkspaceSize(c.lh, pl.x, pl.w, pl.c, pl.y, algo, n))
	case passBackwardData:
		return check(c.op, "cudnnGetConvolutionBackwardDataWorkspaceSize", clib.GetConvolutionBackwardDataWorkspaceSize(c.lh, pl.w, pl.y, pl.c, pl.x, algo, n))
	}
	return check(c.op, "cudnnGetConvolutionBackwardFilterWorkspaceSize", clib.GetConvolutionBackwardFilterWorkspaceSize(c.lh, pl.x, pl.y, pl.c, pl.w, algo, n))
}

// pointers returns a call's tensors by role (x, w, y by their forward
// roles; bias, 0 but for the fused forward), and sets k's alignments from
// them.
func (k *convKey) pointers(x, w, y, bias uintptr) [nRoles]uintptr {
	p := [nRoles]uintptr{roleX: x, roleW: w, roleY: y, roleBias: bias}
	for i, v := range p {
		k.align[i] = alignment(v)
	}
	return p
}

func typeName(dt int32) string {
	switch dt {
	case dataFloat:
		return "float32"
	case dataHalf:
		return "float16"
	}
	return "bfloat16"
}

// convArgs checks a convolution's three tensors (x its input, w its
// filter, y its output, by the names the caller's signature gives them)
// and p, and returns the plan's key.
func convArgs[T Element](op string, pass int, names [3]string, x, w, y Tensor[T], p Conv2D) (convKey, error) {
	if err := errors.Join(checkTensor(op, names[0], x), checkTensor(op, names[1], w), checkTensor(op, names[2], y)); err != nil {
		return convKey{}, err
	}
	if w.Layout != x.Layout || y.Layout != x.Layout {
		return convKey{}, errorf(op, cuda.ErrInvalidValue, "%s is %v, %s %v and %s %v: a convolution's tensors share a layout", names[0], x.Layout, names[1], w.Layout, names[2], y.Layout)
	}
	p, why := p.norm()
	if why != "" {
		return convKey{}, errorf(op, cuda.ErrInvalidValue, "p: %s", why)
	}
	out, err := convOutput(op, x.Shape, w.Shape, p)
	if err != nil {
		return convKey{}, err
	}
	if y.Shape != out {
		return convKey{}, errorf(op, cuda.ErrInvalidValue, "%s is %v: want %v (ConvOutput)", names[2], y.Shape, out)
	}
	return convKey{pass: pass, dt: dataType[T](), layout: x.Layout, x: x.Shape, w: w.Shape, p: p}, nil
}

// ConvForward computes y = x ⋆ w, the convolution of x (N×C×H×W) with the
// filters w (K×C/groups×R×S) under p, into y (ConvOutput's shape), all
// three in one layout, queued on h's stream (an operation graph of
// CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, or
// cudnnConvolutionForward: see the package comment).
func ConvForward[T Element](h *Handle, y, x, w Tensor[T], p Conv2D) error {
	return convPass(h, "ConvForward", passForward, [3]string{"x", "w", "y"}, x, w, y, p,
		func(c *call, pl *convPlan, ws uintptr, one, zero unsafe.Pointer) (string, clib.Result) {
			return "cudnnConvolutionForward", clib.ConvolutionForward(c.lh, one, pl.x, uintptr(x.Data.Ptr()), pl.w, uintptr(w.Data.Ptr()), pl.c, pl.algo, ws, pl.work, zero, pl.y, uintptr(y.Data.Ptr()))
		})
}

// ConvBackwardData computes dx, the gradient of a convolution's input x
// from the gradient dy of its output and the filters w (ConvForward's
// shapes, p the same): the transposed convolution, queued on h's stream
// (the backend API's backward-data operation, or
// cudnnConvolutionBackwardData).
func ConvBackwardData[T Element](h *Handle, dx, dy, w Tensor[T], p Conv2D) error {
	return convPass(h, "ConvBackwardData", passBackwardData, [3]string{"dx", "w", "dy"}, dx, w, dy, p,
		func(c *call, pl *convPlan, ws uintptr, one, zero unsafe.Pointer) (string, clib.Result) {
			return "cudnnConvolutionBackwardData", clib.ConvolutionBackwardData(c.lh, one, pl.w, uintptr(w.Data.Ptr()), pl.y, uintptr(dy.Data.Ptr()), pl.c, pl.algo, ws, pl.work, zero, pl.x, uintptr(dx.Data.Ptr()))
		})
}

// ConvBackwardFilter computes dw, the gradient of a convolution's filters
// from its input x and the gradient dy of its output (ConvForward's
// shapes, p the same), queued on h's stream (the backend API's
// backward-filter operation, or cudnnConvolutionBackwardFilter).
func ConvBackwardFilter[T Element](h *Handle, dw, x, dy Tensor[T], p Conv2D) error {
	return convPass(h, "ConvBackwardFilter", passBackwardFilter, [3]string{"x", "dw", "dy"}, x, dw, dy, p,
		func(c *call, pl *convPlan, ws uintptr, one, zero unsafe.Pointer) (string, clib.Result) {
			return "cudnnConvolutionBackwardFilter", clib.ConvolutionBackwardFilter(c.lh, one, pl.x, uintptr(x.Data.Ptr()), pl.y, uintptr(dy.Data.Ptr()), pl.c, pl.algo, ws, pl.work, zero, pl.w, uintptr(dw.Data.Ptr()))
		})
}

// convPass runs one of a convolution's three passes, whose tensors in the
// roles of ConvForward's x, w and y are xr, wr and yr (names as the
// caller's signature calls them): the plan of the shape, then its graph
// (the backend API), or the legacy call that legacy makes.
func convPass[T Element](h *Handle, op string, pass int, names [3]string, xr, wr, yr Tensor[T], p Conv2D,
	legacy func(c *call, pl *convPlan, ws uintptr, one, zero unsafe.Pointer) (string, clib.Result)) error {
	if err := h.valid(op); err != nil {
		return err
	}
	k, err := convArgs(op, pass, names, xr, wr, yr, p)
	if err != nil {
		return err
	}
	// The output is y for the forward pass, x (dx) for backward data, w
	// (dw) for backward filter; the two others are read.
	roles := [3]named{tensorBuf(names[0], xr), tensorBuf(names[1], wr), tensorBuf(names[2], yr)}
	o := map[int]int{passForward: 2, passBackwardData: 0, passBackwardFilter: 1}[pass]
	if err := aliased(op, []named{roles[o]}, roles[(o+1)%3], roles[(o+2)%3]); err != nil {
		return err
	}
	return h.do(op, roles[:], func(c *call) error {
		k.tf32 = c.tf32
		ptrs := k.pointers(uintptr(xr.Data.Ptr()), uintptr(wr.Data.Ptr()), uintptr(yr.Data.Ptr()), 0)
		pl, err := c.plan(k, yr.Shape, ptrs)
		if err != nil {
			return err
		}
		if pl.g != nil {
			return c.run(pl.g, ptrs)
		}
		ws, err := c.work(pl.work)
		if err != nil {
			return err
		}
		one, zero := float32(1), float32(0)
		name, r := legacy(c, pl, ws, unsafe.Pointer(&one), unsafe.Pointer(&zero))
		return check(op, name, r)
	})
}

// ConvBiasActivation computes y = act(x ⋆ w + bias), the convolution of
// ConvForward with a bias per output channel (len(bias) = K) and an
// activation, queued on h's stream: in one pass of cuDNN's (an operation
// graph of the convolution, a pointwise add and a pointwise ReLU, where an
// engine fuses them; else cudnnConvolutionBiasActivationForward, the
// identity with its
// IMPLICIT_PRECOMP_GEMM algorithm, the only one cuDNN fuses it with), or,
// for a shape and type cuDNN refuses to fuse, in three
// (cudnnConvolutionForward, cudnnAddTensor, cudnnActivationForward).
func ConvBiasActivation[T Element](h *Handle, y, x, w Tensor[T], bias *cuda.DeviceBuffer[T], act Activation, p Conv2D) error {
	const op = "ConvBiasActivation"
	if err := h.valid(op); err != nil {
		return err
	}
	k, err := convArgs(op, passFused, [3]string{"x", "w", "y"}, x, w, y, p)
	if err != nil {
		return err
	}
	switch {
	case act != Identity && act != ReLU:
		return errorf(op, cuda.ErrInvalidValue, "act is %v: want Identity or ReLU", act)
	case bias == nil:
		return errorf(op, cuda.ErrInvalidValue, "bias is nil")
	case bias.Len() != w.Shape.N:
		return errorf(op, cuda.ErrInvalidValue, "len(bias) is %d: want %d (w's filters)", bias.Len(), w.Shape.N)
	}
	outs, ins := []named{tensorBuf("y", y)}, []named{tensorBuf("x", x), tensorBuf("w", w), buf("bias", bias)}
	if err := aliased(op, outs, ins...); err != nil {
		return err
	}
	k.act = act
	return h.do(op, append(outs, ins...), func(c *call) error {
		k.tf32 = c.tf32
		ptrs := k.pointers(uintptr(x.Data.Ptr()), uintptr(w.Data.Ptr()), uintptr(y.Data.Ptr()), uintptr(bias.Ptr()))
		pl, err := c.plan(k, y.Shape, ptrs)
		if err != nil {
			return err
		}
		if pl.g != nil {
			return c.run(pl.g, ptrs)
		}
		one, zero := float32(1), float32(0)
		xp, wp, yp, bp := uintptr(x.Data.Ptr()), uintptr(w.Data.Ptr()), uintptr(y.Data.Ptr()), uintptr(bias.Ptr())
		if !pl.unfused {
			if !pl.fusedReady {
				pl.fusedAlgo, pl.fusedWork = pl.algo, pl.work
				if act == Identity && pl.algo != algoImplicitPrecompGemm {
					pl.fusedAlgo = algoImplicitPrecompGemm
					if err := c.workSize(k, pl, pl.fusedAlgo, &pl.fusedWork); err != nil {
						return err
					}
				}
				pl.fusedReady = true
			}
			ws, err := c.work(pl.fusedWork)
			if err != nil {
				return err
			}
			// z is y, weighted 0: cuDNN reads it, and y is of its shape.
			r := clib.ConvolutionBiasActivationForward(c.lh, unsafe.Pointer(&one), pl.x, xp, pl.w, wp, pl.c, pl.fusedAlgo, ws, pl.fusedWork,
				unsafe.Pointer(&zero), pl.y, yp, pl.b, bp, pl.a, pl.y, yp)
			if r == clib.Missing || r/1000 != clib.NotSupported/1000 {
				return check(op, "cudnnConvolutionBiasActivationForward", r)
			}
			// Not supported (a 3xxx status): not fused for this shape
			// and type, from now on.
			pl.unfused = true
		}
		ws, err := c.work(pl.work)
		if err != nil {
			return err
		}
		if err := check(op, "cudnnConvolutionForward", clib.ConvolutionForward(c.lh, unsafe.Pointer(&one), pl.x, xp, pl.w, wp, pl.c, pl.algo, ws, pl.work, unsafe.Pointer(&zero), pl.y, yp)); err != nil {
			return err
		}
		if err := check(op, "cudnnAddTensor", clib.AddTensor(c.lh, unsafe.Pointer(&one), pl.b, bp, unsafe.Pointer(&one), pl.y, yp)); err != nil {
			return err
		}
		if act == Identity {
			return nil
		}
		return check(op, "cudnnActivationForward", clib.ActivationForward(c.lh, pl.a, unsafe.Pointer(&one), pl.y, yp, unsafe.Pointer(&zero), pl.y, yp))
	})
}

// ConvBackwardBias computes db, the gradient of a convolution's bias (one
// per output channel, len(db) = dy's channels), from the gradient dy of
// its output: the sum of each channel of dy, queued on h's stream
// (cudnnConvolutionBackwardBias). cuDNN computes it for float32 and
// float16; a bfloat16 dy is refused with cuda.ErrNotSupported (sum dy
// over N, H and W with package nd instead).
func ConvBackwardBias[T Element](h *Handle, db *cuda.DeviceBuffer[T], dy Tensor[T]) error {
	const op = "ConvBackwardBias"
	if err := h.valid(op); err != nil {
		return err
	}
	if dataType[T]() == dataBFloat {
		return errorf(op, cuda.ErrNotSupported, "cuDNN's bias gradient (cudnnConvolutionBackwardBias) takes float32 and float16, not bfloat16: sum dy over N, H and W instead (nd.Sum over those axes)")
	}
	if err := checkTensor(op, "dy", dy); err != nil {
		return err
	}
	switch {
	case db == nil:
		return errorf(op, cuda.ErrInvalidValue, "db is nil")
	case db.Len() != dy.Shape.C:
		return errorf(op, cuda.ErrInvalidValue, "len(db) is %d: want %d (dy's channels)", db.Len(), dy.Shape.C)
	}
	outs, ins := []named{buf("db", db)}, []named{tensorBuf("dy", dy)}
	if err := aliased(op, outs, ins...); err != nil {
		return err
	}
	dt := dataType[T]()
	return h.do(op, append(outs, ins...), func(c *call) (err error) {
		d := &descs{op: op}
		defer d.release(&err)
		dyd, err := d.tensor(dy.Shape, dy.Layout, dt)
		if err != nil {
			return err
		}
		dbd, err := d.tensor(Shape{N: 1, C: dy.Shape.C, H: 1, W: 1}, dy.Layout, dt)
		if err != nil {
			return err
		}
		one, zero := float32(1), float32(0)
		return check(op, "cudnnConvolutionBackwardBias", clib.ConvolutionBackwardBias(c.lh, unsafe.Pointer(&one), dyd, uintptr(dy.Data.Ptr()), unsafe.Pointer(&zero), dbd, uintptr(db.Ptr())))
	})
}

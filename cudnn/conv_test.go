package cudnn_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/fakecuda"
)

// convCase is a convolution's shapes: the input x and the filters w.
type convCase struct {
	name string
	x, w cudnn.Shape
	p    cudnn.Conv2D
}

var convCases = []convCase{
	{"1x1", cudnn.Shape{N: 1, C: 3, H: 5, W: 5}, cudnn.Shape{N: 4, C: 3, H: 1, W: 1}, cudnn.Conv2D{}},
	{"3x3 pad 1 batch 3", cudnn.Shape{N: 3, C: 17, H: 7, W: 6}, cudnn.Shape{N: 5, C: 17, H: 3, W: 3}, cudnn.Conv2D{PadH: 1, PadW: 1}},
	{"7x7 stride 2 pad 3", cudnn.Shape{N: 1, C: 3, H: 13, W: 11}, cudnn.Shape{N: 2, C: 3, H: 7, W: 7}, cudnn.Conv2D{PadH: 3, PadW: 3, StrideH: 2, StrideW: 2}},
	{"dilation 2", cudnn.Shape{N: 1, C: 3, H: 9, W: 8}, cudnn.Shape{N: 2, C: 3, H: 3, W: 3}, cudnn.Conv2D{PadH: 2, PadW: 1, DilationH: 2, DilationW: 2}},
	{"2 groups stride 2", cudnn.Shape{N: 3, C: 6, H: 5, W: 7}, cudnn.Shape{N: 4, C: 3, H: 3, W: 3}, cudnn.Conv2D{PadH: 1, PadW: 1, StrideH: 2, StrideW: 1, Groups: 2}},
	{"depthwise 17", cudnn.Shape{N: 1, C: 17, H: 6, W: 6}, cudnn.Shape{N: 17, C: 1, H: 3, W: 3}, cudnn.Conv2D{PadH: 1, PadW: 1, Groups: 17}},
	{"1 channel 3x2 rectangular", cudnn.Shape{N: 3, C: 1, H: 4, W: 9}, cudnn.Shape{N: 1, C: 1, H: 3, W: 2}, cudnn.Conv2D{StrideW: 3}},
	{"output 1x1", cudnn.Shape{N: 2, C: 3, H: 7, W: 7}, cudnn.Shape{N: 5, C: 3, H: 7, W: 7}, cudnn.Conv2D{}},
	{"7x7 1 channel pad 4 over half stride 2", cudnn.Shape{N: 1, C: 1, H: 2, W: 3}, cudnn.Shape{N: 1, C: 1, H: 7, W: 7}, cudnn.Conv2D{PadH: 4, PadW: 4, StrideH: 2, StrideW: 2}},
	{"stride 3 inexact", cudnn.Shape{N: 2, C: 3, H: 8, W: 10}, cudnn.Shape{N: 4, C: 3, H: 3, W: 3}, cudnn.Conv2D{StrideH: 3, StrideW: 3}},
	{"groups dilation stride pad", cudnn.Shape{N: 1, C: 4, H: 9, W: 10}, cudnn.Shape{N: 6, C: 2, H: 3, W: 2}, cudnn.Conv2D{PadH: 1, PadW: 2, StrideH: 2, StrideW: 3, DilationH: 2, DilationW: 3, Groups: 2}},
}

var layouts = []cudnn.Layout{cudnn.NCHW, cudnn.NHWC}

// TestConv runs each case's three passes in both layouts and the three
// types against the Go reference.
func TestConv(t *testing.T) {
	ctx, _, h := handle(t)
	t.Run("float32", func(t *testing.T) { testConv[float32](t, ctx, h, tol[float32]()) })
	t.Run("float16", func(t *testing.T) { testConv[cuda.Float16](t, ctx, h, tol[cuda.Float16]()) })
	t.Run("bfloat16", func(t *testing.T) { testConv[cuda.BFloat16](t, ctx, h, tol[cuda.BFloat16]()) })
	// The backend API ran them all (the fake's engines take every shape;
	// a GPU's cuDNN may leave some to the legacy calls: logged).
	graph, legacy := cudnn.PlanKinds(h)
	t.Logf("plans: %d of the backend API, %d of the legacy calls", graph, legacy)
	if cudatest.IsFake() && legacy != 0 {
		t.Errorf("%d plan(s) of the legacy calls: the fake's backend API takes every shape", legacy)
	}
}

// TestConvBenchmarkEveryCase is TestConv with every algorithm timed
// (SetBenchmark): each engine cuDNN offers for a case runs on its tensors,
// and the one taken must give the Go reference's answers. TestBenchmark
// times one case; TestConcurrentMixed, with the setting flipping, met a
// CUDA_ERROR_MISALIGNED_ADDRESS on an H100 in one run of two. With TF32
// allowed, float32 has engines of its own to time.
func TestConvBenchmarkEveryCase(t *testing.T) {
	ctx, _, h := handle(t)
	if err := h.SetBenchmark(true); err != nil {
		t.Fatal(err)
	}
	t.Run("float32", func(t *testing.T) { testConv[float32](t, ctx, h, tol[float32]()) })
	t.Run("float16", func(t *testing.T) { testConv[cuda.Float16](t, ctx, h, tol[cuda.Float16]()) })
	t.Run("bfloat16", func(t *testing.T) { testConv[cuda.BFloat16](t, ctx, h, tol[cuda.BFloat16]()) })
	if err := h.SetTF32(true); err != nil {
		t.Fatal(err)
	}
	t.Run("float32 TF32", func(t *testing.T) { testConv[float32](t, ctx, h, 2e-3) })
}

// testConv runs each case's passes in both layouts against the Go
// reference, to rel of each value's scale.
func testConv[T cudnn.Element](t *testing.T, ctx *cuda.Context, h *cudnn.Handle, rel float64) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range convCases {
		for _, l := range layouts {
			t.Run(fmt.Sprintf("%s %v", c.name, l), func(t *testing.T) {
				ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
				xt, xf := random[T](r, c.x.Len())
				wt, wf := random[T](r, c.w.Len())
				dyt, dyf := random[T](r, ys.Len())
				x, w, dy := tensor(t, ctx, c.x, l, xt), tensor(t, ctx, c.w, l, wt), tensor(t, ctx, ys, l, dyt)

				y, dx, dw := empty[T](t, ctx, ys, l), empty[T](t, ctx, c.x, l), empty[T](t, ctx, c.w, l)
				if err := cudnn.ConvForward(h, y, x, w, c.p); err != nil {
					t.Fatal(err)
				}
				if err := cudnn.ConvBackwardData(h, dx, dy, w, c.p); err != nil {
					t.Fatal(err)
				}
				if err := cudnn.ConvBackwardFilter(h, dw, x, dy, c.p); err != nil {
					t.Fatal(err)
				}
				wantY, scaleY := make([]float64, ys.Len()), make([]float64, ys.Len())
				wantDX, scaleDX := make([]float64, c.x.Len()), make([]float64, c.x.Len())
				wantDW, scaleDW := make([]float64, c.w.Len()), make([]float64, c.w.Len())
				eachTerm(c.x, c.w, ys, l, c.p, func(xi, wi, yi int) {
					wantY[yi] += xf[xi] * wf[wi]
					scaleY[yi] += math.Abs(xf[xi] * wf[wi])
					wantDX[xi] += dyf[yi] * wf[wi]
					scaleDX[xi] += math.Abs(dyf[yi] * wf[wi])
					wantDW[wi] += xf[xi] * dyf[yi]
					scaleDW[wi] += math.Abs(xf[xi] * dyf[yi])
				})
				near(t, "y", download(t, y), wantY, scaleY, rel)
				near(t, "dx", download(t, dx), wantDX, scaleDX, rel)
				near(t, "dw", download(t, dw), wantDW, scaleDW, rel)

				db := empty[T](t, ctx, cudnn.Shape{N: 1, C: ys.C, H: 1, W: 1}, l)
				err := cudnn.ConvBackwardBias(h, db.Data, dy)
				if _, bf16 := any(*new(T)).(cuda.BFloat16); bf16 {
					// cuDNN answers NOT_SUPPORTED for bfloat16: refused
					// before the call, in words.
					if !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "bfloat16") {
						t.Fatalf("ConvBackwardBias of bfloat16: %v; want ErrNotSupported naming bfloat16", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				wantDB, scaleDB := make([]float64, ys.C), make([]float64, ys.C)
				for n := range ys.N {
					for k := range ys.C {
						for i := range ys.H {
							for j := range ys.W {
								v := dyf[at(ys, l, n, k, i, j)]
								wantDB[k] += v
								scaleDB[k] += math.Abs(v)
							}
						}
					}
				}
				near(t, "db", download(t, db), wantDB, scaleDB, rel)
			})
		}
	}
}

// TestConvBiasActivation checks the fused forward, ReLU and identity,
// against the reference, heuristics and benchmark alike.
func TestConvBiasActivation(t *testing.T) {
	ctx, _, h := handle(t)
	t.Run("float32", func(t *testing.T) { testFused[float32](t, ctx, h) })
	t.Run("float16", func(t *testing.T) { testFused[cuda.Float16](t, ctx, h) })
	t.Run("bfloat16", func(t *testing.T) { testFused[cuda.BFloat16](t, ctx, h) })
}

func testFused[T cudnn.Element](t *testing.T, ctx *cuda.Context, h *cudnn.Handle) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range convCases[:5] {
		for _, l := range layouts {
			for _, act := range []cudnn.Activation{cudnn.ReLU, cudnn.Identity} {
				t.Run(fmt.Sprintf("%s %v %v", c.name, l, act), func(t *testing.T) {
					ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
					xt, xf := random[T](r, c.x.Len())
					wt, wf := random[T](r, c.w.Len())
					bt, bf := random[T](r, c.w.N)
					x, w := tensor(t, ctx, c.x, l, xt), tensor(t, ctx, c.w, l, wt)
					bias := tensor(t, ctx, cudnn.Shape{N: 1, C: c.w.N, H: 1, W: 1}, l, bt).Data
					y := empty[T](t, ctx, ys, l)
					if err := cudnn.ConvBiasActivation(h, y, x, w, bias, act, c.p); err != nil {
						t.Fatal(err)
					}
					want, scale := make([]float64, ys.Len()), make([]float64, ys.Len())
					eachTerm(c.x, c.w, ys, l, c.p, func(xi, wi, yi int) {
						want[yi] += xf[xi] * wf[wi]
						scale[yi] += math.Abs(xf[xi] * wf[wi])
					})
					for n := range ys.N {
						for k := range ys.C {
							for i := range ys.H {
								for j := range ys.W {
									yi := at(ys, l, n, k, i, j)
									want[yi] += bf[k]
									scale[yi] += math.Abs(bf[k])
									if act == cudnn.ReLU && want[yi] < 0 {
										want[yi] = 0
									}
								}
							}
						}
					}
					near(t, "y", download(t, y), want, scale, tol[T]())
				})
			}
		}
	}
}

// TestBenchmark: with SetBenchmark, the algorithm is timed once per shape
// and the results are the same; TF32 allowed runs too.
func TestBenchmark(t *testing.T) {
	ctx, _, h := handle(t)
	if err := h.SetBenchmark(true); err != nil {
		t.Fatal(err)
	}
	if err := h.SetTF32(true); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	c := convCases[1]
	ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
	xt, xf := random[float32](r, c.x.Len())
	wt, wf := random[float32](r, c.w.Len())
	x, w := tensor(t, ctx, c.x, cudnn.NHWC, xt), tensor(t, ctx, c.w, cudnn.NHWC, wt)
	y := empty[float32](t, ctx, ys, cudnn.NHWC)
	for range 3 {
		if err := cudnn.ConvForward(h, y, x, w, c.p); err != nil {
			t.Fatal(err)
		}
	}
	want, scale := make([]float64, ys.Len()), make([]float64, ys.Len())
	eachTerm(c.x, c.w, ys, cudnn.NHWC, c.p, func(xi, wi, yi int) {
		want[yi] += xf[xi] * wf[wi]
		scale[yi] += math.Abs(xf[xi] * wf[wi])
	})
	near(t, "y", download(t, y), want, scale, 2e-3) // TF32: 10 bits of mantissa
}

// TestOutputShapes checks ConvOutput and PoolOutput against the formula
// at the edges.
func TestOutputShapes(t *testing.T) {
	for _, tt := range []struct {
		x, w cudnn.Shape
		p    cudnn.Conv2D
		want cudnn.Shape
	}{
		{cudnn.Shape{N: 32, C: 3, H: 224, W: 224}, cudnn.Shape{N: 64, C: 3, H: 7, W: 7}, cudnn.Conv2D{PadH: 3, PadW: 3, StrideH: 2, StrideW: 2}, cudnn.Shape{N: 32, C: 64, H: 112, W: 112}},
		{cudnn.Shape{N: 1, C: 4, H: 5, W: 5}, cudnn.Shape{N: 2, C: 2, H: 5, W: 5}, cudnn.Conv2D{Groups: 2}, cudnn.Shape{N: 1, C: 2, H: 1, W: 1}},
		{cudnn.Shape{N: 1, C: 1, H: 5, W: 5}, cudnn.Shape{N: 1, C: 1, H: 3, W: 3}, cudnn.Conv2D{DilationH: 2, DilationW: 2}, cudnn.Shape{N: 1, C: 1, H: 1, W: 1}},
	} {
		if got, err := cudnn.ConvOutput(tt.x, tt.w, tt.p); err != nil || got != tt.want {
			t.Errorf("ConvOutput(%v, %v, %+v) = %v, %v: want %v", tt.x, tt.w, tt.p, got, err, tt.want)
		}
	}
	if got, err := cudnn.PoolOutput(cudnn.Shape{N: 32, C: 64, H: 112, W: 112}, cudnn.Pool2D{WindowH: 3, WindowW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}); err != nil || got != (cudnn.Shape{N: 32, C: 64, H: 56, W: 56}) {
		t.Errorf("PoolOutput of ResNet's stem = %v, %v", got, err)
	}
}

// TestUnfused: on the legacy path, where cuDNN refuses to fuse a shape
// (here the fake, made to), ConvBiasActivation runs the convolution, the
// bias and the activation apart, with the same results, and keeps doing
// so for the shape.
func TestUnfused(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	t.Setenv(cudnn.EnvLegacy, "1")
	ctx, _, h := handle(t)
	r := rand.New(rand.NewPCG(11, 12))
	c := convCases[4]
	for _, act := range []cudnn.Activation{cudnn.ReLU, cudnn.Identity} {
		t.Run(act.String(), func(t *testing.T) {
			ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
			xt, xf := random[cuda.Float16](r, c.x.Len())
			wt, wf := random[cuda.Float16](r, c.w.Len())
			bt, bf := random[cuda.Float16](r, c.w.N)
			x, w := tensor(t, ctx, c.x, cudnn.NHWC, xt), tensor(t, ctx, c.w, cudnn.NHWC, wt)
			bias := cudatest.Upload(t, ctx, bt)
			want, scale := make([]float64, ys.Len()), make([]float64, ys.Len())
			eachTerm(c.x, c.w, ys, cudnn.NHWC, c.p, func(xi, wi, yi int) {
				want[yi] += xf[xi] * wf[wi]
				scale[yi] += math.Abs(xf[xi] * wf[wi])
			})
			for i := range want {
				want[i] += bf[i%ys.C] // NHWC: the channel is the last index
				scale[i] += math.Abs(bf[i%ys.C])
				if act == cudnn.ReLU {
					want[i] = max(want[i], 0)
				}
			}
			f.ResetCounts()
			f.Fail("cudnnConvolutionBiasActivationForward", 1, 3000)
			defer f.ResetFaults()
			for i := range 2 {
				y := empty[cuda.Float16](t, ctx, ys, cudnn.NHWC)
				if err := cudnn.ConvBiasActivation(h, y, x, w, bias, act, c.p); err != nil {
					t.Fatal(err)
				}
				near(t, fmt.Sprintf("y (call %d)", i+1), download(t, y), want, scale, tol[cuda.Float16]())
			}
			if n := f.Counts()["cudnnConvolutionBiasActivationForward"]; n != 1 {
				t.Errorf("cudnnConvolutionBiasActivationForward called %d times: want once (the shape stays unfused)", n)
			}
		})
	}
}

// TestPlanReuse: a shape's plan (the backend API's, or the legacy
// descriptors and algorithm) is made once; later calls of the shape on the
// same buffers make no descriptor and ask cuDNN for nothing but the
// convolution, and the work area, grown once, stays.
func TestPlanReuse(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	t.Run("graph", func(t *testing.T) { testPlanReuse(t, f, "cudnnBackendExecute") })
	t.Run("legacy", func(t *testing.T) {
		t.Setenv(cudnn.EnvLegacy, "1")
		testPlanReuse(t, f, "cudnnConvolutionForward")
	})
}

func testPlanReuse(t *testing.T, f *fakecuda.Control, run string) {
	ctx, _, h := handle(t)
	c := convCases[1]
	ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
	x, w, y := empty[float32](t, ctx, c.x, cudnn.NHWC), empty[float32](t, ctx, c.w, cudnn.NHWC), empty[float32](t, ctx, ys, cudnn.NHWC)
	if err := cudnn.ConvForward(h, y, x, w, c.p); err != nil {
		t.Fatal(err)
	}
	work := h.WorkBytes()
	f.ResetCounts()
	for range 5 {
		if err := cudnn.ConvForward(h, y, x, w, c.p); err != nil {
			t.Fatal(err)
		}
	}
	counts := f.Counts()
	for name, n := range counts {
		if strings.HasPrefix(name, "cudnn") && name != run {
			t.Errorf("%s called %d times by calls of a shape seen before", name, n)
		}
	}
	if n := counts[run]; n != 5 {
		t.Errorf("%s called %d times, want 5", run, n)
	}
	if n := counts["cuMemAllocAsync"]; n != 0 {
		t.Errorf("cuMemAllocAsync called %d times: the work area should stay", n)
	}
	if h.WorkBytes() != work {
		t.Errorf("WorkBytes went from %d to %d", work, h.WorkBytes())
	}
}

// TestBenchmarkFailureNamesEngine: an engine whose timed run fails with an
// error no other engine may answer (an execution fault, which leaves the
// context unusable on a GPU) is named by cuDNN's global index in the
// error, which keeps cuDNN's status.
func TestBenchmarkFailureNamesEngine(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx, _, h := handle(t)
	if err := h.SetBenchmark(true); err != nil {
		t.Fatal(err)
	}
	c := convCases[1]
	ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
	x, w, y := empty[float32](t, ctx, c.x, cudnn.NHWC), empty[float32](t, ctx, c.w, cudnn.NHWC), empty[float32](t, ctx, ys, cudnn.NHWC)
	// The fake's heuristics rank engines 2 (the tensor cores: float32
	// without TF32 passes it over), 1 and 0; engine 1 is the first timed.
	f.Fail("cudnnBackendExecute", 1, 5000)
	err := cudnn.ConvForward(h, y, x, w, c.p)
	if !errors.Is(err, cudnn.Result(5000)) {
		t.Fatalf("ConvForward with the first timed run failing: %v, want cuDNN's status 5000", err)
	}
	if !strings.Contains(err.Error(), "timing engine 1 ") {
		t.Errorf("ConvForward's error %q does not name engine 1", err)
	}
	// The next call times the engines again, and runs.
	if err := cudnn.ConvForward(h, y, x, w, c.p); err != nil {
		t.Errorf("ConvForward after the failure: %v", err)
	}
}

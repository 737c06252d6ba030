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
)

// fusedWant is y = act(x ⋆ w + bias) by the Go reference, with each
// element's scale.
func fusedWant(c convCase, ys cudnn.Shape, l cudnn.Layout, xf, wf, bf []float64, act cudnn.Activation) (want, scale []float64) {
	want, scale = make([]float64, ys.Len()), make([]float64, ys.Len())
	eachTerm(c.x, c.w, ys, l, c.p, func(xi, wi, yi int) {
		want[yi] += xf[xi] * wf[wi]
		scale[yi] += math.Abs(xf[xi] * wf[wi])
	})
	for n := range ys.N {
		for k := range ys.C {
			for h := range ys.H {
				for w := range ys.W {
					i := at(ys, l, n, k, h, w)
					want[i] += bf[k]
					scale[i] += math.Abs(bf[k])
					if act == cudnn.ReLU {
						want[i] = max(want[i], 0)
					}
				}
			}
		}
	}
	return want, scale
}

// TestGraph: the convolutions run through cuDNN's backend API (the fake's
// engines), not the legacy calls: the three passes and the fused forward
// of each type, by the heuristics and timed (SetBenchmark), against the
// Go reference.
func TestGraph(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	for _, bench := range []bool{false, true} {
		name := "heuristics"
		if bench {
			name = "benchmark"
		}
		t.Run(name, func(t *testing.T) {
			t.Run("float32", func(t *testing.T) { testGraph[float32](t, bench) })
			t.Run("bfloat16", func(t *testing.T) { testGraph[cuda.BFloat16](t, bench) })
		})
	}
}

func testGraph[T cudnn.Element](t *testing.T, bench bool) {
	f := cudatest.Fake(t)
	ctx, _, h := handle(t)
	must(0, h.SetBenchmark(bench))(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range convCases[1:5] {
		for _, l := range layouts {
			ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
			xt, xf := random[T](r, c.x.Len())
			wt, wf := random[T](r, c.w.Len())
			dyt, dyf := random[T](r, ys.Len())
			bt, bf := random[T](r, c.w.N)
			x, w, dy := tensor(t, ctx, c.x, l, xt), tensor(t, ctx, c.w, l, wt), tensor(t, ctx, ys, l, dyt)
			bias := cudatest.Upload(t, ctx, bt)
			y, dx, dw := empty[T](t, ctx, ys, l), empty[T](t, ctx, c.x, l), empty[T](t, ctx, c.w, l)
			f.ResetCounts()
			must(0, cudnn.ConvForward(h, y, x, w, c.p))(t)
			must(0, cudnn.ConvBackwardData(h, dx, dy, w, c.p))(t)
			must(0, cudnn.ConvBackwardFilter(h, dw, x, dy, c.p))(t)
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
			near(t, c.name+" y", download(t, y), wantY, scaleY, tol[T]())
			near(t, c.name+" dx", download(t, dx), wantDX, scaleDX, tol[T]())
			near(t, c.name+" dw", download(t, dw), wantDW, scaleDW, tol[T]())
			for _, act := range []cudnn.Activation{cudnn.ReLU, cudnn.Identity} {
				must(0, cudnn.ConvBiasActivation(h, y, x, w, bias, act, c.p))(t)
				want, scale := fusedWant(c, ys, l, xf, wf, bf, act)
				near(t, c.name+" "+act.String(), download(t, y), want, scale, tol[T]())
			}
			counts := f.Counts()
			if n := counts["cudnnBackendExecute"]; n < 5 {
				t.Errorf("%s %v: cudnnBackendExecute called %d times: want 5 or more", c.name, l, n)
			}
			for name, n := range counts {
				if strings.HasPrefix(name, "cudnnConvolution") || strings.HasPrefix(name, "cudnnGetConvolution") || strings.HasPrefix(name, "cudnnFindConvolution") {
					t.Errorf("%s %v: the legacy %s called %d times", c.name, l, name, n)
				}
			}
			if bench && counts["cuEventRecord"] == 0 {
				t.Errorf("%s %v: SetBenchmark timed nothing", c.name, l)
			}
		}
	}
}

// TestGraphEngines: the heuristics' first engine that finalizes is
// taken, less those whose numerics the call does not allow: the fake's
// engine 2 (tensor cores, 8192+ bytes of work area) for the half types
// and float32 with SetTF32, engine 1 (2048+ bytes) for float32 without,
// engine 0 (none) for the fused forward (engine 1 refuses it).
func TestGraphEngines(t *testing.T) {
	if cudatest.Fake(t) == nil {
		return
	}
	c := convCases[1]
	ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
	for _, tt := range []struct {
		name          string
		half, tf32    bool
		fused         bool
		minWork, maxW int
	}{
		{"float32", false, false, false, 2048, 8191},
		{"float32 TF32", false, true, false, 8192, 1 << 20},
		{"bfloat16", true, false, false, 8192, 1 << 20},
		{"float32 fused", false, false, true, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, _, h := handle(t)
			must(0, h.SetTF32(tt.tf32))(t)
			var err error
			if tt.half {
				x, w, y := empty[cuda.BFloat16](t, ctx, c.x, cudnn.NHWC), empty[cuda.BFloat16](t, ctx, c.w, cudnn.NHWC), empty[cuda.BFloat16](t, ctx, ys, cudnn.NHWC)
				err = cudnn.ConvForward(h, y, x, w, c.p)
			} else {
				x, w, y := empty[float32](t, ctx, c.x, cudnn.NHWC), empty[float32](t, ctx, c.w, cudnn.NHWC), empty[float32](t, ctx, ys, cudnn.NHWC)
				if tt.fused {
					err = cudnn.ConvBiasActivation(h, y, x, w, cudatest.Upload(t, ctx, make([]float32, c.w.N)), cudnn.ReLU, c.p)
				} else {
					err = cudnn.ConvForward(h, y, x, w, c.p)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := h.WorkBytes(); n < tt.minWork || n > tt.maxW {
				t.Errorf("WorkBytes = %d: want %d to %d (the engine expected)", n, tt.minWork, tt.maxW)
			}
		})
	}
}

// TestGraphFallback: where the backend API cannot build a plan for a
// shape (every engine's plan refused at finalize, or the library lacks
// the API) the legacy calls run it, with the same results; where it is
// set, GOCUDA_CUDNN_LEGACY=1 makes them run every shape.
func TestGraphFallback(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	c := convCases[2]
	ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
	r := rand.New(rand.NewPCG(7, 8))
	xt, xf := random[float32](r, c.x.Len())
	wt, wf := random[float32](r, c.w.Len())
	want, scale := make([]float64, ys.Len()), make([]float64, ys.Len())
	eachTerm(c.x, c.w, ys, cudnn.NCHW, c.p, func(xi, wi, yi int) {
		want[yi] += xf[xi] * wf[wi]
		scale[yi] += math.Abs(xf[xi] * wf[wi])
	})
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T)
	}{
		{"no plan finalizes", func(t *testing.T) {
			// The graph's seven descriptors finalize (x, w, the
			// convolution, y, the operation, the graph, the heuristics),
			// then every plan is refused, in both heuristic modes.
			for nth := 8; nth < 8+4; nth++ {
				f.Fail("cudnnBackendFinalize", nth, 3000)
			}
		}},
		{"graph not supported", func(t *testing.T) { f.Fail("cudnnBackendFinalize", 6, 3001) }},
		{"no backend API", func(t *testing.T) {
			restore := cudnn.Missing("cudnnBackendExecute")
			t.Cleanup(restore)
		}},
		{"environment", func(t *testing.T) { t.Setenv(cudnn.EnvLegacy, "1") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, _, h := handle(t)
			x, w := tensor(t, ctx, c.x, cudnn.NCHW, xt), tensor(t, ctx, c.w, cudnn.NCHW, wt)
			y := empty[float32](t, ctx, ys, cudnn.NCHW)
			tt.setup(t)
			defer f.ResetFaults()
			f.ResetCounts()
			for range 2 {
				if err := cudnn.ConvForward(h, y, x, w, c.p); err != nil {
					t.Fatal(err)
				}
			}
			near(t, "y", download(t, y), want, scale, tol[float32]())
			if n := f.Counts()["cudnnConvolutionForward"]; n != 2 {
				t.Errorf("cudnnConvolutionForward called %d times: want 2 (the legacy path)", n)
			}
			if n := f.Counts()["cudnnBackendExecute"]; n != 0 {
				t.Errorf("cudnnBackendExecute called %d times", n)
			}
		})
	}
}

// TestGraphErrors: the backend API's failures other than a refusal are
// errors that name the call, and a plan that failed is not kept.
func TestGraphErrors(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx, s, h := handle(t)
	x := empty[float32](t, ctx, cudnn.Shape{N: 1, C: 2, H: 4, W: 4}, cudnn.NHWC)
	w := empty[float32](t, ctx, cudnn.Shape{N: 3, C: 2, H: 3, W: 3}, cudnn.NHWC)
	y := empty[float32](t, ctx, cudnn.Shape{N: 1, C: 3, H: 2, W: 2}, cudnn.NHWC)
	for _, tt := range []struct {
		call string
		nth  int
		code int
		is   error
	}{
		{"cudnnBackendExecute", 1, 5000, nil},
		{"cudnnBackendSetAttribute", 3, 2000, cuda.ErrInvalidValue},
		{"cudnnBackendCreateDescriptor", 2, 4003, cuda.ErrOutOfMemory},
		{"cudnnBackendFinalize", 8, 2000, cuda.ErrInvalidValue}, // the plan
		{"cudnnBackendGetAttribute", 1, 2000, cuda.ErrInvalidValue},
	} {
		t.Run(tt.call, func(t *testing.T) {
			h := must(cudnn.New(s))(t)
			defer h.Close()
			f.Fail(tt.call, tt.nth, tt.code)
			defer f.ResetFaults()
			err := cudnn.ConvForward(h, y, x, w, cudnn.Conv2D{})
			if !errors.Is(err, cudnn.Result(tt.code)) || !strings.Contains(err.Error(), tt.call) || tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("got %v: want %v from %s", err, cudnn.Result(tt.code), tt.call)
			}
		})
	}
	f.ResetCounts()
	if err := cudnn.ConvForward(h, y, x, w, cudnn.Conv2D{}); err != nil {
		t.Errorf("ConvForward after the faults: %v", err)
	}
	if f.Counts()["cudnnBackendExecute"] != 1 {
		t.Errorf("ConvForward after the faults did not run through the backend API: %v", f.Counts())
	}
}

// TestGraphPlans: on the library opened (the GPU's cuDNN, or the fake),
// the three passes of a ResNet-shaped convolution in bfloat16 NHWC and
// float32 NCHW get plans of the backend API, by the heuristics and timed,
// with the results of the Go reference; the fused forward may fall back
// (logged).
func TestGraphPlans(t *testing.T) {
	c := convCase{"resnet 3x3", cudnn.Shape{N: 2, C: 32, H: 10, W: 10}, cudnn.Shape{N: 64, C: 32, H: 3, W: 3}, cudnn.Conv2D{PadH: 1, PadW: 1}}
	for _, bench := range []bool{false, true} {
		t.Run(fmt.Sprintf("benchmark %v", bench), func(t *testing.T) {
			t.Run("bfloat16 NHWC", func(t *testing.T) { testGraphPlans[cuda.BFloat16](t, c, cudnn.NHWC, bench) })
			t.Run("float32 NCHW", func(t *testing.T) { testGraphPlans[float32](t, c, cudnn.NCHW, bench) })
		})
	}
}

func testGraphPlans[T cudnn.Element](t *testing.T, c convCase, l cudnn.Layout, bench bool) {
	ctx, _, h := handle(t)
	must(0, h.SetBenchmark(bench))(t)
	r := rand.New(rand.NewPCG(9, 10))
	ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
	xt, xf := random[T](r, c.x.Len())
	wt, wf := random[T](r, c.w.Len())
	dyt, dyf := random[T](r, ys.Len())
	bt, bf := random[T](r, c.w.N)
	x, w, dy := tensor(t, ctx, c.x, l, xt), tensor(t, ctx, c.w, l, wt), tensor(t, ctx, ys, l, dyt)
	bias := cudatest.Upload(t, ctx, bt)
	y, dx, dw := empty[T](t, ctx, ys, l), empty[T](t, ctx, c.x, l), empty[T](t, ctx, c.w, l)
	must(0, cudnn.ConvForward(h, y, x, w, c.p))(t)
	must(0, cudnn.ConvBackwardData(h, dx, dy, w, c.p))(t)
	must(0, cudnn.ConvBackwardFilter(h, dw, x, dy, c.p))(t)
	if g, legacy := cudnn.PlanKinds(h); g != 3 || legacy != 0 {
		t.Errorf("the three passes got %d plan(s) of the backend API and %d of the legacy calls: want 3 and 0", g, legacy)
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
	near(t, "y", download(t, y), wantY, scaleY, tol[T]())
	near(t, "dx", download(t, dx), wantDX, scaleDX, tol[T]())
	near(t, "dw", download(t, dw), wantDW, scaleDW, tol[T]())
	for _, act := range []cudnn.Activation{cudnn.ReLU, cudnn.Identity} {
		must(0, cudnn.ConvBiasActivation(h, y, x, w, bias, act, c.p))(t)
		want, scale := fusedWant(c, ys, l, xf, wf, bf, act)
		near(t, "fused "+act.String(), download(t, y), want, scale, tol[T]())
	}
	g, legacy := cudnn.PlanKinds(h)
	t.Logf("plans: %d of the backend API, %d of the legacy calls (the fused forward's two: %d fused by the backend API)", g, legacy, g-3)
}

// TestGraphMisused: the fake refuses a plan run with a work area smaller
// than the plan's, a variant pack that lacks one of the graph's tensors,
// or a pointer less aligned than the plan was built for.
func TestGraphMisused(t *testing.T) {
	if cudatest.Fake(t) == nil {
		return
	}
	ctx, _, h := handle(t)
	c := convCases[1]
	ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
	x, w, y := empty[float32](t, ctx, c.x, cudnn.NHWC), empty[float32](t, ctx, c.w, cudnn.NHWC), empty[float32](t, ctx, ys, cudnn.NHWC)
	for _, tt := range []struct {
		how  string
		want cudnn.Result
	}{{"short", cudnn.ResultBadParam}, {"unnamed", cudnn.ResultBadParam}, {"misaligned", cudnn.ResultBadParamMisalignedPointer}} {
		if err := cudnn.GraphMisused(h, y, x, w, c.p, tt.how); !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "cudnnBackendExecute") {
			t.Errorf("%s: %v, want %v from cudnnBackendExecute", tt.how, err, tt.want)
		}
	}
}

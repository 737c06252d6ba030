package cudnn_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The docs' promises at their edges, as an outside reader takes them.

// promiseErr fails t unless err wraps sentinel and says each of words.
func promiseErr(t *testing.T, err, sentinel error, words ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %v, want one wrapping %v", err, sentinel)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// TestPromiseOutputShapes: ConvOutput and PoolOutput at their edges: an
// output of one, a filter or window that spans more than the padded input
// (an error, not a size of 0 or less), dilation's span, groups that do not
// divide the channels or the filters, and negative parameters.
func TestPromiseOutputShapes(t *testing.T) {
	x := cudnn.Shape{N: 2, C: 6, H: 5, W: 4}
	for _, c := range []struct {
		name  string
		w     cudnn.Shape
		p     cudnn.Conv2D
		want  cudnn.Shape
		words []string
	}{
		{"filter the input's size", cudnn.Shape{N: 3, C: 6, H: 5, W: 4}, cudnn.Conv2D{}, cudnn.Shape{N: 2, C: 3, H: 1, W: 1}, nil},
		{"stride past the input", cudnn.Shape{N: 3, C: 6, H: 1, W: 1}, cudnn.Conv2D{StrideH: 9, StrideW: 9}, cudnn.Shape{N: 2, C: 3, H: 1, W: 1}, nil},
		{"stride 2 pad 1", cudnn.Shape{N: 4, C: 3, H: 3, W: 3}, cudnn.Conv2D{PadH: 1, PadW: 1, StrideH: 2, StrideW: 2, Groups: 2}, cudnn.Shape{N: 2, C: 4, H: 3, W: 2}, nil},
		{"dilation spans the input", cudnn.Shape{N: 3, C: 6, H: 3, W: 3}, cudnn.Conv2D{DilationH: 2, DilationW: 1}, cudnn.Shape{N: 2, C: 3, H: 1, W: 2}, nil},
		{"filter too tall", cudnn.Shape{N: 3, C: 6, H: 6, W: 1}, cudnn.Conv2D{}, cudnn.Shape{}, []string{"spans 6×1", "5×4"}},
		{"dilation too wide", cudnn.Shape{N: 3, C: 6, H: 1, W: 3}, cudnn.Conv2D{DilationW: 2}, cudnn.Shape{}, []string{"spans 1×5", "5×4"}},
		{"groups not dividing the channels", cudnn.Shape{N: 4, C: 2, H: 1, W: 1}, cudnn.Conv2D{Groups: 4}, cudnn.Shape{}, []string{"6 channels", "4 group"}},
		{"groups not dividing the filters", cudnn.Shape{N: 4, C: 2, H: 1, W: 1}, cudnn.Conv2D{Groups: 3}, cudnn.Shape{}, []string{"4 filters", "3 groups"}},
		{"negative stride", cudnn.Shape{N: 3, C: 6, H: 1, W: 1}, cudnn.Conv2D{StrideW: -1}, cudnn.Shape{}, []string{"stride"}},
		{"negative dilation", cudnn.Shape{N: 3, C: 6, H: 1, W: 1}, cudnn.Conv2D{DilationH: -2}, cudnn.Shape{}, []string{"dilation"}},
		{"negative groups", cudnn.Shape{N: 3, C: 6, H: 1, W: 1}, cudnn.Conv2D{Groups: -1}, cudnn.Shape{}, []string{"Groups"}},
		{"empty filter", cudnn.Shape{N: 3, C: 6, H: 0, W: 1}, cudnn.Conv2D{}, cudnn.Shape{}, []string{"w:"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := cudnn.ConvOutput(x, c.w, c.p)
			if c.words == nil {
				if err != nil || got != c.want {
					t.Fatalf("ConvOutput = %v, %v; want %v", got, err, c.want)
				}
				return
			}
			if got != (cudnn.Shape{}) {
				t.Errorf("shape %v with the error", got)
			}
			promiseErr(t, err, cuda.ErrInvalidValue, c.words...)
		})
	}
	for _, c := range []struct {
		name  string
		p     cudnn.Pool2D
		want  cudnn.Shape
		words []string
	}{
		{"window the input's size", cudnn.Pool2D{WindowH: 5, WindowW: 4}, cudnn.Shape{N: 2, C: 6, H: 1, W: 1}, nil},
		{"window above the input, padded", cudnn.Pool2D{WindowH: 6, WindowW: 5, PadH: 1, PadW: 1}, cudnn.Shape{N: 2, C: 6, H: 1, W: 1}, nil},
		{"window larger than the input", cudnn.Pool2D{WindowH: 6, WindowW: 1}, cudnn.Shape{}, []string{"6×1", "5×4"}},
		{"stride past the input", cudnn.Pool2D{WindowH: 2, WindowW: 2, StrideH: 100, StrideW: 100}, cudnn.Shape{N: 2, C: 6, H: 1, W: 1}, nil},
		{"negative stride", cudnn.Pool2D{WindowH: 2, WindowW: 2, StrideH: -1}, cudnn.Shape{}, []string{"stride"}},
		{"zero value", cudnn.Pool2D{}, cudnn.Shape{}, []string{"window"}},
	} {
		t.Run("pool "+c.name, func(t *testing.T) {
			got, err := cudnn.PoolOutput(x, c.p)
			if c.words == nil {
				if err != nil || got != c.want {
					t.Fatalf("PoolOutput = %v, %v; want %v", got, err, c.want)
				}
				return
			}
			promiseErr(t, err, cuda.ErrInvalidValue, c.words...)
		})
	}
}

// TestPromiseConvLayouts: the same convolution in NCHW and in NHWC gives
// the same numbers (each element found by its (n, c, h, w)), with groups,
// stride, padding and dilation, forward and both backward passes.
func TestPromiseConvLayouts(t *testing.T) {
	ctx, _, h := handle(t)
	xs, ws := cudnn.Shape{N: 2, C: 4, H: 7, W: 5}, cudnn.Shape{N: 6, C: 2, H: 3, W: 2}
	p := cudnn.Conv2D{PadH: 1, PadW: 2, StrideH: 2, DilationW: 2, Groups: 2}
	ys := must(cudnn.ConvOutput(xs, ws, p))(t)
	r := rand.New(rand.NewPCG(7, 8))
	_, xf := random[float32](r, xs.Len())
	_, wf := random[float32](r, ws.Len())
	_, yf := random[float32](r, ys.Len())
	// lay returns v, given in NCHW order, in layout l.
	lay := func(v []float64, s cudnn.Shape, l cudnn.Layout) []float32 {
		out := make([]float32, len(v))
		for n := range s.N {
			for c := range s.C {
				for hh := range s.H {
					for w := range s.W {
						out[at(s, l, n, c, hh, w)] = float32(v[at(s, cudnn.NCHW, n, c, hh, w)])
					}
				}
			}
		}
		return out
	}
	// back returns t's values in NCHW order.
	back := func(tt cudnn.Tensor[float32]) []float64 {
		got, s := download(t, tt), tt.Shape
		out := make([]float64, len(got))
		for n := range s.N {
			for c := range s.C {
				for hh := range s.H {
					for w := range s.W {
						out[at(s, cudnn.NCHW, n, c, hh, w)] = got[at(s, tt.Layout, n, c, hh, w)]
					}
				}
			}
		}
		return out
	}
	var res [2][3][]float64
	for i, l := range layouts {
		x, w, dy := tensor(t, ctx, xs, l, lay(xf, xs, l)), tensor(t, ctx, ws, l, lay(wf, ws, l)), tensor(t, ctx, ys, l, lay(yf, ys, l))
		y, dx, dw := empty[float32](t, ctx, ys, l), empty[float32](t, ctx, xs, l), empty[float32](t, ctx, ws, l)
		if err := errors.Join(cudnn.ConvForward(h, y, x, w, p), cudnn.ConvBackwardData(h, dx, dy, w, p), cudnn.ConvBackwardFilter(h, dw, x, dy, p)); err != nil {
			t.Fatalf("%v: %v", l, err)
		}
		res[i] = [3][]float64{back(y), back(dx), back(dw)}
	}
	for j, name := range []string{"y", "dx", "dw"} {
		scale := make([]float64, len(res[0][j]))
		for i := range scale {
			scale[i] = 10
		}
		near(t, name+" NHWC against NCHW", res[1][j], res[0][j], scale, tol[float32]())
	}
}

// TestPromiseAttentionShared: Attention's output shares no memory with
// its inputs, nor its statistics with the output, as the package promises
// of every operation ("cuDNN runs none of them in place"): an output over
// an input is refused with cuda.ErrInvalidValue, as nn.AttentionInto
// refuses it, not run with undefined results.
func TestPromiseAttentionShared(t *testing.T) {
	ctx, _, h := handle(t)
	shape := [4]int{1, 2, 8, 16}
	n := 2 * 8 * 16
	data := func() *cuda.DeviceBuffer[cuda.BFloat16] {
		v, _ := random[cuda.BFloat16](rand.New(rand.NewPCG(1, 2)), n)
		return cudatest.Upload(t, ctx, v)
	}
	at := func(b *cuda.DeviceBuffer[cuda.BFloat16]) cudnn.AttentionTensor[cuda.BFloat16] {
		return cudnn.AttentionTensor[cuda.BFloat16]{Data: b, Shape: shape}
	}
	q, k, v, o := at(data()), at(data()), at(data()), at(data())
	if err := cudnn.Attention(h, o, q, k, v, cudnn.AttentionOptions{}); err != nil {
		t.Fatalf("apart: %v", err)
	}
	// the output's memory, as the statistics' float32s
	asF32 := must(must(cuda.ViewAs[float32](o.Data))(t).Slice(0, 2*8))(t)
	for _, c := range []struct {
		name  string
		err   error
		words []string
	}{
		{"o is q", cudnn.Attention(h, q, q, k, v, cudnn.AttentionOptions{}), []string{"o.Data", "q.Data"}},
		{"o is v", cudnn.Attention(h, v, q, k, v, cudnn.AttentionOptions{}), []string{"o.Data", "v.Data"}},
		{"stats over o", cudnn.Attention(h, o, q, k, v, cudnn.AttentionOptions{Stats: asF32}), []string{"opts.Stats", "o.Data"}},
	} {
		t.Run(c.name, func(t *testing.T) { promiseErr(t, c.err, cuda.ErrInvalidValue, c.words...) })
	}
}

// TestPromiseClosedHandle: a closed Handle's calls return cuda.ErrClosed,
// and Close again returns nil.
func TestPromiseClosedHandle(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	h := must(cudnn.New(s))(t)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	xs := cudnn.Shape{N: 1, C: 1, H: 3, W: 3}
	x := tensor(t, ctx, xs, cudnn.NCHW, make([]float32, 9))
	y := tensor(t, ctx, xs, cudnn.NCHW, make([]float32, 9))
	w := tensor(t, ctx, cudnn.Shape{N: 1, C: 1, H: 1, W: 1}, cudnn.NCHW, []float32{1})
	for name, err := range map[string]error{
		"ConvForward":  cudnn.ConvForward(h, y, x, w, cudnn.Conv2D{}),
		"PoolForward":  cudnn.PoolForward(h, y, x, cudnn.Pool2D{WindowH: 1, WindowW: 1}),
		"SetBenchmark": h.SetBenchmark(true),
		"SetTF32":      h.SetTF32(true),
	} {
		t.Run(name, func(t *testing.T) { promiseErr(t, err, cuda.ErrClosed) })
	}
	if !strings.Contains(h.String(), "closed") {
		t.Errorf("String of a closed Handle: %q", h.String())
	}
}

// TestPromiseOtherContext: a buffer of another context than the handle's
// is cuda.ErrInvalidValue naming it (Stream.Do, underneath, would name it
// by its place among the call's memory, "memory 0").
func TestPromiseOtherContext(t *testing.T) {
	ctx, _, h := handle(t)
	other := must(cuda.NewContext(cudatest.Device(t)))(t)
	t.Cleanup(func() { other.Close() })
	c := convCases[0]
	ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
	x, w, y := empty[float32](t, ctx, c.x, cudnn.NCHW), empty[float32](t, ctx, c.w, cudnn.NCHW), empty[float32](t, ctx, ys, cudnn.NCHW)
	ox, oy := empty[float32](t, other, c.x, cudnn.NCHW), empty[float32](t, other, ys, cudnn.NCHW)
	bias, db := must(cuda.Alloc[float32](other, ys.C))(t), must(cuda.Alloc[float32](ctx, ys.C))(t)
	t.Cleanup(func() { bias.Free(); db.Free() })
	pool := cudnn.Pool2D{WindowH: 1, WindowW: 1}
	bn := cudnn.BatchNorm{Scale: upload32(t, ctx, []float64{1, 1, 1}), Bias: upload32(t, ctx, []float64{0, 0, 0}),
		Mean: upload32(t, ctx, []float64{0, 0, 0}), Var: upload32(t, other, []float64{1, 1, 1}), Epsilon: 1e-5}
	for _, tc := range []struct {
		name, arg string
		err       error
	}{
		{"ConvForward x", "x.Data", cudnn.ConvForward(h, y, ox, w, c.p)},
		{"ConvBackwardData dx", "dx.Data", cudnn.ConvBackwardData(h, ox, y, w, c.p)},
		{"ConvBiasActivation bias", "bias", cudnn.ConvBiasActivation(h, y, x, w, bias, cudnn.ReLU, c.p)},
		{"ConvBackwardBias dy", "dy.Data", cudnn.ConvBackwardBias(h, db, oy)},
		{"PoolForward y", "y.Data", cudnn.PoolForward(h, ox, x, pool)},
		{"BatchNormInference bn.Var", "bn.Var", cudnn.BatchNormInference(h, empty[float32](t, ctx, c.x, cudnn.NCHW), x, bn)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cudatest.WantErr(t, tc.name+" of another context", tc.err, cuda.ErrInvalidValue, tc.arg+" belongs to another context")
		})
	}
}

package cudnn_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestBadArguments: every argument the package checks, refused with
// cuda.ErrInvalidValue before cuDNN is called, the message naming it.
func TestBadArguments(t *testing.T) {
	ctx, _, h := handle(t)
	nchw := func(s cudnn.Shape) cudnn.Tensor[float32] { return empty[float32](t, ctx, s, cudnn.NCHW) }
	x, w := nchw(cudnn.Shape{N: 1, C: 4, H: 5, W: 5}), nchw(cudnn.Shape{N: 2, C: 4, H: 3, W: 3})
	y := nchw(cudnn.Shape{N: 1, C: 2, H: 3, W: 3})
	short := x
	short.Shape.N = 2
	nhwcW := w
	nhwcW.Layout = cudnn.NHWC
	badLayout := x
	badLayout.Layout = 7
	nhwcX := x
	nhwcX.Layout = cudnn.NHWC
	bias := must(cuda.Alloc[float32](ctx, 2))(t)
	defer bias.Free()
	c4 := must(cuda.Alloc[float32](ctx, 4))(t)
	defer c4.Free()
	c4b, c4c := must(cuda.Alloc[float32](ctx, 4))(t), must(cuda.Alloc[float32](ctx, 4))(t)
	defer c4b.Free()
	defer c4c.Free()
	c3 := must(cuda.Alloc[float32](ctx, 3))(t)
	defer c3.Free()
	bn := cudnn.BatchNorm{Scale: c4, Bias: c4, Mean: c4, Var: c4}
	pool := cudnn.Pool2D{WindowH: 2, WindowW: 2}
	py := nchw(cudnn.Shape{N: 1, C: 4, H: 2, W: 2})
	for _, tt := range []struct {
		name, want string
		err        error
	}{
		{"nil handle", "nil *Handle", cudnn.ConvForward(nil, y, x, w, cudnn.Conv2D{})},
		{"zero handle", "zero Handle", cudnn.ConvForward(&cudnn.Handle{}, y, x, w, cudnn.Conv2D{})},
		{"nil data", "x.Data is nil", cudnn.ConvForward(h, y, cudnn.Tensor[float32]{Shape: x.Shape}, w, cudnn.Conv2D{})},
		{"short data", "len(x.Data) is 100: want 200", cudnn.ConvForward(h, y, short, w, cudnn.Conv2D{})},
		{"zero shape", "size below 1", cudnn.ConvForward(h, y, cudnn.Tensor[float32]{Data: x.Data}, w, cudnn.Conv2D{})},
		{"layout 7", "Layout(7)", cudnn.ConvForward(h, y, badLayout, w, cudnn.Conv2D{})},
		{"mixed layouts", "share a layout", cudnn.ConvForward(h, y, x, nhwcW, cudnn.Conv2D{})},
		{"wrong output", "want 1×2×3×3", cudnn.ConvForward(h, x, x, w, cudnn.Conv2D{})},
		{"negative padding", "negative", cudnn.ConvForward(h, y, x, w, cudnn.Conv2D{PadH: -1})},
		{"groups not dividing", "groups", cudnn.ConvForward(h, y, x, w, cudnn.Conv2D{Groups: 3})},
		{"filter too large", "spans", cudnn.ConvBackwardData(h, w, w, x, cudnn.Conv2D{})},
		{"backward filter's dy", "dy is", cudnn.ConvBackwardFilter(h, w, x, x, cudnn.Conv2D{})},
		{"nil db", "db is nil", cudnn.ConvBackwardBias(h, nil, y)},
		{"short db", "len(db) is 4: want 2", cudnn.ConvBackwardBias(h, c4, y)},
		{"nil bias", "bias is nil", cudnn.ConvBiasActivation(h, y, x, w, nil, cudnn.ReLU, cudnn.Conv2D{})},
		{"short bias", "len(bias) is 4", cudnn.ConvBiasActivation(h, y, x, w, c4, cudnn.ReLU, cudnn.Conv2D{})},
		{"activation 5", "Activation(5)", cudnn.ConvBiasActivation(h, y, x, w, bias, 5, cudnn.Conv2D{})},
		{"pool window 0", "window is 0×0", cudnn.PoolForward(h, py, x, cudnn.Pool2D{})},
		{"pool mode 9", "PoolMode(9)", cudnn.PoolForward(h, py, x, cudnn.Pool2D{Mode: 9, WindowH: 2, WindowW: 2})},
		{"pool output", "want 1×4×2×2", cudnn.PoolForward(h, x, x, pool)},
		{"pool backward's dy", "dy is 1×4×5×5: want 1×4×2×2", cudnn.PoolBackward(h, x, py, x, x, pool)},
		{"pool backward's dx", "dx is 1×4×2×2: want x's 1×4×5×5", cudnn.PoolBackward(h, py, py, py, x, pool)},
		{"pool backward's layouts", "one layout", cudnn.PoolBackward(h, nhwcX, py, py, x, pool)},
		{"pool padding as large as the window", "not below the window 1×1", cudnn.PoolForward(h, nchw(cudnn.Shape{N: 1, C: 4, H: 7, W: 7}), x, cudnn.Pool2D{WindowH: 1, WindowW: 1, PadH: 1, PadW: 1, StrideH: 1, StrideW: 1})},
		{"pool backward padding above the window", "not below the window 3×2", cudnn.PoolBackward(h, x, py, py, x, cudnn.Pool2D{WindowH: 3, WindowW: 2, PadW: 2})},
		{"pool window too large", "larger", cudnn.PoolForward(h, py, x, cudnn.Pool2D{WindowH: 9, WindowW: 2})},
		{"batch norm nil scale", "bn.Scale is nil", cudnn.BatchNormInference(h, x, x, cudnn.BatchNorm{Bias: c4, Mean: c4, Var: c4})},
		{"batch norm short mean", "len(bn.Mean) is 3", cudnn.BatchNormInference(h, x, x, cudnn.BatchNorm{Scale: c4, Bias: c4, Mean: c3, Var: c4})},
		{"batch norm shapes", "one shape", cudnn.BatchNormInference(h, y, x, bn)},
		{"batch norm epsilon", "bn.Epsilon is -1", cudnn.BatchNormInference(h, x, x, cudnn.BatchNorm{Scale: c4, Bias: c4, Mean: c4, Var: c4, Epsilon: -1})},
		{"batch norm momentum", "bn.Momentum is 2", cudnn.BatchNormTraining(h, x, x, cudnn.BatchNorm{Scale: c4, Bias: c4, Momentum: 2}, nil, nil)},
		{"running statistics half given", "both running", cudnn.BatchNormTraining(h, x, x, cudnn.BatchNorm{Scale: c4, Bias: c4, Mean: c4}, nil, nil)},
		{"running variance of one value", "no unbiased variance", cudnn.BatchNormTraining(h, nchw(cudnn.Shape{N: 1, C: 4, H: 1, W: 1}), nchw(cudnn.Shape{N: 1, C: 4, H: 1, W: 1}), cudnn.BatchNorm{Scale: c4, Bias: c4, Mean: c4b, Var: c4c}, nil, nil)},
		{"saved statistics half given", "saveMean and saveInvStd", cudnn.BatchNormTraining(h, x, x, bn, c4, nil)},
		{"backward dy", "dy is", cudnn.BatchNormBackward(h, x, x, y, bn, c4, c4, nil, nil)},
		{"backward nil dScale", "dScale is nil", cudnn.BatchNormBackward(h, x, x, x, bn, nil, c4, nil, nil)},
		{"SetBenchmark of nil", "nil *Handle", (*cudnn.Handle)(nil).SetBenchmark(true)},
		{"SetTF32 of a zero Handle", "zero Handle", (&cudnn.Handle{}).SetTF32(true)},
		{"New(nil)", "nil *cuda.Stream", func() error { _, err := cudnn.New(nil); return err }()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, cuda.ErrInvalidValue) || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("got %v, want cuda.ErrInvalidValue saying %q", tt.err, tt.want)
			}
		})
	}
	if _, err := cudnn.ConvOutput(x.Shape, w.Shape, cudnn.Conv2D{StrideH: -2}); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("ConvOutput with stride -2: %v", err)
	}
	if _, err := cudnn.PoolOutput(cudnn.Shape{N: 1, C: 1, H: 1, W: 1}, cudnn.Pool2D{WindowH: 2, WindowW: 2, PadH: 2}); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("PoolOutput with padding 2 over a window of 2: %v", err)
	}
	if _, err := cudnn.PoolOutput(cudnn.Shape{}, pool); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("PoolOutput of a zero shape: %v", err)
	}
}

// TestLibraryErrors: cuDNN's own statuses come back as Errors carrying
// the Result and its sentinel, naming the operation and the C call; a
// failed work-area allocation is cuda.ErrOutOfMemory; a failed destroy
// leaves a Close to try again; a closed Handle refuses calls.
func TestLibraryErrors(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	t.Setenv(cudnn.EnvLegacy, "1") // the legacy path's calls (TestGraphErrors: the backend API's)
	ctx, _, h := handle(t)
	x := empty[float32](t, ctx, cudnn.Shape{N: 1, C: 2, H: 4, W: 4}, cudnn.NHWC)
	w := empty[float32](t, ctx, cudnn.Shape{N: 3, C: 2, H: 3, W: 3}, cudnn.NHWC)
	y := empty[float32](t, ctx, cudnn.Shape{N: 1, C: 3, H: 2, W: 2}, cudnn.NHWC)
	y2 := empty[float32](t, ctx, y.Shape, cudnn.NHWC)
	for _, tt := range []struct {
		call string
		code int
		is   error
		run  func() error
	}{
		{"cudnnConvolutionForward", 2000, cuda.ErrInvalidValue, func() error { return cudnn.ConvForward(h, y, x, w, cudnn.Conv2D{}) }},
		{"cudnnGetConvolutionForwardAlgorithm_v7", 3002, cuda.ErrNotSupported, func() error {
			return cudnn.ConvForward(h, y, x, w, cudnn.Conv2D{PadH: 1, PadW: 1, StrideH: 2, StrideW: 2})
		}},
		{"cudnnCreateTensorDescriptor", 4003, cuda.ErrOutOfMemory, func() error {
			return cudnn.ConvBackwardData(h, x, y, w, cudnn.Conv2D{})
		}},
		{"cudnnPoolingForward", 5000, nil, func() error { return cudnn.PoolForward(h, y2, y, cudnn.Pool2D{WindowH: 1, WindowW: 1}) }},
	} {
		t.Run(tt.call, func(t *testing.T) {
			f.Fail(tt.call, 1, tt.code)
			defer f.ResetFaults()
			err := tt.run()
			if !errors.Is(err, cudnn.Result(tt.code)) || !strings.Contains(err.Error(), tt.call) || tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("got %v: want %v from %s", err, cudnn.Result(tt.code), tt.call)
			}
		})
	}
	// A plan that failed is not kept: the same call succeeds afterwards.
	if err := cudnn.ConvForward(h, y, x, w, cudnn.Conv2D{}); err != nil {
		t.Errorf("ConvForward after the faults: %v", err)
	}
	h2 := must(cudnn.New(cudatest.Stream(t, ctx)))(t)
	f.Fail("cuMemAllocAsync", 1, 2)
	bias := cudatest.Upload(t, ctx, []float32{1, 2, 3})
	if err := cudnn.ConvBiasActivation(h2, y, x, w, bias, cudnn.Identity, cudnn.Conv2D{}); !errors.Is(err, cuda.ErrOutOfMemory) {
		t.Errorf("ConvBiasActivation with its work area's allocation failing: %v", err)
	}
	f.ResetFaults()
	f.Fail("cudnnDestroy", 1, 4000)
	if err := h2.Close(); !errors.Is(err, cudnn.ResultInternalError) || !strings.Contains(err.Error(), "Handle.Close") {
		t.Fatalf("Close with cudnnDestroy failing: %v", err)
	}
	f.ResetFaults()
	if err := h2.Close(); err != nil {
		t.Fatalf("Close again: %v", err)
	}
	if err := cudnn.ConvForward(h2, y, x, w, cudnn.Conv2D{}); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("ConvForward on a closed Handle: %v", err)
	}
	if err := h2.Close(); err != nil {
		t.Errorf("Close of a closed Handle: %v", err)
	}
	if s := h2.String(); !strings.Contains(s, "closed") {
		t.Errorf("String of a closed Handle = %q", s)
	}
}

// TestLibrary: the library opened and its version, logged for the GPU
// machine's logs (the fake says 9.1.0).
func TestLibrary(t *testing.T) {
	path, err := cudnn.Library()
	if err != nil {
		t.Fatal(err)
	}
	v, err := cudnn.Version()
	if err != nil {
		t.Fatal(err)
	}
	if v.Major != 9 {
		t.Errorf("Version = %v: want cuDNN 9", v)
	}
	t.Logf("cuDNN %v from %s", v, path)
}

// TestCapture: a convolution captured into a graph runs at each launch
// with the buffers' contents of then, once a call outside the capture has
// grown the work area; timing a new shape's algorithms cannot be
// captured.
func TestCapture(t *testing.T) {
	ctx, s, h := handle(t)
	img := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	x := tensor(t, ctx, cudnn.Shape{N: 1, C: 1, H: 3, W: 3}, cudnn.NCHW, img)
	// The sum of the pixels, and the centre one.
	w := tensor(t, ctx, cudnn.Shape{N: 2, C: 1, H: 3, W: 3}, cudnn.NCHW, []float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	y := empty[float32](t, ctx, cudnn.Shape{N: 1, C: 2, H: 1, W: 1}, cudnn.NCHW)
	conv := func() error { return cudnn.ConvForward(h, y, x, w, cudnn.Conv2D{}) }
	if cudatest.IsFake() {
		// The fake's heuristics rank first an algorithm with a work
		// area, which a fresh handle has not.
		if _, err := s.Capture(cuda.CaptureThreadLocal, conv); !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "run the call once before the capture") {
			t.Fatalf("ConvForward captured by a fresh handle: %v", err)
		}
	}
	if err := conv(); err != nil {
		t.Fatal(err)
	}
	must(0, h.SetBenchmark(true))(t)
	y2 := empty[float32](t, ctx, cudnn.Shape{N: 1, C: 2, H: 2, W: 2}, cudnn.NCHW)
	g, err := s.Capture(cuda.CaptureThreadLocal, func() error {
		// A shape seen already keeps its plan: captured as it is.
		if err := conv(); err != nil {
			return err
		}
		if err := cudnn.ConvForward(h, y2, x, w, cudnn.Conv2D{PadH: 1, PadW: 1, StrideH: 2, StrideW: 2}); !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "timing") {
			t.Errorf("a new shape timed inside a capture: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	exec := must(g.Instantiate())(t)
	defer exec.Close()
	for _, k := range []float32{1, 3} {
		scaled := make([]float32, len(img))
		for i := range img {
			scaled[i] = k * img[i]
		}
		if err := x.Data.CopyFromHost(scaled); err != nil {
			t.Fatal(err)
		}
		if err := exec.Launch(s); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if got := download(t, y); got[0] != 45*float64(k) || got[1] != 5*float64(k) {
			t.Fatalf("replay with x·%v: y = %v, want [%v %v]", k, got, 45*k, 5*k)
		}
	}
}

// TestConcurrent: goroutines sharing a Handle take turns; each gets its
// own convolution.
func TestConcurrent(t *testing.T) {
	ctx, s, h := handle(t)
	w := tensor(t, ctx, cudnn.Shape{N: 1, C: 1, H: 2, W: 2}, cudnn.NHWC, []float32{1, 1, 1, 1})
	const n = 8
	errs := make(chan error, n)
	ys := make([]cudnn.Tensor[float32], n)
	for i := range n {
		x := tensor(t, ctx, cudnn.Shape{N: 1, C: 1, H: 2, W: 3}, cudnn.NHWC, []float32{float32(i), 0, 0, 0, 0, 1})
		ys[i] = empty[float32](t, ctx, cudnn.Shape{N: 1, C: 1, H: 1, W: 2}, cudnn.NHWC)
		go func() {
			for range 20 {
				if err := cudnn.ConvForward(h, ys[i], x, w, cudnn.Conv2D{}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i, y := range ys {
		if got := download(t, y); got[0] != float64(i) || got[1] != 1 {
			t.Errorf("goroutine %d: y = %v, want [%d 1]", i, got, i)
		}
	}
	if n := h.WorkBytes(); cudatest.IsFake() && n == 0 {
		t.Errorf("WorkBytes = 0 after convolutions whose algorithm needs a work area")
	}
	if str := h.String(); !strings.HasPrefix(str, "cudnn.Handle{") || !strings.Contains(str, "work ") {
		t.Errorf("String = %q", str)
	}
}

// TestMisused: what the real library's answer to is undefined, the fake
// refuses: a work area smaller than asked for, none, a descriptor
// destroyed.
func TestMisused(t *testing.T) {
	if !cudatest.IsFake() {
		t.Skip("the real cuDNN's answer to these is undefined")
	}
	ctx, _, h := handle(t)
	x := empty[float32](t, ctx, cudnn.Shape{N: 1, C: 2, H: 5, W: 5}, cudnn.NCHW)
	w := empty[float32](t, ctx, cudnn.Shape{N: 3, C: 2, H: 3, W: 3}, cudnn.NCHW)
	y := empty[float32](t, ctx, cudnn.Shape{N: 1, C: 3, H: 3, W: 3}, cudnn.NCHW)
	for _, how := range []string{"short", "nil", "destroyed"} {
		asked, err := cudnn.ForwardMisused(h, y, x, w, cudnn.Conv2D{}, how)
		if asked == 0 {
			t.Fatalf("%s: the fake's algorithm asked for no work area", how)
		}
		if !errors.Is(err, cudnn.ResultBadParam) {
			t.Errorf("%s: %v, want CUDNN_STATUS_BAD_PARAM", how, err)
		}
	}
	if err := cudnn.ConvForward(h, y, x, w, cudnn.Conv2D{}); err != nil {
		t.Errorf("ConvForward afterwards: %v", err)
	}
}

// TestMissingFunction: a function the library opened lacks fails only the
// operations that call it, with cuda.ErrNotSupported naming it.
func TestMissingFunction(t *testing.T) {
	ctx, _, h := handle(t)
	x := tensor(t, ctx, cudnn.Shape{N: 1, C: 1, H: 2, W: 2}, cudnn.NHWC, []float32{1, 2, 3, 4})
	w := tensor(t, ctx, cudnn.Shape{N: 1, C: 1, H: 1, W: 1}, cudnn.NHWC, []float32{2})
	y := empty[float32](t, ctx, x.Shape, cudnn.NHWC)
	bias := cudatest.Upload(t, ctx, []float32{-3})
	// The backend API missing too: the legacy path's function is the one
	// ConvBiasActivation lacks.
	restoreAPI := cudnn.Missing("cudnnBackendExecute")
	restore := cudnn.Missing("cudnnConvolutionBiasActivationForward")
	err := cudnn.ConvBiasActivation(h, y, x, w, bias, cudnn.ReLU, cudnn.Conv2D{})
	restore()
	restoreAPI()
	if !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "has no cudnnConvolutionBiasActivationForward") {
		t.Errorf("ConvBiasActivation without its function: %v", err)
	}
	if err := cudnn.ConvForward(h, y, x, w, cudnn.Conv2D{}); err != nil {
		t.Fatalf("ConvForward beside it: %v", err)
	}
	if got := download(t, y); got[0] != 2 || got[3] != 8 {
		t.Errorf("ConvForward beside it: y = %v", got)
	}
	if err := cudnn.ConvBiasActivation(h, y, x, w, bias, cudnn.ReLU, cudnn.Conv2D{}); err != nil {
		t.Fatalf("ConvBiasActivation once restored: %v", err)
	}
	if got := download(t, y); got[0] != 0 || got[3] != 5 {
		t.Errorf("ConvBiasActivation once restored: y = %v, want [0 1 3 5]", got)
	}
}

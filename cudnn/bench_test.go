package cudnn_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/cudatest"
)

// resnetConv is one of ResNet-50's convolution layers (torchvision's, v1.5:
// the stride in the 3×3 convolution) at batch 32 of 224×224 images: its
// input channels and size, its filters (K×C×R×R), stride and padding.
type resnetConv struct{ c, hw, k, r, stride, pad int }

// resnet50 are the distinct convolution shapes of ResNet-50, the stem
// first, then each stage's (its first block's strided ones and its
// downsampling 1×1 among them). bench/pyref/conv_peers.py lists the same.
var resnet50 = []resnetConv{
	{3, 224, 64, 7, 2, 3},
	{64, 56, 64, 1, 1, 0}, {64, 56, 64, 3, 1, 1}, {64, 56, 256, 1, 1, 0}, {256, 56, 64, 1, 1, 0},
	{256, 56, 128, 1, 1, 0}, {128, 56, 128, 3, 2, 1}, {128, 28, 512, 1, 1, 0}, {256, 56, 512, 1, 2, 0}, {512, 28, 128, 1, 1, 0}, {128, 28, 128, 3, 1, 1},
	{512, 28, 256, 1, 1, 0}, {256, 28, 256, 3, 2, 1}, {256, 14, 1024, 1, 1, 0}, {512, 28, 1024, 1, 2, 0}, {1024, 14, 256, 1, 1, 0}, {256, 14, 256, 3, 1, 1},
	{1024, 14, 512, 1, 1, 0}, {512, 14, 512, 3, 2, 1}, {512, 7, 2048, 1, 1, 0}, {1024, 14, 2048, 1, 2, 0}, {2048, 7, 512, 1, 1, 0}, {512, 7, 512, 3, 1, 1},
}

// name is the case's name without its type and layout: c256_h56_k64_r1_s1.
func (c resnetConv) name() string {
	return fmt.Sprintf("c%d_h%d_k%d_r%d_s%d", c.c, c.hw, c.k, c.r, c.stride)
}

const benchBatch = 32

// BenchmarkConv is ResNet-50's convolutions at batch 32, named
// <pass>/<type>/<layout>/<shape> as bench/pyref/conv_peers.py names them
// (torch.nn.functional.conv2d, and aten's convolution_backward for one
// gradient, with torch.backends.cudnn.benchmark on), timed the same way:
// one call to warm up (where the algorithm is timed: SetBenchmark, as
// PyTorch's), then a loop of b.N calls and one synchronize, CUDA events
// around the loop (us/op; the lead runs -test.count 3 and takes the
// median). Forward (fwd) in bfloat16 NHWC and NCHW and in float32 NCHW
// with TF32 allowed (PyTorch's default for cuDNN:
// torch.backends.cudnn.allow_tf32); the input's gradient (dgrad) and the
// filters' (wgrad) in bfloat16 NHWC. GOCUDA_CONV_CASES (a comma list of
// name prefixes, such as fwd/bf16/NHWC) selects a subset.
func BenchmarkConv(b *testing.B) {
	if cudatest.IsFake() {
		b.Skip("the fake computes on the CPU: nothing to measure")
	}
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	h := must(cudnn.New(s))(b)
	defer h.Close()
	must(0, h.SetBenchmark(true))(b)
	must(0, h.SetTF32(true))(b)
	b.Run("fwd/bf16/NHWC", func(b *testing.B) { benchConv[cuda.BFloat16](b, ctx, h, "fwd", cudnn.NHWC) })
	b.Run("fwd/bf16/NCHW", func(b *testing.B) { benchConv[cuda.BFloat16](b, ctx, h, "fwd", cudnn.NCHW) })
	b.Run("fwd/f32/NCHW", func(b *testing.B) { benchConv[float32](b, ctx, h, "fwd", cudnn.NCHW) })
	b.Run("dgrad/bf16/NHWC", func(b *testing.B) { benchConv[cuda.BFloat16](b, ctx, h, "dgrad", cudnn.NHWC) })
	b.Run("wgrad/bf16/NHWC", func(b *testing.B) { benchConv[cuda.BFloat16](b, ctx, h, "wgrad", cudnn.NHWC) })
	// Which plans ran the cases: the backend API's, or the legacy calls'
	// (where cuDNN could build none for the shape).
	graph, legacy := cudnn.PlanKinds(h)
	b.Logf("plans: %d of cuDNN's backend API, %d of the legacy calls", graph, legacy)
}

// selected says whether GOCUDA_CONV_CASES selects the case named name.
func selected(name string) bool {
	list := os.Getenv("GOCUDA_CONV_CASES")
	if list == "" {
		return true
	}
	for _, p := range strings.Split(list, ",") {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func benchConv[T cudnn.Element](b *testing.B, ctx *cuda.Context, h *cudnn.Handle, pass string, l cudnn.Layout) {
	prefix := pass + "/f32/"
	if _, ok := any(*new(T)).(cuda.BFloat16); ok {
		prefix = pass + "/bf16/"
	}
	prefix += l.String() + "/"
	for _, c := range resnet50 {
		if !selected(prefix + c.name()) {
			continue
		}
		// The tensors are made once for the case, not for each of the
		// runs b.Run makes of it.
		xs := cudnn.Shape{N: benchBatch, C: c.c, H: c.hw, W: c.hw}
		ws := cudnn.Shape{N: c.k, C: c.c, H: c.r, W: c.r}
		p := cudnn.Conv2D{PadH: c.pad, PadW: c.pad, StrideH: c.stride, StrideW: c.stride}
		ys := must(cudnn.ConvOutput(xs, ws, p))(b)
		x := cudnn.Tensor[T]{Data: filled[T](b, ctx, xs.Len()), Shape: xs, Layout: l}
		w := cudnn.Tensor[T]{Data: filled[T](b, ctx, ws.Len()), Shape: ws, Layout: l}
		y := cudnn.Tensor[T]{Data: must(cuda.Alloc[T](ctx, ys.Len()))(b), Shape: ys, Layout: l}
		op := func() error { return cudnn.ConvForward(h, y, x, w, p) }
		switch pass {
		case "dgrad": // x's gradient from y's (y stands for dy, x for dx)
			op = func() error { return cudnn.ConvBackwardData(h, x, y, w, p) }
		case "wgrad": // w's gradient from x and y's (w stands for dw)
			op = func() error { return cudnn.ConvBackwardFilter(h, w, x, y, p) }
		}
		b.Run(c.name(), func(b *testing.B) { benchLoop(b, h.Stream(), op) })
		for _, buf := range []*cuda.DeviceBuffer[T]{x.Data, w.Data, y.Data} {
			if err := buf.Free(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// filled returns a buffer of n values in [-1, 1), a pattern of its own
// (bench/pyref/conv_peers.py makes the same).
func filled[T cudnn.Element](b *testing.B, ctx *cuda.Context, n int) *cuda.DeviceBuffer[T] {
	b.Helper()
	const period = 4093
	pat := make([]T, period)
	for i := range pat {
		pat[i] = of[T](float64((i*2654435761)%period)/period*2 - 1)
	}
	host := make([]T, n)
	for i := 0; i < n; i += period {
		copy(host[i:], pat)
	}
	return must(cuda.FromHost(ctx, host))(b)
}

// benchLoop times op: one call to warm up, then b.N calls between two
// events, the us/op their elapsed time.
func benchLoop(b *testing.B, s *cuda.Stream, op func() error) {
	b.Helper()
	if err := op(); err != nil {
		b.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	start, end := must(s.Context().NewEvent())(b), must(s.Context().NewEvent())(b)
	defer start.Close()
	defer end.Close()
	b.ResetTimer()
	if err := start.Record(s); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	if err := end.Record(s); err != nil {
		b.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	elapsed := must(cuda.ElapsedTime(start, end))(b)
	b.ReportMetric(float64(elapsed.Nanoseconds())/1e3/float64(b.N), "us/op")
}

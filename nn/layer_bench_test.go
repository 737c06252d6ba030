package nn_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// BenchmarkLayers times the layers at GPT-2's shapes (8 sequences of 1024
// tokens, 768 wide, 12 heads, a vocabulary of 50257), each case
// BenchmarkLayers/<op>/<dtype>/<shape>, beside PyTorch's own:
// bench/pyref/nn_peers.py times the same cases under the same names
// (F.layer_norm, F.rms_norm, F.gelu, F.silu, softmax with a mask,
// F.cross_entropy; add_layernorm, AddLayerNorm, beside torch.add(out=)
// then F.layer_norm), and bench/report/nnreport.py sets them side by side
// (scripts/gpu-nn.sh runs the three). A case's inputs are small random
// numbers; it calls the layer once (compiling its kernel), then times b.N
// calls and one Synchronize by CUDA events recorded before and after the
// calls, and reports µs per call (us/op). Each call is the fastest form:
// the Into form into a preallocated result where the layer has one, else
// the allocating call and the results' Free (the backward passes, the
// loss). GOCUDA_NN_OPS (a comma list of ops) selects a subset. Where
// kernels cannot run every case skips.
func BenchmarkLayers(b *testing.B) {
	var ops map[string]bool
	if v := os.Getenv("GOCUDA_NN_OPS"); v != "" {
		ops = map[string]bool{}
		for _, o := range strings.Split(v, ",") {
			ops[strings.TrimSpace(o)] = true
		}
	}
	s := cudatest.Stream(b, cudatest.Context(b))
	b.Cleanup(func() {
		for k, a := range layerBenchArrays {
			a.(interface{ Free() error }).Free()
			delete(layerBenchArrays, k)
		}
	})
	for _, c := range layerBenchCases() {
		if ops != nil && !ops[c.op] {
			continue
		}
		b.Run(c.op+"/"+c.dtype+"/"+c.shape, func(b *testing.B) {
			layerRequireKernels(b)
			c.run(b, s)
		})
	}
}

type layerBenchCase struct {
	op, dtype, shape string
	run              func(b *testing.B, s *cuda.Stream)
}

// layerBenchCases is the table; bench/pyref/nn_peers.py's CASES is the
// same, under the same names.
func layerBenchCases() []layerBenchCase {
	var cases []layerBenchCase
	const rows, width, hidden, vocab = 8 * 1024, 768, 4 * 768, 50257
	for _, dt := range []string{"bf16", "f32"} {
		cases = append(cases,
			layerBenchNorm(dt, "layernorm", rows, width),
			layerBenchNorm(dt, "layernorm_bwd", rows, width),
			layerBenchNorm(dt, "rmsnorm", rows, width),
			layerBenchNorm(dt, "rmsnorm_bwd", rows, width),
			layerBenchNorm(dt, "add_layernorm", rows, width),
			layerBenchAct(dt, "gelu", rows, hidden),
			layerBenchAct(dt, "gelu_tanh", rows, hidden),
			layerBenchAct(dt, "silu", rows, hidden),
			layerBenchAct(dt, "softmax_causal", 8*12*1024, 1024),
			layerBenchAct(dt, "cross_entropy", rows, vocab),
			layerBenchAct(dt, "cross_entropy_bwd", rows, vocab),
		)
	}
	return cases
}

func layerBenchNorm(dt, op string, rows, cols int) layerBenchCase {
	c := layerBenchCase{op: op, dtype: dt, shape: fmt.Sprintf("%dx%d", rows, cols)}
	switch dt {
	case "bf16":
		c.run = func(b *testing.B, s *cuda.Stream) { layerBenchNormRun[cuda.BFloat16](b, s, op, rows, cols) }
	default:
		c.run = func(b *testing.B, s *cuda.Stream) { layerBenchNormRun[float32](b, s, op, rows, cols) }
	}
	return c
}

func layerBenchAct(dt, op string, rows, cols int) layerBenchCase {
	c := layerBenchCase{op: op, dtype: dt, shape: fmt.Sprintf("%dx%d", rows, cols)}
	switch dt {
	case "bf16":
		c.run = func(b *testing.B, s *cuda.Stream) { layerBenchActRun[cuda.BFloat16](b, s, op, rows, cols) }
	default:
		c.run = func(b *testing.B, s *cuda.Stream) { layerBenchActRun[float32](b, s, op, rows, cols) }
	}
	return c
}

// layerBenchArrays are the benchmark's inputs, made once for all the
// runs of a case (a case's function runs several times as b.N grows, and
// the logits are 411M elements), freed when BenchmarkLayers ends.
var layerBenchArrays = map[string]any{}

// layerBenchArray is an array of the shape on s, pseudo-random in [-1,
// 1), made once (see layerBenchArrays); name tells apart arrays of one
// shape.
func layerBenchArray[T nn.Float](b *testing.B, s *cuda.Stream, name string, shape ...int) *nd.Array[T] {
	key := fmt.Sprintf("%s %v %T", name, shape, *new(T)) // %T: the zero values of two types may print alike
	if a, ok := layerBenchArrays[key]; ok {
		return a.(*nd.Array[T])
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	data := make([]T, n)
	x := uint64(n)*0x9e3779b97f4a7c15 + uint64(len(name))
	for i := range data {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		v := float32(x>>40)/float32(1<<23) - 1
		switch p := any(&data[i]).(type) {
		case *cuda.BFloat16:
			*p = cuda.NewBFloat16(v)
		default:
			*(any(&data[i]).(*float32)) = v
		}
	}
	a := must(nd.FromSlice(s, data, shape...))(b)
	layerBenchArrays[key] = a
	return a
}

func layerBenchNormRun[T nn.Float](b *testing.B, s *cuda.Stream, op string, rows, cols int) {
	x := layerBenchArray[T](b, s, "x", rows, cols)
	w := layerBenchArray[T](b, s, "w", cols)
	bias := layerBenchArray[T](b, s, "bias", cols)
	dy := layerBenchArray[T](b, s, "dy", rows, cols)
	y := layerBenchArray[T](b, s, "y", rows, cols)
	var call func() error
	switch op {
	case "layernorm":
		call = func() error { return nn.LayerNormInto(y, x, w, bias, 1e-5) }
	case "rmsnorm":
		call = func() error { return nn.RMSNormInto(y, x, w, 1e-5) }
	case "add_layernorm":
		sum := layerBenchArray[T](b, s, "sum", rows, cols)
		call = func() error { return nn.AddLayerNormInto(sum, y, x, dy, w, bias, 1e-5) }
	case "layernorm_bwd":
		call = func() error {
			dx, dw, db, err := nn.LayerNormBackward(dy, x, w, bias, 1e-5)
			layerBenchFree(dx, dw, db)
			return err
		}
	case "rmsnorm_bwd":
		call = func() error {
			dx, dw, err := nn.RMSNormBackward(dy, x, w, 1e-5)
			layerBenchFree(dx, dw)
			return err
		}
	}
	layerBenchLoop(b, s, call)
}

func layerBenchActRun[T nn.Float](b *testing.B, s *cuda.Stream, op string, rows, cols int) {
	x := layerBenchArray[T](b, s, "x", rows, cols)
	var call func() error
	switch op {
	case "gelu", "gelu_tanh", "silu":
		y := layerBenchArray[T](b, s, "y", rows, cols)
		f := map[string]func(dst, x *nd.Array[T]) error{"gelu": nn.GELUInto[T], "gelu_tanh": nn.GELUTanhInto[T], "silu": nn.SiLUInto[T]}[op]
		call = func() error { return f(y, x) }
	case "softmax_causal":
		x3 := must(x.Reshape(rows/cols, cols, cols))(b)
		y := layerBenchArray[T](b, s, "y", rows/cols, cols, cols)
		call = func() error { return nn.SoftmaxInto(y, x3, 0.125, nn.Mask{Causal: true}) }
	case "cross_entropy", "cross_entropy_bwd":
		tv := make([]int64, rows)
		for i := range tv {
			tv[i] = int64(i*7919) % int64(cols)
		}
		tg := must(nd.FromSlice(s, tv, rows))(b)
		b.Cleanup(func() { tg.Free() })
		if op == "cross_entropy" {
			call = func() error {
				l, err := nn.CrossEntropy(x, tg, -100)
				layerBenchFree(l)
				return err
			}
		} else {
			call = func() error {
				g, err := nn.CrossEntropyBackward(x, tg, -100, 1)
				layerBenchFree(g)
				return err
			}
		}
	}
	layerBenchLoop(b, s, call)
}

// layerBenchFree frees a benchmark call's results (nil ones too).
func layerBenchFree[T nd.Elem](as ...*nd.Array[T]) {
	for _, a := range as {
		if a != nil {
			a.Free()
		}
	}
}

// layerBenchLoop calls op once, then times b.N calls and a Synchronize by
// CUDA events, reporting µs per call.
func layerBenchLoop(b *testing.B, s *cuda.Stream, op func() error) {
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

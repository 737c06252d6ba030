package cuda_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The graph benchmarks, beside bench/cref/graphbench.c making the same
// driver calls: 100 launches of the empty kernel, replayed as a graph or
// queued one by one, each followed by a synchronize; capturing and
// instantiating them; capturing them again and updating the instance.
func benchGraph(b *testing.B) (*cuda.Stream, func() error) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	empty := must(loadKernels(b, ctx).Function("empty"))(b)
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: 1, Y: 1, Z: 1}, Block: cuda.Dim3{X: 1, Y: 1, Z: 1}, Stream: s}
	return s, func() error {
		for range 100 {
			if err := empty.Launch(cfg); err != nil {
				return err
			}
		}
		return nil
	}
}

// replay times an op of launching e on s times times, each launch
// followed by a synchronize when each is set, the last always.
func replay(b *testing.B, s *cuda.Stream, e *cuda.GraphExec, times int, each bool) {
	b.Helper()
	for b.Loop() {
		for range times {
			if err := e.Launch(s); err != nil {
				b.Fatal(err)
			}
			if each {
				if err := s.Synchronize(); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGraphReplay(b *testing.B) {
	s, launches := benchGraph(b)
	g := must(s.Capture(cuda.CaptureGlobal, launches))(b)
	defer g.Close()
	e := must(g.Instantiate())(b)
	defer e.Close()
	replay(b, s, e, 1, false)
}

func BenchmarkStreamLaunches(b *testing.B) {
	s, launches := benchGraph(b)
	for b.Loop() {
		if err := launches(); err != nil {
			b.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGraphCapture(b *testing.B) {
	s, launches := benchGraph(b)
	for b.Loop() {
		g, err := s.Capture(cuda.CaptureGlobal, launches)
		if err != nil {
			b.Fatal(err)
		}
		e, err := g.Instantiate()
		if err != nil {
			b.Fatal(err)
		}
		e.Close()
		g.Close()
	}
}

// BenchmarkGraphCaptureOnly captures the 100 launches and closes the
// graph: the launches' cost in a capture, without the driver's
// instantiation or update.
func BenchmarkGraphCaptureOnly(b *testing.B) {
	s, launches := benchGraph(b)
	for b.Loop() {
		g, err := s.Capture(cuda.CaptureGlobal, launches)
		if err != nil {
			b.Fatal(err)
		}
		g.Close()
	}
}

// BenchmarkGraphCaptureRaw is BenchmarkGraphCaptureOnly with the driver's
// calls made from Go directly, without Launch's checks and holds: what the
// crossings alone cost beside bench/cref/graphbench.c's capture.
func BenchmarkGraphCaptureRaw(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	empty := must(loadKernels(b, ctx).Function("empty"))(b)
	for b.Loop() {
		if err := cuda.RawCapture(s, empty, 100); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGraphUpdate(b *testing.B) {
	s, launches := benchGraph(b)
	g := must(s.Capture(cuda.CaptureGlobal, launches))(b)
	defer g.Close()
	e := must(g.Instantiate())(b)
	defer e.Close()
	for b.Loop() {
		g2, err := s.Capture(cuda.CaptureGlobal, launches)
		if err != nil {
			b.Fatal(err)
		}
		if re, err := e.Update(g2); err != nil || re {
			b.Fatalf("update: reinstantiated %v, %v", re, err)
		}
		g2.Close()
	}
}

// BenchmarkGraphSetKernelParams changes one kernel's arguments in an
// instance of a graph of 100 kernel nodes built node by node
// (GraphExec.SetKernelParams), without launching it; bench/cref/graphbench.c
// times cuGraphExecKernelNodeSetParams the same way.
func BenchmarkGraphSetKernelParams(b *testing.B) {
	ctx := cudatest.Context(b)
	saxpy := must(loadKernels(b, ctx).Function("saxpy"))(b)
	x := must(cuda.Zeroed[float32](ctx, 256))(b)
	defer x.Free()
	g := must(ctx.NewGraph())(b)
	defer g.Close()
	var last *cuda.GraphNode
	var nodes []*cuda.GraphNode
	for range 100 {
		var after []*cuda.GraphNode
		if last != nil {
			after = []*cuda.GraphNode{last}
		}
		last = must(g.AddKernel(after, saxpy, cuda.LaunchConfigFor(256, nil), float32(1), x, x, uint32(256)))(b)
		nodes = append(nodes, last)
	}
	e := must(g.Instantiate())(b)
	defer e.Close()
	a := float32(0)
	for b.Loop() {
		a++
		if err := e.SetKernelParams(nodes[50], cuda.LaunchConfigFor(256, nil), a, x, x, uint32(256)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGraphWhile runs a small kernel 1000 times, each op ending with
// a synchronize: as the body of one graph's While node, counted down on
// the device ("while/countdown": the body is the count-down kernel alone;
// "while/saxpy": a saxpy over 256 floats, then the count-down), or as 1000
// launches of a one-kernel graph from the host, queued back to back
// ("host/queued", which a loop that decides on the device cannot do) or
// each followed by a synchronize ("host/decided": what a host reading the
// loop's condition must do).
func BenchmarkGraphWhile(b *testing.B) {
	ctx := cudatest.Context(b)
	needDeviceRuntime(b)
	s := cudatest.Stream(b, ctx)
	saxpy := must(loadKernels(b, ctx).Function("saxpy"))(b)
	const n, k = 256, 1000
	x := must(cuda.Zeroed[float32](ctx, n))(b)
	defer x.Free()
	counter := must(cuda.Alloc[uint32](ctx, 1))(b)
	defer counter.Free()
	cfg := cuda.LaunchConfigFor(n, nil)
	for _, withSaxpy := range []bool{false, true} {
		b.Run(map[bool]string{false: "while/countdown", true: "while/saxpy"}[withSaxpy], func(b *testing.B) {
			g := must(ctx.NewGraph())(b)
			defer g.Close()
			c := must(g.NewCondition(1))(b)
			start := must(g.AddMemset(nil, counter, k, 4))(b)
			_, body := must2(g.AddWhile([]*cuda.GraphNode{start}, c))(b)
			var after []*cuda.GraphNode
			if withSaxpy {
				after = []*cuda.GraphNode{must(body.AddKernel(nil, saxpy, cfg, float32(1), x, x, uint32(n)))(b)}
			}
			must(body.AddCountDown(after, c, counter))(b)
			e := must(g.Instantiate())(b)
			defer e.Close()
			replay(b, s, e, 1, false)
		})
	}
	g := must(ctx.NewGraph())(b)
	defer g.Close()
	must(g.AddKernel(nil, saxpy, cfg, float32(1), x, x, uint32(n)))(b)
	e := must(g.Instantiate())(b)
	defer e.Close()
	b.Run("host/queued", func(b *testing.B) { replay(b, s, e, k, false) })
	b.Run("host/decided", func(b *testing.B) { replay(b, s, e, k, true) })
}

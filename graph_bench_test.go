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

func BenchmarkGraphReplay(b *testing.B) {
	s, launches := benchGraph(b)
	g := must(s.Capture(cuda.CaptureGlobal, launches))(b)
	defer g.Close()
	e := must(g.Instantiate())(b)
	defer e.Close()
	for b.Loop() {
		if err := e.Launch(s); err != nil {
			b.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
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

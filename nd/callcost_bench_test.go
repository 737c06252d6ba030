package nd_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
)

// BenchmarkCallCost is the host's cost of one call of the small cases of
// issue 50's table, the ones its per-call cost bounds: each case loops
// one call, timed by the host's clock (no events), with its allocations
// reported. On the fake driver (kernels emulated on the host's CPU) the
// time includes the emulation's, but allocs/op and a CPU profile
// (-cpuprofile) of nd's own code are the real ones; on a GPU it is the
// call cost. BenchmarkND times the same calls against the peers.
//
// GOCUDA_ND_CALLS (a comma list of ops) selects a subset.
// GOCUDA_ND_CALL_SMALL=1 makes the long axes short (4097 rows 65, the
// middle axis of 100003 2003, the table of 100003 rows 1003), the calls'
// patterns and so their paths on the host the same: for the fake driver,
// whose emulated kernels take the host's CPU by the element.
// GOCUDA_ND_CALL_CAPTURE=1 times the calls inside a stream capture
// (Stream.Capture): their kernels are recorded into a graph, never run,
// so that the time is the host's side alone, the driver's recording of
// each launch included (on the fake driver, whose emulated kernels would
// otherwise be most of the time).
func BenchmarkCallCost(b *testing.B) {
	var ops map[string]bool
	if v := strings.TrimSpace(os.Getenv("GOCUDA_ND_CALLS")); v != "" {
		ops = map[string]bool{}
		for _, f := range strings.Split(v, ",") {
			ops[strings.TrimSpace(f)] = true
		}
	}
	s := cudatest.Stream(b, cudatest.Context(b))
	for _, c := range callCases() {
		if ops != nil && !ops[c.op] {
			continue
		}
		b.Run(c.op+"/"+c.dtype+"/"+c.shape, func(b *testing.B) {
			requireKernels(b)
			b.ReportAllocs()
			c.run(b, s)
		})
	}
}

// callCases are BenchmarkCallCost's cases.
func callCases() []benchCase {
	rows, mid, table := 4097, 100003, 100003
	if os.Getenv("GOCUDA_ND_CALL_SMALL") == "1" {
		rows, mid, table = 65, 2003, 1003
	}
	return []benchCase{
		{"into", "f32", "1024", func(b *testing.B, s *cuda.Stream) {
			x, y, z := benchZeros[float32](b, s, 1024), benchZeros[float32](b, s, 1024), benchZeros[float32](b, s, 1024)
			callLoop(b, s, func() error { return nd.AddInto(z, x, y) })
		}},
		{"alloc", "f32", "1024", func(b *testing.B, s *cuda.Stream) {
			x, y := benchZeros[float32](b, s, 1024), benchZeros[float32](b, s, 1024)
			callLoop(b, s, func() error {
				r, err := nd.Add(x, y)
				if err != nil {
					return err
				}
				return r.Free()
			})
		}},
		{"add", "f32", fmt.Sprintf("%dx33+33", rows), func(b *testing.B, s *cuda.Stream) {
			x, y, z := benchZeros[float32](b, s, rows, 33), benchZeros[float32](b, s, 33), benchZeros[float32](b, s, rows, 33)
			callLoop(b, s, func() error { return nd.AddInto(z, x, y) })
		}},
		{"softmax_last", "f32", fmt.Sprintf("%dx33", rows), func(b *testing.B, s *cuda.Stream) {
			x, z := benchZeros[float32](b, s, rows, 33), benchZeros[float32](b, s, rows, 33)
			callLoop(b, s, func() error { return nd.SoftmaxInto(z, x, -1) })
		}},
		callConcat(rows, 0), callConcat(rows, 1),
		{"sum_mid", "f32", fmt.Sprintf("5x%dx3", mid), func(b *testing.B, s *cuda.Stream) {
			x, z := benchZeros[float32](b, s, 5, mid, 3), benchZeros[float32](b, s, 5, 3)
			callLoop(b, s, func() error { return nd.SumInto(z, x, nd.Along(1)) })
		}},
		{"take", "f32", fmt.Sprintf("%dx33[7]", table), func(b *testing.B, s *cuda.Stream) {
			x := benchZeros[float32](b, s, table, 33)
			rng := rand.New(rand.NewPCG(50, 8))
			idx := make([]int64, 7)
			for i := range idx {
				idx[i] = rng.Int64N(int64(table))
			}
			ix := free(b, must(nd.FromSlice(s, idx))(b))
			callLoop(b, s, func() error {
				r, err := nd.Take(x, ix, 0)
				if err != nil {
					return err
				}
				return r.Free()
			})
		}},
	}
}

// callConcat is the Concat of two rows×33 arrays along axis.
func callConcat(rows, axis int) benchCase {
	return benchCase{fmt.Sprintf("concat%d", axis), "f32", fmt.Sprintf("%dx33+%dx33", rows, rows), func(b *testing.B, s *cuda.Stream) {
		x, y := benchZeros[float32](b, s, rows, 33), benchZeros[float32](b, s, rows, 33)
		arrays := []*nd.Array[float32]{x, y}
		callLoop(b, s, func() error {
			r, err := nd.Concat(arrays, axis)
			if err != nil {
				return err
			}
			return r.Free()
		})
	}}
}

// callLoop is benchLoop by the host's clock, or, where
// GOCUDA_ND_CALL_CAPTURE=1, the b.N calls inside a stream capture.
func callLoop(b *testing.B, s *cuda.Stream, op func() error) {
	b.Helper()
	if os.Getenv("GOCUDA_ND_CALL_CAPTURE") != "1" {
		benchLoop(b, s, false, op)
		return
	}
	if err := op(); err != nil { // compiled: a capture does not compile
		b.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	g, err := s.Capture(cuda.CaptureGlobal, func() error {
		for range b.N {
			if err := op(); err != nil {
				return err
			}
		}
		return nil
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "us/op")
}

// TestCallAllocs checks that an Into call of the elementwise engine, in
// a loop, allocates nothing on the host (the plan of its pattern cached),
// and that AddInto into a view and a broadcast AddInto do not either.
func TestCallAllocs(t *testing.T) {
	requireKernels(t)
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s := stream(t)
	x, y, z := free(t, must(nd.Zeros[float32](s, 1024))(t)), free(t, must(nd.Zeros[float32](s, 1024))(t)), free(t, must(nd.Zeros[float32](s, 1024))(t))
	m, r := free(t, must(nd.Zeros[float32](s, 65, 33))(t)), free(t, must(nd.Zeros[float32](s, 33))(t))
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"AddInto", func() error { return nd.AddInto(z, x, y) }},
		{"AddInto broadcast", func() error { return nd.AddInto(m, m, r) }},
		{"MulInto in place", func() error { return nd.MulInto(m, m, m) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); err != nil { // its kernel compiled, its plan made
				t.Fatal(err)
			}
			var err error
			if n := testing.AllocsPerRun(20, func() { err = errors.Join(err, c.call()) }); n != 0 {
				t.Errorf("%v allocations a call, want 0", n)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

package cuda_test

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestStream(t *testing.T) {
	ctx := cudatest.Context(t)
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	if s.Context() != ctx {
		t.Error("Context() is not the creating context")
	}
	if done, err := s.Query(); err != nil || !done {
		t.Errorf("Query on an idle stream = %v, %v", done, err)
	}
	if err := s.Synchronize(); err != nil {
		t.Errorf("Synchronize: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	wantErrors(t, cuda.ErrClosed, map[string]error{
		"Synchronize": s.Synchronize(),
		"Query":       second(s.Query()),
	})
}

func TestStreamPriority(t *testing.T) {
	ctx := cudatest.Context(t)
	least, greatest, err := ctx.StreamPriorityRange()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{least, greatest} {
		s, err := ctx.NewStreamWithPriority(p)
		if err != nil {
			t.Errorf("NewStreamWithPriority(%d): %v", p, err)
			continue
		}
		if s.Priority() != p {
			t.Errorf("Priority() = %d, want %d", s.Priority(), p)
		}
		s.Close()
	}
	for _, p := range []int{least + 1, greatest - 1} {
		_, err := ctx.NewStreamWithPriority(p)
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "outside") {
			t.Errorf("NewStreamWithPriority(%d): %v, want ErrInvalidValue naming the range", p, err)
		}
	}
}

func TestNilStreamAndEvent(t *testing.T) {
	var s *cuda.Stream
	var e *cuda.Event
	if s.Close() != nil || e.Close() != nil {
		t.Error("Close of nil should be a no-op")
	}
	wantErrors(t, cuda.ErrInvalidValue, map[string]error{
		"Stream.Synchronize": s.Synchronize(),
		"Stream.Query":       second(s.Query()),
		"Stream.WaitEvent":   s.WaitEvent(e),
		"Event.Record":       e.Record(s),
		"Event.Synchronize":  e.Synchronize(),
		"Event.Query":        second(e.Query()),
		"ElapsedTime":        second(cuda.ElapsedTime(e, e)),
	})
}

func TestEvents(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	start, err := ctx.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer start.Close()
	end, err := ctx.NewEvent(cuda.EventBlockingSync)
	if err != nil {
		t.Fatal(err)
	}
	defer end.Close()
	if done, err := end.Query(); err != nil || !done {
		t.Errorf("Query of an unrecorded event = %v, %v; want complete", done, err)
	}
	if err := start.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := end.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if done, err := end.Query(); err != nil || !done {
		t.Errorf("Query after Synchronize = %v, %v", done, err)
	}
	d, err := cuda.ElapsedTime(start, end)
	if err != nil || d < 0 || d > time.Second {
		t.Errorf("ElapsedTime = %v, %v", d, err)
	}

	// A second stream waits on the first.
	s2 := cudatest.Stream(t, ctx)
	if err := s2.WaitEvent(end); err != nil {
		t.Errorf("WaitEvent: %v", err)
	}
	if err := s2.Synchronize(); err != nil {
		t.Errorf("Synchronize after WaitEvent: %v", err)
	}

	noTiming, err := ctx.NewEvent(cuda.EventDisableTiming)
	if err != nil {
		t.Fatal(err)
	}
	defer noTiming.Close()
	if _, err := cuda.ElapsedTime(start, noTiming); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("ElapsedTime with a non-timing event: %v, want ErrInvalidValue", err)
	}
	if _, err := ctx.NewEvent(cuda.EventFlag(0x80)); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("NewEvent with an unknown flag: %v, want ErrInvalidValue", err)
	}

	if err := end.Close(); err != nil {
		t.Fatal(err)
	}
	wantErrors(t, cuda.ErrClosed, map[string]error{
		"Record":      end.Record(s),
		"Synchronize": end.Synchronize(),
		"Query":       second(end.Query()),
		"ElapsedTime": second(cuda.ElapsedTime(start, end)),
		"WaitEvent":   s.WaitEvent(end),
	})
}

func TestStreamOfAnotherContext(t *testing.T) {
	ctx := cudatest.Context(t)
	other := cudatest.Context(t)
	s := cudatest.Stream(t, other)
	e, err := ctx.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	err = e.Record(s)
	if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "another context") {
		t.Errorf("Record on a stream of another context: %v, want ErrInvalidValue", err)
	}
	e2, err := other.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	if _, err := cuda.ElapsedTime(e, e2); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("ElapsedTime across contexts: %v, want ErrInvalidValue", err)
	}
}

// TestObjectsAfterContextClose: closing the context first makes every
// object's methods fail with ErrClosed, and their Close a no-op.
func TestObjectsAfterContextClose(t *testing.T) {
	cudatest.CheckLeaks(t)
	ctx, err := cuda.NewContext(cudatest.Device(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	e, err := ctx.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	ctx.Close()
	if err := s.Synchronize(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Stream.Synchronize after the context closed: %v", err)
	}
	if err := e.Record(s); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Event.Record after the context closed: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Stream.Close after the context closed: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("Event.Close after the context closed: %v", err)
	}
}

func TestStreamForgotten(t *testing.T) {
	ctx := cudatest.Context(t)
	before := trackForgotten()
	func() {
		if _, err := ctx.NewStream(); err != nil {
			t.Fatal(err)
		}
		if _, err := ctx.NewEvent(); err != nil {
			t.Fatal(err)
		}
	}()
	if !cudatest.GC(func() bool { return trackForgotten() >= before+2 }) {
		t.Fatal("the cleanups of an unreachable Stream and Event did not run")
	}
}

// TestFailedSynchronizeKeepsPins: a synchronize that fails proves nothing
// finished, so the Go memory queued copies write stays pinned (alive) until
// one succeeds: the collector must not hand it to anyone else meanwhile.
// The fake runs stream work 50 ms late here, so the copy is still queued
// while the collector runs.
func TestFailedSynchronizeKeepsPins(t *testing.T) {
	if !cudatest.InChild(t) {
		cudatest.RunChild(t, cudatest.EnvDriver+"=fake", cudatest.EnvRequireGPU+"=", "FAKECUDA_STREAM_DELAY_US=50000")
		return
	}
	f := cudatest.Fake(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	const n = 16 << 10
	b := must(cuda.Alloc[byte](ctx, n))(t)
	defer b.Free()
	if err := b.Memset8(0x77); err != nil {
		t.Fatal(err)
	}
	func() {
		dst := make([]byte, n) // unreachable once queued: only the pin keeps it
		if err := b.CopyToHostAsync(dst, s); err != nil {
			t.Fatal(err)
		}
	}()
	f.Fail("cuStreamSynchronize", 1, 999)
	if err := s.Synchronize(); !errors.Is(err, cuda.Result(999)) {
		t.Fatalf("Synchronize with the driver failing: %v", err)
	}
	for range 3 {
		runtime.GC()
	}
	victims := make([][]byte, 256)
	for i := range victims {
		victims[i] = make([]byte, n)
		for j := range victims[i] {
			victims[i][j] = 0x11
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i, v := range victims {
		if bytes.IndexByte(v, 0x77) >= 0 {
			t.Fatalf("slice %d, made after the failed synchronize, was written by the copy queued before it: its memory was released while the copy was pending", i)
		}
	}
}

// TestStreamsEventsGraphsConcurrent: streams, events, graphs, instances and
// a memory pool used from many goroutines at once (run it with -race):
// each records its events and has a shared stream wait for them, times
// them, allocates from a shared pool and frees in stream order, captures
// a graph of its own, adds nodes to a shared graph and launches a shared
// instance that another goroutine keeps updating. Nothing fails, and
// everything closes with nothing left.
func TestStreamsEventsGraphsConcurrent(t *testing.T) {
	ctx := cudatest.Context(t)
	shared := cudatest.Stream(t, ctx)
	pool := must(ctx.NewMemPool())(t)
	word := must(cuda.Zeroed[uint32](ctx, 64))(t)
	defer word.Free()
	built := must(ctx.NewGraph())(t)
	defer built.Close()
	memsetGraph := func(v uint32) *cuda.Graph {
		g := must(ctx.NewGraph())(t)
		must(g.AddMemset(nil, word, v, 4))(t)
		return g
	}
	g1 := memsetGraph(1)
	defer g1.Close()
	exec := must(g1.Instantiate())(t)
	const workers, rounds = 8, 20
	stop := make(chan struct{})
	updated := make(chan error, 1)
	go func() { // keeps updating the shared instance, in place
		var err error
		for i := uint32(0); err == nil; i++ {
			select {
			case <-stop:
				updated <- nil
				return
			default:
			}
			g := memsetGraph(i)
			var re bool
			if re, err = exec.Update(g); err == nil && re {
				err = errors.New("Update of a memset to a memset reinstantiated")
			}
			err = errors.Join(err, g.Close())
		}
		updated <- err
	}()
	err := eachGoroutine(workers, func(int) error {
		s, err := ctx.NewStream()
		if err != nil {
			return err
		}
		defer s.Close()
		start, err := ctx.NewEvent()
		if err != nil {
			return err
		}
		defer start.Close()
		end, err := ctx.NewEvent()
		if err != nil {
			return err
		}
		defer end.Close()
		for range rounds {
			b, err := cuda.AllocFromPool[uint32](pool, s, 256)
			if err != nil {
				return err
			}
			g, err := s.Capture(cuda.CaptureThreadLocal, func() error {
				tmp, err := cuda.AllocAsync[uint32](s, 64)
				if err != nil {
					return err
				}
				return errors.Join(tmp.Memset32Async(7, s), tmp.Free())
			})
			if err != nil {
				return err
			}
			own, err := g.Instantiate()
			if err != nil {
				return errors.Join(err, g.Close())
			}
			if err := errors.Join(
				start.Record(s),
				b.Memset32Async(3, s),
				own.Launch(s),
				exec.Launch(s),
				end.Record(s),
				shared.WaitEvent(end),
				b.Free(),
				second(built.AddEmpty(nil)),
				second(pool.Stats()),
				pool.TrimTo(0),
				end.Synchronize(),
				second(cuda.ElapsedTime(start, end)),
				own.Close(),
				g.Close(),
			); err != nil {
				return err
			}
		}
		return s.Synchronize()
	})
	close(stop)
	if err := errors.Join(err, <-updated, shared.Synchronize(), exec.Close(), pool.Close()); err != nil {
		t.Fatal(err)
	}
	if n := must(built.Nodes())(t); n != workers*rounds {
		t.Errorf("the shared graph has %d nodes, want %d", n, workers*rounds)
	}
}

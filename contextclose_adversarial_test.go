package cuda_test

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/capturegate"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/fakecuda"
)

// The tests of this file try to break Context.Close's release of the
// objects the driver does not destroy with a context (graphs, graph
// instances, growable buffers, the libraries' handles), and the gate that
// holds the collector's cleanups back during a global capture: closes
// racing with Context.Close, objects made while it runs, two Closes at
// once, forgotten objects collected around it, faults midway, overlapping
// captures.

// ccContext returns a new context of device 0, which the test closes; one
// it leaves open is closed when the test ends, before CheckLeaks's check
// (where CheckLeaks was called first).
func ccContext(t *testing.T) *cuda.Context {
	t.Helper()
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	t.Cleanup(func() { ctx.Close() })
	return ctx
}

// ccFakeKinds are the fake's counts of what Context.Close must release or
// what goes with the context. "vmm" (growable buffers) and the handles of
// cuSPARSE and cuDNN are not among CheckLeaks's.
var ccFakeKinds = []string{"graph", "graphexec", "vmm", "device", "blas", "fft", "rand", "sparse", "dnn"}

// ccLive returns what the fake holds of each of ccFakeKinds.
func ccLive(f *fakecuda.Control) map[string]int {
	m := map[string]int{}
	for _, k := range ccFakeKinds {
		m[k] = f.Live(k)
	}
	return m
}

// ccWantLive fails t unless the fake comes to hold, within the
// collections cudatest.GC makes (cleanups run on a goroutine of their
// own), what it held when before was taken: more is a leak, less a double
// free. what says when.
func ccWantLive(t *testing.T, f *fakecuda.Control, what string, before map[string]int) {
	t.Helper()
	var now map[string]int
	same := func() bool {
		now = ccLive(f)
		for _, k := range ccFakeKinds {
			if now[k] != before[k] {
				return false
			}
		}
		return true
	}
	if cudatest.GC(same) {
		return
	}
	for _, k := range ccFakeKinds {
		if now[k] != before[k] {
			t.Errorf("%s: the fake holds %d %s object(s), %+d since the start: leaked (or freed twice)", what, now[k], k, now[k]-before[k])
		}
	}
}

// ccFake returns the fake's controls for a test that checks what the fake
// holds, and a check of it at the end of the test; nil on a GPU (Fake
// then ran the test in a child process against the fake).
func ccFake(t *testing.T) *fakecuda.Control {
	t.Helper()
	f := cudatest.Fake(t)
	if f == nil {
		return nil
	}
	cudatest.CheckLeaks(t)
	before := ccLive(f)
	t.Cleanup(func() {
		if !t.Failed() { // else CheckLeaks reports what is left
			ccWantLive(t, f, "at the end of the test", before)
		}
	})
	return f
}

// ccObject is one object Context.Close must release if left open: close
// is its Close (or Free); use, where not nil, one of its calls, which
// returns ErrClosed once the context is closed.
type ccObject struct {
	close, use func() error
}

// ccKind makes objects of one kind in ctx, on s where it needs a stream.
type ccKind struct {
	name string
	make func(ctx *cuda.Context, s *cuda.Stream) (ccObject, error)
}

// ccKinds are the objects Context.Close closes. A library's is passed over
// where the library is missing (ErrNotSupported).
var ccKinds = []ccKind{
	{"Graph", func(ctx *cuda.Context, _ *cuda.Stream) (ccObject, error) {
		g, err := ctx.NewGraph()
		if err != nil {
			return ccObject{}, err
		}
		return ccObject{g.Close, func() error { _, err := g.Nodes(); return err }}, nil
	}},
	{"GraphExec", func(ctx *cuda.Context, s *cuda.Stream) (ccObject, error) {
		g, err := ctx.NewGraph() // left open: the context's Close closes it
		if err != nil {
			return ccObject{}, err
		}
		e, err := g.Instantiate()
		if err != nil {
			return ccObject{}, errors.Join(err, g.Close())
		}
		return ccObject{e.Close, func() error { return e.Launch(s) }}, nil
	}},
	{"GrowableBuffer", func(ctx *cuda.Context, _ *cuda.Stream) (ccObject, error) {
		gb, err := cuda.NewGrowableBuffer[int32](ctx, 1<<20)
		if err != nil {
			return ccObject{}, err
		}
		if err := gb.Resize(1000); err != nil {
			return ccObject{}, errors.Join(err, gb.Free())
		}
		return ccObject{gb.Free, func() error { return gb.Resize(2000) }}, nil
	}},
	{"GrowableBuffer a graph uses", func(ctx *cuda.Context, s *cuda.Stream) (ccObject, error) {
		// The buffer can only be freed after the graph and its
		// instance: the user's close does them in order, the context's
		// in whatever order it finds them.
		gb, err := cuda.NewGrowableBuffer[int32](ctx, 1<<20)
		if err != nil {
			return ccObject{}, err
		}
		if err := gb.Resize(1000); err != nil {
			return ccObject{}, errors.Join(err, gb.Free())
		}
		view, err := gb.Buffer()
		if err != nil {
			return ccObject{}, errors.Join(err, gb.Free())
		}
		g, err := s.Capture(cuda.CaptureThreadLocal, func() error { return view.Memset32Async(7, s) })
		if err != nil {
			return ccObject{}, errors.Join(err, gb.Free())
		}
		e, err := g.Instantiate()
		if err != nil {
			return ccObject{}, errors.Join(err, g.Close(), gb.Free())
		}
		return ccObject{
			func() error { return errors.Join(e.Close(), g.Close(), gb.Free()) },
			func() error { return e.Launch(s) },
		}, nil
	}},
	{"cublas.Handle", func(_ *cuda.Context, s *cuda.Stream) (ccObject, error) {
		h, err := cublas.New(s)
		if err != nil {
			return ccObject{}, err
		}
		return ccObject{h.Close, func() error { return h.SetMathMode(cublas.DefaultMath) }}, nil
	}},
	{"cufft.Plan", func(_ *cuda.Context, s *cuda.Stream) (ccObject, error) {
		p, err := cufft.NewPlan(s, cufft.C2C, []int{64}, 1)
		if err != nil {
			return ccObject{}, err
		}
		return ccObject{p.Close, nil}, nil
	}},
	{"curand.Generator", func(_ *cuda.Context, s *cuda.Stream) (ccObject, error) {
		g, err := curand.New(s, curand.DefaultRNG, 1)
		if err != nil {
			return ccObject{}, err
		}
		return ccObject{g.Close, nil}, nil
	}},
}

// ccMake makes n objects of kind k in ctx, skipping t where the library
// is missing.
func ccMake(t *testing.T, k ccKind, ctx *cuda.Context, s *cuda.Stream, n int) []ccObject {
	t.Helper()
	objs := make([]ccObject, n)
	for i := range objs {
		o, err := k.make(ctx, s)
		if errors.Is(err, cuda.ErrNotSupported) {
			t.Skipf("%s: %v", k.name, err)
		}
		if err != nil {
			t.Fatalf("making a %s: %v", k.name, err)
		}
		objs[i] = o
	}
	return objs
}

// ccWantClosed fails t unless each object's use is ErrClosed and its
// close nil, twice: what Context.Close promises of the objects made in
// the context.
func ccWantClosed(t *testing.T, what string, objs []ccObject) {
	t.Helper()
	for i, o := range objs {
		if o.use != nil {
			if err := o.use(); !errors.Is(err, cuda.ErrClosed) {
				t.Errorf("%s: object %d's use after Context.Close: %v, want ErrClosed", what, i, err)
			}
		}
		for call := range 2 {
			if err := o.close(); err != nil {
				t.Errorf("%s: object %d's close (call %d) after Context.Close: %v, want nil", what, i, call+1, err)
			}
		}
	}
}

// ccAll runs each of fns on a goroutine of its own, all let go at once,
// and returns their errors; a deadlock fails t.
func ccAll(t *testing.T, what string, fns ...func() error) []error {
	t.Helper()
	errs := make([]error, len(fns))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = fn()
		}()
	}
	within(t, 10*time.Second, what, func() {
		close(start)
		wg.Wait()
	})
	return errs
}

// ccUntilClosing waits until ctx refuses calls (a Close has begun and
// waits for the calls in flight, this one's caller's among them): a
// MemInfo returns ErrClosed.
func ccUntilClosing(ctx *cuda.Context) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, _, err := ctx.MemInfo(); errors.Is(err, cuda.ErrClosed) {
			return nil
		} else if err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	return errors.New("Context.Close did not begin within 5 s")
}

// TestCtxCloseAdvRacesObjectClose: each object's own Close (or Free) runs
// on a goroutine of its own while another closes the context. Whichever
// gets there first, every call returns nil, nothing is destroyed twice or
// left in the driver, and afterwards the objects' uses are ErrClosed and
// their closes nil.
func TestCtxCloseAdvRacesObjectClose(t *testing.T) {
	for _, k := range ccKinds {
		t.Run(k.name, func(t *testing.T) {
			f := ccFake(t)
			if f == nil {
				return
			}
			for i := range 8 {
				ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
				s := must(ctx.NewStream())(t)
				objs := ccMake(t, k, ctx, s, 6)
				fns := []func() error{ctx.Close}
				for _, o := range objs {
					fns = append(fns, o.close)
				}
				for j, err := range ccAll(t, "the closes", fns...) {
					if err != nil {
						t.Errorf("round %d: close %d (0 is the context's): %v, want nil", i, j, err)
					}
				}
				ccWantClosed(t, k.name, objs)
				if err := errors.Join(s.Close(), ctx.Close()); err != nil {
					t.Errorf("round %d: closing the stream and the context again: %v", i, err)
				}
			}
		})
	}
}

// TestCtxCloseAdvConcurrentContextClose: two goroutines close the same
// context at once, with graphs, instances and growable buffers open.
// Closing twice is a no-op, so both return nil; and the objects must all
// be released, whichever Close releases them: the second Close must not
// let go of the context while the first is still releasing them (their
// own Closes would then find the context closed and destroy nothing).
func TestCtxCloseAdvConcurrentContextClose(t *testing.T) {
	f := ccFake(t)
	if f == nil {
		return
	}
	kinds := []ccKind{ccKinds[0], ccKinds[1], ccKinds[2]}
	for i := range 20 {
		before := ccLive(f)
		ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
		s := must(ctx.NewStream())(t)
		var objs []ccObject
		for _, k := range kinds {
			objs = append(objs, ccMake(t, k, ctx, s, 8)...)
		}
		for j, err := range ccAll(t, "two Context.Close", ctx.Close, ctx.Close) {
			if err != nil {
				t.Errorf("round %d: Context.Close %d: %v, want nil", i, j, err)
			}
		}
		ccWantClosed(t, "after two Context.Close", objs)
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		ccWantLive(t, f, "after two concurrent Context.Close", before)
		if t.Failed() {
			t.Fatalf("round %d failed", i)
		}
	}
}

// TestCtxCloseAdvLaunchQueued: the context is closed with an instance's
// launches still queued and another goroutine launching it: Close waits
// for the work, each launch is nil or ErrClosed, and the instance, the
// graph and the buffers they use are released once.
func TestCtxCloseAdvLaunchQueued(t *testing.T) {
	k := newGraphKit(t)
	g := must(k.s.Capture(cuda.CaptureGlobal, k.accumulate(k.a, 4)))(t)
	e := must(g.Instantiate())(t)
	for range 10 {
		if err := e.Launch(k.s); err != nil {
			t.Fatal(err)
		}
	}
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		// Until Close refuses (it closes the instance first): a count of
		// launches could all run before Close begins.
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			err := e.Launch(k.s)
			if errors.Is(err, cuda.ErrClosed) {
				done <- nil
				return
			}
			if err != nil {
				done <- err
				return
			}
			if i == 4 {
				close(started)
			}
		}
		done <- errors.New("10 s of launches and the context still open")
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("the launches before Context.Close: %v", err)
	}
	within(t, 10*time.Second, "Context.Close under launches", func() {
		if err := k.ctx.Close(); err != nil {
			t.Errorf("Context.Close with launches queued: %v", err)
		}
	})
	if err := <-done; err != nil {
		t.Errorf("the launches beside Context.Close: %v, want nil or ErrClosed", err)
	}
	ccWantClosed(t, "after Context.Close under launches", []ccObject{
		{e.Close, func() error { return e.Launch(k.s) }},
		{g.Close, func() error { _, err := g.Instantiate(); return err }},
	})
}

// TestCtxCloseAdvMadeDuringClose: objects made while Context.Close runs.
// Close waits for the calls in flight, so an object such a call makes
// (the call succeeded) is one made in the context before it let go: its
// Close must release it, or the object must be refused. Either way
// nothing may stay in the driver once everything is closed.
func TestCtxCloseAdvMadeDuringClose(t *testing.T) {
	// A capture under way holds the context: Close waits for it. The
	// capture ends only once Close refuses new calls, so the graph is
	// made after Close ran its releases.
	t.Run("capture ends while Close waits for it", func(t *testing.T) {
		f := ccFake(t)
		if f == nil {
			return
		}
		ctx := ccContext(t)
		s := must(ctx.NewStream())(t)
		inCapture := make(chan struct{})
		var g *cuda.Graph
		var captureErr error
		errs := ccAll(t, "a capture beside Context.Close",
			func() error {
				g, captureErr = s.Capture(cuda.CaptureThreadLocal, func() error {
					close(inCapture)
					return ccUntilClosing(ctx)
				})
				return nil
			},
			func() error {
				<-inCapture
				return ctx.Close()
			})
		if errs[1] != nil {
			t.Fatalf("Context.Close: %v", errs[1])
		}
		switch {
		case errors.Is(captureErr, cuda.ErrClosed):
			t.Logf("the capture was refused: %v", captureErr)
		case captureErr != nil:
			t.Fatalf("Stream.Capture: %v, want a graph or ErrClosed", captureErr)
		default:
			ccWantClosed(t, "the graph the capture made", []ccObject{{g.Close, func() error { _, err := g.Instantiate(); return err }}})
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})

	// Close, releasing a growable buffer, waits for a call that holds one
	// of its Buffers; that call makes a graph, after Close took the list
	// of what it releases, before it refuses new calls.
	t.Run("graph made while Close frees a growable buffer", func(t *testing.T) {
		f := ccFake(t)
		if f == nil {
			return
		}
		ctx := ccContext(t)
		s := must(ctx.NewStream())(t)
		gb := must(cuda.NewGrowableBuffer[int32](ctx, 1<<20))(t)
		if err := gb.Resize(1000); err != nil {
			t.Fatal(err)
		}
		view := must(gb.Buffer())(t)
		inDo, proceed := make(chan struct{}), make(chan struct{})
		var late *cuda.Graph
		errs := ccAll(t, "a Stream.Do beside Context.Close",
			func() error {
				return s.Do(func(uintptr) error {
					close(inDo)
					<-proceed
					var err error
					late, err = ctx.NewGraph()
					return err
				}, view)
			},
			func() error {
				<-inDo
				go func() {
					time.Sleep(50 * time.Millisecond) // Close is waiting for the Buffer
					close(proceed)
				}()
				return ctx.Close()
			})
		if errs[1] != nil {
			t.Fatalf("Context.Close: %v", errs[1])
		}
		switch err := errs[0]; {
		case errors.Is(err, cuda.ErrClosed):
			t.Logf("the graph was refused: %v", err)
		case err != nil:
			t.Fatalf("NewGraph in the Stream.Do: %v, want a graph or ErrClosed", err)
		default:
			ccWantClosed(t, "the graph made during Close", []ccObject{{late.Close, func() error { _, err := late.Nodes(); return err }}})
		}
		if err := errors.Join(gb.Free(), s.Close()); err != nil {
			t.Error(err)
		}
	})

	// Goroutines make graphs, instances and growable buffers, a few
	// dozen each, while the context is closed: each is refused or
	// released. (Few, so that a leak leaves little in the fake.)
	t.Run("stress", func(t *testing.T) {
		f := ccFake(t)
		if f == nil {
			return
		}
		for round := range 10 {
			ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
			s := must(ctx.NewStream())(t)
			var mu sync.Mutex
			var made []ccObject
			var count atomic.Int32
			maker := func(k ccKind) func() error {
				return func() error {
					for range 40 {
						o, err := k.make(ctx, s)
						if errors.Is(err, cuda.ErrClosed) {
							return nil
						}
						if err != nil {
							return err
						}
						mu.Lock()
						made = append(made, o)
						mu.Unlock()
						count.Add(1)
						runtime.Gosched()
					}
					return nil
				}
			}
			closer := func() error {
				for deadline := time.Now().Add(time.Second); count.Load() < 12 && time.Now().Before(deadline); {
					runtime.Gosched()
				}
				return ctx.Close()
			}
			errs := ccAll(t, "makers beside Context.Close", maker(ccKinds[0]), maker(ccKinds[1]), maker(ccKinds[2]), closer)
			for i, err := range errs {
				if err != nil {
					t.Errorf("round %d: goroutine %d: %v", round, i, err)
				}
			}
			for i, o := range made {
				if err := o.close(); err != nil {
					t.Errorf("round %d: object %d's close after Context.Close: %v, want nil", round, i, err)
				}
			}
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}
	})
}

// ccHeap returns the bytes of the live heap, once collected.
func ccHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestCtxCloseAdvRegistrationsDoNotGrow: the context keeps a registration
// of each graph, instance and growable buffer until it is closed; one
// closed, or collected, must drop it, or a long-lived context that makes
// and closes objects in a loop grows without end. Checked by the heap a
// few thousand cycles leave, after as many cycles first.
func TestCtxCloseAdvRegistrationsDoNotGrow(t *testing.T) {
	const n = 4000
	const perObject = 48 // bytes a cycle may leave: a registration kept costs about 100
	cycles := []struct {
		name      string
		cycle     func(ctx *cuda.Context) error
		forgotten bool // the cycle drops its object, for the collector
	}{
		{"Graph closed", func(ctx *cuda.Context) error {
			g, err := ctx.NewGraph()
			if err != nil {
				return err
			}
			return g.Close()
		}, false},
		{"GraphExec closed", func(ctx *cuda.Context) error {
			g, err := ctx.NewGraph()
			if err != nil {
				return err
			}
			e, err := g.Instantiate()
			return errors.Join(err, e.Close(), g.Close())
		}, false},
		{"GrowableBuffer freed", func(ctx *cuda.Context) error {
			gb, err := cuda.NewGrowableBuffer[int32](ctx, 1<<10)
			if err != nil {
				return err
			}
			return gb.Free()
		}, false},
		{"Graph forgotten", func(ctx *cuda.Context) error {
			_, err := ctx.NewGraph()
			return err
		}, true},
	}
	for _, c := range cycles {
		t.Run(c.name, func(t *testing.T) {
			ctx := cudatest.Context(t) // checks leaks
			run := func(n int) {
				t.Helper()
				forgotten := trackForgotten()
				for range n {
					if err := c.cycle(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if c.forgotten && !cudatest.GC(func() bool { return trackForgotten() >= forgotten+int64(n) }) {
					t.Fatalf("the cleanups of %d forgotten graphs did not run", n)
				}
			}
			// The same number first: the heap's own growth, and the
			// registrations map's, which keeps the room its peak took
			// (n graphs forgotten at once are registered at once).
			run(n)
			before := ccHeap()
			run(n)
			after := ccHeap()
			if after > before && after-before > n*perObject {
				t.Errorf("%d cycles grew the heap by %d bytes (%d a cycle): the context keeps a registration of each", n, after-before, (after-before)/n)
			}
			t.Logf("heap %d -> %d bytes", before, after)
		})
	}
}

// driverCaptureUnsupported is CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
const driverCaptureUnsupported = 900

// TestCtxCloseAdvForgotten: a graph, or an instance, nobody closed and
// the collector found unreachable. Its cleanup destroys it; the context's
// Close, which holds it only weakly, must not destroy it again, nor let go
// of the context while the cleanup has still to run (the cleanup could
// destroy nothing afterwards). (An instance keeps its graph reachable
// until the instance's cleanup has run: the graph is then open when the
// context closes, and closed by it.)
func TestCtxCloseAdvForgotten(t *testing.T) {
	objects := []struct {
		name    string
		destroy string // the driver's destroy of the object
		kind    string // the fake's count of such objects
		// forget makes the object in ctx and drops it; the graph of an
		// instance is returned, open, for the context's Close.
		forget func(t *testing.T, ctx *cuda.Context)
	}{
		{"Graph", "cuGraphDestroy", "graph", func(t *testing.T, ctx *cuda.Context) {
			t.Helper()
			_ = must(ctx.NewGraph())(t)
		}},
		{"GraphExec", "cuGraphExecDestroy", "graphexec", func(t *testing.T, ctx *cuda.Context) {
			t.Helper()
			g := must(ctx.NewGraph())(t)
			_ = must(g.Instantiate())(t)
		}},
	}
	for _, o := range objects {
		// The cleanup runs first: Close has nothing left to release.
		t.Run(o.name+"/cleaned up before Close", func(t *testing.T) {
			f := ccFake(t)
			if f == nil {
				return
			}
			ctx := ccContext(t)
			forgotten, d0 := trackForgotten(), f.Counts()[o.destroy]
			o.forget(t, ctx)
			if !cudatest.GC(func() bool { return trackForgotten() > forgotten && f.Counts()[o.destroy] > d0 }) {
				t.Fatalf("the cleanup of a forgotten %s did not destroy it", o.name)
			}
			if err := ctx.Close(); err != nil {
				t.Fatal(err)
			}
			if d := f.Counts()[o.destroy] - d0; d != 1 {
				t.Errorf("%d calls of %s for one forgotten %s, want 1", d, o.destroy, o.name)
			}
		})

		// The cleanup is held back by a global capture on another
		// context of the device while this context closes: Close destroys
		// the object itself, or, where the capture forbids that (an
		// instance's destroy), fails with the driver's refusal, which
		// fails the capture too, and the Close after the capture's end
		// finishes; nothing is left either way.
		t.Run(o.name+"/cleanup held by a global capture while Close runs", func(t *testing.T) {
			f := ccFake(t)
			if f == nil {
				return
			}
			ctx, other := ccContext(t), ccContext(t)
			s := must(other.NewStream())(t)
			defer s.Close()
			forgotten, live := trackForgotten(), f.Live(o.kind)
			o.forget(t, ctx)
			inCapture, end := make(chan struct{}), make(chan struct{})
			captured := make(chan error, 1)
			go func() {
				g, err := s.Capture(cuda.CaptureGlobal, func() error {
					close(inCapture)
					<-end
					return nil
				})
				if g != nil {
					err = errors.Join(err, g.Close())
				}
				captured <- err
			}()
			<-inCapture
			collected := cudatest.GC(func() bool { return trackForgotten() > forgotten })
			closeErr := ctx.Close()
			close(end)
			captureErr := <-captured
			if !collected {
				t.Fatalf("the forgotten %s was not collected", o.name)
			}
			if closeErr != nil {
				if !errors.Is(closeErr, cuda.Result(driverCaptureUnsupported)) {
					t.Fatalf("Context.Close during another context's global capture: %v, want nil or the driver's refusal", closeErr)
				}
				if captureErr == nil {
					t.Error("the global capture succeeded though Close made a call it forbids")
				}
				if err := ctx.Close(); err != nil {
					t.Fatalf("Context.Close after the capture ended: %v", err)
				}
			} else if captureErr != nil {
				t.Errorf("the global capture on the other context: %v", captureErr)
			}
			if !cudatest.GC(func() bool { return f.Live(o.kind) == live }) {
				t.Errorf("the fake holds %d %s object(s), %+d since before the forgotten %s was made: its cleanup, held back until the capture ended, found the context closed and destroyed nothing", f.Live(o.kind), o.kind, f.Live(o.kind)-live, o.name)
			}
		})

		// No capture: the collector cleared the weak pointer, and Close
		// follows at once, maybe before the cleanup runs.
		t.Run(o.name+"/collected just before Close", func(t *testing.T) {
			f := ccFake(t)
			if f == nil {
				return
			}
			for range 100 {
				ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
				o.forget(t, ctx)
				runtime.GC()
				if err := ctx.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestCtxCloseAdvFaults: a release fails midway through Context.Close.
// Close returns the error and the context stays open and usable, the
// object whose release failed too; the next Close finishes the work, and
// nothing is left in the driver.
func TestCtxCloseAdvFaults(t *testing.T) {
	cases := []struct {
		name  string
		fn    string // the driver function that fails
		times int    // how many of its calls fail in a row
		kind  ccKind
		// retried: another release of the same Close succeeds, so that
		// Close tries the failed one again at once and may return nil.
		retried bool
	}{
		{"graph destroy", "cuGraphDestroy", 1, ccKinds[0], false},
		{"graph destroy twice", "cuGraphDestroy", 2, ccKinds[0], false},
		{"instance destroy", "cuGraphExecDestroy", 1, ccKinds[1], true},
		{"instance destroy twice", "cuGraphExecDestroy", 2, ccKinds[1], true},
		{"addresses free", "cuMemAddressFree", 1, ccKinds[2], false},
		{"unmap", "cuMemUnmap", 1, ccKinds[2], false},
		{"graph over a growable buffer", "cuGraphDestroy", 1, ccKinds[3], true},
		{"context release", "cuDevicePrimaryCtxRelease_v2", 1, ccKinds[0], false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := ccFake(t)
			if f == nil {
				return
			}
			ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
			s := must(ctx.NewStream())(t)
			objs := ccMake(t, c.kind, ctx, s, 1)
			for i := range c.times {
				f.Fail(c.fn, i+1, 999)
			}
			failed := 0
			for {
				err := ctx.Close()
				if err == nil {
					break
				}
				if failed++; failed > c.times {
					t.Fatalf("Context.Close %d: %v, after the faults were spent", failed, err)
				}
				t.Logf("Context.Close %d: %v", failed, err)
				if _, _, err := ctx.MemInfo(); err != nil {
					t.Errorf("the context after a failed Close: %v, want it open", err)
				}
				if u := objs[0].use; u != nil && c.fn != "cuDevicePrimaryCtxRelease_v2" {
					if err := u(); err != nil {
						t.Errorf("the object whose release failed, after the failed Close: %v, want it usable", err)
					}
				}
			}
			if failed == 0 && !c.retried {
				t.Errorf("Context.Close returned nil at once despite the fault of %s", c.fn)
			}
			if n := f.Pending(); n != 0 {
				t.Errorf("%d of the faults did not fire", n)
			}
			ccWantClosed(t, c.name, objs)
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestCtxCloseAdvDuringGlobalCapture: one context is closed, an instance
// of it still open, while another context of the device captures in the
// global mode, which forbids destroying an instance. Close may fail then
// (it was asked to call what the capture forbids), but cleanly: the
// context stays open, and Close after the capture releases everything.
func TestCtxCloseAdvDuringGlobalCapture(t *testing.T) {
	f := ccFake(t)
	if f == nil {
		return
	}
	ctx, other := ccContext(t), ccContext(t)
	s, so := must(ctx.NewStream())(t), must(other.NewStream())(t)
	objs := ccMake(t, ccKinds[1], ctx, s, 2)
	inCapture, end := make(chan struct{}), make(chan struct{})
	captured := make(chan error, 1)
	go func() {
		g, err := so.Capture(cuda.CaptureGlobal, func() error {
			close(inCapture)
			<-end
			return nil
		})
		if g != nil {
			err = errors.Join(err, g.Close())
		}
		captured <- err
	}()
	<-inCapture
	closeErr := ctx.Close()
	close(end)
	captureErr := <-captured
	t.Logf("Context.Close during the capture: %v; the capture: %v", closeErr, captureErr)
	if closeErr != nil {
		if _, _, err := ctx.MemInfo(); err != nil {
			t.Errorf("the context after its Close failed: %v, want it open", err)
		}
		if err := ctx.Close(); err != nil {
			t.Errorf("Context.Close after the capture: %v", err)
		}
	}
	ccWantClosed(t, "after Context.Close", objs)
	if err := errors.Join(s.Close(), so.Close()); err != nil {
		t.Error(err)
	}
}

// TestCaptureGateAdvOverlappingGlobal: two global captures overlap on two
// goroutines, and buffers are forgotten before, between and after the
// first ends. No cleanup may free one while either captures (the fake
// would refuse the free and fail the capture); all run once the last
// capture ends.
func TestCaptureGateAdvOverlappingGlobal(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t) // checks leaks
	s1, s2 := cudatest.Stream(t, ctx), cudatest.Stream(t, ctx)
	// Allocated first: a global capture forbids allocating too.
	bufs := make([]*cuda.DeviceBuffer[int32], 3)
	for i := range bufs {
		bufs[i] = must(cuda.Alloc[int32](ctx, 1000))(t)
	}
	live := f.Live("device")
	forgotten := trackForgotten()
	// drop forgets buffer i, and waits for its cleanup to be called (and
	// held back).
	drop := func(i int) {
		t.Helper()
		bufs[i] = nil
		if !cudatest.GC(func() bool { return trackForgotten() > forgotten+int64(i) }) {
			t.Fatalf("the cleanup of forgotten buffer %d did not run", i)
		}
		if n := f.Live("device"); n != live {
			t.Fatalf("after buffer %d was forgotten, the fake holds %d device allocations, want %d: a cleanup freed one while a global capture was under way", i, n, live)
		}
	}
	capture := func(s *cuda.Stream, in, end chan struct{}, result chan<- error) {
		g, err := s.Capture(cuda.CaptureGlobal, func() error {
			close(in)
			<-end
			return nil
		})
		if g != nil {
			err = errors.Join(err, g.Close())
		}
		result <- err
	}
	in1, end1, in2, end2 := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	res1, res2 := make(chan error, 1), make(chan error, 1)
	defer func() { // whatever failed, no capture is left waiting
		for _, c := range []chan struct{}{end1, end2} {
			select {
			case <-c:
			default:
				close(c)
			}
		}
	}()
	go capture(s1, in1, end1, res1)
	<-in1
	drop(0)
	go capture(s2, in2, end2, res2)
	<-in2
	drop(1)
	close(end1)
	if err := <-res1; err != nil {
		t.Errorf("the first capture: %v", err)
	}
	// The second still captures: the held cleanups stay held.
	drop(2)
	time.Sleep(20 * time.Millisecond)
	if n := f.Live("device"); n != live {
		t.Errorf("the fake holds %d device allocations once the first capture ended, the second still under way, want %d", n, live)
	}
	close(end2)
	if err := <-res2; err != nil {
		t.Errorf("the second capture: %v", err)
	}
	if !cudatest.GC(func() bool { return f.Live("device") == live-3 }) {
		t.Errorf("the fake holds %d device allocations after the last capture, want %d: the held cleanups did not run", f.Live("device"), live-3)
	}
}

// TestCaptureGateAdvLocalModesDoNotHold: a thread-local or relaxed capture
// forbids nothing to the collector's goroutine: a cleanup called during
// it frees at once, and the capture is not failed by it.
func TestCaptureGateAdvLocalModesDoNotHold(t *testing.T) {
	for _, mode := range []cuda.CaptureMode{cuda.CaptureThreadLocal, cuda.CaptureRelaxed} {
		t.Run(mode.String(), func(t *testing.T) {
			f := cudatest.Fake(t)
			if f == nil {
				return
			}
			k := newGraphKit(t)
			bufs := []*cuda.DeviceBuffer[int32]{must(cuda.Alloc[int32](k.ctx, 1000))(t)}
			g := must(k.s.Capture(mode, func() error {
				live := f.Live("device")
				bufs[0] = nil
				if !cudatest.GC(func() bool { return f.Live("device") == live-1 }) {
					return errors.New("the forgotten buffer was not freed during the capture: its cleanup was held back")
				}
				return k.accumulate(k.a, 1)()
			}))(t)
			defer g.Close()
			advLaunch(t, g, k.s, 1)
			k.check(t, 1)
		})
	}
}

// TestCaptureGateAdvBeginWaitsForCleanup: a global capture begins only
// once the cleanups calling the driver have returned: one that began
// first would see its calls refused, and fail the capture.
func TestCaptureGateAdvBeginWaitsForCleanup(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	in, release := make(chan struct{}), make(chan struct{})
	cleaned := make(chan struct{})
	go func() {
		capturegate.Cleanup(func() {
			close(in)
			<-release
		})
		close(cleaned)
	}()
	<-in
	began := make(chan struct{})
	captured := make(chan error, 1)
	go func() {
		g, err := s.Capture(cuda.CaptureGlobal, func() error {
			close(began)
			return nil
		})
		if g != nil {
			err = errors.Join(err, g.Close())
		}
		captured <- err
	}()
	select {
	case <-began:
		t.Error("a global capture began while a cleanup was calling the driver")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-cleaned
	within(t, 10*time.Second, "the capture after the cleanup", func() {
		<-began
		if err := <-captured; err != nil {
			t.Errorf("the capture: %v", err)
		}
	})
}

package cuda_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// graphKit is what the graph tests share: a stream, vadd_s32 and two
// int32 buffers of n elements, a filled with 1 to n and c with zeros.
type graphKit struct {
	ctx  *cuda.Context
	s    *cuda.Stream
	add  *cuda.Function
	a, c *cuda.DeviceBuffer[int32]
	n    int
}

func newGraphKit(t *testing.T) *graphKit {
	t.Helper()
	ctx := cudatest.Context(t)
	k := &graphKit{ctx: ctx, s: cudatest.Stream(t, ctx), n: 1000}
	k.add = must(loadKernels(t, ctx).Function("vadd_s32"))(t)
	src := make([]int32, k.n)
	for i := range src {
		src[i] = int32(i + 1)
	}
	k.a = must(cuda.FromHost(ctx, src))(t)
	k.c = must(cuda.Zeroed[int32](ctx, k.n))(t)
	t.Cleanup(func() { k.a.Free(); k.c.Free() })
	return k
}

// accumulate queues c += x, times times.
func (k *graphKit) accumulate(x *cuda.DeviceBuffer[int32], times int) func() error {
	return func() error {
		for range times {
			if err := k.add.Launch(cuda.LaunchConfigFor(k.n, k.s), x, k.c, k.c, uint32(k.n)); err != nil {
				return err
			}
		}
		return nil
	}
}

// check wants c[i] = factor*(i+1).
func (k *graphKit) check(t *testing.T, factor int32) {
	t.Helper()
	if err := k.s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := make([]int32, k.n)
	if err := k.c.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != factor*int32(i+1) {
			t.Fatalf("c[%d] = %d, want %d", i, v, factor*int32(i+1))
		}
	}
}

// TestGraphReplay: captured launches do not run until the graph is
// launched, then run at every launch.
func TestGraphReplay(t *testing.T) {
	k := newGraphKit(t)
	g := must(k.s.Capture(cuda.CaptureGlobal, k.accumulate(k.a, 3)))(t)
	defer g.Close()
	k.check(t, 0)
	if n, err := g.Nodes(); err != nil || n != 3 {
		t.Errorf("Nodes = %d, %v; want 3", n, err)
	}
	var dot bytes.Buffer
	if err := g.WriteDot(&dot, true); err != nil || !strings.Contains(dot.String(), "digraph") {
		t.Errorf("WriteDot: %v, %q", err, dot.String())
	}
	e := must(g.Instantiate())(t)
	defer e.Close()
	for range 5 {
		if err := e.Launch(k.s); err != nil {
			t.Fatal(err)
		}
	}
	k.check(t, 15)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Launch(k.s); err != nil {
		t.Fatalf("an instance after its graph closed: %v", err)
	}
	k.check(t, 18)
}

// TestGraphUpdate: a capture of the same shape with other arguments
// updates an instance in place; one of another shape replaces it.
func TestGraphUpdate(t *testing.T) {
	k := newGraphKit(t)
	twice := must(cuda.Zeroed[int32](k.ctx, k.n))(t)
	defer twice.Free()
	if err := errors.Join(twice.CopyFromDevice(k.a), k.add.Launch(cuda.LaunchConfigFor(k.n, k.s), k.a, twice, twice, uint32(k.n)), k.s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	g1 := must(k.s.Capture(cuda.CaptureGlobal, k.accumulate(k.a, 1)))(t)
	defer g1.Close()
	e := must(g1.Instantiate())(t)
	defer e.Close()
	if err := e.Launch(k.s); err != nil {
		t.Fatal(err)
	}
	k.check(t, 1)

	g2 := must(k.s.Capture(cuda.CaptureGlobal, k.accumulate(twice, 1)))(t)
	defer g2.Close()
	if re, err := e.Update(g2); err != nil || re {
		t.Fatalf("Update to the same shape: reinstantiated %v, %v; want in place", re, err)
	}
	if err := e.Launch(k.s); err != nil {
		t.Fatal(err)
	}
	k.check(t, 3)

	g3 := must(k.s.Capture(cuda.CaptureRelaxed, k.accumulate(twice, 2)))(t)
	defer g3.Close()
	if re, err := e.Update(g3); err != nil || !re {
		t.Fatalf("Update to another shape: reinstantiated %v, %v; want true", re, err)
	}
	if err := e.Launch(k.s); err != nil {
		t.Fatal(err)
	}
	k.check(t, 7)
}

// TestCaptureRefuses: what cannot be captured is refused with a clear
// error while the capture runs, and the capture goes on.
func TestCaptureRefuses(t *testing.T) {
	k := newGraphKit(t)
	var sb cuda.StagingBuffer
	defer sb.Close()
	host := make([]int32, k.n)
	refused := map[string]error{}
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		refused["Synchronize"] = k.s.Synchronize()
		_, refused["Query"] = k.s.Query()
		refused["CopyFromHostAsync"] = k.c.CopyFromHostAsync(host, k.s)
		refused["CopyToHostAsync"] = k.c.CopyToHostAsync(host, k.s)
		refused["Upload"] = cuda.Upload(&sb, k.c, host, k.s)
		refused["Download"] = cuda.Download(&sb, host, k.c, k.s)
		_, refused["Capture again"] = k.s.Capture(cuda.CaptureGlobal, func() error { return nil })
		if err := k.accumulate(k.a, 1)(); err != nil {
			return err
		}
		if err := k.a.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Free of a buffer the capture uses: %v, want ErrInvalidValue", err)
		}
		return nil
	}))(t)
	defer g.Close()
	for name, err := range refused {
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "captur") {
			t.Errorf("%s while capturing: %v; want ErrInvalidValue naming the capture", name, err)
		}
	}
	e := must(g.Instantiate())(t)
	defer e.Close()
	if err := e.Launch(k.s); err != nil {
		t.Fatal(err)
	}
	k.check(t, 1)
}

// TestCaptureEnds: an error or a panic in the captured function ends the
// capture, leaves no graph, and the stream works as before.
func TestCaptureEnds(t *testing.T) {
	k := newGraphKit(t)
	boom := errors.New("boom")
	g, err := k.s.Capture(cuda.CaptureGlobal, func() error {
		if err := k.accumulate(k.a, 1)(); err != nil {
			return err
		}
		return boom
	})
	if g != nil || !errors.Is(err, boom) {
		t.Fatalf("Capture whose function failed: %v, %v; want no graph and its error", g, err)
	}
	func() {
		defer func() {
			if r := recover(); r != "panic in capture" {
				t.Fatalf("recovered %v, want the captured function's panic", r)
			}
		}()
		k.s.Capture(cuda.CaptureThreadLocal, func() error {
			k.accumulate(k.a, 1)()
			panic("panic in capture")
		})
	}()
	if err := k.accumulate(k.a, 1)(); err != nil {
		t.Fatal(err)
	}
	k.check(t, 1) // the captured launches never ran
}

// TestCaptureAlloc: stream-ordered memory allocated and freed in a capture
// is the graph's, and its work runs at every launch; a buffer allocated in a
// capture and not freed there is an error.
func TestCaptureAlloc(t *testing.T) {
	k := newGraphKit(t)
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		tmp, err := cuda.AllocAsync[int32](k.s, k.n)
		if err != nil {
			return err
		}
		return errors.Join(
			tmp.CopyFromDeviceAsync(k.a, k.s),
			k.add.Launch(cuda.LaunchConfigFor(k.n, k.s), tmp, k.a, tmp, uint32(k.n)), // tmp = 2a
			k.add.Launch(cuda.LaunchConfigFor(k.n, k.s), tmp, k.c, k.c, uint32(k.n)), // c += 2a
			tmp.Free(),
		)
	}))(t)
	defer g.Close()
	e := must(g.Instantiate())(t)
	defer e.Close()
	for range 2 {
		if err := e.Launch(k.s); err != nil {
			t.Fatal(err)
		}
	}
	k.check(t, 4)

	var kept *cuda.DeviceBuffer[int32]
	g2, err := k.s.Capture(cuda.CaptureGlobal, func() (err error) {
		kept, err = cuda.AllocAsync[int32](k.s, 16)
		return err
	})
	if g2 != nil || !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("a capture leaving its allocation: %v, %v; want ErrInvalidValue", g2, err)
	}
	if err := kept.Memset32Async(1, k.s); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("the buffer of a capture that failed: %v, want ErrClosed", err)
	}
}

// TestGraphHoldsMemory: while a graph or an instance uses a buffer or a
// module, neither can be freed; once both are closed, they can.
func TestGraphHoldsMemory(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	mod := must(ctx.LoadModule(must(os.ReadFile("testdata/kernels.ptx"))(t)))(t)
	add := must(mod.Function("vadd_s32"))(t)
	b := must(cuda.Zeroed[int32](ctx, 64))(t)
	g := must(s.Capture(cuda.CaptureGlobal, func() error {
		return add.Launch(cuda.LaunchConfigFor(64, s), b, b, b, uint32(64))
	}))(t)
	e := must(g.Instantiate())(t)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Free of a buffer an instance uses: %v, want ErrInvalidValue", err)
	}
	if err := mod.Close(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Close of a module an instance uses: %v, want ErrInvalidValue", err)
	}
	if err := errors.Join(e.Launch(s), s.Synchronize(), e.Close(), b.Free(), mod.Close()); err != nil {
		t.Fatalf("after the instance closed: %v", err)
	}
}

func TestGraphErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	g := must(s.Capture(cuda.CaptureGlobal, func() error { return nil }))(t)
	defer g.Close()
	e := must(g.Instantiate())(t)
	defer e.Close()
	wantErrors(t, cuda.ErrInvalidValue, map[string]error{
		"nil record":          second(s.Capture(cuda.CaptureGlobal, nil)),
		"bad mode":            second(s.Capture(cuda.CaptureMode(7), func() error { return nil })),
		"nil stream":          second((*cuda.Stream)(nil).Capture(cuda.CaptureGlobal, func() error { return nil })),
		"zero graph":          second(new(cuda.Graph).Instantiate()),
		"zero instance":       new(cuda.GraphExec).Launch(s),
		"launch on nil":       e.Launch(nil),
		"update from nil":     second(new(cuda.GraphExec).Update(g)),
		"dot to nil writer":   g.WriteDot(nil, false),
		"nodes of zero graph": second(new(cuda.Graph).Nodes()),
	})
}

func TestCaptureModeString(t *testing.T) {
	for m, want := range map[cuda.CaptureMode]string{cuda.CaptureGlobal: "global", cuda.CaptureThreadLocal: "thread-local", cuda.CaptureRelaxed: "relaxed", 9: "CaptureMode(9)"} {
		if got := m.String(); got != want {
			t.Errorf("%d: %q, want %q", int(m), got, want)
		}
	}
}

// TestCaptureMisuse: what a capture cannot do is refused with words that
// say why, and leaves the stream, its buffers and the capture usable.
func TestCaptureMisuse(t *testing.T) {
	for _, tt := range []struct {
		name string
		// misuse runs inside a capture on k.s, with before, a buffer
		// allocated on k.s before the capture, and other, a second stream.
		misuse func(k *graphKit, before *cuda.DeviceBuffer[int32], other *cuda.Stream) error
		want   string
	}{
		{"Free of a buffer allocated before the capture", func(k *graphKit, before *cuda.DeviceBuffer[int32], _ *cuda.Stream) error {
			return before.Free()
		}, "allocated before"},
		{"FreeOn the capture of a buffer allocated before it", func(k *graphKit, before *cuda.DeviceBuffer[int32], _ *cuda.Stream) error {
			return before.FreeOn(k.s)
		}, "allocated before"},
		{"FreeOn another stream of the capture's memory", func(k *graphKit, _ *cuda.DeviceBuffer[int32], other *cuda.Stream) error {
			b, err := cuda.AllocAsync[int32](k.s, 16)
			if err != nil {
				return err
			}
			defer b.Free() // in the capture, as it must be
			return b.FreeOn(other)
		}, "in the capture"},
		{"Close of the capturing stream", func(k *graphKit, _ *cuda.DeviceBuffer[int32], _ *cuda.Stream) error {
			return k.s.Close() // it used to wait for the capture, which waited for it
		}, "after Capture"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := newGraphKit(t)
			other := cudatest.Stream(t, k.ctx)
			before := must(cuda.AllocAsync[int32](k.s, 16))(t)
			var misuse error
			g, err := k.s.Capture(cuda.CaptureGlobal, func() error {
				misuse = tt.misuse(k, before, other)
				return k.accumulate(k.a, 1)()
			})
			if !errors.Is(misuse, cuda.ErrInvalidValue) || !strings.Contains(misuse.Error(), tt.want) {
				t.Errorf("got %v; want ErrInvalidValue saying %q", misuse, tt.want)
			}
			if err != nil {
				t.Fatalf("the capture after the refused call: %v", err)
			}
			defer g.Close()
			e := must(g.Instantiate())(t)
			defer e.Close()
			if err := e.Launch(k.s); err != nil {
				t.Fatal(err)
			}
			k.check(t, 1)
			// The buffer allocated before is still the caller's.
			if err := errors.Join(before.CopyFromHost(make([]int32, 16)), before.Free()); err != nil {
				t.Errorf("the buffer allocated before the capture, after it: %v", err)
			}
		})
	}
}

// TestGraphOneInstanceWithMemory: a graph that allocates memory may have
// one instance at a time (CUDA's rule): a second Instantiate is an error
// that says so, and once the first instance is closed another can be made.
func TestGraphOneInstanceWithMemory(t *testing.T) {
	k := newGraphKit(t)
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		tmp, err := cuda.AllocAsync[int32](k.s, 16)
		if err != nil {
			return err
		}
		return tmp.Free()
	}))(t)
	defer g.Close()
	e := must(g.Instantiate())(t)
	if e2, err := g.Instantiate(); err == nil || !strings.Contains(err.Error(), "one instance at a time") {
		e2.Close()
		t.Errorf("a second instance of a graph that allocates: %v; want an error saying one instance at a time", err)
	}
	// Update of another shape instantiates g in its place: refused too.
	plain := must(k.s.Capture(cuda.CaptureGlobal, k.accumulate(k.a, 1)))(t)
	defer plain.Close()
	other := must(plain.Instantiate())(t)
	defer other.Close()
	if _, err := other.Update(g); err == nil || !strings.Contains(err.Error(), "one instance at a time") {
		t.Errorf("Update to a graph that allocates and has an instance: %v; want an error saying one instance at a time", err)
	}
	if err := other.Launch(k.s); err != nil {
		t.Errorf("the instance after its refused Update: %v", err)
	}
	k.check(t, 1) // it runs its own graph still
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// With the first instance closed, Update makes other g's one instance:
	// the driver updates no graph with memory nodes in place
	// (cuGraphExecUpdate answers CUDA_ERROR_NOT_SUPPORTED), so it is
	// instantiated anew.
	if re, err := other.Update(g); err != nil || !re {
		t.Fatalf("Update to a graph that allocates, with no other instance: reinstantiated %v, %v; want true, nil", re, err)
	}
	if err := errors.Join(other.Launch(k.s), k.s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	k.check(t, 1) // g's work, which leaves a alone
	if e2, err := g.Instantiate(); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "one instance at a time") {
		e2.Close()
		t.Errorf("an instance of g beside the one Update made: %v; want ErrInvalidValue saying one instance at a time", err)
	}
	// g's one instance updated from g itself: in place, as the H100's
	// driver does.
	if re, err := other.Update(g); err != nil || re {
		t.Errorf("Update of g's one instance from g: reinstantiated %v, %v; want false, nil", re, err)
	}
	// Away from g, which the driver does not update in place either:
	// reinstantiated, and g may have an instance again.
	if re, err := other.Update(plain); err != nil || !re {
		t.Fatalf("Update from a graph that allocates to a plain one: reinstantiated %v, %v; want true, nil", re, err)
	}
	if err := other.Launch(k.s); err != nil {
		t.Fatal(err)
	}
	k.check(t, 2)
	e = must(g.Instantiate())(t)
	defer e.Close()
	if err := errors.Join(e.Launch(k.s), k.s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	// A closed instance counts no more, nor does one forgotten: closing e
	// lets g have another.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e3 := must(g.Instantiate())(t)
	if err := e3.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGraphInstantiateFailureWords: where the driver refuses an instance
// of a graph that allocates memory which has no other, the error is the
// driver's, without the words about one instance at a time, for Instantiate
// and for the instantiation an Update makes.
func TestGraphInstantiateFailureWords(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	k := newGraphKit(t)
	g := must(k.ctx.NewGraph())(t)
	defer g.Close()
	a, mem := must2(g.AddAlloc(nil, 64))(t)
	set := must(g.AddMemset([]*cuda.GraphNode{a}, mem, 0, 4))(t)
	must(g.AddFree([]*cuda.GraphNode{set}, mem))(t)
	f.Fail("cuGraphInstantiateWithFlags", 1, 2) // CUDA_ERROR_OUT_OF_MEMORY
	_, err := g.Instantiate()
	if !errors.Is(err, cuda.Result(2)) || strings.Contains(err.Error(), "one instance") {
		t.Errorf("Instantiate refused by the driver: %v; want CUDA_ERROR_OUT_OF_MEMORY, not a word of one instance", err)
	}
	plain := must(k.s.Capture(cuda.CaptureGlobal, k.accumulate(k.a, 1)))(t)
	defer plain.Close()
	other := must(plain.Instantiate())(t)
	defer other.Close()
	f.Fail("cuGraphInstantiateWithFlags", 1, 2)
	if _, err := other.Update(g); !errors.Is(err, cuda.Result(2)) || strings.Contains(err.Error(), "one instance") {
		t.Errorf("Update whose instantiation the driver refused: %v; want CUDA_ERROR_OUT_OF_MEMORY, not a word of one instance", err)
	}
	// Neither failure left an instance counted.
	e := must(g.Instantiate())(t)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if re, err := other.Update(g); err != nil || !re {
		t.Fatalf("Update after: reinstantiated %v, %v; want true, nil", re, err)
	}
}

// TestCaptureModes: a synchronous allocation (cuMemAlloc) while a capture
// runs fails as the capture's mode says, and ends that capture with an
// error: a global capture forbids it on every goroutine, a thread-local one
// only inside the captured function (its locked thread), a relaxed one
// nowhere. The fake driver forbids what the driver does.
func TestCaptureModes(t *testing.T) {
	for _, tt := range []struct {
		mode                   cuda.CaptureMode
		insideFails, elseFails bool
	}{
		{cuda.CaptureGlobal, true, true},
		{cuda.CaptureThreadLocal, true, false},
		{cuda.CaptureRelaxed, false, false},
	} {
		t.Run(tt.mode.String(), func(t *testing.T) {
			k := newGraphKit(t)
			alloc := func() error {
				b, err := cuda.Alloc[int32](k.ctx, 16)
				if err == nil {
					err = b.Free()
				}
				return err
			}
			var inside, elsewhere error
			g, err := k.s.Capture(tt.mode, func() error {
				inside = alloc()
				done := make(chan error)
				go func() { done <- alloc() }() // another goroutine, so another thread
				elsewhere = <-done
				return k.accumulate(k.a, 1)()
			})
			for _, c := range []struct {
				what  string
				err   error
				fails bool
			}{{"inside the captured function", inside, tt.insideFails}, {"on another goroutine", elsewhere, tt.elseFails}} {
				if c.fails != (c.err != nil) || c.fails && !errors.Is(c.err, cuda.Result(900)) {
					t.Errorf("Alloc %s: %v; want failing %v (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)", c.what, c.err, c.fails)
				}
			}
			if fails := tt.insideFails || tt.elseFails; fails != (err != nil) {
				t.Fatalf("the capture: %v; want failing %v", err, fails)
			}
			if err != nil {
				if err := alloc(); err != nil {
					t.Errorf("Alloc after the failed capture: %v", err)
				}
				return
			}
			defer g.Close()
			e := must(g.Instantiate())(t)
			defer e.Close()
			if err := e.Launch(k.s); err != nil {
				t.Fatal(err)
			}
			k.check(t, 1)
		})
	}
}

// TestCaptureGlobalHoldsCleanups: the collector's cleanup of a buffer
// nobody freed runs while a global capture is under way on another
// goroutine. The capture forbids every thread the cleanup's cuMemFree (the
// driver refuses it, and ends the capture with an error): the cleanup
// waits for the capture's end, which succeeds, and the memory is freed
// then.
func TestCaptureGlobalHoldsCleanups(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	k := newGraphKit(t)
	before := f.Live("device")
	func() {
		if _, err := cuda.Alloc[int32](k.ctx, 1000); err != nil { // forgotten
			t.Fatal(err)
		}
	}()
	forgotten := trackForgotten()
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		if !cudatest.GC(func() bool { return trackForgotten() > forgotten }) {
			return errors.New("the forgotten buffer's cleanup did not run")
		}
		if n := f.Live("device"); n <= before {
			return fmt.Errorf("the fake holds %d device allocations during the capture, want %d: the cleanup freed one while a global capture forbade it", n, before+1)
		}
		return k.accumulate(k.a, 1)()
	}))(t)
	defer g.Close()
	if !cudatest.GC(func() bool { return f.Live("device") == before }) {
		t.Errorf("the fake holds %d device allocations after the capture, want %d: the held cleanup did not run", f.Live("device"), before)
	}
	advLaunch(t, g, k.s, 1)
	k.check(t, 1)
}

package cuda_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// joinKit is a graphKit with a second stream and the two events of a fork
// and a join.
type joinKit struct {
	*graphKit
	s2         *cuda.Stream
	fork, join *cuda.Event
}

func newJoinKit(t *testing.T) *joinKit {
	t.Helper()
	k := &joinKit{graphKit: newGraphKit(t)}
	k.s2 = cudatest.Stream(t, k.ctx)
	k.fork = must(k.ctx.NewEvent(cuda.EventDisableTiming))(t)
	k.join = must(k.ctx.NewEvent(cuda.EventDisableTiming))(t)
	t.Cleanup(func() { k.fork.Close(); k.join.Close() })
	return k
}

// forked runs branch on s2 joined to s's capture: a fork (fork recorded on
// s, waited on by s2), branch, and the join back (join recorded on s2,
// waited on by s).
func (k *joinKit) forked(branch func() error) error {
	if err := errors.Join(k.fork.Record(k.s), k.s2.WaitEvent(k.fork)); err != nil {
		return err
	}
	if err := branch(); err != nil {
		return err
	}
	return errors.Join(k.join.Record(k.s2), k.s.WaitEvent(k.join))
}

// on2 queues c += x on s2.
func (k *joinKit) on2(x *cuda.DeviceBuffer[int32]) error {
	return k.add.Launch(cuda.LaunchConfigFor(k.n, k.s2), x, k.c, k.c, uint32(k.n))
}

// TestCaptureJoinedStream: a stream that waits on an event recorded in a
// capture joins it (a fork, as CUDA does): its work is the graph's, and
// runs at each launch of it; once the capture ends the stream is its own
// again.
func TestCaptureJoinedStream(t *testing.T) {
	k := newJoinKit(t)
	var during bool
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		return k.forked(func() error {
			during = k.s2.Capturing()
			return errors.Join(k.on2(k.a), k.accumulate(k.a, 1)())
		})
	}))(t)
	defer g.Close()
	if !during {
		t.Error("Capturing of the joined stream inside the capture: false, want true")
	}
	if k.s2.Capturing() {
		t.Error("Capturing of the joined stream after the capture: true, want false")
	}
	// The branch's launch was captured, not run.
	k.check(t, 0)
	e := must(g.Instantiate())(t)
	defer e.Close()
	for range 2 {
		if err := e.Launch(k.s); err != nil {
			t.Fatal(err)
		}
	}
	k.check(t, 4)
	// s2 is a stream of its own again.
	if err := errors.Join(k.on2(k.a), k.s2.Synchronize()); err != nil {
		t.Fatal(err)
	}
	k.check(t, 5)
}

// TestCaptureJoinedRefuses: what the capturing stream refuses, a stream
// joined to its capture refuses too, with an error that says so; the
// buffers its captured work uses are the graph's, which cannot be freed
// while the graph is open.
func TestCaptureJoinedRefuses(t *testing.T) {
	k := newJoinKit(t)
	var sb cuda.StagingBuffer
	defer sb.Close()
	host := make([]int32, k.n)
	x := must(cuda.FromHost(k.ctx, host))(t)
	defer x.Free()
	y := must(cuda.AllocAsync[int32](k.s2, 16))(t)
	defer y.Free()
	refused := map[string]error{}
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		return k.forked(func() error {
			refused["Synchronize"] = k.s2.Synchronize()
			_, refused["Query"] = k.s2.Query()
			refused["CopyFromHostAsync"] = k.c.CopyFromHostAsync(host, k.s2)
			refused["CopyToHostAsync"] = k.c.CopyToHostAsync(host, k.s2)
			refused["Upload"] = cuda.Upload(&sb, k.c, host, k.s2)
			refused["Download"] = cuda.Download(&sb, host, k.c, k.s2)
			refused["Close"] = k.s2.Close()
			_, refused["Capture"] = k.s2.Capture(cuda.CaptureGlobal, func() error { return nil })
			refused["FreeOn of a buffer from before"] = y.FreeOn(k.s2)
			return k.on2(x)
		})
	}))(t)
	for name, err := range refused {
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "captur") {
			t.Errorf("%s on a joined stream: %v; want ErrInvalidValue naming the capture", name, err)
		}
	}
	if err := x.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Free of a buffer the joined stream's captured work uses: %v, want ErrInvalidValue", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Free(); err != nil {
		t.Errorf("Free once the graph is closed: %v", err)
	}
}

// TestCaptureJoinedAlloc: memory allocated in stream order on a joined
// stream is the graph's, as on the capturing stream: freed in the capture
// (on either stream) the graph runs; left allocated, Capture fails.
func TestCaptureJoinedAlloc(t *testing.T) {
	k := newJoinKit(t)
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		return k.forked(func() error {
			tmp, err := cuda.AllocAsync[int32](k.s2, k.n)
			if err != nil {
				return err
			}
			return errors.Join(
				k.add.Launch(cuda.LaunchConfigFor(k.n, k.s2), k.a, k.a, tmp, uint32(k.n)), // tmp = 2a
				k.on2(tmp), // c += 2a
				tmp.FreeOn(k.s2),
			)
		})
	}))(t)
	defer g.Close()
	e := must(g.Instantiate())(t)
	defer e.Close()
	if err := e.Launch(k.s); err != nil {
		t.Fatal(err)
	}
	k.check(t, 2)

	var kept *cuda.DeviceBuffer[int32]
	g2, err := k.s.Capture(cuda.CaptureGlobal, func() error {
		return k.forked(func() (err error) {
			kept, err = cuda.AllocAsync[int32](k.s2, 16)
			return err
		})
	})
	if g2 != nil || !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("a capture leaving a joined stream's allocation: %v, %v; want ErrInvalidValue", g2, err)
	}
	if err := kept.Memset32Async(1, k.s2); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("the buffer of a capture that failed: %v, want ErrClosed", err)
	}
}

// TestCaptureUnjoined: a fork whose work is not joined back to the
// capturing stream before the capture ends fails the capture (the driver
// says so), and leaves both streams usable.
func TestCaptureUnjoined(t *testing.T) {
	k := newJoinKit(t)
	g, err := k.s.Capture(cuda.CaptureGlobal, func() error {
		return errors.Join(k.fork.Record(k.s), k.s2.WaitEvent(k.fork), k.on2(k.a))
	})
	if g != nil || err == nil {
		t.Fatalf("Capture with a fork never joined back: %v, %v; want an error", g, err)
	}
	if k.s2.Capturing() {
		t.Error("the forked stream still captures after the capture failed")
	}
	if err := errors.Join(k.on2(k.a), k.s2.Synchronize(), k.accumulate(k.a, 1)()); err != nil {
		t.Fatal(err)
	}
	k.check(t, 2)
}

// TestCaptureForkAfterEnd: a wait on an event recorded in a capture that
// has ended joins nothing: the stream stays its own.
func TestCaptureForkAfterEnd(t *testing.T) {
	k := newJoinKit(t)
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		return errors.Join(k.fork.Record(k.s), k.accumulate(k.a, 1)())
	}))(t)
	defer g.Close()
	// What the driver makes of a wait on a record of an ended capture is
	// its own affair; the stream must not be taken for capturing.
	k.s2.WaitEvent(k.fork)
	if k.s2.Capturing() {
		t.Fatal("a wait on an ended capture's event made the stream capture")
	}
	if err := errors.Join(k.on2(k.a), k.s2.Synchronize()); err != nil {
		t.Fatal(err)
	}
	k.check(t, 1)
}

// TestCaptureNoMerge: a stream capturing a graph of its own that waits on
// an event recorded in another capture would merge the two: the driver
// refuses the wait, and both streams are their own once their captures
// end. (Whether the refused wait also fails either capture is the
// driver's to say: the fake fails the waiting one.)
func TestCaptureNoMerge(t *testing.T) {
	k := newJoinKit(t)
	g, cerr := k.s.Capture(cuda.CaptureRelaxed, func() error {
		if err := k.fork.Record(k.s); err != nil {
			return err
		}
		g2, _ := k.s2.Capture(cuda.CaptureRelaxed, func() error {
			if err := k.s2.WaitEvent(k.fork); err == nil {
				t.Error("a capturing stream's wait on another capture's event: no error")
			}
			return nil
		})
		if g2 != nil {
			g2.Close()
		}
		return k.accumulate(k.a, 1)()
	})
	if g != nil {
		g.Close()
	}
	if k.s.Capturing() || k.s2.Capturing() {
		t.Errorf("after the captures, Capturing: %v and %v, want false", k.s.Capturing(), k.s2.Capturing())
	}
	if err := errors.Join(k.on2(k.a), k.s2.Synchronize()); err != nil {
		t.Fatalf("the second stream after the captures: %v (the first capture: %v)", err, cerr)
	}
	k.check(t, 1) // on2 only: the captured work never ran
}

// TestCaptureMemoryStaysInCapture: memory allocated in a capture exists
// only in its graph: work on a stream outside the capture that would use
// it is refused, whichever call queues it; inside, on the capturing
// stream or one joined to it, it is the graph's.
func TestCaptureMemoryStaysInCapture(t *testing.T) {
	k := newJoinKit(t)
	outside := cudatest.Stream(t, k.ctx)
	refused := map[string]error{}
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		tmp, err := cuda.AllocAsync[int32](k.s, k.n)
		if err != nil {
			return err
		}
		refused["Memset32Async"] = tmp.Memset32Async(1, outside)
		refused["CopyFromDeviceAsync into it"] = tmp.CopyFromDeviceAsync(k.a, outside)
		refused["CopyFromDeviceAsync from it"] = k.c.CopyFromDeviceAsync(tmp, outside)
		refused["Function.Launch"] = k.add.Launch(cuda.LaunchConfigFor(k.n, outside), tmp, k.a, k.c, uint32(k.n))
		return errors.Join(
			k.forked(func() error { return tmp.CopyFromDeviceAsync(k.a, k.s2) }), // tmp = a, on the branch
			k.add.Launch(cuda.LaunchConfigFor(k.n, k.s), tmp, k.c, k.c, uint32(k.n)),
			tmp.Free(),
		)
	}))(t)
	defer g.Close()
	for name, err := range refused {
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "capture") {
			t.Errorf("%s of a capture's memory outside the capture: %v; want ErrInvalidValue naming the capture", name, err)
		}
	}
	e := must(g.Instantiate())(t)
	defer e.Close()
	if err := e.Launch(k.s); err != nil {
		t.Fatal(err)
	}
	k.check(t, 1)
}

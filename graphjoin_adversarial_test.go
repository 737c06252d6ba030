package cuda_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The tests of this file try to break the fork/join capture (a stream that
// waits on an event recorded in another stream's capture joins it) from a
// user's side: nested forks, repeated joins, captures that fail or panic
// with a stream joined, stream-ordered memory across the branches, the
// refusals of a joined stream, successive captures, goroutines, events
// closed or waited on late.

// advEvent returns a new event of ctx, closed when the test ends.
func advEvent(t *testing.T, ctx *cuda.Context) *cuda.Event {
	t.Helper()
	e := must(ctx.NewEvent(cuda.EventDisableTiming))(t)
	t.Cleanup(func() { e.Close() })
	return e
}

// advLaunch instantiates g, launches it times times on s, and closes the
// instance.
func advLaunch(t *testing.T, g *cuda.Graph, s *cuda.Stream, times int) {
	t.Helper()
	e := must(g.Instantiate())(t)
	defer func() {
		if err := e.Close(); err != nil {
			t.Errorf("GraphExec.Close: %v", err)
		}
	}()
	for range times {
		if err := e.Launch(s); err != nil {
			t.Fatal(err)
		}
	}
}

// advFork makes to wait on ev recorded on from: to joins from's capture.
func advFork(from, to *cuda.Stream, ev *cuda.Event) error {
	return errors.Join(ev.Record(from), to.WaitEvent(ev))
}

// addOn queues c += x on s.
func (k *joinKit) addOn(s *cuda.Stream, x *cuda.DeviceBuffer[int32]) error {
	return k.add.Launch(cuda.LaunchConfigFor(k.n, s), x, k.c, k.c, uint32(k.n))
}

// wantCaptureRefusal fails t unless err wraps ErrInvalidValue and names
// the capture.
func wantCaptureRefusal(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "captur") {
		t.Errorf("%s: %v; want an error wrapping ErrInvalidValue that names the capture", what, err)
	}
}

// wantOwn fails t unless each stream is its own again: not capturing,
// and synchronizable.
func wantOwn(t *testing.T, what string, streams ...*cuda.Stream) {
	t.Helper()
	for i, s := range streams {
		if s.Capturing() {
			t.Errorf("%s: stream %d still Capturing", what, i)
		}
		if err := s.Synchronize(); err != nil {
			t.Errorf("%s: stream %d Synchronize: %v", what, i, err)
		}
	}
}

// cycleOrdered allocates and frees a buffer of n int32 on s times times,
// in stream order, with a memset of each so that the memory is used.
func cycleOrdered(s *cuda.Stream, n, times int) error {
	for i := range times {
		b, err := cuda.AllocAsync[int32](s, n)
		if err != nil {
			return fmt.Errorf("cycle %d: %w", i, err)
		}
		if err := errors.Join(b.Memset32Async(uint32(i), s), b.Free()); err != nil {
			return fmt.Errorf("cycle %d: %w", i, err)
		}
	}
	return nil
}

// orderedStats returns the context's stream-ordered MemoryStats.
func orderedStats(t *testing.T, ctx *cuda.Context) cuda.MemoryCount {
	t.Helper()
	st := must(ctx.MemoryStats())(t)
	return st.StreamOrdered
}

// TestJoinAdvNestedFork: a stream that waits on an event recorded on a
// stream joined to a capture joins that capture too (a fork of a fork);
// its work is the graph's, whether it joins back through the middle
// stream or straight to the origin, and runs at every launch.
func TestJoinAdvNestedFork(t *testing.T) {
	for _, via := range []string{"through s2", "straight to s"} {
		t.Run(via, func(t *testing.T) {
			k := newJoinKit(t)
			s3 := cudatest.Stream(t, k.ctx)
			fork2, join3 := advEvent(t, k.ctx), advEvent(t, k.ctx)
			var during [2]bool
			g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
				return k.forked(func() error {
					if err := errors.Join(k.on2(k.a), advFork(k.s2, s3, fork2)); err != nil {
						return err
					}
					during = [2]bool{k.s2.Capturing(), s3.Capturing()}
					if err := errors.Join(k.addOn(s3, k.a), k.addOn(s3, k.a), join3.Record(s3)); err != nil {
						return err
					}
					if via == "through s2" {
						return k.s2.WaitEvent(join3)
					}
					return k.s.WaitEvent(join3)
				})
			}))(t)
			defer g.Close()
			if during != [2]bool{true, true} {
				t.Errorf("Capturing of s2 and s3 inside the capture: %v, want both true", during)
			}
			wantOwn(t, "after the capture", k.s2, s3)
			k.check(t, 0)
			if n, err := g.Nodes(); err != nil || n != 3 {
				t.Errorf("Nodes = %d, %v; want the 3 launches of the branches", n, err)
			}
			advLaunch(t, g, k.s, 3)
			k.check(t, 9)
			if err := errors.Join(k.addOn(s3, k.a), s3.Synchronize()); err != nil {
				t.Fatal(err)
			}
			k.check(t, 10)
		})
	}
}

// TestJoinAdvUnjoinedThroughBranch: work of a branch that reaches the
// origin only through another branch which is not joined back after it is
// not joined back (Stream.WaitEvent: "The branch must be joined back
// before Capture's function returns, by recording an event on s that the
// capturing stream waits on; otherwise Capture returns the driver's
// error"; CUDA_ERROR_STREAM_CAPTURE_UNJOINED). Whatever the driver says,
// every stream is its own after.
func TestJoinAdvUnjoinedThroughBranch(t *testing.T) {
	cases := []struct {
		name string
		body func(k *joinKit, s3 *cuda.Stream, fork2, join3 *cuda.Event) error
	}{
		{"joined only into another branch with no work", func(k *joinKit, s3 *cuda.Stream, fork2, join3 *cuda.Event) error {
			// s2 and s3 fork from the origin; s2's launch is waited on by
			// s3 only, which has no work and is never waited on: the
			// launch is a leaf of the graph that the origin never joined.
			return errors.Join(advFork(k.s, k.s2, k.fork), advFork(k.s, s3, fork2), k.on2(k.a), k.join.Record(k.s2), s3.WaitEvent(k.join))
		}},
		{"joined only into another branch (a fork of it) with no work", func(k *joinKit, s3 *cuda.Stream, fork2, join3 *cuda.Event) error {
			return errors.Join(advFork(k.s, k.s2, k.fork), advFork(k.s2, s3, fork2), k.on2(k.a), k.join.Record(k.s2), s3.WaitEvent(k.join))
		}},
		{"inner branch joined after the middle joined back", func(k *joinKit, s3 *cuda.Stream, fork2, join3 *cuda.Event) error {
			return errors.Join(
				advFork(k.s, k.s2, k.fork),
				advFork(k.s2, s3, fork2),
				k.addOn(s3, k.a),
				join3.Record(s3),
				k.join.Record(k.s2),
				k.s.WaitEvent(k.join), // s2 joined back, before it waits on s3
				k.s2.WaitEvent(join3), // s3's launch now hangs off s2, after its join
			)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := newJoinKit(t)
			s3 := cudatest.Stream(t, k.ctx)
			fork2, join3 := advEvent(t, k.ctx), advEvent(t, k.ctx)
			g, err := k.s.Capture(cuda.CaptureGlobal, func() error { return c.body(k, s3, fork2, join3) })
			if g != nil {
				g.Close()
				t.Errorf("Capture with a branch not joined back to the origin: a graph, want the driver's error (unjoined)")
			} else if err == nil {
				t.Error("Capture: no graph and no error")
			}
			wantOwn(t, "after the capture", k.s, k.s2, s3)
		})
	}
}

// TestJoinAdvWaitSeveralTimes: the origin waits several times on one
// event of the joined stream, and on a later record of it; the joined
// stream waits on the fork twice. The graph's work is right at every
// launch.
func TestJoinAdvWaitSeveralTimes(t *testing.T) {
	k := newJoinKit(t)
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		return errors.Join(
			advFork(k.s, k.s2, k.fork),
			k.s2.WaitEvent(k.fork),
			k.on2(k.a),
			k.join.Record(k.s2),
			k.s.WaitEvent(k.join),
			k.s.WaitEvent(k.join),
			k.s.WaitEvent(k.join),
			k.accumulate(k.a, 1)(),
			k.fork.Record(k.s), // the fork event again, further on
			k.s2.WaitEvent(k.fork),
			k.on2(k.a),
			k.join.Record(k.s2), // the join event again, later
			k.s.WaitEvent(k.join),
			k.s.WaitEvent(k.join),
		)
	}))(t)
	defer g.Close()
	wantOwn(t, "after the capture", k.s, k.s2)
	for _, times := range []int{1, 2} {
		advLaunch(t, g, k.s, times)
	}
	k.check(t, 9)
}

// TestJoinAdvCaptureFails: Capture whose function returns an error or
// panics, or whose branch is not joined back, with a stream joined that
// allocated in stream order: the joined stream is its own afterwards
// (not Capturing, synchronizable, closable, able to capture), its later
// work runs, its stream-ordered memory is all back (MemoryStats, the
// pool's figures), and the memory it kept for reuse before the capture
// was neither lost nor freed twice.
func TestJoinAdvCaptureFails(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name     string
		joinBack bool // the branch is joined back to the origin
		free     bool // the branch frees its allocation in the capture
		end      string
	}{
		{"error, joined back", true, true, "error"},
		{"error, joined back, buffer kept", true, false, "error"},
		{"error, not joined back", false, false, "error"},
		{"panic, joined back", true, true, "panic"},
		{"panic, not joined back", false, false, "panic"},
		{"unjoined", false, true, "nil"},
		{"unjoined, buffer kept", false, false, "nil"},
		{"buffer kept", true, false, "nil"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := newJoinKit(t)
			pool := must(k.ctx.DefaultMemPool())(t)
			defer pool.Close()
			if err := errors.Join(k.s.Synchronize(), k.s2.Synchronize()); err != nil {
				t.Fatal(err)
			}
			before := orderedStats(t, k.ctx)
			used := must(pool.Stats())(t).Used
			// s2 keeps a block of 256 int32 for reuse.
			if err := cycleOrdered(k.s2, 256, 3); err != nil {
				t.Fatal(err)
			}
			var tmp *cuda.DeviceBuffer[int32]
			var g *cuda.Graph
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil && r != boom {
						panic(r)
					}
				}()
				g, err = k.s.Capture(cuda.CaptureGlobal, func() error {
					if err := advFork(k.s, k.s2, k.fork); err != nil {
						return err
					}
					var aerr error
					tmp, aerr = cuda.AllocAsync[int32](k.s2, 256) // the size s2 keeps
					if aerr != nil {
						return aerr
					}
					if err := errors.Join(tmp.Memset32Async(7, k.s2), k.add.Launch(cuda.LaunchConfigFor(256, k.s2), tmp, k.c, k.c, uint32(256))); err != nil {
						return err
					}
					if c.free {
						if err := tmp.Free(); err != nil {
							return err
						}
					}
					if c.joinBack {
						if err := errors.Join(k.join.Record(k.s2), k.s.WaitEvent(k.join)); err != nil {
							return err
						}
					}
					switch c.end {
					case "error":
						return boom
					case "panic":
						panic(boom)
					}
					return nil
				})
			}()
			if g != nil {
				g.Close()
				t.Fatalf("Capture: a graph, want none")
			}
			if err == nil && c.end != "panic" {
				t.Fatal("Capture: no error")
			}
			if c.end == "error" && !errors.Is(err, boom) {
				t.Errorf("Capture: %v, want the function's error", err)
			}
			if err := tmp.Memset32Async(1, k.s2); !errors.Is(err, cuda.ErrClosed) {
				t.Errorf("the branch's buffer after the failed capture: %v, want ErrClosed", err)
			}
			if err := tmp.Free(); err != nil {
				t.Errorf("Free of the branch's buffer after the failed capture: %v, want nil (closed)", err)
			}
			wantOwn(t, "after the failed capture", k.s, k.s2)
			k.check(t, 0) // nothing captured ran
			// s2's later work runs, its cache works again.
			if err := errors.Join(k.on2(k.a), cycleOrdered(k.s2, 256, 4), k.s2.Synchronize()); err != nil {
				t.Fatal(err)
			}
			k.check(t, 1)
			// s2 can capture, and join again.
			g2 := must(k.s2.Capture(cuda.CaptureGlobal, func() error { return k.on2(k.a) }))(t)
			advLaunch(t, g2, k.s2, 1)
			if err := g2.Close(); err != nil {
				t.Fatal(err)
			}
			g3 := must(k.s.Capture(cuda.CaptureGlobal, func() error {
				return k.forked(func() error { return k.on2(k.a) })
			}))(t)
			advLaunch(t, g3, k.s, 1)
			if err := g3.Close(); err != nil {
				t.Fatal(err)
			}
			k.check(t, 3)
			if err := errors.Join(k.s.Synchronize(), k.s2.Synchronize(), k.ctx.Synchronize()); err != nil {
				t.Fatal(err)
			}
			if after := orderedStats(t, k.ctx); after.Bytes != before.Bytes || after.Buffers != before.Buffers {
				t.Errorf("stream-ordered memory: %d bytes in %d buffers, want %d in %d as before", after.Bytes, after.Buffers, before.Bytes, before.Buffers)
			}
			if u := must(pool.Stats())(t).Used; u != used {
				t.Errorf("the default pool's used memory: %d bytes, want %d as before (memory lost, or freed twice)", u, used)
			}
			if err := k.s2.Close(); err != nil {
				t.Errorf("Close of the stream joined to the failed capture: %v", err)
			}
		})
	}
}

// TestJoinAdvCacheAcrossJoin: a stream that keeps memory for reuse, from
// the default pool and from a pool of the program's, joins a capture: that
// memory stays, unused, until the capture ends (freeing it at the join is a
// call the capture forbids: the driver refuses it), the capture's
// allocations on it are the graph's, and after the capture the stream keeps
// memory again; the program's pool closes, nothing of it outstanding.
func TestJoinAdvCacheAcrossJoin(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	k := newJoinKit(t)
	pool := must(k.ctx.NewMemPool())(t)
	defer pool.Close()
	cycle := func(s *cuda.Stream, times int) error {
		for range times {
			b, err := cuda.AllocFromPool[int32](pool, s, 512)
			if err != nil {
				return err
			}
			if err := errors.Join(b.Memset32Async(3, s), b.Free()); err != nil {
				return err
			}
		}
		return cycleOrdered(s, 512, times)
	}
	if err := errors.Join(cycle(k.s2, 3), k.s2.Synchronize()); err != nil { // flushed once
		t.Fatal(err)
	}
	if err := cycle(k.s2, 3); err != nil { // s2 keeps one block of each pool
		t.Fatal(err)
	}
	if u := must(pool.Stats())(t).Used; u == 0 {
		t.Fatalf("the pool's used memory with a block kept by s2: 0, want more")
	}
	var freedAtJoin, allocated int
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		if err := k.fork.Record(k.s); err != nil {
			return err
		}
		f.ResetCounts()
		if err := k.s2.WaitEvent(k.fork); err != nil {
			return err
		}
		freedAtJoin = f.Counts()["cuMemFreeAsync"]
		defer func() { allocated = f.Counts()["cuMemAllocAsync"] + f.Counts()["cuMemAllocFromPoolAsync"] }()
		return k.forked(func() error {
			x, err := cuda.AllocFromPool[int32](pool, k.s2, 512)
			if err != nil {
				return err
			}
			y, err := cuda.AllocAsync[int32](k.s2, 512)
			if err != nil {
				return err
			}
			return errors.Join(
				x.Memset32Async(1, k.s2), y.CopyFromDeviceAsync(x, k.s2),
				k.add.Launch(cuda.LaunchConfigFor(512, k.s2), y, k.c, k.c, uint32(512)),
				x.Free(), y.FreeOn(k.s2),
			)
		})
	}))(t)
	if freedAtJoin != 0 {
		t.Errorf("%d cuMemFreeAsync calls at the join, want none: a capture forbids freeing memory outside it", freedAtJoin)
	}
	if allocated != 2 {
		t.Errorf("%d stream-ordered allocations in the driver for the capture's two on s2, want 2: the blocks s2 kept are not the graph's", allocated)
	}
	if err := k.s2.Synchronize(); err != nil {
		t.Fatal(err)
	}
	advLaunch(t, g, k.s, 2)
	// Synchronized before the graph is closed: TestJoinAdvGraphClosedUnderLaunch
	// is about closing it first.
	if err := k.s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(k.s.Synchronize(), k.s2.Synchronize()); err != nil {
		t.Fatal(err)
	}
	if u := must(pool.Stats())(t).Used; u != 0 {
		t.Errorf("the pool's used memory once everything was freed and synchronized: %d, want 0", u)
	}
	// After the capture s2 keeps memory again: the repeats of a size reuse
	// it without the driver.
	f.ResetCounts()
	if err := cycle(k.s2, 4); err != nil {
		t.Fatal(err)
	}
	if n := f.Counts()["cuMemAllocAsync"]; n >= 4 {
		t.Errorf("%d cuMemAllocAsync calls for 4 allocations of one size after the capture: s2's cache still paused?", n)
	}
	if err := k.s2.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := make([]int32, k.n)
	if err := k.c.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	for i := range 512 {
		if got[i] != 2 {
			t.Fatalf("c[%d] = %d after two launches, want 2", i, got[i])
		}
	}
	if err := pool.Close(); err != nil {
		t.Errorf("Close of the pool once every buffer was freed: %v", err)
	}
}

// TestJoinAdvAllocAcrossBranches: stream-ordered memory allocated on one
// stream of the capture and freed on another (the origin and the joined
// stream, either way round) is the graph's; the graph allocates, so has
// one instance at a time, and its work is right at every launch.
func TestJoinAdvAllocAcrossBranches(t *testing.T) {
	cases := []struct {
		name string
		// branch runs inside the fork (s2 joined), after runs on s after
		// the join back; both get the buffer allocated by alloc.
		allocOn, freeOn string // "s" or "s2"
		freeInBranch    bool   // the free is queued before the join back
	}{
		{"alloc s2, free s after the join", "s2", "s", false},
		{"alloc s2, FreeOn s in the branch", "s2", "s", true},
		{"alloc s, FreeOn s2 in the branch", "s", "s2", true},
		{"alloc s2, free s2 in the branch", "s2", "s2", true},
		{"alloc s, free s after the join", "s", "s", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := newJoinKit(t)
			stream := map[string]*cuda.Stream{"s": k.s, "s2": k.s2}
			before := orderedStats(t, k.ctx)
			var tmp *cuda.DeviceBuffer[int32]
			g := must(k.s.Capture(cuda.CaptureGlobal, func() (err error) {
				if c.allocOn == "s" {
					if tmp, err = cuda.AllocAsync[int32](k.s, k.n); err != nil {
						return err
					}
					if err := tmp.CopyFromDeviceAsync(k.a, k.s); err != nil {
						return err
					}
				}
				err = k.forked(func() (err error) {
					if c.allocOn == "s2" {
						if tmp, err = cuda.AllocAsync[int32](k.s2, k.n); err != nil {
							return err
						}
						if err := tmp.CopyFromDeviceAsync(k.a, k.s2); err != nil {
							return err
						}
					}
					if err := k.on2(tmp); err != nil { // c += a
						return err
					}
					if c.freeInBranch {
						return tmp.FreeOn(stream[c.freeOn])
					}
					return nil
				})
				if err != nil || c.freeInBranch {
					return err
				}
				return errors.Join(k.accumulate(tmp, 1)(), tmp.FreeOn(stream[c.freeOn]))
			}))(t)
			defer g.Close()
			e := must(g.Instantiate())(t)
			if _, err := g.Instantiate(); !errors.Is(err, cuda.ErrInvalidValue) {
				t.Errorf("a second instance of a graph that allocates on a joined stream: %v, want ErrInvalidValue", err)
			}
			per := int32(1)
			if !c.freeInBranch {
				per = 2
			}
			for i := range 3 {
				if err := e.Launch(k.s); err != nil {
					t.Fatal(err)
				}
				k.check(t, per*int32(i+1))
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			if err := tmp.Free(); err != nil {
				t.Errorf("Free of the graph's buffer, freed in the capture: %v, want nil", err)
			}
			if after := orderedStats(t, k.ctx); after.Bytes != before.Bytes || after.Buffers != before.Buffers {
				t.Errorf("stream-ordered memory: %d bytes in %d buffers, want %d in %d as before", after.Bytes, after.Buffers, before.Bytes, before.Buffers)
			}
			wantOwn(t, "after", k.s, k.s2)
		})
	}
}

// TestJoinAdvAllocFreedOutside: the graph's memory, allocated on the
// joined stream, cannot be freed on a stream outside the capture (nor
// left unfreed); memory allocated outside cannot be freed in it, on
// either stream.
func TestJoinAdvAllocFreedOutside(t *testing.T) {
	k := newJoinKit(t)
	s3 := cudatest.Stream(t, k.ctx)
	before := must(cuda.AllocAsync[int32](k.s, 64))(t)
	var outside, onS, onS2, freeS3 error
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		return k.forked(func() error {
			tmp, err := cuda.AllocAsync[int32](k.s2, 64)
			if err != nil {
				return err
			}
			freeS3 = tmp.FreeOn(s3)
			onS, onS2 = before.FreeOn(k.s), before.FreeOn(k.s2)
			outside = before.FreeOn(s3) // s3 captures nothing, but before's stream does
			return errors.Join(tmp.Memset32Async(0, k.s2), tmp.Free())
		})
	}))(t)
	defer g.Close()
	wantCaptureRefusal(t, "FreeOn a stream outside the capture of the graph's memory", freeS3)
	wantCaptureRefusal(t, "FreeOn the capturing stream of memory from before", onS)
	wantCaptureRefusal(t, "FreeOn the joined stream of memory from before", onS2)
	// before was allocated on s, which captures: its free on s3 cannot be
	// ordered after s's work. Either refused naming the capture, or done.
	if outside != nil {
		wantCaptureRefusal(t, "FreeOn a stream outside the capture of memory allocated on the capturing stream", outside)
	}
	if err := errors.Join(before.Free(), k.s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	advLaunch(t, g, k.s, 2)
	wantOwn(t, "after", k.s, k.s2, s3)
}

// TestJoinAdvRefusals: what a capturing stream refuses, a joined stream
// refuses too, each with an error wrapping ErrInvalidValue that names the
// capture; the refusals leave the capture going, and the stream usable
// (and closable) after it.
func TestJoinAdvRefusals(t *testing.T) {
	k := newJoinKit(t)
	s2 := cudatest.Stream(t, k.ctx) // closed by the test, checked
	k.s2 = s2
	host := make([]int32, k.n)
	var sb cuda.StagingBuffer
	defer sb.Close()
	onS2 := must(cuda.AllocAsync[int32](s2, k.n))(t)
	if err := onS2.Memset32Async(0, s2); err != nil {
		t.Fatal(err)
	}
	gOwn := must(k.s.Capture(cuda.CaptureGlobal, k.accumulate(k.a, 1)))(t)
	defer gOwn.Close()
	exec := must(gOwn.Instantiate())(t)
	defer exec.Close()
	refusals := []struct {
		name string
		call func() error
	}{
		{"Synchronize", s2.Synchronize},
		{"Query", func() error { _, err := s2.Query(); return err }},
		{"Close", s2.Close},
		{"Capture", func() error {
			g, err := s2.Capture(cuda.CaptureRelaxed, func() error { return nil })
			if g != nil {
				g.Close()
			}
			return err
		}},
		{"GraphExec.Launch", func() error { return exec.Launch(s2) }},
		{"CopyFromHostAsync", func() error { return k.c.CopyFromHostAsync(host, s2) }},
		{"CopyToHostAsync", func() error { return k.c.CopyToHostAsync(host, s2) }},
		{"Upload", func() error { return cuda.Upload(&sb, k.c, host, s2) }},
		{"Download", func() error { return cuda.Download(&sb, host, k.c, s2) }},
		{"DownloadInto", func() error { _, err := cuda.DownloadInto(&sb, k.c, k.n, s2); return err }},
		{"UploadWith", func() error { return cuda.UploadWith(&sb, k.c, k.n, s2, func([]int32) {}) }},
		{"ReadFrom with the stream", func() error {
			_, err := cuda.ReadFrom(k.c, bytes.NewReader(make([]byte, 4*k.n)), cuda.IOConfig{Stream: s2})
			return err
		}},
		{"WriteTo with the stream", func() error {
			_, err := cuda.WriteTo(k.c, &bytes.Buffer{}, cuda.IOConfig{Stream: s2})
			return err
		}},
		{"CopyToHost of a buffer allocated on it", func() error { return onS2.CopyToHost(host) }},
		{"CopyFromHost of a buffer allocated on it", func() error { return onS2.CopyFromHost(host) }},
		{"Memset32 of a buffer allocated on it", func() error { return onS2.Memset32(1) }},
		{"Free of a buffer allocated on it before", onS2.Free},
		{"FreeOn it of a buffer allocated on it before", func() error { return onS2.FreeOn(s2) }},
	}
	got := map[string]error{}
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		return k.forked(func() error {
			for _, r := range refusals {
				got[r.name] = r.call()
			}
			return k.on2(k.a)
		})
	}))(t)
	defer g.Close()
	for _, r := range refusals {
		wantCaptureRefusal(t, r.name+" on a joined stream", got[r.name])
	}
	advLaunch(t, g, k.s, 1)
	k.check(t, 1)
	// All refused calls work once the capture is over.
	if err := errors.Join(onS2.CopyFromHost(host), exec.Launch(s2), s2.Synchronize()); err != nil {
		t.Fatal(err)
	}
	k.check(t, 2)
	if err := errors.Join(onS2.Free(), s2.Close()); err != nil {
		t.Fatalf("Free and Close after the capture: %v", err)
	}
}

// TestJoinAdvSuccessiveCaptures: one stream joins a capture, then another
// stream's capture, then captures on its own, then joins the first again:
// each graph has its own work, and the fork events are reused throughout.
func TestJoinAdvSuccessiveCaptures(t *testing.T) {
	k := newJoinKit(t)
	s3 := cudatest.Stream(t, k.ctx)
	branch := func(origin *cuda.Stream, times int) func() error {
		return func() error {
			if err := advFork(origin, k.s2, k.fork); err != nil {
				return err
			}
			for range times {
				if err := k.on2(k.a); err != nil {
					return err
				}
			}
			return errors.Join(k.join.Record(k.s2), origin.WaitEvent(k.join))
		}
	}
	g1 := must(k.s.Capture(cuda.CaptureGlobal, branch(k.s, 1)))(t)
	defer g1.Close()
	if k.s2.Capturing() {
		t.Fatal("s2 Capturing after the first capture")
	}
	g2 := must(s3.Capture(cuda.CaptureThreadLocal, branch(s3, 2)))(t)
	defer g2.Close()
	g3 := must(k.s2.Capture(cuda.CaptureRelaxed, func() error { return errors.Join(k.on2(k.a), k.on2(k.a), k.on2(k.a), k.on2(k.a)) }))(t)
	defer g3.Close()
	g4 := must(k.s.Capture(cuda.CaptureRelaxed, branch(k.s, 8)))(t)
	defer g4.Close()
	wantOwn(t, "after the captures", k.s, k.s2, s3)
	k.check(t, 0)
	advLaunch(t, g1, k.s, 1)
	k.check(t, 1)
	advLaunch(t, g2, s3, 1)
	if err := s3.Synchronize(); err != nil {
		t.Fatal(err)
	}
	k.check(t, 3)
	advLaunch(t, g3, k.s2, 1)
	if err := k.s2.Synchronize(); err != nil {
		t.Fatal(err)
	}
	k.check(t, 7)
	advLaunch(t, g4, k.s, 1)
	k.check(t, 15)
}

// TestJoinAdvTwoJoinedStreams: two streams fork from the origin, one
// joins back through the other, both allocate; the graph is right at
// every launch.
func TestJoinAdvTwoJoinedStreams(t *testing.T) {
	k := newJoinKit(t)
	s3 := cudatest.Stream(t, k.ctx)
	e3, j3 := advEvent(t, k.ctx), advEvent(t, k.ctx)
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		if err := errors.Join(advFork(k.s, k.s2, k.fork), advFork(k.s, s3, e3)); err != nil {
			return err
		}
		t2, err := cuda.AllocAsync[int32](k.s2, k.n)
		if err != nil {
			return err
		}
		t3, err := cuda.AllocAsync[int32](s3, k.n)
		if err != nil {
			return err
		}
		return errors.Join(
			t2.CopyFromDeviceAsync(k.a, k.s2),
			t3.CopyFromDeviceAsync(k.a, s3),
			k.add.Launch(cuda.LaunchConfigFor(k.n, s3), t3, t3, t3, uint32(k.n)), // t3 = 2a
			j3.Record(s3),
			k.s2.WaitEvent(j3),
			t3.FreeOn(k.s2), // s3's memory freed on s2, after s3's work
			k.on2(t2),       // c += a
			t2.Free(),
			k.join.Record(k.s2),
			k.s.WaitEvent(k.join),
		)
	}))(t)
	defer g.Close()
	wantOwn(t, "after", k.s, k.s2, s3)
	advLaunch(t, g, k.s, 4)
	k.check(t, 4)
}

// TestJoinAdvConcurrentCaptures: goroutines each capture with a fork onto
// a stream of their own, while another goroutine asks every stream whether
// it captures; each graph is right, and the race detector finds nothing.
// The captures are thread-local or relaxed: a global one forbids the other
// goroutines' synchronizes and instance closes while it lasts (the driver
// refuses them, and ends the capture).
func TestJoinAdvConcurrentCaptures(t *testing.T) {
	k := newJoinKit(t)
	const workers, rounds = 4, 6
	type lane struct {
		s, s2      *cuda.Stream
		fork, join *cuda.Event
		c          *cuda.DeviceBuffer[int32]
	}
	lanes := make([]lane, workers)
	for i := range lanes {
		lanes[i] = lane{
			s: cudatest.Stream(t, k.ctx), s2: cudatest.Stream(t, k.ctx),
			fork: advEvent(t, k.ctx), join: advEvent(t, k.ctx),
			c: must(cuda.Zeroed[int32](k.ctx, k.n))(t),
		}
		c := lanes[i].c
		t.Cleanup(func() { c.Free() })
	}
	stop := make(chan struct{})
	var polls atomic.Int64
	var pollers sync.WaitGroup
	pollers.Add(1)
	go func() {
		defer pollers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, l := range lanes {
				l.s.Capturing()
				l.s2.Capturing()
			}
			polls.Add(1)
		}
	}()
	modes := []cuda.CaptureMode{cuda.CaptureThreadLocal, cuda.CaptureRelaxed}
	err := eachGoroutine(workers, func(w int) error {
		l := lanes[w]
		add := func(s *cuda.Stream) error {
			return k.add.Launch(cuda.LaunchConfigFor(k.n, s), k.a, l.c, l.c, uint32(k.n))
		}
		for r := range rounds {
			g, err := l.s.Capture(modes[(w+r)%len(modes)], func() error {
				if err := advFork(l.s, l.s2, l.fork); err != nil {
					return err
				}
				if !l.s2.Capturing() {
					return fmt.Errorf("worker %d round %d: s2 not Capturing once joined", w, r)
				}
				tmp, err := cuda.AllocAsync[int32](l.s2, 32)
				if err != nil {
					return err
				}
				return errors.Join(add(l.s2), tmp.Memset32Async(1, l.s2), tmp.Free(), add(l.s), l.join.Record(l.s2), l.s.WaitEvent(l.join))
			})
			if err != nil {
				return fmt.Errorf("worker %d round %d: %w", w, r, err)
			}
			if l.s2.Capturing() {
				g.Close()
				return fmt.Errorf("worker %d round %d: s2 Capturing after the capture", w, r)
			}
			e, err := g.Instantiate()
			if err == nil {
				err = errors.Join(e.Launch(l.s), e.Launch(l.s), l.s.Synchronize(), e.Close())
			}
			if err := errors.Join(err, g.Close(), l.s2.Synchronize()); err != nil {
				return fmt.Errorf("worker %d round %d: %w", w, r, err)
			}
		}
		return nil
	})
	close(stop)
	pollers.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for w, l := range lanes {
		got := make([]int32, k.n)
		if err := l.c.CopyToHost(got); err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if want := int32(4*rounds) * int32(i+1); v != want {
				t.Fatalf("worker %d: c[%d] = %d, want %d", w, i, v, want)
			}
		}
	}
}

// TestJoinAdvBranchOnAnotherGoroutine: the branch of the fork is queued by
// another goroutine (the stream is safe for use by many), which also sees
// the stream capturing; the capture waits for it by a channel, joins it
// back, and the graph is right.
func TestJoinAdvBranchOnAnotherGoroutine(t *testing.T) {
	k := newJoinKit(t)
	for _, mode := range []cuda.CaptureMode{cuda.CaptureGlobal, cuda.CaptureThreadLocal, cuda.CaptureRelaxed} {
		t.Run(mode.String(), func(t *testing.T) {
			if err := k.c.Memset32(0); err != nil {
				t.Fatal(err)
			}
			g := must(k.s.Capture(mode, func() error {
				if err := k.fork.Record(k.s); err != nil {
					return err
				}
				done := make(chan error)
				go func() {
					err := k.s2.WaitEvent(k.fork)
					if err == nil && !k.s2.Capturing() {
						err = errors.New("s2 not Capturing on the branch's goroutine")
					}
					if err == nil {
						if serr := k.s2.Synchronize(); !errors.Is(serr, cuda.ErrInvalidValue) {
							err = fmt.Errorf("Synchronize of the joined stream on the branch's goroutine: %v, want ErrInvalidValue", serr)
						}
					}
					if err == nil {
						var tmp *cuda.DeviceBuffer[int32]
						if tmp, err = cuda.AllocAsync[int32](k.s2, k.n); err == nil {
							err = errors.Join(tmp.CopyFromDeviceAsync(k.a, k.s2), k.on2(tmp), k.on2(tmp), tmp.Free(), k.join.Record(k.s2))
						}
					}
					done <- err
				}()
				if err := <-done; err != nil {
					return err
				}
				return k.s.WaitEvent(k.join)
			}))(t)
			defer g.Close()
			wantOwn(t, "after", k.s, k.s2)
			advLaunch(t, g, k.s, 2)
			k.check(t, 4)
		})
	}
}

// TestJoinAdvEventsClosed: events closed while recorded in the capture
// (the fork's once the branch joined, the join's once the origin waited
// on it) leave the capture and its graph whole; a wait on a closed event
// is ErrClosed, and joins nothing.
func TestJoinAdvEventsClosed(t *testing.T) {
	k := newJoinKit(t)
	s3 := cudatest.Stream(t, k.ctx)
	fork := must(k.ctx.NewEvent())(t)
	join := must(k.ctx.NewEvent())(t)
	spare := must(k.ctx.NewEvent())(t) // recorded in the capture, never waited on
	var closeFork, closeJoin, closeSpare, waitClosed error
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		if err := errors.Join(advFork(k.s, k.s2, fork), spare.Record(k.s2)); err != nil {
			return err
		}
		closeFork = fork.Close()
		closeSpare = spare.Close()
		waitClosed = s3.WaitEvent(fork)
		if err := errors.Join(k.on2(k.a), join.Record(k.s2), k.s.WaitEvent(join)); err != nil {
			return err
		}
		closeJoin = join.Close()
		return k.accumulate(k.a, 1)()
	}))(t)
	defer g.Close()
	for name, err := range map[string]error{"the fork's": closeFork, "the join's": closeJoin, "a spare's": closeSpare} {
		if err != nil {
			t.Errorf("Close of %s event in the capture: %v", name, err)
		}
	}
	if !errors.Is(waitClosed, cuda.ErrClosed) {
		t.Errorf("WaitEvent on an event closed: %v, want ErrClosed", waitClosed)
	}
	if s3.Capturing() {
		t.Error("a wait on a closed event made its stream capture")
	}
	wantOwn(t, "after", k.s, k.s2, s3)
	advLaunch(t, g, k.s, 2)
	k.check(t, 4)
}

// TestJoinAdvWaitAfterEnd: an event last recorded in a capture that ended
// (on the origin or on the joined stream) makes no stream capture when
// waited on afterwards, the origin's next capture included; streams stay
// usable whatever the driver makes of such a wait.
func TestJoinAdvWaitAfterEnd(t *testing.T) {
	k := newJoinKit(t)
	s3 := cudatest.Stream(t, k.ctx)
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		return k.forked(func() error { return k.on2(k.a) })
	}))(t)
	defer g.Close()
	for _, ev := range []struct {
		name string
		e    *cuda.Event
	}{{"fork (recorded on the origin)", k.fork}, {"join (recorded on the joined stream)", k.join}} {
		for _, s := range []*cuda.Stream{k.s2, s3} {
			if err := s.WaitEvent(ev.e); err != nil { // the driver's answer is its own
				t.Logf("the wait on the %s event after the capture: %v", ev.name, err)
			}
			if s.Capturing() {
				t.Errorf("a wait on the %s event after the capture made a stream capture", ev.name)
			}
		}
	}
	// In the origin's next capture, a stream waits on the old capture's
	// event: it joins nothing (the capture is another).
	var capturing bool
	g2, err := k.s.Capture(cuda.CaptureGlobal, func() error {
		if err := k.s2.WaitEvent(k.join); err != nil {
			t.Logf("the wait in a new capture on the ended capture's event: %v", err)
		}
		capturing = k.s2.Capturing()
		return k.accumulate(k.a, 1)()
	})
	if capturing {
		t.Error("a wait, in a new capture, on the ended capture's event joined the new capture")
	}
	if g2 != nil {
		advLaunch(t, g2, k.s, 1)
		g2.Close()
	} else {
		t.Logf("the second capture: %v", err)
	}
	wantOwn(t, "after", k.s, k.s2, s3)
	if err := errors.Join(k.on2(k.a), k.s2.Synchronize()); err != nil {
		t.Fatal(err)
	}
	advLaunch(t, g, k.s, 1)
	if g2 != nil {
		k.check(t, 3)
	} else {
		k.check(t, 2)
	}
}

// TestJoinAdvJoinedWaitsOutside: a joined stream that waits on an event
// recorded outside the capture would make the graph depend on work that
// is not in it: the driver refuses (isolation), the capture fails, and
// every stream is its own after.
func TestJoinAdvJoinedWaitsOutside(t *testing.T) {
	k := newJoinKit(t)
	s3 := cudatest.Stream(t, k.ctx)
	outside := advEvent(t, k.ctx)
	if err := errors.Join(k.addOn(s3, k.a), outside.Record(s3)); err != nil {
		t.Fatal(err)
	}
	var werr error
	g, err := k.s.Capture(cuda.CaptureGlobal, func() error {
		return k.forked(func() error {
			werr = k.s2.WaitEvent(outside)
			return k.on2(k.a)
		})
	})
	if g != nil {
		g.Close()
		t.Errorf("a capture whose joined stream waited on outside work: a graph (wait: %v)", werr)
	}
	if werr == nil && err == nil {
		t.Error("neither the wait nor the capture failed")
	}
	wantOwn(t, "after", k.s, k.s2, s3)
	if err := errors.Join(k.on2(k.a), k.s2.Synchronize()); err != nil {
		t.Fatal(err)
	}
	k.check(t, 2)
}

// TestJoinAdvJoinRefusedByDriver: where the driver refuses the wait that
// would join a stream (a fault), the stream does not capture, its work
// runs as before (its memory kept for reuse too), and a later join works.
func TestJoinAdvJoinRefusedByDriver(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	k := newJoinKit(t)
	var werr error
	var capturing bool
	g, err := k.s.Capture(cuda.CaptureGlobal, func() error {
		if err := k.fork.Record(k.s); err != nil {
			return err
		}
		f.Fail("cuStreamWaitEvent", 1, 999)
		werr = k.s2.WaitEvent(k.fork)
		capturing = k.s2.Capturing()
		// Not joined: s2's work runs now, not in the graph.
		return errors.Join(k.on2(k.a), k.accumulate(k.a, 1)())
	})
	if !errors.Is(werr, cuda.Result(999)) {
		t.Errorf("the refused wait: %v, want the driver's error", werr)
	}
	if capturing {
		t.Error("s2 Capturing after the driver refused its join")
	}
	if err != nil {
		t.Fatalf("the capture: %v", err)
	}
	defer g.Close()
	if err := k.s2.Synchronize(); err != nil {
		t.Fatal(err)
	}
	k.check(t, 1) // s2's launch ran
	f.ResetCounts()
	if err := errors.Join(cycleOrdered(k.s2, 128, 4), k.s2.Synchronize()); err != nil {
		t.Fatal(err)
	}
	if n := f.Counts()["cuMemAllocAsync"]; n >= 4 {
		t.Errorf("%d cuMemAllocAsync calls for 4 allocations of one size: s2's cache still paused after the refused join", n)
	}
	advLaunch(t, g, k.s, 1)
	k.check(t, 2)
	g2 := must(k.s.Capture(cuda.CaptureGlobal, func() error { return k.forked(func() error { return k.on2(k.a) }) }))(t)
	defer g2.Close()
	advLaunch(t, g2, k.s, 1)
	k.check(t, 3)
}

// TestJoinAdvEndCaptureFault: where the driver's end of the capture fails
// (a fault) with a stream joined, Capture returns the error, and both
// streams are their own.
func TestJoinAdvEndCaptureFault(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	k := newJoinKit(t)
	var tmp *cuda.DeviceBuffer[int32]
	g, err := k.s.Capture(cuda.CaptureGlobal, func() error {
		return k.forked(func() (err error) {
			if tmp, err = cuda.AllocAsync[int32](k.s2, 64); err != nil {
				return err
			}
			if err := errors.Join(tmp.Memset32Async(1, k.s2), tmp.Free(), k.on2(k.a)); err != nil {
				return err
			}
			f.Fail("cuStreamEndCapture", 1, 999)
			return nil
		})
	})
	if g != nil || !errors.Is(err, cuda.Result(999)) {
		t.Errorf("Capture with the end failing: %v, %v; want no graph and the driver's error", g, err)
	}
	wantOwn(t, "after", k.s, k.s2)
	if err := errors.Join(k.on2(k.a), k.s2.Synchronize()); err != nil {
		t.Fatal(err)
	}
	k.check(t, 1)
}

// TestJoinAdvCloseJoinedFromAnotherGoroutine: Close of the joined stream
// from another goroutine while the capture runs is refused, and leaves the
// stream open: the capture completes and the stream closes after.
func TestJoinAdvCloseJoinedFromAnotherGoroutine(t *testing.T) {
	k := newJoinKit(t)
	s2 := must(k.ctx.NewStream())(t)
	k.s2 = s2
	var cerr error
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		return k.forked(func() error {
			done := make(chan struct{})
			go func() {
				defer close(done)
				cerr = s2.Close()
			}()
			<-done
			return k.on2(k.a)
		})
	}))(t)
	defer g.Close()
	wantCaptureRefusal(t, "Close of the joined stream from another goroutine", cerr)
	advLaunch(t, g, k.s, 1)
	k.check(t, 1)
	if err := s2.Close(); err != nil {
		t.Errorf("Close after the capture: %v", err)
	}
}

// TestJoinAdvJoinedBufferUseHoldsIt: a buffer that only the joined
// stream's captured work uses is the graph's: it cannot be freed while the
// graph or an instance is open, and the instance, once the graph is
// closed, still runs on it.
func TestJoinAdvJoinedBufferUseHoldsIt(t *testing.T) {
	k := newJoinKit(t)
	x := must(cuda.FromHost(k.ctx, make([]int32, k.n)))(t)
	ordered := must(cuda.AllocAsync[int32](k.s2, k.n))(t)
	if err := errors.Join(ordered.CopyFromDeviceAsync(k.a, k.s2), k.s2.Synchronize()); err != nil {
		t.Fatal(err)
	}
	g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
		return k.forked(func() error { return errors.Join(k.on2(ordered), k.on2(x)) })
	}))(t)
	e := must(g.Instantiate())(t)
	for _, b := range []struct {
		name string
		free func() error
	}{{"Alloc buffer", x.Free}, {"AllocAsync buffer of the joined stream", ordered.Free}} {
		if err := b.free(); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Free of the %s the joined branch uses, graph open: %v, want ErrInvalidValue", b.name, err)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ordered.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Free with the instance open: %v, want ErrInvalidValue", err)
	}
	if err := e.Launch(k.s); err != nil {
		t.Fatal(err)
	}
	k.check(t, 1)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(x.Free(), ordered.Free(), k.s2.Synchronize()); err != nil {
		t.Errorf("Free once graph and instance are closed: %v", err)
	}
}

// TestJoinAdvGraphClosedUnderLaunch: a graph that allocates memory on a
// joined stream (or on the capturing stream: the plain case, for
// comparison) is closed while its instance's launches are queued, or
// before its instance is launched: "instances made from it stay usable"
// (Graph.Close), and "launches already queued run to the end"
// (GraphExec.Close). The launches' work must find its memory.
func TestJoinAdvGraphClosedUnderLaunch(t *testing.T) {
	for _, c := range []struct {
		name   string
		joined bool
		order  string // "close graph, then launch" or "launch, then close graph"
	}{
		{"plain capture, graph closed before the launches", false, "close first"},
		{"plain capture, graph closed under the launches", false, "launch first"},
		{"joined stream, graph closed before the launches", true, "close first"},
		{"joined stream, graph closed under the launches", true, "launch first"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := newJoinKit(t)
			body := func(s *cuda.Stream) error {
				tmp, err := cuda.AllocAsync[int32](s, k.n)
				if err != nil {
					return err
				}
				return errors.Join(tmp.CopyFromDeviceAsync(k.a, s), k.addOn(s, tmp), tmp.FreeOn(s))
			}
			g := must(k.s.Capture(cuda.CaptureGlobal, func() error {
				if c.joined {
					return k.forked(func() error { return body(k.s2) })
				}
				return body(k.s)
			}))(t)
			e := must(g.Instantiate())(t)
			defer e.Close()
			if c.order == "close first" {
				if err := g.Close(); err != nil {
					t.Fatal(err)
				}
			}
			for range 3 {
				if err := e.Launch(k.s); err != nil {
					t.Fatal(err)
				}
			}
			if c.order == "launch first" {
				if err := g.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := k.s.Synchronize(); err != nil {
				t.Fatalf("the instance's launches, its graph closed: %v", err)
			}
			k.check(t, 3)
		})
	}
}

// TestJoinAdvNestedForkFails: a capture that fails (its function's error)
// with a fork of a fork joined, and a third stream joined through the join
// event with no work of its own: every stream is its own after, the
// captured work never ran, and a later capture with the same streams works.
func TestJoinAdvNestedForkFails(t *testing.T) {
	k := newJoinKit(t)
	s3, s4 := cudatest.Stream(t, k.ctx), cudatest.Stream(t, k.ctx)
	fork2 := advEvent(t, k.ctx)
	boom := errors.New("boom")
	nested := func(fail bool) func() error {
		return func() error {
			if err := errors.Join(advFork(k.s, k.s2, k.fork), advFork(k.s2, s3, fork2), k.addOn(s3, k.a), k.join.Record(s3), k.s.WaitEvent(k.join), s4.WaitEvent(k.join)); err != nil {
				return err
			}
			if !s4.Capturing() {
				return errors.New("a stream that waited on the join event (recorded on a joined stream) does not capture")
			}
			if fail {
				return boom
			}
			return nil
		}
	}
	if g, err := k.s.Capture(cuda.CaptureGlobal, nested(true)); g != nil || !errors.Is(err, boom) {
		t.Fatalf("Capture: %v, %v; want no graph and the function's error", g, err)
	}
	wantOwn(t, "after the failed capture", k.s, k.s2, s3, s4)
	k.check(t, 0)
	g := must(k.s.Capture(cuda.CaptureGlobal, nested(false)))(t)
	defer g.Close()
	wantOwn(t, "after the capture", k.s, k.s2, s3, s4)
	advLaunch(t, g, k.s, 2)
	k.check(t, 2)
}

// TestJoinAdvBranchGoroutineOutlivesCapture: the branch's goroutine keeps
// using the branch's buffer (the graph's memory, left unfreed) on the
// joined stream while the capture fails and ends. Its calls may be
// captured, refused, or find the buffer closed (ErrClosed), but the
// program must not deadlock, and no call may run on the graph's memory
// once the capture has thrown it away (the context would then report an
// illegal address).
func TestJoinAdvBranchGoroutineOutlivesCapture(t *testing.T) {
	k := newJoinKit(t)
	boom := errors.New("boom")
	within(t, 10*time.Second, "captures failing under a branch goroutine", func() {
		for i := range 200 {
			started := make(chan struct{})
			finished := make(chan error, 1)
			_, err := k.s.Capture(cuda.CaptureRelaxed, func() error {
				if err := advFork(k.s, k.s2, k.fork); err != nil {
					return err
				}
				tmp, err := cuda.AllocAsync[int32](k.s2, 256)
				if err != nil {
					return err
				}
				go func() {
					var once sync.Once
					for {
						err := tmp.Memset32Async(1, k.s2)
						once.Do(func() { close(started) })
						if errors.Is(err, cuda.ErrClosed) {
							finished <- nil
							return
						}
						if err != nil && !errors.Is(err, cuda.ErrInvalidValue) {
							finished <- err
							return
						}
					}
				}()
				<-started
				return boom
			})
			if !errors.Is(err, boom) {
				t.Errorf("round %d: Capture: %v, want the function's error", i, err)
			}
			if err := <-finished; err != nil {
				t.Errorf("round %d: the branch goroutine: %v", i, err)
			}
			if err := k.s2.Synchronize(); err != nil {
				t.Errorf("round %d: the joined stream's work after the capture: %v", i, err)
				return
			}
		}
	})
}

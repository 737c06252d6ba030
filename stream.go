package cuda

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/track"
)

// Stream is a queue of device work that runs in order. Streams are created
// non-blocking: they do not synchronize with the legacy default stream.
// A Stream is safe for use by many goroutines. The zero Stream is not
// usable: its methods return ErrInvalidValue.
type Stream struct {
	life
	handle   driver.Stream
	priority int
	pins     *pinSet

	// queued counts the work queued on the stream through gocuda, and
	// synced the part of it a synchronize has seen finish: when they are
	// equal, the stream is idle and a transfer that must follow its work
	// need not wait.
	queued, synced atomic.Uint64

	// capture is the capture under way on the stream (Capture), or nil.
	capture atomic.Pointer[graphBuild]
	// joined is the capture of another stream that this one joined by
	// waiting on an event recorded in it (WaitEvent), until that capture
	// ends: the stream's work is that capture's too.
	joined atomic.Pointer[graphBuild]

	// cache keeps the memory of stream-ordered buffers freed on the stream
	// for its next allocations (blockCache).
	cache *blockCache

	// scratch is the stream's scratch memory for gocuda's other packages
	// (streamScratch).
	scratch *streamScratch

	// self is a weak pointer to the stream, made once, for the buffers
	// that record it as a user (streamUsers).
	self weak.Pointer[Stream]
}

// pinSet keeps the Go memory that queued asynchronous copies read or write
// pinned, and so alive and unmoved, until a synchronize of the stream
// succeeds or the stream is gone: a failed synchronize proves nothing
// finished, so the pins it took go back (kept).
type pinSet struct {
	mu   sync.Mutex
	p    *runtime.Pinner   // pins of copies queued since the last take; nil if none
	kept []*runtime.Pinner // pins a failed synchronize gave back
}

// takenPins are the pins taken from a pinSet, released together.
type takenPins struct {
	p    *runtime.Pinner
	kept []*runtime.Pinner
}

// NewStream creates a stream of default priority in c.
func (c *Context) NewStream() (*Stream, error) { return c.newStream("Context.NewStream", 0) }

// NewStreamWithPriority creates a stream with the given priority, which must
// lie within StreamPriorityRange: lower numbers run first.
func (c *Context) NewStreamWithPriority(priority int) (*Stream, error) {
	const op = "Context.NewStreamWithPriority"
	least, greatest, err := c.StreamPriorityRange()
	if err != nil {
		return nil, err
	}
	if priority > least || priority < greatest {
		return nil, errorf(op, ErrInvalidValue, "priority %d is outside the device's range %d (lowest) to %d (highest)", priority, least, greatest)
	}
	return c.newStream(op, priority)
}

func (c *Context) newStream(op string, priority int) (*Stream, error) {
	if err := c.bind(op); err != nil {
		return nil, err
	}
	defer c.unbind()
	s := &Stream{priority: priority, pins: new(pinSet), scratch: new(streamScratch)}
	s.self = weak.Make(s)
	if err := check(op, driver.StreamCreateWithPriority(c.handle, &s.handle, driver.StreamNonBlocking, int32(priority))); err != nil {
		return nil, err
	}
	s.cache = newBlockCache(c, s.handle)
	h, ps, bc, sc := s.handle, s.pins, s.cache, s.scratch
	s.arm(c, track.Stream, runtime.AddCleanup(s, func(ctx *Context) {
		freed := true // unless forgotten's free runs: the context is gone
		forgotten(ctx, track.Stream, func() {
			freed = false
			bc.release(false)
			driver.StreamSynchronize(ctx.handle, h)
			sc.free(ctx.handle)
			driver.StreamDestroy(ctx.handle, h)
		})
		if freed {
			bc.release(true)
			sc.forget()
		}
		ps.take().unpin() // a Pinner collected while pinning crashes the program
	}, c))
	return s, nil
}

func (s *Stream) enter(op string) error {
	if err := s.valid(op); err != nil {
		return err
	}
	return s.life.enter(op, "the stream")
}

// valid returns the error for a nil or zero stream, without holding it.
func (s *Stream) valid(op string) error {
	if s == nil {
		return errorf(op, ErrInvalidValue, "nil *Stream")
	}
	return s.life.valid(op, "the stream")
}

// Context returns the context the stream belongs to.
func (s *Stream) Context() *Context {
	if s == nil {
		return nil
	}
	return s.ctx
}

// Capturing reports whether the stream is capturing its work into a graph
// (inside Capture, or joined to another stream's capture by WaitEvent):
// other libraries' calls that would wait for the work (or hand a result to
// the host) must not be made then.
func (s *Stream) Capturing() bool { return s != nil && s.captureOf() != nil }

// captureOf returns the capture s's work goes to: its own (Capture), the
// one it joined (WaitEvent), or nil.
func (s *Stream) captureOf() *graphBuild {
	if cs := s.capture.Load(); cs != nil {
		return cs
	}
	return s.joined.Load()
}

// Priority returns the priority the stream was created with.
func (s *Stream) Priority() int {
	if s == nil {
		return 0
	}
	return s.priority
}

// Synchronize waits until all work queued on the stream has finished and
// returns the first error of that work. Once it succeeds, it releases the
// Go memory that asynchronous copies queued before it had pinned; after a
// failure that memory stays pinned (the copies may still run) until a later
// synchronize succeeds or the stream is closed. First it gives the memory of
// freed buffers the stream keeps for reuse back to its pools (AllocAsync).
func (s *Stream) Synchronize() error {
	const op = "Stream.Synchronize"
	if err := s.enter(op); err != nil {
		return err
	}
	defer s.leave()
	return s.synchronize(op)
}

// synchronize is Synchronize with the stream entered.
func (s *Stream) synchronize(op string) error {
	if err := s.capturing(op, "its work runs when the graph is launched, and cannot be waited for now"); err != nil {
		return err
	}
	// The driver's pool gives unused memory back at a synchronize: so
	// does the cache, first.
	if err := s.cache.flush(op); err != nil {
		return err
	}
	// Take the pins first: every copy that pinned memory in the set taken
	// was queued before the synchronize below starts.
	taken := s.pins.take()
	q := s.queued.Load()
	if err := check(op, driver.StreamSynchronize(s.ctx.handle, s.handle)); err != nil {
		s.pins.giveBack(taken)
		return err
	}
	taken.unpin()
	s.markSynced(q)
	return nil
}

// markSynced records that the first q pieces of work have finished.
func (s *Stream) markSynced(q uint64) {
	for {
		old := s.synced.Load()
		if old >= q || s.synced.CompareAndSwap(old, q) {
			return
		}
	}
}

// willQueue prepares to queue work on s: it orders the work after what
// synchronous calls left in flight in the context, and counts it.
func (s *Stream) willQueue(op string) error {
	if err := s.ctx.settleLegacy(op); err != nil {
		return err
	}
	s.queued.Add(1)
	return nil
}

// drain waits for the work queued on s through gocuda, if any, so that what
// follows is ordered after it. Called with s entered.
func (s *Stream) drain(op string) error {
	if s.synced.Load() == s.queued.Load() {
		return nil
	}
	return s.synchronize(op)
}

// Query reports whether all work queued on the stream has finished, without
// waiting. When it has, Query releases pins as Synchronize does.
func (s *Stream) Query() (done bool, err error) {
	const op = "Stream.Query"
	if err := s.enter(op); err != nil {
		return false, err
	}
	defer s.leave()
	if err := s.capturing(op, "its work runs when the graph is launched, and cannot be queried now"); err != nil {
		return false, err
	}
	taken := s.pins.take()
	q := s.queued.Load()
	switch r := driver.StreamQuery(s.ctx.handle, s.handle); r.Code {
	case driver.Success:
		taken.unpin()
		s.markSynced(q)
		return true, nil
	case driver.ErrorNotReady:
		s.pins.giveBack(taken)
		return false, nil
	default:
		s.pins.giveBack(taken)
		return false, check(op, r)
	}
}

// WaitEvent makes all work queued on s after this call wait until the work
// captured by e's latest Record has finished. e may belong to another
// context, even of another device, while that context is open: once it is
// closed (which destroys the event), WaitEvent returns ErrClosed.
//
// Where e was last recorded on a stream capturing a graph (inside Capture),
// s joins that capture until it ends, as in CUDA: s's work from then on is
// the graph's (a branch of it), and s refuses what a capturing stream
// refuses (Capturing reports true). The branch must be joined back before
// Capture's function returns, by recording an event on s that the
// capturing stream waits on; otherwise Capture returns the driver's error.
func (s *Stream) WaitEvent(e *Event) error {
	const op = "Stream.WaitEvent"
	if err := s.valid(op); err != nil {
		return err
	}
	if err := e.valid(op); err != nil {
		return err
	}
	if err := enterWith(op, &s.life, "the stream", &e.life, "the event"); err != nil {
		return err
	}
	defer leaveWith(&s.life, &e.life)
	if e.ctx != s.ctx {
		// Only s's context is bound: an event of another context needs
		// that one held too, since closing it destroys the event in the
		// driver (and the wait would pass it a stale handle).
		if err := e.ctx.hold(op); err != nil {
			return err
		}
		defer e.ctx.life.Release()
	}
	if err := s.willQueue(op); err != nil {
		return err
	}
	// A wait on an event recorded in a capture under way joins s to that
	// capture, as the driver does (a fork): from then until the capture
	// ends, s's work is the graph's, and what cannot be captured is
	// refused on s as on the capturing stream. The memory s keeps for
	// reuse stays unused until then: the capture forbids freeing it.
	if cs := e.capture.Load(); cs != nil && s.captureOf() == nil {
		s.cache.stop()
		if cs.join(s) {
			err := check(op, driver.StreamWaitEvent(s.ctx.handle, s.handle, e.handle, 0))
			if err != nil {
				cs.unjoin(s)
			}
			return err
		}
		// The capture has ended: this wait, and the later ones, are
		// plain.
		s.cache.resume()
		e.capture.CompareAndSwap(cs, nil)
	}
	return check(op, driver.StreamWaitEvent(s.ctx.handle, s.handle, e.handle, 0))
}

// Close waits for the stream's queued work, then destroys the stream.
// Closing twice, or a nil Stream, is a no-op. If the wait or the destroy
// fails, the stream stays open, the Go memory its copies use stays pinned,
// and Close may be called again (closing the context releases it too).
// While the stream captures (inside Capture's function), Close returns
// ErrInvalidValue and the stream stays open: close it after Capture.
func (s *Stream) Close() error {
	if s == nil {
		return nil
	}
	const op = "Stream.Close"
	// Capture holds the stream until its function returns: a Close from
	// that function would wait for itself.
	if err := s.capturing(op, "close it after Capture returns"); err != nil {
		return err
	}
	// The queued work is waited for before Close refuses calls: a call on
	// a buffer the stream used, refused the stream while Close runs,
	// takes the stream's work as done (streamUsers.wait, Stream.waitOn,
	// lockedUses.drain), which it then is, but for work queued while
	// Close runs. A stream closed, or of a closed context, has no work to
	// wait for: s.close says so.
	if s.life.hold(op, "the stream") == nil {
		err := s.ctx.bind(op)
		if err == nil {
			err = s.drain(op)
			s.ctx.unbind()
		}
		s.life.release()
		if err != nil && !errors.Is(err, ErrClosed) {
			return stillOpen(err, "the stream")
		}
	}
	return s.close(op, "the stream", func() error {
		// Queued work may still read pinned Go memory, and the scratch:
		// let it finish.
		if err := s.synchronize(op); err != nil {
			return err
		}
		if err := s.scratch.free(s.ctx.handle); err != nil {
			return err
		}
		return check(op, driver.StreamDestroy(s.ctx.handle, s.handle))
	}, func() {
		// Destroyed, or gone with its context: nothing queued on s reads
		// Go memory any more, and the synchronize flushed the cache (or
		// the context took its memory).
		s.pins.take().unpin()
		s.cache.release(true)
		s.scratch.forget() // freed, or gone with its context
	})
}

// enqueue runs queue, which queues work on s (the driver function call)
// that reads or writes the Go object p points to, with p pinned until the
// stream is synchronized. Pinning and queueing happen under one lock so
// that a concurrent Synchronize never releases a pin whose work it did not
// wait for.
func (s *Stream) enqueue(op string, p any, queue func() driver.Status) error {
	if err := s.capturing(op, "copies between the device and host memory cannot be captured, since a replay would read or write that memory again; copy outside the capture"); err != nil {
		return err
	}
	if err := s.ctx.settleLegacy(op); err != nil {
		return err
	}
	s.pins.mu.Lock()
	defer s.pins.mu.Unlock()
	if s.pins.p == nil {
		s.pins.p = new(runtime.Pinner)
	}
	s.pins.p.Pin(p)
	s.queued.Add(1)
	return check(op, queue())
}

func (ps *pinSet) take() takenPins {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	t := takenPins{ps.p, ps.kept}
	ps.p, ps.kept = nil, nil
	return t
}

// giveBack returns pins taken for a wait that failed.
func (ps *pinSet) giveBack(t takenPins) {
	if t.p == nil && t.kept == nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.kept = append(ps.kept, t.kept...)
	if t.p != nil {
		ps.kept = append(ps.kept, t.p)
	}
}

func (t takenPins) unpin() {
	if t.p != nil {
		t.p.Unpin()
	}
	for _, p := range t.kept {
		p.Unpin()
	}
}

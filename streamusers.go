package cuda

import (
	"errors"
	"slices"
	"sync"
	"weak"

	"github.com/gocuda/cuda/internal/driver"
)

// Synchronous calls on a buffer (CopyToHost, CopyFromHost, CopyFromDevice,
// the memsets, CopyPeer, and ReadFrom and WriteTo without a stream of the
// caller's) see the work queued on it before them, on any of gocuda's
// streams: as CuPy's and PyTorch's users expect, and unlike CUDA's own rule
// for non-blocking streams, whose work a plain cuMemcpy does not wait for.
// Each allocation records the streams that queued work on it (streamUsers)
// and a synchronous call first waits for those with work not yet known
// finished. Work queued on another library's stream, or on a raw DevicePtr,
// is not seen.

// streamUsers are the streams that queued work on an allocation. A stream
// stays recorded until it is closed or collected, even when idle: dropping
// an idle one could race with a goroutine that recorded it and has not yet
// counted the work it is queueing (Stream.queued), which a later call would
// then not wait for. The references are weak, so that a buffer does not
// keep a forgotten stream from its cleanup. mu is a leaf: nothing is locked
// or waited for while it is held.
type streamUsers struct {
	mu sync.Mutex
	s  []weak.Pointer[Stream]
}

// pruneAt is the length from which add drops closed and collected streams,
// so that a buffer used by many short-lived streams and no synchronous call
// keeps a short list.
const pruneAt = 8

// add records that s is about to queue work on the memory. It allocates only
// when the list grows.
func (u *streamUsers) add(s *Stream) {
	u.mu.Lock()
	if !slices.Contains(u.s, s.self) {
		if len(u.s) >= pruneAt {
			u.s = slices.DeleteFunc(u.s, gone)
		}
		u.s = append(u.s, s.self)
	}
	u.mu.Unlock()
}

// gone reports whether a recorded stream can queue no more work: it was
// closed (which waited for its work) or collected (its cleanup did).
func gone(w weak.Pointer[Stream]) bool {
	s := w.Value()
	return s == nil || s.life.lt.IsClosed()
}

// wait waits for the work queued through gocuda on each recorded stream
// that has some not known finished. Called with the memory held and its
// context bound.
func (u *streamUsers) wait(op string) error {
	u.mu.Lock()
	if len(u.s) == 0 {
		u.mu.Unlock()
		return nil
	}
	var small [pruneAt]weak.Pointer[Stream]
	users := append(small[:0], u.s...)
	u.mu.Unlock()
	for _, w := range users {
		s := w.Value()
		if s == nil || s.idle() {
			continue
		}
		if err := s.drainIfOpen(op); err != nil {
			return err
		}
	}
	return nil
}

// busy appends to into the recorded streams other than s with work not
// known finished.
func (u *streamUsers) busy(s *Stream, into []*Stream) []*Stream {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, w := range u.s {
		if o := w.Value(); o != nil && o != s && !o.idle() {
			into = append(into, o)
		}
	}
	return into
}

// forget drops every recorded stream (the memory is freed).
func (u *streamUsers) forget() {
	u.mu.Lock()
	u.s = nil
	u.mu.Unlock()
}

// idle reports whether every piece of work queued on s through gocuda is
// known finished.
func (s *Stream) idle() bool { return s.synced.Load() == s.queued.Load() }

// use is uses for work a caller is about to queue on s, which it first
// refuses where it would use memory a capture allocated and s is not in
// that capture (its stream or one joined to it): the memory exists only in
// the capture's graph, and once the capture ends it is the graph's or
// gone. Call it with the memory held.
func (s *Stream) use(op string, mem ...*allocation) error {
	for _, m := range mem {
		if m.madeIn != nil && s.captureOf() != m.madeIn {
			return errorf(op, ErrInvalidValue, "the buffer was allocated in a capture (AllocAsync in Stream.Capture) and exists only in its graph: use it inside the capture, on the capturing stream or one joined to it")
		}
	}
	s.uses(mem...)
	return nil
}

// uses records that s is about to queue work on each of mem: while s
// captures, the captured work's uses (the graph keeps the memory from being
// freed); otherwise the memory's users, which synchronous calls on it wait
// for.
func (s *Stream) uses(mem ...*allocation) {
	if cs := s.captureOf(); cs != nil {
		for _, m := range mem {
			cs.captured(m)
		}
		return
	}
	for _, m := range mem {
		// The stream a buffer was allocated on in stream order is one
		// settle always waits for: recording it too would cost every
		// launch on it a lock (and a new buffer's first launch an
		// allocation) for nothing.
		if m.stream != s {
			m.users.add(s)
		}
	}
}

// settle orders a synchronous call on m after the work queued on it: on the
// stream it was allocated on (AllocAsync) and on the streams that used it.
// Called with m held and its context bound.
func (m *allocation) settle(op string) error {
	if s := m.stream; s != nil {
		if err := s.drainIfOpen(op); err != nil {
			return err
		}
	}
	return m.users.wait(op)
}

// busyElsewhere appends to into the streams other than s that may still
// run work queued on m through gocuda: the streams that used it and the
// stream it was allocated on, those with work not known finished.
func (m *allocation) busyElsewhere(s *Stream, into []*Stream) []*Stream {
	into = m.users.busy(s, into)
	if o := m.stream; o != nil && o != s && !o.idle() {
		into = append(into, o)
	}
	return into
}

// waitOn orders the work queued on s from now on after the work queued so
// far on each of others (busyElsewhere): an event recorded on each, which s
// waits for, so that the memory a stream-ordered free releases, or keeps
// for s's next allocation, is no longer in use when s's next work runs. A
// stream of another context is synchronized instead. A stream closed (or
// being closed) is skipped: Close waits for its work before it refuses
// calls (Stream.Close). A stream capturing a graph cannot be ordered
// after: ErrInvalidValue. Called with s held and its context bound.
func (s *Stream) waitOn(op string, others []*Stream) (err error) {
	var ev driver.Event
	defer func() {
		if ev != 0 {
			// Destroyed with the waits still queued: the driver keeps
			// the event's resources until they are done. A failed
			// destroy is tried once more, so that a transient failure
			// leaks nothing, and reported (the free is not made).
			if derr := check(op, driver.EventDestroy(s.ctx.handle, ev)); derr != nil {
				driver.EventDestroy(s.ctx.handle, ev)
				if err == nil {
					err = derr
				}
			}
		}
	}()
	for _, o := range others {
		if err := o.hold(op, "a stream that used the buffer"); err != nil {
			if errors.Is(err, ErrClosed) {
				continue
			}
			return err
		}
		err := func() error {
			defer o.release()
			if err := o.capturing(op, "it used the buffer before the capture began, and the free cannot be ordered after that work: synchronize the stream before the capture, or free the buffer after it"); err != nil {
				return err
			}
			if o.ctx != s.ctx {
				return o.drain(op)
			}
			if ev == 0 {
				if err := check(op, driver.EventCreate(s.ctx.handle, &ev, driver.EventDisableTiming)); err != nil {
					return err
				}
			}
			if err := o.willQueue(op); err != nil {
				return err
			}
			if err := check(op, driver.EventRecord(s.ctx.handle, ev, o.handle)); err != nil {
				return err
			}
			if err := s.willQueue(op); err != nil {
				return err
			}
			return check(op, driver.StreamWaitEvent(s.ctx.handle, s.handle, ev, 0))
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

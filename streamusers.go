package cuda

import (
	"slices"
	"sync"
	"weak"
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

// forget drops every recorded stream (the memory is freed).
func (u *streamUsers) forget() {
	u.mu.Lock()
	u.s = nil
	u.mu.Unlock()
}

// idle reports whether every piece of work queued on s through gocuda is
// known finished.
func (s *Stream) idle() bool { return s.synced.Load() == s.queued.Load() }

// uses records that s is about to queue work on each of mem: while s
// captures, the captured work's uses (the graph keeps the memory from being
// freed); otherwise the memory's users, which synchronous calls on it wait
// for.
func (s *Stream) uses(mem ...*allocation) {
	if cs := s.capture.Load(); cs != nil {
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

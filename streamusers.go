package cuda

import (
	"slices"
	"sync"
)

// Synchronous calls on a buffer (CopyToHost, CopyFromHost, CopyFromDevice,
// the memsets, CopyPeer, and ReadFrom and WriteTo without a stream of the
// caller's) see the work queued on it before them, on any of gocuda's
// streams: as CuPy's and PyTorch's users expect, and unlike CUDA's own rule
// for non-blocking streams, whose work a plain cuMemcpy does not wait for.
// Each allocation records the streams that queued work on it (streamUsers)
// and a synchronous call first waits for those not yet known idle. Work
// queued on another library's stream, or on a raw DevicePtr, is not seen.

// streamUsers are the streams that queued work on an allocation since a
// synchronous call on it last waited for them. mu is a leaf: nothing is
// locked or waited for while it is held.
type streamUsers struct {
	mu sync.Mutex
	s  []*Stream
}

// add records that s is about to queue work on the memory. It allocates only
// the first time s is added since the list was last emptied.
func (u *streamUsers) add(s *Stream) {
	u.mu.Lock()
	if !slices.Contains(u.s, s) {
		u.s = append(u.s, s)
	}
	u.mu.Unlock()
}

// wait waits for the work queued through gocuda on each recorded stream,
// then forgets the streams found idle or closed. Called with the memory held
// and its context bound.
func (u *streamUsers) wait(op string) error {
	u.mu.Lock()
	if len(u.s) == 0 {
		u.mu.Unlock()
		return nil
	}
	var small [4]*Stream
	users := append(small[:0], u.s...)
	u.mu.Unlock()
	for _, s := range users {
		if s.idle() {
			continue
		}
		if err := s.drainIfOpen(op); err != nil {
			return err
		}
	}
	u.mu.Lock()
	u.s = slices.DeleteFunc(u.s, func(s *Stream) bool { return s.idle() || s.life.lt.IsClosed() })
	u.mu.Unlock()
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
			cs.useMem(m)
		}
		return
	}
	for _, m := range mem {
		m.users.add(s)
	}
}

// settle orders a synchronous call on m after the work queued on it: on the
// stream it was allocated on (AllocAsync) and on the streams that used it.
// Called with m held and its context bound.
func (m *allocation) settle(op string) error {
	if s := m.stream; s != nil {
		// A synchronous call runs outside every stream: order it after
		// the stream the memory was allocated on.
		if err := s.drainIfOpen(op); err != nil {
			return err
		}
	}
	return m.users.wait(op)
}

package cuda

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gocuda/cuda/internal/track"
)

// life is the part every object made in a context shares: the context, and
// a lock that makes Close wait for calls in flight and stops calls after it.
type life struct {
	ctx     *Context
	id      uint64 // creation order, for locking two objects in a fixed order
	mu      sync.RWMutex
	closed  bool
	cleanup runtime.Cleanup // the backstop for an object nobody closed
}

var lifeIDs atomic.Uint64

func newLife(ctx *Context) life { return life{ctx: ctx, id: lifeIDs.Add(1)} }

// hold keeps l open until release. what names the object in errors.
func (l *life) hold(op, what string) error {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return closed(op, what)
	}
	return nil
}

func (l *life) release() { l.mu.RUnlock() }

// enter holds l and binds its context, until leave.
func (l *life) enter(op, what string) error {
	if err := l.hold(op, what); err != nil {
		return err
	}
	if err := l.ctx.bind(op); err != nil {
		l.release()
		return err
	}
	return nil
}

func (l *life) leave() {
	l.ctx.unbind()
	l.release()
}

// enterWith is enter for an operation on two objects, a and b, of which a's
// context is bound. The objects are held in creation order, so that two
// goroutines doing the same to both never wait on each other.
func enterWith(op string, a *life, aWhat string, b *life, bWhat string) error {
	if a == b {
		// One object in two roles (two slices of one allocation): a read
		// lock taken twice could wait on a pending Close forever.
		return a.enter(op, aWhat)
	}
	first, fWhat, second, sWhat := a, aWhat, b, bWhat
	if b.id < a.id {
		first, fWhat, second, sWhat = b, bWhat, a, aWhat
	}
	if err := first.hold(op, fWhat); err != nil {
		return err
	}
	if err := second.hold(op, sWhat); err != nil {
		first.release()
		return err
	}
	if err := a.ctx.bind(op); err != nil {
		a.release()
		b.release()
		return err
	}
	return nil
}

func leaveWith(a, b *life) {
	a.ctx.unbind()
	a.release()
	if b != a {
		b.release()
	}
}

// close marks l closed, waiting for calls in flight, and runs free with the
// context bound. Closing twice is a no-op. When the context was closed
// first, the driver already released what the object held.
func (l *life) close(op string, kind track.Kind, free func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	l.cleanup.Stop()
	track.Done(kind)
	if err := l.ctx.bind(op); err != nil {
		if errors.Is(err, ErrClosed) {
			return nil
		}
		return err
	}
	defer l.ctx.unbind()
	return free()
}

// forgotten is the cleanup backstop of an object nobody closed: it binds the
// context on whatever goroutine the cleanup runs and frees the resource.
func forgotten(ctx *Context, kind track.Kind, free func()) {
	track.Forgotten(kind)
	if ctx.bind("cleanup") != nil {
		return
	}
	defer ctx.unbind()
	free()
}

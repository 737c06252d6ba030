package cuda

import (
	"errors"
	"runtime"

	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/capturegate"
	"github.com/gocuda/cuda/internal/lifetime"
	"github.com/gocuda/cuda/internal/track"
)

// life is what every object made in a context shares: the context, and the
// lifetime that makes Close wait for calls in flight and refuses calls
// after it (internal/lifetime says why holds never wait, and the one rule
// that keeps Close from deadlocking).
//
// Order of holds, where a call holds several: the objects it was given,
// then their context (bind). Holds never wait, so the order is for reading,
// not for safety; Close waits for holds, so no Close runs while its caller
// holds the object or the object's context (Context.Do's fn must not close
// its context; Module.Close closes its globals before it binds the context).
type life struct {
	lt  lifetime.Life // a field, not embedded: its methods are not the API
	ctx *Context
}

// arm records a resource just made in ctx, with its cleanup backstop.
func (l *life) arm(ctx *Context, kind track.Kind, cleanup runtime.Cleanup) {
	l.ctx = ctx
	l.lt.Arm(kind, cleanup)
}

// hold keeps l open until release. what names the object in errors.
func (l *life) hold(op, what string) error {
	return holdErr(op, what, l.lt.Hold())
}

// holdErr is the error for a Hold that found s.
func holdErr(op, what string, s lifetime.Status) error {
	switch s {
	case lifetime.Zero:
		return errorf(op, ErrInvalidValue, "%s is a zero value, not made by this package's constructors", what)
	case lifetime.Closed:
		return closed(op, what)
	}
	return nil
}

func (l *life) release() { l.lt.Release() }

// holdLive is hold for a call that reaches no driver function, and so
// binds no context: it refuses l too once l's context is closed (or
// closing), since afterwards every method of an object made in it returns
// ErrClosed (Context.Close), not only those that bind it.
func (l *life) holdLive(op, what string) error {
	if err := l.hold(op, what); err != nil {
		return err
	}
	if err := l.ctx.open(op); err != nil {
		l.release()
		return err
	}
	return nil
}

// valid returns the error for a zero object, without holding it.
func (l *life) valid(op, what string) error {
	if l.status() == lifetime.Zero {
		return holdErr(op, what, lifetime.Zero)
	}
	return nil
}

// status reports what a hold would find, without holding.
func (l *life) status() lifetime.Status { return l.lt.Status() }

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
// context is bound.
func enterWith(op string, a *life, aWhat string, b *life, bWhat string) error {
	if err := a.hold(op, aWhat); err != nil {
		return err
	}
	if err := b.hold(op, bWhat); err != nil {
		a.release()
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
	b.release()
}

type heldLife struct {
	l    *life
	what string
}

// holdAll holds each life, in order, and returns them for releaseAll.
func holdAll(op string, lives []heldLife) ([]heldLife, error) {
	for i, h := range lives {
		if err := h.l.hold(op, h.what); err != nil {
			releaseAll(lives[:i])
			return nil, err
		}
	}
	return lives, nil
}

func releaseAll(lives []heldLife) {
	for _, h := range lives {
		h.l.release()
	}
}

// close releases the object with free, run with the context bound, once:
// after a failure of the bind or of free the object stays open and owned,
// its backstop armed, and close may be called again. When the context was
// closed first, the driver already released what the object held. gone,
// if not nil, runs once the resource is released either way (to forget
// what gocuda kept of it). what names the object in errors; closing a
// closed object is a no-op.
func (l *life) close(op, what string, free func() error, gone func()) error {
	s, err := l.lt.Close(func() (bool, error) {
		if err := l.ctx.bind(op); err != nil {
			if !errors.Is(err, ErrClosed) {
				return false, stillOpen(err, what)
			}
		} else {
			err := free()
			l.ctx.unbind()
			if err != nil {
				return false, stillOpen(err, what)
			}
		}
		if gone != nil {
			gone()
		}
		return true, nil
	})
	if s == lifetime.Zero {
		return holdErr(op, what, s)
	}
	return err
}

// closeNow is close for an object its constructor made and could not tie
// to its context's Close, which had begun (attach.Owner.Register): nobody
// else has it, and the constructor holds the context, bound, so that free
// runs without the new hold a closing context refuses.
func (l *life) closeNow(free func() error, gone func()) error {
	_, err := l.lt.Close(func() (bool, error) {
		if err := free(); err != nil {
			return false, err
		}
		if gone != nil {
			gone()
		}
		return true, nil
	})
	return err
}

// stillOpen adds to a failed release's error that the object is still
// owned, and may be closed again.
func stillOpen(err error, what string) error {
	var e *Error
	if errors.As(err, &e) {
		e.Detail = join(e.Detail, what+" is still open: close it again, or close its context")
	}
	return err
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// forgotten is the cleanup backstop of an object nobody closed: it binds the
// context on whatever goroutine the cleanup runs and frees the resource,
// once no global capture is under way (internal/capturegate).
func forgotten(ctx *Context, kind track.Kind, free func()) {
	track.Forgotten(kind)
	capturegate.Cleanup(func() { boundErr(ctx, func() error { free(); return nil }) })
}

// forgottenOwned is forgotten for an object its context's Close closes
// (attach.Owner): its owner's Destroy, unless that Close ran it.
func forgottenOwned(kind track.Kind, o *attach.Owner) {
	track.Forgotten(kind)
	capturegate.Cleanup(o.Destroy)
}

// boundErr runs free with ctx bound and returns its error; nil where ctx
// is closed, which took what free would release.
func boundErr(ctx *Context, free func() error) error {
	if ctx.bind("cleanup") != nil {
		return nil
	}
	defer ctx.unbind()
	return free()
}

package cuda

import (
	"errors"
	"sync"

	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/lifetime"
)

// Other packages of gocuda release what they keep per context when it
// closes, through internal/attach.
func init() {
	attach.OnClose = onClose
	attach.Forget = func(v any, key any) {
		if c, ok := v.(*Context); ok && c != nil {
			c.releases.remove(key)
		}
	}
}

// contextReleases are the releases other packages registered on a context
// (attach.OnClose), by key. mu is a leaf: no release runs under it.
type contextReleases struct {
	mu    sync.Mutex
	byKey map[any]func() error
}

func onClose(v any, key any, release func() error) error {
	const op = "Context.Close"
	c, ok := v.(*Context)
	if !ok || c == nil {
		return errorf(op, ErrInvalidValue, "not a *cuda.Context: %T", v)
	}
	if st := c.life.Status(); st != lifetime.Held {
		return holdErr(op, "the Context", st)
	}
	c.releases.add(map[any]func() error{key: release})
	return nil
}

// add registers each of m's releases whose key has none yet.
func (r *contextReleases) add(m map[any]func() error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = make(map[any]func() error, len(m))
	}
	for key, release := range m {
		if _, ok := r.byKey[key]; !ok {
			r.byKey[key] = release
		}
	}
}

// remove drops the release registered under key, if any.
func (r *contextReleases) remove(key any) {
	r.mu.Lock()
	delete(r.byKey, key)
	r.mu.Unlock()
}

// runReleases runs the registered releases, and keeps those that failed
// for the next Close.
func (c *Context) runReleases() error {
	r := &c.releases
	r.mu.Lock()
	pending := r.byKey
	r.byKey = nil
	r.mu.Unlock()
	// One release may wait for another (a growable buffer's memory for the
	// graph that uses it): those that fail are tried again while a round
	// releases something.
	var errs []error
	for progress := true; progress && len(pending) > 0; {
		progress, errs = false, nil
		for key, release := range pending {
			if err := release(); err != nil {
				errs = append(errs, err)
				continue
			}
			delete(pending, key)
			progress = true
		}
	}
	if len(pending) > 0 {
		r.add(pending)
	}
	return errors.Join(errs...)
}

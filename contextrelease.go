package cuda

import (
	"errors"
	"sync"

	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/lifetime"
)

// Other packages of gocuda release what they keep per context when it
// closes, through internal/attach.
func init() { attach.OnClose = onClose }

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

// runReleases runs the registered releases, each once, and keeps those that
// failed for the next Close.
func (c *Context) runReleases() error {
	r := &c.releases
	r.mu.Lock()
	pending := r.byKey
	r.byKey = nil
	r.mu.Unlock()
	var errs []error
	for key, release := range pending {
		if err := release(); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(pending, key)
	}
	if len(pending) > 0 {
		r.add(pending)
	}
	return errors.Join(errs...)
}

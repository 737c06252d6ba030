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
	// closing is set once a Close has taken the releases: a registration
	// then is refused (its caller releases what it made itself), until
	// that Close fails and reopens.
	closing bool
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
	r := &c.releases
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closing {
		return closed(op, "the context")
	}
	r.addLocked(map[any]func() error{key: release})
	return nil
}

// add registers each of m's releases whose key has none yet.
func (r *contextReleases) add(m map[any]func() error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(m)
}

// addLocked is add with mu held.
func (r *contextReleases) addLocked(m map[any]func() error) {
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

// reopen undoes a failed Close's refusal of registrations.
func (r *contextReleases) reopen() {
	r.mu.Lock()
	r.closing = false
	r.mu.Unlock()
}

// runReleases runs the registered releases, and those registered while
// they run, until none is left: then it refuses new ones (reopen undoes
// it). It keeps those that failed for the next Close. Called by Close
// alone (closeMu).
func (c *Context) runReleases() error {
	r := &c.releases
	for {
		r.mu.Lock()
		pending := r.byKey
		r.byKey = nil
		if len(pending) == 0 {
			r.closing = true
			r.mu.Unlock()
			return nil
		}
		r.mu.Unlock()
		// One release may wait for another (a growable buffer's memory
		// for the graph that uses it): those that fail are tried again
		// while a round releases something.
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
			return errors.Join(errs...)
		}
	}
}

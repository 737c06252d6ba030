package cufft

import (
	"errors"
	"fmt"
	"sync"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/describe"
	"github.com/gocuda/cuda/internal/lifetime"
)

// Plans keeps a stream's plans by type, shape and batch, made the first
// time each is asked for and kept until Close, as PyTorch's plan cache
// keeps cuFFT's: code that transforms arrays of a few shapes asks Plans
// each time and pays for planning once. It is safe for concurrent use. The
// zero Plans is not usable: make one with NewPlans.
type Plans struct {
	stream *cuda.Stream
	mu     sync.Mutex
	plans  map[planKey]*Plan
	// pending are plans a failed Close took out of plans because their
	// own Close left them unusable (Plan.Close's unfinished): out of
	// Plan's reach, closed by the next Close.
	pending []*Plan
	closed  bool
}

// planKey names a plan in Plans: a comparable value, so that looking a plan
// up formats and allocates nothing.
type planKey struct {
	typ   Type
	rank  int
	shape [3]int
	batch int
}

// NewPlans returns an empty cache of plans executed on s.
func NewPlans(s *cuda.Stream) (*Plans, error) {
	if s == nil {
		return nil, errorf("NewPlans", cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	}
	return &Plans{stream: s, plans: map[planKey]*Plan{}}, nil
}

// Plan returns the plan of type t, shape and batch on the cache's stream,
// making it the first time (NewPlan's checks and errors), and again where
// its user closed the one it handed out.
func (c *Plans) Plan(t Type, shape []int, batch int) (*Plan, error) {
	const op = "Plans.Plan"
	if c == nil || c.plans == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "a nil or zero Plans: make one with NewPlans")
	}
	if len(shape) < 1 || len(shape) > 3 {
		// NewPlan's check, before the key drops dimensions.
		p, err := NewPlan(c.stream, t, shape, batch)
		return p, named(op, err)
	}
	key := planKey{typ: t, rank: len(shape), batch: batch}
	copy(key.shape[:], shape)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errorf(op, cuda.ErrClosed, "the plans are closed")
	}
	if p := c.plans[key]; p != nil {
		if p.life.Status() == lifetime.Held && !p.unfinished.Load() {
			return p, nil
		}
		// Closed by its user: made again. One whose Close did not
		// finish is finished by the cache's Close.
		delete(c.plans, key)
		if p.unfinished.Load() {
			c.pending = append(c.pending, p)
		}
	}
	p, err := NewPlan(c.stream, t, shape, batch)
	if err != nil {
		return nil, named(op, err)
	}
	c.plans[key] = p
	return p, nil
}

// Len returns how many plans the cache holds.
func (c *Plans) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.plans)
}

// String describes the cache, as package cuda's objects print: how many
// plans it holds, and its device, as `cufft.Plans{3 plans, cuda:0}`, with
// "closed" once closed.
func (c *Plans) String() string {
	const kind = "cufft.Plans"
	if c == nil {
		return kind + "(nil)"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.plans == nil {
		return describe.Object(kind, lifetime.Zero)
	}
	plans := fmt.Sprintf("%d plans", len(c.plans))
	if len(c.plans) == 1 {
		plans = "1 plan"
	}
	st := lifetime.Held
	if c.closed {
		st = lifetime.Closed
	}
	return describe.Object(kind, st, plans, c.stream.Context().Device().String())
}

// Close closes every plan (waiting for executions in flight); closing
// twice is a no-op. A Close that fails leaves the cache usable, and may be
// tried again: a plan whose Close left it usable stays in the cache, and
// one whose Close left it unusable (destroyed, its work area not freed) is
// out of the cache, made again when asked for, and closed by the next
// Close.
func (c *Plans) Close() error {
	const op = "Plans.Close"
	if c == nil || c.plans == nil {
		return errorf(op, cuda.ErrInvalidValue, "a nil or zero Plans: make one with NewPlans")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	pending := c.pending[:0]
	for _, p := range c.pending {
		if err := p.Close(); err != nil {
			errs = append(errs, named(op, err))
			pending = append(pending, p)
		}
	}
	c.pending = pending
	for key, p := range c.plans {
		err := p.Close()
		if err == nil || p.unfinished.Load() {
			delete(c.plans, key)
		}
		if err != nil {
			errs = append(errs, named(op, err))
			if p.unfinished.Load() {
				c.pending = append(c.pending, p)
			}
		}
	}
	if len(errs) == 0 {
		c.closed = true
	}
	return errors.Join(errs...)
}

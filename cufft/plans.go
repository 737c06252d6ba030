package cufft

import (
	"errors"
	"sync"

	cuda "github.com/gocuda/cuda"
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
	closed bool
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
		return nil, errorf("NewPlans", cuda.ErrInvalidValue, "nil *cuda.Stream")
	}
	return &Plans{stream: s, plans: map[planKey]*Plan{}}, nil
}

// Plan returns the plan of type t, shape and batch on the cache's stream,
// making it the first time (NewPlan's checks and errors).
func (c *Plans) Plan(t Type, shape []int, batch int) (*Plan, error) {
	const op = "Plans.Plan"
	if c == nil || c.plans == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "a nil or zero Plans: make one with NewPlans")
	}
	if len(shape) < 1 || len(shape) > 3 {
		// NewPlan's check, before the key drops dimensions.
		return NewPlan(c.stream, t, shape, batch)
	}
	key := planKey{typ: t, rank: len(shape), batch: batch}
	copy(key.shape[:], shape)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errorf(op, cuda.ErrClosed, "the plans are closed")
	}
	if p := c.plans[key]; p != nil {
		return p, nil
	}
	p, err := NewPlan(c.stream, t, shape, batch)
	if err != nil {
		return nil, err
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

// Close closes every plan (waiting for executions in flight). Plans that
// fail to close stay, and Close may be called again; closing twice is a
// no-op.
func (c *Plans) Close() error {
	if c == nil || c.plans == nil {
		return errorf("Plans.Close", cuda.ErrInvalidValue, "a nil or zero Plans: make one with NewPlans")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for key, p := range c.plans {
		if err := p.Close(); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(c.plans, key)
	}
	if len(errs) == 0 {
		c.closed = true
	}
	return errors.Join(errs...)
}

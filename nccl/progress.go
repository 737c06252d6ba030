package nccl

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/nccl"
	"github.com/gocuda/cuda/internal/lifetime"
)

// A communicator made without blocking (NewCommContext, NewCommFromLaunch,
// and the ones Split makes of them) stays non-blocking: any NCCL call on it
// may return ncclInProgress, and then the call's work (a collective queued
// on its stream, a split's new communicator) is done only once
// ncclCommGetAsyncError stops reporting ncclInProgress. Until then NCCL
// refuses further calls on the communicator, and nothing else may be
// queued on its stream. gocuda waits for that inside each call, so that a
// call returns with its work queued whichever way the communicator was
// made, and a stream synchronized after it never misses it.

// settle waits until NCCL's state of the communicator h, a communicator
// of c's or c itself, is no longer in progress, and returns the error it
// is left with, if any, as the error of name. It spins a little first:
// most calls finish within microseconds. A call can stay in progress
// until the other ranks come, which a failed rank never does: when Abort
// begins on c, settle gives up, so that the abort, which waits for the
// calls holding c, can go on.
func (c *Comm) settle(op, name string, h clib.Comm) error {
	start := time.Now()
	for pause := time.Microsecond; ; {
		if c.aborting.Load() {
			return errorf(op, cuda.ErrClosed, "%s was still in progress when the communicator was aborted (Comm.Abort)", name)
		}
		r, err := asyncState(op, h)
		if err != nil {
			return err
		}
		switch r {
		case ResultSuccess:
			return nil
		case ResultInProgress:
		default:
			return resultError(op, name, r)
		}
		if time.Since(start) < 50*time.Microsecond {
			runtime.Gosched()
			continue
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// asyncState returns NCCL's state of the communicator h
// (ncclCommGetAsyncError): ResultSuccess, ResultInProgress or the error it is left
// with. The call's own failure is the error.
func asyncState(op string, h clib.Comm) (Result, error) {
	var state clib.Result
	err := check(op, "ncclCommGetAsyncError", clib.CommGetAsyncError(h, &state))
	return Result(state), err
}

// do is check for a call on c, name, that returned r, made with c held
// and its context bound: on a non-blocking communicator it waits for what
// the call left in progress, and notes c for the Group under way, if any.
func (c *Comm) do(op, name string, r clib.Result) error {
	err := check(op, name, r)
	switch {
	case !c.nonBlocking:
		return err
	case errors.Is(err, ResultInProgress):
		return c.settle(op, name, c.handle)
	case err == nil:
		noteGrouped(c)
	}
	return err
}

// grouped is the non-blocking communicators named in calls made while a
// Group was under way, on any goroutine: ncclGroupEnd may leave each of
// its group's in progress, and Group waits for them. Which Group named
// which is not known (NCCL's group is the calling thread's), so a Group
// waits for every one named since the Groups under way began: more than
// its own at times, never fewer. The set is emptied when the last Group
// under way ends. mu is a leaf.
var grouped struct {
	open  atomic.Int32 // Groups under way
	mu    sync.Mutex
	comms map[*Comm]struct{}
}

// noteGrouped records c, named in a call that NCCL took, if a Group is under way.
func noteGrouped(c *Comm) {
	if grouped.open.Load() == 0 {
		return
	}
	grouped.mu.Lock()
	if grouped.comms == nil {
		grouped.comms = map[*Comm]struct{}{}
	}
	grouped.comms[c] = struct{}{}
	grouped.mu.Unlock()
}

// settleGrouped waits for every communicator noted, those still open.
func settleGrouped(op string) error {
	grouped.mu.Lock()
	comms := make([]*Comm, 0, len(grouped.comms))
	for c := range grouped.comms {
		comms = append(comms, c)
	}
	grouped.mu.Unlock()
	var errs []error
	for _, c := range comms {
		if c.life.Hold() != lifetime.Held {
			continue // closed since: nothing of it is left to wait for
		}
		errs = append(errs, bound(op, c.ctx, func() error { return c.settle(op, "ncclGroupEnd", c.handle) }))
		c.life.Release()
	}
	return errors.Join(errs...)
}

// endGroup ends a Group's part in grouped.
func endGroup() {
	grouped.mu.Lock()
	if grouped.open.Add(-1) == 0 {
		grouped.comms = nil
	}
	grouped.mu.Unlock()
}

// Package lifetime owns the release of every driver resource gocuda holds:
// one type, Life, says whether an object is usable, lets calls hold it open
// without ever waiting, and runs its release once, retrying after a failure.
package lifetime

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gocuda/cuda/internal/track"
)

// Life is the state of one resource: made (armed), held by calls in
// flight, closing, closed.
//
// Hold never waits: a call made while Close is under way is refused at
// once, which is what keeps holds free of lock-order rules. Two holds of
// the same object on one goroutine (a buffer passed twice, a gocuda call
// inside Context.Do) cannot wait on each other, and a hold never waits for a
// Close. The only wait is Close's, for the holds in flight to end; so the
// one rule is that no goroutine closes an object it holds (or whose child it
// holds), which every Close in gocuda keeps.
//
// The zero Life is not armed: Hold reports Zero, so that a zero value of an
// exported type fails cleanly instead of reaching the driver.
type Life struct {
	state   atomic.Int64 // holds in the low bits; armed, closing and closed bits
	closeMu sync.Mutex   // one Close at a time
	mu      sync.Mutex   // Close's wait for the holds
	cond    sync.Cond
	kind    track.Kind
	tracked bool
	cleanup runtime.Cleanup
}

const (
	armed   = 1 << 62
	closing = 1 << 61
	closed  = 1 << 60
	holds   = closed - 1
)

// Status is what Hold found.
type Status int

const (
	Held   Status = iota // the object is held until Release
	Zero                 // a zero value: never made
	Closed               // closed, or being closed
)

// Arm marks a newly made resource live, counted as kind (track) and with
// cleanup as its backstop for an owner that never closes it (stopped once
// Close has released it). Arm is called once, before the object is shared.
func (l *Life) Arm(kind track.Kind, cleanup runtime.Cleanup) {
	l.kind, l.tracked, l.cleanup = kind, true, cleanup
	track.Add(kind)
	l.state.Store(armed)
}

// ArmUntracked marks live an object that holds no resource of its own
// (memory owned elsewhere, a module's global).
func (l *Life) ArmUntracked() { l.state.Store(armed) }

// Hold keeps l open until the matching Release, if it is live.
func (l *Life) Hold() Status {
	n := l.state.Add(1)
	if n&armed != 0 && n&closing == 0 {
		return Held
	}
	l.Release()
	if n&armed == 0 {
		return Zero
	}
	return Closed
}

// Release ends a Hold that returned Held (and the failed ones, inside Hold).
func (l *Life) Release() {
	n := l.state.Add(-1)
	if n&closing != 0 && n&holds == 0 {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	}
}

// Status reports what a Hold would find now.
func (l *Life) Status() Status {
	n := l.state.Load()
	switch {
	case n&armed == 0:
		return Zero
	case n&closing != 0:
		return Closed
	}
	return Held
}

// IsClosed reports whether Close released the resource.
func (l *Life) IsClosed() bool { return l.state.Load()&closed != 0 }

// Close refuses new holds, waits for those in flight, and runs release.
// release reports whether the resource is gone: then l is closed for good,
// its backstop stopped and its count done. Otherwise (the driver refused)
// l is usable again, still owned, and Close may be called again. Close of
// a closed Life returns nil without calling release; of a zero Life, Zero.
func (l *Life) Close(release func() (gone bool, err error)) (Status, error) {
	l.closeMu.Lock()
	defer l.closeMu.Unlock()
	switch n := l.state.Load(); {
	case n&armed == 0:
		return Zero, nil
	case n&closed != 0:
		return Closed, nil
	}
	l.cond.L = &l.mu
	l.mu.Lock()
	l.state.Add(closing)
	for l.state.Load()&holds != 0 {
		l.cond.Wait()
	}
	l.mu.Unlock()
	gone, err := release()
	if !gone {
		l.state.Add(-closing)
		return Held, err
	}
	l.state.Add(closed)
	l.cleanup.Stop()
	if l.tracked {
		track.Done(l.kind)
	}
	return Closed, err
}

// CloseTemp closes a temporary object an operation made for itself, into
// *err: a Close that fails is tried once more, so that a transient failure
// leaks nothing, and the first failure is reported unless *err holds one
// already. Packages cuda and cublas share it.
func CloseTemp(err *error, close func() error) {
	cerr := close()
	if cerr != nil {
		close()
	}
	if *err == nil {
		*err = cerr
	}
}

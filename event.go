package cuda

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/track"
)

// EventFlag modifies how an event behaves.
type EventFlag uint32

const (
	// EventBlockingSync makes Synchronize block the thread instead of
	// spinning.
	EventBlockingSync EventFlag = driver.EventBlockingSync
	// EventDisableTiming makes the event cheaper; it cannot be timed.
	EventDisableTiming EventFlag = driver.EventDisableTiming
	// EventInterprocess lets another process wait for the event
	// (Event.IPCHandle, OpenIPCEvent); it needs EventDisableTiming.
	EventInterprocess EventFlag = driver.EventInterprocess
)

// Event marks a point in a stream's work: once recorded, it completes when
// the work queued before it has finished. Events time device work (see
// ElapsedTime) and order streams (see Stream.WaitEvent). The zero Event is
// not usable: its methods return ErrInvalidValue.
type Event struct {
	life
	handle       driver.Event
	timing       bool
	interprocess bool        // made with EventInterprocess: it can be exported
	recorded     atomic.Bool // Record has queued it at least once
	graphs       graphUses   // event nodes of graphs and instances that record or wait on it
	// capture is the capture its last Record was queued in, if any: a
	// stream that waits on it joins that capture while it runs.
	capture atomic.Pointer[graphBuild]
}

// NewEvent creates an event in c. Without flags it can be timed.
func (c *Context) NewEvent(flags ...EventFlag) (*Event, error) {
	const op = "Context.NewEvent"
	var f EventFlag
	for _, x := range flags {
		if x&^(EventBlockingSync|EventDisableTiming|EventInterprocess) != 0 {
			return nil, errorf(op, ErrInvalidValue, "unknown event flag %#x", uint32(x))
		}
		f |= x
	}
	if f&EventInterprocess != 0 && f&EventDisableTiming == 0 {
		return nil, errorf(op, ErrInvalidValue, "EventInterprocess needs EventDisableTiming too")
	}
	if err := c.bind(op); err != nil {
		return nil, err
	}
	defer c.unbind()
	e := &Event{timing: f&EventDisableTiming == 0, interprocess: f&EventInterprocess != 0}
	if err := check(op, driver.EventCreate(c.handle, &e.handle, uint32(f))); err != nil {
		return nil, err
	}
	h := e.handle
	e.arm(c, track.Event, runtime.AddCleanup(e, func(ctx *Context) {
		forgotten(ctx, track.Event, func() { driver.EventDestroy(ctx.handle, h) })
	}, c))
	return e, nil
}

func (e *Event) enter(op string) error {
	if e == nil {
		return errorf(op, ErrInvalidValue, "nil *Event")
	}
	return e.life.enter(op, "the event")
}

// valid returns the error for a nil or zero event, without holding it.
func (e *Event) valid(op string) error {
	if e == nil {
		return errorf(op, ErrInvalidValue, "nil *Event")
	}
	return e.life.valid(op, "the event")
}

// Record captures the work queued on s so far: the event completes when that
// work has finished. s must belong to the event's context.
func (e *Event) Record(s *Stream) error {
	const op = "Event.Record"
	if err := e.valid(op); err != nil {
		return err
	}
	if err := s.valid(op); err != nil {
		return err
	}
	if s.ctx != e.ctx {
		return errorf(op, ErrInvalidValue, "the stream belongs to another context than the event")
	}
	if err := enterWith(op, &e.life, "the event", &s.life, "the stream"); err != nil {
		return err
	}
	defer leaveWith(&e.life, &s.life)
	if err := s.willQueue(op); err != nil {
		return err
	}
	if err := check(op, driver.EventRecord(e.ctx.handle, e.handle, s.handle)); err != nil {
		return err
	}
	e.capture.Store(s.captureOf())
	e.recorded.Store(true)
	return nil
}

// Synchronize waits until the event has completed. An event never recorded
// is complete.
func (e *Event) Synchronize() error {
	const op = "Event.Synchronize"
	if err := e.enter(op); err != nil {
		return err
	}
	defer e.leave()
	return check(op, driver.EventSynchronize(e.ctx.handle, e.handle))
}

// Query reports whether the event has completed, without waiting.
func (e *Event) Query() (done bool, err error) {
	const op = "Event.Query"
	if err := e.enter(op); err != nil {
		return false, err
	}
	defer e.leave()
	switch r := driver.EventQuery(e.ctx.handle, e.handle); r.Code {
	case driver.Success:
		return true, nil
	case driver.ErrorNotReady:
		return false, nil
	default:
		return false, check(op, r)
	}
}

// Close destroys the event. Closing twice, or a nil Event, is a no-op; if
// the driver refuses, the event stays usable and Close may be called again.
func (e *Event) Close() error {
	if e == nil {
		return nil
	}
	const op = "Event.Close"
	return e.close(op, "the event", func() error {
		if err := e.graphs.inUse(op, "the event"); err != nil {
			return err
		}
		return check(op, driver.EventDestroy(e.ctx.handle, e.handle))
	}, nil)
}

// ElapsedTime returns the device time between two recorded, completed events
// of one context, both created with timing (no EventDisableTiming). The
// driver's resolution is about half a microsecond.
func ElapsedTime(start, end *Event) (time.Duration, error) {
	const op = "ElapsedTime"
	if err := start.valid(op); err != nil {
		return 0, err
	}
	if err := end.valid(op); err != nil {
		return 0, err
	}
	if start.ctx != end.ctx {
		return 0, errorf(op, ErrInvalidValue, "the events belong to different contexts")
	}
	if !start.timing || !end.timing {
		return 0, errorf(op, ErrInvalidValue, "an event created with EventDisableTiming cannot be timed")
	}
	if err := enterWith(op, &start.life, "the start event", &end.life, "the end event"); err != nil {
		return 0, err
	}
	defer leaveWith(&start.life, &end.life)
	for _, e := range [...]struct {
		e    *Event
		what string
	}{{start, "the start event"}, {end, "the end event"}} {
		if !e.e.recorded.Load() {
			return 0, errorf(op, ErrInvalidValue, "%s was never recorded: record both on a stream first", e.what)
		}
	}
	var ms float32
	if err := check(op, driver.EventElapsedTime(start.ctx.handle, &ms, start.handle, end.handle)); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

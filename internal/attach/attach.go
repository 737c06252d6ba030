// Package attach lets gocuda's other packages tie what they keep per
// context (compute's loaded kernels) to the context's Close, so that a
// user has no release call to forget, and use a stream's scratch memory.
// Package cuda sets OnClose, Forget, StreamScratch and StreamSequence
// when it loads; nothing else writes them.
package attach

import (
	"sync"
	"weak"
)

// OnClose registers release to run when ctx, a *cuda.Context, is closed,
// before the context lets go of anything else. key names the registration:
// a second one under the same key keeps the first. A release that fails
// fails that Close and stays registered, so that the next Close tries it
// again. It returns an error for a nil, zero or closed context.
var OnClose func(ctx any, key any, release func() error) error

// Forget drops the release OnClose registered under key on ctx, if any:
// the object it released was closed first.
var Forget func(ctx any, key any)

// Owner ties an object that the driver or its library does not destroy
// with its context (a graph, a library's handle) to the context's Close,
// which closes the object if it is still open (Register). The object
// holds its Owner, and its cleanup takes it; the Owner holds the object
// only weakly, so that the collector's cleanup of one nobody closed still
// runs.
type Owner struct {
	ctx, key any
	release  func() error // what the context's Close runs
	destroy  func() error
	mu       sync.Mutex // guards done, held while destroy runs
	done     bool       // destroy succeeded
}

// NewOwner returns obj's Owner, not yet registered: the context's Close
// will run close(obj); where obj was collected and its cleanup has not run
// yet (the collector clears the weak pointer first, and a cleanup may wait
// for a capture: internal/capturegate), it runs destroy instead, which
// releases obj's resources, binding the context itself, and must not
// reach obj. Where destroy fails, that Close fails, and the next one (or
// the cleanup) tries it again.
func NewOwner[T any](ctx any, obj *T, close func(*T) error, destroy func() error) *Owner {
	w := weak.Make(obj)
	o := &Owner{ctx: ctx, key: w, destroy: destroy}
	o.release = func() error {
		if x := w.Value(); x != nil {
			return close(x)
		}
		return o.destroyOnce()
	}
	return o
}

// destroyOnce runs destroy unless it succeeded before.
func (o *Owner) destroyOnce() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return nil
	}
	if err := o.destroy(); err != nil {
		return err
	}
	o.done = true
	return nil
}

// Register registers o on its context's Close. Call it while holding the
// context, or close the object where it fails: the context is closing or
// closed, and the error says so. A nil Owner registers nothing.
func (o *Owner) Register() error {
	if o == nil {
		return nil
	}
	return OnClose(o.ctx, o.key, o.release)
}

// Destroy is the cleanup of an object nobody closed: it runs destroy
// unless the context's Close ran it, and forgets the registration. A nil
// Owner does nothing.
func (o *Owner) Destroy() {
	if o == nil {
		return
	}
	o.destroyOnce() // a failure leaves nothing else to try: the object is gone
	Forget(o.ctx, o.key)
}

// Closed forgets the registration, for the object's own Close. A nil
// Owner does nothing.
func (o *Owner) Closed() {
	if o != nil {
		Forget(o.ctx, o.key)
	}
}

// StreamScratch returns the address and size of s's scratch, a
// *cuda.Stream's device memory for the kernels of one call on it, zeroed
// on the stream when first given (in the stream's order: work queued on
// the stream after it sees zeros): a caller leaves the counters it uses
// as it found them (zero). It returns 0 while s captures a graph, whose replays need memory
// of their own (stream-ordered), and an error for a nil, zero or closed
// stream or a failed allocation.
var StreamScratch func(s any) (addr uintptr, size int, err error)

// StreamSequence runs queue with the address and size of s's sequence
// memory: device memory of the stream's, apart from its scratch, for a
// call that queues several kernels passing data from one to the next
// through it. queue runs while no other StreamSequence on s runs, so that
// no other such call's kernels are queued between queue's, and must only
// queue work (no waiting on the stream). addr is 0 while s captures a
// graph: queue brings memory of its own then. It returns queue's error,
// or an error for a nil, zero or closed stream or a failed allocation.
var StreamSequence func(s any, queue func(addr uintptr, size int) error) error

// ScratchCounters is how many counters (uint32) lead a stream's scratch,
// the one layout its users share: the counters' words are zero outside a
// call (a kernel that counts its blocks in sets its counter back), and the
// rest, from byte 4*ScratchCounters on, is any one call's partial
// results.
const ScratchCounters = 4096

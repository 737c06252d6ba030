// Package attach lets gocuda's other packages tie what they keep per
// context (compute's loaded kernels) to the context's Close, so that a
// user has no release call to forget, and use a stream's scratch memory.
// Package cuda sets OnClose, Forget, StreamScratch and StreamSequence
// when it loads; nothing else writes them.
package attach

import "weak"

// OnClose registers release to run when ctx, a *cuda.Context, is closed,
// before the context lets go of anything else. key names the registration:
// a second one under the same key keeps the first. A release that fails
// fails that Close and stays registered, so that the next Close tries it
// again. It returns an error for a nil, zero or closed context.
var OnClose func(ctx any, key any, release func() error) error

// Forget drops the release OnClose registered under key on ctx, if any:
// the object it released was closed first.
var Forget func(ctx any, key any)

// CloseFirst has ctx's Close run close(obj) before it lets go of the
// context, for an object the driver or its library does not release with
// the context (a graph, a library's handle), and returns the
// registration's key, obj's weak pointer: obj's own close, and the
// collector's cleanup of one nobody closed, Forget it. obj is held only
// weakly, so that the cleanup still runs. A closed context registers
// nothing: there is nothing left to release obj with.
func CloseFirst[T any](ctx any, obj *T, close func(*T) error) weak.Pointer[T] {
	w := weak.Make(obj)
	OnClose(ctx, w, func() error {
		if o := w.Value(); o != nil {
			return close(o)
		}
		return nil // collected: its cleanup releases it
	})
	return w
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

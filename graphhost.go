package cuda

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/gocuda/cuda/internal/driver"
)

// hostFunc is the Go function of a host node, called by the driver
// through one C callback (hostTrampoline) with the function's number. refs
// counts the graphs and instances whose nodes call it: at 0 it is
// forgotten.
type hostFunc struct {
	id   uintptr
	fn   func()
	refs int32 // under hostFuncs.mu
}

// hostFuncs are the host nodes' functions by number. mu is a leaf.
var hostFuncs struct {
	mu   sync.Mutex
	next uintptr
	byID map[uintptr]*hostFunc
}

// hostTrampoline is the C function every host node calls: made once, as
// callbacks are never freed and a process may make only some thousands.
var hostTrampoline = sync.OnceValue(func() uintptr {
	return purego.NewCallback(func(id uintptr) {
		hostFuncs.mu.Lock()
		h := hostFuncs.byID[id]
		hostFuncs.mu.Unlock()
		if h == nil {
			return
		}
		// A panic would unwind into the driver's thread, which cannot
		// take it: it ends the process. Say so instead, and go on.
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintf(os.Stderr, "gocuda: a graph's host function panicked (recovered; the graph goes on): %v\n", r)
			}
		}()
		h.fn()
	})
})

func (h *hostFunc) acquire() {
	hostFuncs.mu.Lock()
	h.refs++
	hostFuncs.mu.Unlock()
}

func (h *hostFunc) drop() {
	hostFuncs.mu.Lock()
	if h.refs--; h.refs == 0 {
		delete(hostFuncs.byID, h.id)
	}
	hostFuncs.mu.Unlock()
}

// AddHost adds a node that calls fn on a thread of the driver's, once the
// nodes before it are done; the nodes after it wait for fn to return. fn
// must not call gocuda or CUDA (the driver forbids it from its own
// thread, and waiting for the graph from there would never end), and
// should return soon: it holds up the device's work behind it. A panic in
// fn is recovered and printed, not passed on. Host nodes are not allowed
// in a conditional body.
func (g *Graph) AddHost(after []*GraphNode, fn func()) (*GraphNode, error) {
	const op = "Graph.AddHost"
	if fn == nil {
		return nil, errorf(op, ErrInvalidValue, "nil function")
	}
	if err := g.notInBody(op, "a host node"); err != nil {
		return nil, err
	}
	r, err := g.begin(op, after)
	if err != nil {
		return nil, err
	}
	defer r.leaveRoot()
	hostFuncs.mu.Lock()
	if hostFuncs.byID == nil {
		hostFuncs.byID = map[uintptr]*hostFunc{}
	}
	hostFuncs.next++
	h := &hostFunc{id: hostFuncs.next, fn: fn, refs: 1}
	hostFuncs.byID[h.id] = h
	hostFuncs.mu.Unlock()
	p := driver.GraphNodeParams{Type: driver.GraphNodeHost}
	*(*driver.HostNodeParams)(unsafe.Pointer(&p.Params)) = driver.HostNodeParams{Fn: hostTrampoline(), UserData: h.id}
	n, err := g.addNode(op, after, &p)
	if err != nil {
		h.drop()
		return nil, err
	}
	r.b.refs.hosts = append(r.b.refs.hosts, h)
	return n, nil
}

package cuda

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/capturegate"
	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/track"
)

// CaptureMode says which calls a capture forbids while it runs, as CUDA
// defines it: calls that could wait for or disturb the captured work
// without being part of it (a synchronous copy, cuMemAlloc) fail, and end
// the capture with an error.
type CaptureMode int

const (
	// CaptureGlobal forbids such calls in every goroutine of the process
	// (CU_STREAM_CAPTURE_MODE_GLOBAL), the safe default. gocuda's own
	// cleanups of objects nobody closed, which the collector runs when it
	// likes, wait for the capture's end rather than fail it; the program's
	// other goroutines must do the same (a Synchronize, a Free, a
	// GraphExec.Close), or capture with CaptureThreadLocal.
	CaptureGlobal CaptureMode = iota
	// CaptureThreadLocal forbids them on the capturing OS thread only;
	// Capture runs its function on one locked thread.
	CaptureThreadLocal
	// CaptureRelaxed forbids nothing beyond what cannot be captured.
	CaptureRelaxed
)

func (m CaptureMode) String() string {
	switch m {
	case CaptureGlobal:
		return "global"
	case CaptureThreadLocal:
		return "thread-local"
	case CaptureRelaxed:
		return "relaxed"
	}
	return fmt.Sprintf("CaptureMode(%d)", int(m))
}

// graphUses counts the graphs and instances that use an object's device
// resource (a buffer's memory, a module's code), and for memory the NCCL
// registrations of it (internal/uses), which may then not be freed:
// replaying them, or NCCL, would touch it.
type graphUses struct{ n atomic.Int32 }

func (u *graphUses) inUse(op, what string) error {
	if n := u.n.Load(); n > 0 {
		return errorf(op, ErrInvalidValue, "%s is used by %d graph(s), graph instance(s) or NCCL registration(s): close them first", what, n)
	}
	return nil
}

// graphRefs are the uses a graph or an instance holds.
type graphRefs struct {
	allocs []*allocation
	mods   []*Module
	events []*Event
	hosts  []*hostFunc
}

func (r graphRefs) acquire() graphRefs {
	for _, a := range r.allocs {
		a.graphs.n.Add(1)
	}
	for _, m := range r.mods {
		m.graphs.n.Add(1)
	}
	for _, e := range r.events {
		e.graphs.n.Add(1)
	}
	for _, h := range r.hosts {
		h.acquire()
	}
	return r
}

func (r graphRefs) drop() {
	for _, a := range r.allocs {
		a.graphs.n.Add(-1)
	}
	for _, m := range r.mods {
		m.graphs.n.Add(-1)
	}
	for _, e := range r.events {
		e.graphs.n.Add(-1)
	}
	for _, h := range r.hosts {
		h.drop()
	}
}

// Graph is work captured from a stream (Stream.Capture) or built node by
// node (Context.NewGraph and the Add methods): instantiate it once
// (Instantiate) and launch the instance again and again. While a graph or
// an instance of it is open, the device buffers, modules and events its
// work uses cannot be freed or closed: Free and Close return
// ErrInvalidValue. The zero Graph is not usable.
//
// A Graph is safe for concurrent use; the nodes of one graph are added
// one at a time.
type Graph struct {
	life
	handle driver.Graph
	b      *graphBuild
	parent *Graph        // for a conditional node's body, the graph it is part of
	owner  *attach.Owner // its tie to its context's Close; nil for a body
}

// graphBuild is what a graph's work uses: recorded by a capture as it
// runs (Stream.capture), or by the Add methods, and shared by the graph and
// its conditional bodies. Each object is counted as used from its first
// use on, so that it cannot be freed under the capture either.
type graphBuild struct {
	// mu guards the driver's graph and its bodies, which the driver does
	// not let two threads change at once, and the fields below. Only
	// hostFuncs.mu, a leaf, is taken while it is held (counting uses).
	mu   sync.Mutex
	refs graphRefs
	seen map[any]bool
	// made is the graph's own memory, uncounted: allocated in stream
	// order during its capture, or by its alloc nodes; true once freed in
	// the graph.
	made map[*allocation]bool
	// lastModule is the module capturedModule recorded last: a capture's
	// launches mostly run one module's kernels, and need not take mu to
	// find it seen.
	lastModule atomic.Pointer[Module]
	// instances counts the graph's live instances (execState.counted):
	// added to only with mu held, by the Instantiate or Update that made
	// the instance after finding the count allowed it, so that two cannot
	// both find a graph that allocates memory without an instance; taken
	// from without it (an instance closed, forgotten, or moved to another
	// graph by Update, which holds that graph's mu), so that no graphBuild
	// mu is ever taken while another is held.
	instances atomic.Int32
	// joined is the streams joined to the capture under way (Stream.joined),
	// and ended whether it has ended, after which no stream joins it.
	joined []*Stream
	ended  bool
}

// oneInstance is the error for a second instance of a graph that
// allocates memory, refused before the driver would refuse it.
func oneInstance(op string) error {
	return errorf(op, ErrInvalidValue, "a graph that allocates memory (AllocAsync in its capture, or AddAlloc) may have one instance at a time: close the other first")
}

func newGraphBuild() *graphBuild {
	return &graphBuild{seen: map[any]bool{}, made: map[*allocation]bool{}}
}

// root returns the graph g is part of: g, or the graph a body is in.
func (g *Graph) root() *Graph {
	for g.parent != nil {
		g = g.parent
	}
	return g
}

// GraphExec is an instantiated graph, launched on a stream with Launch,
// and updated from a newer capture with Update. The zero GraphExec is not
// usable.
type GraphExec struct {
	life
	st    *execState
	owner *attach.Owner // its tie to its context's Close
}

// execState is a GraphExec's driver instance and the uses it holds, which
// Update replaces; apart from the GraphExec so that a forgotten one's
// cleanup can release them.
type execState struct {
	// mu guards the fields against Update, Launch and SetKernelParams.
	// Lock order: mu, then the graphBuild.mu of the graph Update takes.
	mu     sync.Mutex
	handle driver.GraphExec
	refs   graphRefs
	graph  *Graph // the graph it was made or last updated from, whose nodes SetKernelParams takes
	// counted is the build of that graph, whose instances count this
	// one (nil once released); allocates, whether that graph has memory
	// nodes, which the driver updates in no instance in place.
	counted   *graphBuild
	allocates bool
	// set is the memory each node's arguments use where SetKernelParams
	// changed them, counted by the instance: a node set again drops what
	// it used before, so that a loop setting arguments holds only what
	// the nodes name now.
	set map[*GraphNode][]*allocation
}

// dropSet drops the uses of the arguments SetKernelParams set: the
// instance runs its graph's again (Update), or is gone.
func (x *execState) dropSet() {
	for _, uses := range x.set {
		for _, m := range uses {
			m.graphs.n.Add(-1)
		}
	}
	x.set = nil
}

// drop releases everything the instance counts.
func (x *execState) drop() {
	x.refs.drop()
	x.refs = graphRefs{}
	x.dropSet()
}

// countAs makes the instance count as an instance of b's graph, and no
// longer of the graph it counted as before (b.mu held).
func (x *execState) countAs(b *graphBuild) {
	if x.counted == b {
		return
	}
	if x.counted != nil {
		x.counted.instances.Add(-1)
	}
	b.instances.Add(1)
	x.counted = b
}

// release drops everything the instance counts, and its count as an
// instance of its graph: the instance is gone.
func (x *execState) release() {
	x.drop()
	if x.counted != nil {
		x.counted.instances.Add(-1)
		x.counted = nil
	}
}

// Capture records the work that record queues on s into a graph, instead
// of running it: kernel launches, device-to-device copies, memsets, and
// stream-ordered allocations and frees (AllocAsync, Free), which become the
// graph's own memory. Capture ends when record returns, or panics: then
// the capture is ended and thrown away, and the panic goes on.
//
// Some calls cannot be captured and return an error wrapping
// ErrInvalidValue while s captures: waiting for s (Synchronize, Query, and
// the synchronous calls on a buffer allocated on s), copies between the
// device and host memory (which a replay would read or write again, long
// after the Go memory may have moved on or been freed; copy outside the
// capture, or through device memory), StagingBuffer transfers, and
// closing s. A buffer allocated during the capture belongs to the graph's
// work: only the capture's work may use it (on s or a stream joined to
// it; elsewhere ErrInvalidValue), and it must be freed in the capture too,
// or Capture returns an error;
// a buffer allocated before the capture cannot be freed in it (Free and
// FreeOn on s return ErrInvalidValue): free it outside the capture.
//
// Work on other streams joins the capture where such a stream waits on an
// event recorded on s during it (Stream.WaitEvent): a fork, whose branch
// must be joined back to s (an event recorded on the other stream, waited
// on by s) before record returns. Until the capture ends the other stream
// captures too, with the same rules.
//
// If record returns an error, or the capture fails, Capture returns it and
// no graph.
func (s *Stream) Capture(mode CaptureMode, record func() error) (_ *Graph, err error) {
	const op = "Stream.Capture"
	if err := s.valid(op); err != nil {
		return nil, err
	}
	if mode < CaptureGlobal || mode > CaptureRelaxed {
		return nil, errorf(op, ErrInvalidValue, "capture mode %v", mode)
	}
	if record == nil {
		return nil, errorf(op, ErrInvalidValue, "nil record function")
	}
	// The driver's thread-local mode ties the capture to the OS thread
	// that began it; the context stays bound for the whole capture, so
	// that ending it needs no call that could fail first.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := s.enter(op); err != nil {
		return nil, err
	}
	defer s.leave()
	if err := s.ctx.settleLegacy(op); err != nil {
		return nil, err
	}
	if s.joined.Load() != nil {
		return nil, errorf(op, ErrInvalidValue, "the stream is capturing already, joined to another stream's capture by Stream.WaitEvent")
	}
	cs := newGraphBuild()
	if !s.capture.CompareAndSwap(nil, cs) {
		return nil, errorf(op, ErrInvalidValue, "the stream is already capturing")
	}
	// The memory the stream keeps for reuse is freed before the capture,
	// and none is kept during it: the capture's own is the graph's.
	if err := s.cache.pause(op); err != nil {
		s.capture.Store(nil)
		return nil, err
	}
	// A global capture forbids every thread the calls the collector's
	// cleanups make: they wait for its end (internal/capturegate).
	if mode == CaptureGlobal {
		capturegate.Begin()
	}
	if err := check(op, driver.StreamBeginCapture(s.ctx.handle, s.handle, int32(mode))); err != nil {
		if mode == CaptureGlobal {
			capturegate.End()
		}
		s.cache.resume()
		s.capture.Store(nil)
		return nil, err
	}
	ended := false
	var unfreed int         // buffers the capture allocated and did not free
	var unfreedSize uintptr // the bytes of one of them
	end := func() (driver.Graph, error) {
		ended = true
		// Memory the capture allocated and did not free fails it: that
		// memory is closed first, while the streams still capture, so
		// that a call still using it (another goroutine's, on a joined
		// stream) is captured, not run on memory the failed graph takes
		// with it.
		unfreed, unfreedSize = cs.closeUnfreed()
		defer s.capture.Store(nil)
		defer s.cache.resume()
		defer cs.endJoins()
		if mode == CaptureGlobal {
			defer capturegate.End()
		}
		var g driver.Graph
		st := driver.StreamEndCapture(s.ctx.handle, s.handle, &g)
		if !st.OK() {
			// The capture must end whatever happened: one left running
			// would refuse every later use of the stream.
			var status int32
			if driver.StreamIsCapturing(s.ctx.handle, s.handle, &status).OK() && status != driver.StreamCaptureStatusNone {
				var again driver.Graph
				if driver.StreamEndCapture(s.ctx.handle, s.handle, &again).OK() && again != 0 {
					driver.GraphDestroy(s.ctx.handle, again)
				}
			}
			return 0, check(op, st)
		}
		return g, nil
	}
	discard := func(g driver.Graph) { driver.GraphDestroy(s.ctx.handle, g) }
	// Whatever becomes of the capture, its uses and its memory go to the
	// graph, or go.
	kept := false
	defer func() {
		if !kept {
			cs.gone()
		}
	}()
	defer func() {
		if !ended { // record panicked: end the capture, drop the graph
			if g, err := end(); err == nil {
				discard(g)
			}
		}
	}()
	rerr := record()
	g, err := end()
	if err == nil && rerr != nil {
		discard(g)
	}
	switch {
	case rerr != nil:
		return nil, rerr
	case err != nil:
		return nil, err
	}
	if unfreed > 0 {
		discard(g)
		return nil, errorf(op, ErrInvalidValue, "a buffer of %s allocated during the capture was not freed in it: the graph's memory must be freed in the graph", formatBytes(unfreedSize))
	}
	kept = true
	return newGraph(op, s.ctx, g, cs)
}

// newGraph makes the Graph of the driver's graph h, which b's uses are
// for, tied to the context's Close. Called with ctx bound: where the
// context is closing, it destroys h and returns the error.
func newGraph(op string, ctx *Context, h driver.Graph, b *graphBuild) (*Graph, error) {
	gr := &Graph{handle: h, b: b}
	gr.owner = attach.NewOwner(ctx, gr, (*Graph).Close, func() error {
		if err := boundErr(ctx, func() error { return check("Context.Close", driver.GraphDestroy(ctx.handle, h)) }); err != nil {
			return err
		}
		b.gone()
		return nil
	})
	gr.arm(ctx, track.Graph, runtime.AddCleanup(gr, func(o *attach.Owner) { forgottenOwned(track.Graph, o) }, gr.owner))
	// Registered once whole: the context's Close may close it at once.
	if gr.owner.Register() != nil { // the context is closing
		return nil, errors.Join(closed(op, "the context"), gr.closeNow(func() error {
			return check(op, driver.GraphDestroy(ctx.handle, h))
		}, b.gone))
	}
	return gr, nil
}

// gone drops the graph's uses and closes its own memory, once the graph
// is destroyed or its capture came to nothing. A second call does nothing.
func (b *graphBuild) gone() {
	b.mu.Lock()
	b.refs.drop()
	b.refs = graphRefs{}
	made := slices.Collect(maps.Keys(b.made))
	b.mu.Unlock()
	closeMade(made)
}

// closeUnfreed closes the memory the capture allocated and did not free
// (a capture's end), and returns how many buffers and one's size.
func (b *graphBuild) closeUnfreed() (int, uintptr) {
	b.mu.Lock()
	var open []*allocation
	for m := range b.made {
		if !m.lt.IsClosed() {
			open = append(open, m)
		}
	}
	b.mu.Unlock()
	closeMade(open)
	if len(open) == 0 {
		return 0, 0
	}
	return len(open), open[0].size
}

// closeMade closes a graph's own memory, each buffer once the calls using
// it are done: without b.mu, which such a call may wait for (captured).
func closeMade(made []*allocation) {
	for _, m := range made {
		m.lt.Close(func() (bool, error) { m.freed(); return true, nil })
	}
}

// join records that s joins the capture, which it must not have ended
// (then join returns false). The caller paused s's cache.
func (b *graphBuild) join(s *Stream) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return false
	}
	b.joined = append(b.joined, s)
	s.joined.Store(b)
	return true
}

// unjoin undoes a join whose wait the driver refused.
func (b *graphBuild) unjoin(s *Stream) {
	b.mu.Lock()
	b.joined = slices.DeleteFunc(b.joined, func(x *Stream) bool { return x == s })
	b.mu.Unlock()
	s.joined.Store(nil)
	s.cache.resume()
}

// endJoins ends the capture for the streams joined to it, as the driver's
// end of the capture does, whether it made a graph or failed.
func (b *graphBuild) endJoins() {
	b.mu.Lock()
	b.ended = true
	joined := b.joined
	b.joined = nil
	b.mu.Unlock()
	for _, s := range joined {
		s.joined.Store(nil)
		s.cache.resume()
	}
}

// captured records, for a capture under way, that its work uses m.
func (b *graphBuild) captured(m *allocation) {
	b.mu.Lock()
	b.useMem(m)
	b.mu.Unlock()
}

// capturedModule records that a capture's work runs m's code.
func (b *graphBuild) capturedModule(m *Module) {
	if b.lastModule.Load() == m {
		return
	}
	b.mu.Lock()
	b.useModule(m)
	b.mu.Unlock()
	b.lastModule.Store(m)
}

// allocated records memory a capture allocated in stream order: the
// graph's, which the capture must free.
func (b *graphBuild) allocated(m *allocation) {
	b.mu.Lock()
	b.made[m] = true
	b.mu.Unlock()
}

// owns reports whether m is memory the graph allocates.
func (b *graphBuild) owns(m *allocation) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.made[m]
	return ok
}

// capturing returns an error if s is capturing: op cannot be captured.
func (s *Stream) capturing(op, why string) error {
	if s.capture.Load() != nil {
		return errorf(op, ErrInvalidValue, "the stream is capturing a graph (Stream.Capture): %s", why)
	}
	if s.joined.Load() != nil {
		return errorf(op, ErrInvalidValue, "the stream is capturing into another stream's graph, joined to its Stream.Capture by Stream.WaitEvent: %s", why)
	}
	return nil
}

func (g *Graph) valid(op string) error {
	if g == nil || g.root().ctx == nil {
		return errorf(op, ErrInvalidValue, "nil or zero *Graph: make one with Stream.Capture or Context.NewGraph")
	}
	return g.root().life.valid(op, "the graph")
}

// enterRoot holds the graph g is part of, with its context bound, and
// locks its nodes; leaveRoot undoes it.
func (g *Graph) enterRoot(op string) (*Graph, error) {
	r := g.root()
	if err := r.enter(op, "the graph"); err != nil {
		return nil, err
	}
	r.b.mu.Lock()
	return r, nil
}

func (r *Graph) leaveRoot() {
	r.b.mu.Unlock()
	r.leave()
}

// Nodes returns the number of nodes of the graph: one per captured
// operation, as the driver counts them.
func (g *Graph) Nodes() (int, error) {
	const op = "Graph.Nodes"
	if err := g.valid(op); err != nil {
		return 0, err
	}
	r, err := g.enterRoot(op)
	if err != nil {
		return 0, err
	}
	defer r.leaveRoot()
	var n uintptr
	if err := check(op, driver.GraphGetNodes(r.ctx.handle, g.handle, nil, &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// WriteDot writes the graph to w in Graphviz's dot language, as the driver
// describes it (cuGraphDebugDotPrint), with every node's parameters when
// verbose.
func (g *Graph) WriteDot(w io.Writer, verbose bool) error {
	const op = "Graph.WriteDot"
	if err := g.valid(op); err != nil {
		return err
	}
	if w == nil {
		return errorf(op, ErrInvalidValue, "nil io.Writer")
	}
	f, err := os.CreateTemp("", "gocuda-graph-*.dot")
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	path := f.Name()
	f.Close()
	defer os.Remove(path)
	r, err := g.enterRoot(op)
	if err != nil {
		return err
	}
	var flags uint32
	if verbose {
		flags = driver.GraphDebugDotFlagsVerbose
	}
	cpath := append([]byte(path), 0)
	err = check(op, driver.GraphDebugDotPrint(r.ctx.handle, g.handle, &cpath[0], flags))
	r.leaveRoot()
	if err != nil {
		return err
	}
	dot, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	_, err = w.Write(dot)
	return err
}

// Instantiate makes an instance of the graph, to launch. The instance
// keeps what the graph's work uses from being freed, and outlives the
// graph if the graph is closed first. A graph that allocates memory
// (AllocAsync in its capture, or AddAlloc) may have one instance at a
// time, as CUDA rules: instantiating it again before the first instance
// is closed (or updated to another graph) returns ErrInvalidValue; an
// instance Update made of it counts as one.
func (g *Graph) Instantiate() (*GraphExec, error) {
	const op = "Graph.Instantiate"
	if err := g.valid(op); err != nil {
		return nil, err
	}
	if g.parent != nil {
		return nil, errorf(op, ErrInvalidValue, "the graph is the body of a conditional node, which runs as part of its graph: instantiate that graph")
	}
	r, err := g.enterRoot(op)
	if err != nil {
		return nil, err
	}
	defer r.leaveRoot()
	if err := g.b.allFreed(op); err != nil {
		return nil, err
	}
	allocates := len(g.b.made) > 0
	if allocates && g.b.instances.Load() > 0 {
		return nil, oneInstance(op)
	}
	st := &execState{graph: g, allocates: allocates}
	if err := check(op, driver.GraphInstantiateWithFlags(g.ctx.handle, &st.handle, g.handle, 0)); err != nil {
		return nil, err
	}
	st.countAs(g.b)
	st.refs = g.b.refs.acquire()
	e := &GraphExec{st: st}
	ctx := g.ctx
	e.owner = attach.NewOwner(ctx, e, (*GraphExec).Close, func() error {
		if err := boundErr(ctx, func() error { return check("Context.Close", driver.GraphExecDestroy(ctx.handle, st.handle)) }); err != nil {
			return err
		}
		st.release()
		return nil
	})
	e.arm(ctx, track.GraphExec, runtime.AddCleanup(e, func(o *attach.Owner) { forgottenOwned(track.GraphExec, o) }, e.owner))
	// Registered once whole: the context's Close may close it at once.
	if e.owner.Register() != nil { // the context is closing
		return nil, errors.Join(closed(op, "the context"), e.closeNow(func() error {
			return check(op, driver.GraphExecDestroy(ctx.handle, st.handle))
		}, st.release))
	}
	return e, nil
}

// allFreed returns an error unless every alloc node's memory is freed by
// a free node of the graph (b.mu held): a graph whose launch left memory
// allocated could not be launched again.
func (b *graphBuild) allFreed(op string) error {
	for m, freed := range b.made {
		if !freed {
			return errorf(op, ErrInvalidValue, "the graph allocates %s (Graph.AddAlloc) that no free node frees: add one (Graph.AddFree)", formatBytes(m.size))
		}
	}
	return nil
}

// Close releases the graph; instances made from it stay usable.
func (g *Graph) Close() error {
	const op = "Graph.Close"
	if g == nil || g.root().ctx == nil {
		return nil
	}
	if g.parent != nil {
		return errorf(op, ErrInvalidValue, "the graph is the body of a conditional node: it is closed with the graph it is part of")
	}
	return g.close(op, "the graph", func() error {
		return check(op, driver.GraphDestroy(g.ctx.handle, g.handle))
	}, func() {
		g.b.gone()
		g.owner.Closed()
	})
}

func (e *GraphExec) valid(op string) error {
	if e == nil || e.ctx == nil {
		return errorf(op, ErrInvalidValue, "nil or zero *GraphExec: make one with Graph.Instantiate")
	}
	return e.life.valid(op, "the graph instance")
}

// Launch queues the instance's work on s, which must belong to the
// graph's context. A graph may be launched again before its previous
// launch finished: the launches run one after the other.
func (e *GraphExec) Launch(s *Stream) error {
	const op = "GraphExec.Launch"
	if err := e.valid(op); err != nil {
		return err
	}
	if err := s.valid(op); err != nil {
		return err
	}
	if s.ctx != e.ctx {
		return errorf(op, ErrInvalidValue, "the stream belongs to another context than the graph")
	}
	if err := s.capturing(op, "launching a graph into a capture is not supported"); err != nil {
		return err
	}
	if err := enterWith(op, &e.life, "the graph instance", &s.life, "the stream"); err != nil {
		return err
	}
	defer leaveWith(&e.life, &s.life)
	if err := s.willQueue(op); err != nil {
		return err
	}
	e.st.mu.Lock()
	defer e.st.mu.Unlock()
	s.uses(e.st.refs.allocs...)
	for _, uses := range e.st.set {
		s.uses(uses...)
	}
	return check(op, driver.GraphLaunch(e.ctx.handle, e.st.handle, s.handle))
}

// Update makes the instance run g's work from now on: the capture once,
// replay many, re-capture when the sizes change loop. Where g has the
// instance's shape (the same nodes, kernels and kinds of work, with other
// arguments, sizes or addresses), the instance is updated in place, which
// is cheap; otherwise Update instantiates g anew in its place and reports
// reinstantiated. Either way the instance is still e, and launches queued
// before keep the work they had.
//
// The driver updates no instance to or from another graph that allocates
// memory (AllocAsync in its capture, or AddAlloc) in place (an instance of
// such a graph from that graph itself it does): Update instantiates such a
// graph anew, which, as a graph that allocates may have one instance at a
// time, it refuses with ErrInvalidValue where the graph has an instance
// already.
func (e *GraphExec) Update(g *Graph) (reinstantiated bool, err error) {
	const op = "GraphExec.Update"
	if err := e.valid(op); err != nil {
		return false, err
	}
	if err := g.valid(op); err != nil {
		return false, err
	}
	if g.parent != nil {
		return false, errorf(op, ErrInvalidValue, "the graph is the body of a conditional node: update from the graph it is part of")
	}
	if g.ctx != e.ctx {
		return false, errorf(op, ErrInvalidValue, "the graph belongs to another context than the instance")
	}
	if err := enterWith(op, &e.life, "the graph instance", &g.life, "the graph"); err != nil {
		return false, err
	}
	defer leaveWith(&e.life, &g.life)
	x := e.st
	x.mu.Lock()
	defer x.mu.Unlock()
	g.b.mu.Lock()
	defer g.b.mu.Unlock()
	if err := g.b.allFreed(op); err != nil {
		return false, err
	}
	allocates := len(g.b.made) > 0
	var info driver.GraphExecUpdateResultInfo
	st := driver.GraphExecUpdate(e.ctx.handle, x.handle, g.handle, unsafe.Pointer(&info))
	switch {
	case st.OK():
		x.drop()
		x.refs = g.b.refs.acquire()
		x.graph = g
		x.countAs(g.b)
		x.allocates = allocates
		return false, nil
	case st.Code == driver.ErrorGraphExecUpdateFailure:
		// Not in place: instantiated anew below.
	case st.Code == driver.ErrorNotSupported && (allocates || x.allocates):
		// The driver's answer for memory nodes in either graph, where
		// it cannot update in place: instantiated anew below.
	default:
		return false, check(op, st)
	}
	if allocates && g.b.instances.Load() > 0 {
		if x.counted == g.b {
			return false, errorf(op, ErrInvalidValue, "the instance is already the one instance at a time a graph that allocates memory may have, and the driver cannot update it in place: close the instance and instantiate the graph again")
		}
		return false, oneInstance(op)
	}
	var h driver.GraphExec
	if err := check(op, driver.GraphInstantiateWithFlags(e.ctx.handle, &h, g.handle, 0)); err != nil {
		return false, err
	}
	// The old instance's queued launches keep running: the driver
	// releases it once they are done.
	if err := check(op, driver.GraphExecDestroy(e.ctx.handle, x.handle)); err != nil {
		driver.GraphExecDestroy(e.ctx.handle, h)
		return false, err
	}
	x.handle = h
	x.drop()
	x.refs = g.b.refs.acquire()
	x.graph = g
	x.countAs(g.b)
	x.allocates = allocates
	return true, nil
}

// Close releases the instance. Launches already queued run to the end.
func (e *GraphExec) Close() error {
	const op = "GraphExec.Close"
	if e == nil || e.ctx == nil {
		return nil
	}
	return e.close(op, "the graph instance", func() error {
		e.st.mu.Lock()
		defer e.st.mu.Unlock()
		return check(op, driver.GraphExecDestroy(e.ctx.handle, e.st.handle))
	}, func() {
		e.st.release()
		e.owner.Closed()
	})
}

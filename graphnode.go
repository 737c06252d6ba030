package cuda

import (
	"runtime"
	"strings"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
)

// GraphNode is one node of a graph built node by node: a kernel, a copy, a
// memset, a host function, an event record or wait, an allocation or a
// free, or a conditional. Pass nodes in the after list of a later node to make it run
// after them; nodes with no path between them may run at the same time.
// A node belongs to its graph and needs no closing. The zero GraphNode is
// not usable.
type GraphNode struct {
	g      *Graph // the graph, or conditional body, it is in
	handle driver.GraphNode
	fn     *Function    // a kernel node's kernel
	attrs  LaunchConfig // a kernel node's launch attributes (nodeAttributes), which an instance keeps
	// after is the nodes it runs after, as added: the library adds no
	// edge later, so that AddFree can find the alloc node among them.
	after []*GraphNode
}

// NewGraph returns an empty graph of the context, to build node by node
// with the Graph's Add methods (CUDA 12.2 and later).
func (c *Context) NewGraph() (*Graph, error) {
	const op = "Context.NewGraph"
	if err := c.bind(op); err != nil {
		return nil, err
	}
	defer c.unbind()
	var h driver.Graph
	if err := check(op, driver.GraphCreate(c.handle, &h, 0)); err != nil {
		return nil, err
	}
	return newGraph(op, c, h, newGraphBuild())
}

// addNode adds a node of params p to g after the nodes after, with the
// graph held, bound and locked by the caller.
func (g *Graph) addNode(op string, after []*GraphNode, p *driver.GraphNodeParams) (*GraphNode, error) {
	deps := make([]driver.GraphNode, len(after))
	for i, n := range after {
		deps[i] = n.handle
	}
	var depsPtr unsafe.Pointer
	if len(deps) > 0 {
		depsPtr = unsafe.Pointer(&deps[0])
	}
	var h driver.GraphNode
	r := g.root()
	if err := check(op, driver.GraphAddNode(r.ctx.handle, &h, g.handle, depsPtr, uintptr(len(deps)), unsafe.Pointer(p))); err != nil {
		return nil, err
	}
	return &GraphNode{g: g, handle: h, after: append([]*GraphNode(nil), after...)}, nil
}

// runsAfter reports whether every run of a node after the nodes after
// comes after node n: n is one of them, or one of theirs, and so on.
func runsAfter(after []*GraphNode, n *GraphNode) bool {
	seen := map[*GraphNode]bool{}
	for len(after) > 0 {
		m := after[len(after)-1]
		after = after[:len(after)-1]
		if m == n {
			return true
		}
		if !seen[m] {
			seen[m] = true
			after = append(after, m.after...)
		}
	}
	return false
}

// checkAfter checks that the nodes of after are nodes of g.
func (g *Graph) checkAfter(op string, after []*GraphNode) error {
	for i, n := range after {
		switch {
		case n == nil || n.g == nil:
			return errorf(op, ErrInvalidValue, "node %d of the after list is nil or zero", i)
		case n.g != g:
			return errorf(op, ErrInvalidValue, "node %d of the after list is a node of another graph (or conditional body)", i)
		}
	}
	return nil
}

// begin checks g and after and enters g's root graph for an Add method.
func (g *Graph) begin(op string, after []*GraphNode) (*Graph, error) {
	if err := g.valid(op); err != nil {
		return nil, err
	}
	if err := g.checkAfter(op, after); err != nil {
		return nil, err
	}
	return g.enterRoot(op)
}

// notInBody refuses, for a conditional body, the nodes the driver allows
// only in a graph itself.
func (g *Graph) notInBody(op, what string) error {
	if g != nil && g.parent != nil {
		return errorf(op, ErrInvalidValue, "%s in the body of a conditional node, which holds only kernel, copy, memset and conditional nodes", what)
	}
	return nil
}

// checkMem refuses memory of another graph's alloc node, which exists
// only while that graph runs (b.mu held).
func (b *graphBuild) checkMem(op string, m *allocation) error {
	if _, ok := b.made[m]; m.graphOnly && !ok {
		return errorf(op, ErrInvalidValue, "memory of another graph's alloc node: it exists only while that graph runs")
	}
	return nil
}

// useMem counts memory checked by checkMem as used by the graph (b.mu
// held), once its node is added, unless it is the graph's own.
func (b *graphBuild) useMem(m *allocation) {
	if _, own := b.made[m]; own || b.seen[m] {
		return
	}
	b.seen[m] = true
	m.graphs.n.Add(1)
	b.refs.allocs = append(b.refs.allocs, m)
}

func (b *graphBuild) useModule(m *Module) {
	if !b.seen[m] {
		b.seen[m] = true
		m.graphs.n.Add(1)
		b.refs.mods = append(b.refs.mods, m)
	}
}

func (b *graphBuild) useEvent(e *Event) {
	if !b.seen[e] {
		b.seen[e] = true
		e.graphs.n.Add(1)
		b.refs.events = append(b.refs.events, e)
	}
}

// nodeAttributes returns the launch attributes of cfg, with the cluster's
// shape normalized: what a kernel node keeps of a configuration.
func (cfg *LaunchConfig) nodeAttributes() LaunchConfig {
	a := LaunchConfig{Cooperative: cfg.Cooperative, ClusterPolicy: cfg.ClusterPolicy, Priority: cfg.Priority, ProgrammaticDependent: cfg.ProgrammaticDependent}
	if cfg.Cluster != (Dim3{}) {
		a.Cluster = cfg.Cluster.norm()
	}
	return a
}

// kernelParams checks a kernel node's configuration, its attributes
// included (with the context bound), and lays out its arguments in pb,
// holding the buffers among them; the caller releases held. The node's
// attributes are set once it is added (GraphNode.setAttributes).
func (f *Function) kernelParams(op string, pb *paramBlock, cfg LaunchConfig, args []any) (driver.GraphNodeParams, []heldLife, error) {
	var p driver.GraphNodeParams
	if cfg.Stream != nil {
		return p, nil, errorf(op, ErrInvalidValue, "a graph node runs on no stream of its own: leave LaunchConfig.Stream nil")
	}
	if cfg.ProgrammaticDependent {
		return p, nil, errorf(op, ErrNotSupported, "a programmatic dependent launch on a graph node: capture the launches (Stream.Capture), which makes the driver's edge between them programmatic")
	}
	dims, err := cfg.dims(op)
	if err != nil {
		return p, nil, err
	}
	if dims[0] == 0 {
		return p, nil, errorf(op, ErrInvalidValue, "a grid of no blocks: a kernel node must launch at least one")
	}
	shape := launchShape{dims: dims}
	if cfg.hasAttributes() {
		if _, err := cfg.checkShape(op, shape.grid()); err != nil {
			return p, nil, err
		}
	}
	held, err := f.marshal(op, pb, args, []heldLife{{&f.mod.life, "the kernel's module"}})
	if err != nil {
		return p, nil, err
	}
	if held, err = holdAll(op, held); err != nil {
		return p, nil, err
	}
	if cfg.hasAttributes() {
		if err := f.checkAttributes(op, &cfg, shape.grid(), shape.block()); err != nil {
			releaseAll(held)
			return p, nil, err
		}
	}
	p.Type = driver.GraphNodeKernel
	k := (*driver.KernelNodeParams)(unsafe.Pointer(&p.Params))
	*k = driver.KernelNodeParams{
		Func: f.handle, GridDimX: dims[0], GridDimY: dims[1], GridDimZ: dims[2],
		BlockDimX: dims[3], BlockDimY: dims[4], BlockDimZ: dims[5], SharedMem: uint32(cfg.SharedMemBytes),
		KernelParams: uintptr(unsafe.Pointer(&pb.ptrs[0])), Ctx: f.mod.ctx.handle,
	}
	return p, held, nil
}

// kernelMemory returns the device memory among a kernel's arguments.
func kernelMemory(args []any) []*allocation {
	var ms []*allocation
	for _, a := range args {
		if v, ok := a.(Memory); ok {
			if _, m := v.deviceMemory(); m != nil {
				ms = append(ms, m)
			}
		}
	}
	return ms
}

// AddKernel adds a node that launches f with cfg's grid, block and dynamic
// shared memory on args, as Function.Launch takes them, and with cfg's
// launch attributes, checked as Launch checks them: Cooperative, Cluster
// and ClusterPolicy, Priority. cfg.Stream must be nil, and
// ProgrammaticDependent unset: capture such launches instead, whose edges
// the driver then makes programmatic. The arguments are copied: what args
// point to may change afterwards, and GraphExec.SetKernelParams changes
// them in an instance.
func (g *Graph) AddKernel(after []*GraphNode, f *Function, cfg LaunchConfig, args ...any) (*GraphNode, error) {
	const op = "Graph.AddKernel"
	if err := f.valid(op); err != nil {
		return nil, err
	}
	r, err := g.begin(op, after)
	if err != nil {
		return nil, err
	}
	defer r.leaveRoot()
	if f.mod.ctx != r.ctx {
		return nil, errorf(op, ErrInvalidValue, "the kernel's module belongs to another context than the graph")
	}
	pb := paramBlocks.Get().(*paramBlock)
	defer paramBlocks.Put(pb)
	p, held, err := f.kernelParams(op, pb, cfg, args)
	if err != nil {
		return nil, err
	}
	defer releaseAll(held)
	mems := kernelMemory(args)
	for _, m := range mems {
		if err := r.b.checkMem(op, m); err != nil {
			return nil, err
		}
	}
	n, err := g.addNode(op, after, &p)
	runtime.KeepAlive(pb)
	if err != nil {
		return nil, err
	}
	n.fn, n.attrs = f, cfg.nodeAttributes()
	if err := n.setAttributes(op, pb); err != nil {
		return nil, err
	}
	for _, m := range mems {
		r.b.useMem(m)
	}
	r.b.useModule(f.mod)
	return n, nil
}

// setAttributes sets n.attrs on n, a kernel node just added
// (cuGraphKernelNodeSetAttribute), with the graph held, bound and locked.
// When the driver refuses one, n is taken out of the graph again
// (cuGraphDestroyNode), which is left as it was.
func (n *GraphNode) setAttributes(op string, pb *paramBlock) error {
	a := &n.attrs
	if !a.hasAttributes() {
		return nil
	}
	ctx := n.g.root().ctx.handle
	ex := (*driver.LaunchConfig)(pb.launchConfig(a, [6]uint32{}, a.Cluster))
	for _, attr := range pb.attrs[:ex.NumAttrs] {
		if err := check(op, driver.GraphKernelNodeSetAttribute(ctx, n.handle, attr.ID, unsafe.Pointer(&attr.Value))); err != nil {
			err.(*Error).Detail = join(err.(*Error).Detail, "setting the kernel node's launch attributes"+a.attributeText())
			if r := driver.GraphDestroyNode(ctx, n.handle); !r.OK() {
				err.(*Error).Detail += "; the node could not be taken out again: " + check(op, r).Error()
			}
			return err
		}
	}
	return nil
}

// graphMemory returns m's address, size and allocation, checked to be of
// the graph's context, and holds the allocation: the caller releases it.
func (r *Graph) graphMemory(op, what string, m Memory) (driver.DevicePtr, uintptr, *allocation, error) {
	if m == nil {
		return 0, 0, nil, errorf(op, ErrInvalidValue, "nil %s", what)
	}
	ptr, a := m.deviceMemory()
	if a == nil {
		return 0, 0, nil, errorf(op, ErrInvalidValue, "%s is a nil or zero buffer", what)
	}
	if a.ctx != r.ctx {
		return 0, 0, nil, errorf(op, ErrInvalidValue, "%s belongs to another context than the graph", what)
	}
	// Held until the graph's use is counted: a Free now waits for the
	// hold, then sees the use.
	if err := a.hold(op, what); err != nil {
		return 0, 0, nil, err
	}
	return ptr, m.deviceBytes(), a, nil
}

// AddCopy adds a node that copies src to dst, device memory of the same
// size (in bytes) in the graph's context. A copy of nothing is an empty
// node.
func (g *Graph) AddCopy(after []*GraphNode, dst, src Memory) (*GraphNode, error) {
	const op = "Graph.AddCopy"
	r, err := g.begin(op, after)
	if err != nil {
		return nil, err
	}
	defer r.leaveRoot()
	dp, dn, da, err := r.graphMemory(op, "the destination", dst)
	if err != nil {
		return nil, err
	}
	defer da.release()
	sp, sn, sa, err := r.graphMemory(op, "the source", src)
	if err != nil {
		return nil, err
	}
	defer sa.release()
	if dn != sn {
		return nil, errorf(op, ErrInvalidValue, "the destination has %d bytes, the source %d: a copy node copies whole buffers of one size", dn, sn)
	}
	var p driver.GraphNodeParams
	if dn == 0 {
		p.Type = driver.GraphNodeEmpty
	} else {
		p.Type = driver.GraphNodeMemcpy
		c := (*driver.MemcpyNodeParams)(unsafe.Pointer(&p.Params))
		c.CopyCtx = r.ctx.handle
		c.Copy = driver.Memcpy3D{
			SrcMemoryType: driver.MemoryTypeDevice, SrcDevice: sp,
			DstMemoryType: driver.MemoryTypeDevice, DstDevice: dp,
			WidthInBytes: dn, Height: 1, Depth: 1,
		}
	}
	return r.addMemNode(op, g, after, &p, da, sa)
}

// addMemNode adds a copy or memset node of g, which uses mems, after
// checking them; they are counted once the node is added.
func (r *Graph) addMemNode(op string, g *Graph, after []*GraphNode, p *driver.GraphNodeParams, mems ...*allocation) (*GraphNode, error) {
	for _, m := range mems {
		if err := r.b.checkMem(op, m); err != nil {
			return nil, err
		}
	}
	n, err := g.addNode(op, after, p)
	if err != nil {
		return nil, err
	}
	for _, m := range mems {
		r.b.useMem(m)
	}
	return n, nil
}

// AddMemset adds a node that sets every element of dst, of elementBytes
// bytes each (1, 2 or 4), to value. A memset of nothing is an empty node.
func (g *Graph) AddMemset(after []*GraphNode, dst Memory, value uint32, elementBytes int) (*GraphNode, error) {
	const op = "Graph.AddMemset"
	if elementBytes != 1 && elementBytes != 2 && elementBytes != 4 {
		return nil, errorf(op, ErrInvalidValue, "elements of %d bytes: a memset sets elements of 1, 2 or 4 bytes", elementBytes)
	}
	if elementBytes < 4 && value >= 1<<(8*elementBytes) {
		return nil, errorf(op, ErrInvalidValue, "value %#x does not fit an element of %d bytes", value, elementBytes)
	}
	r, err := g.begin(op, after)
	if err != nil {
		return nil, err
	}
	defer r.leaveRoot()
	ptr, n, a, err := r.graphMemory(op, "the destination", dst)
	if err != nil {
		return nil, err
	}
	defer a.release()
	if n%uintptr(elementBytes) != 0 || uintptr(ptr)%uintptr(elementBytes) != 0 {
		return nil, errorf(op, ErrInvalidValue, "%d bytes at %#x are not whole elements of %d bytes", n, uint64(ptr), elementBytes)
	}
	var p driver.GraphNodeParams
	if n == 0 {
		p.Type = driver.GraphNodeEmpty
	} else {
		p.Type = driver.GraphNodeMemset
		*(*driver.MemsetNodeParams)(unsafe.Pointer(&p.Params)) = driver.MemsetNodeParams{
			Dst: ptr, Value: value, ElementSize: uint32(elementBytes), Width: n / uintptr(elementBytes), Height: 1, Ctx: r.ctx.handle,
		}
	}
	return r.addMemNode(op, g, after, &p, a)
}

// AddEmpty adds a node that does nothing: a point to join dependencies at.
func (g *Graph) AddEmpty(after []*GraphNode) (*GraphNode, error) {
	const op = "Graph.AddEmpty"
	r, err := g.begin(op, after)
	if err != nil {
		return nil, err
	}
	defer r.leaveRoot()
	return g.addNode(op, after, &driver.GraphNodeParams{Type: driver.GraphNodeEmpty})
}

// AddEventRecord adds a node that records e, as Event.Record does on a
// stream: work elsewhere that waits for e waits for the nodes before it.
func (g *Graph) AddEventRecord(after []*GraphNode, e *Event) (*GraphNode, error) {
	return g.addEvent("Graph.AddEventRecord", after, e, driver.GraphNodeEventRecord)
}

// AddEventWait adds a node that waits for e's latest record, made outside
// the graph (Event.Record) or by another graph, before the nodes after it
// run.
func (g *Graph) AddEventWait(after []*GraphNode, e *Event) (*GraphNode, error) {
	return g.addEvent("Graph.AddEventWait", after, e, driver.GraphNodeWaitEvent)
}

func (g *Graph) addEvent(op string, after []*GraphNode, e *Event, typ int32) (*GraphNode, error) {
	if err := e.valid(op); err != nil {
		return nil, err
	}
	if err := g.notInBody(op, "an event node"); err != nil {
		return nil, err
	}
	r, err := g.begin(op, after)
	if err != nil {
		return nil, err
	}
	defer r.leaveRoot()
	if e.ctx != r.ctx {
		return nil, errorf(op, ErrInvalidValue, "the event belongs to another context than the graph")
	}
	if err := e.hold(op, "the event"); err != nil {
		return nil, err
	}
	defer e.release()
	p := driver.GraphNodeParams{Type: typ}
	(*driver.EventNodeParams)(unsafe.Pointer(&p.Params)).Event = e.handle
	n, err := g.addNode(op, after, &p)
	if err != nil {
		return nil, err
	}
	r.b.useEvent(e)
	return n, nil
}

// GraphMemory is device memory a graph allocates and frees itself
// (Graph.AddAlloc, Graph.AddFree): it exists only while the graph runs,
// from its alloc node to its free node, so only the graph's nodes may use
// it; kernel launches on a stream and Stream.Do refuse it. Its address is
// fixed when the node is added. It is closed with its graph.
type GraphMemory struct {
	mem   *allocation
	alloc *GraphNode // the alloc node
}

func (m *GraphMemory) deviceMemory() (driver.DevicePtr, *allocation) {
	if m == nil || m.mem == nil {
		return 0, nil
	}
	return m.mem.base, m.mem
}

func (m *GraphMemory) deviceBytes() uintptr {
	if m == nil || m.mem == nil {
		return 0
	}
	return m.mem.size
}

// Ptr returns the memory's device address: 0 for a nil or zero
// GraphMemory.
func (m *GraphMemory) Ptr() DevicePtr {
	p, _ := m.deviceMemory()
	return DevicePtr(p)
}

// ByteSize returns the memory's size in bytes.
func (m *GraphMemory) ByteSize() int { return int(m.deviceBytes()) }

// AddAlloc adds a node that allocates bytes of device memory, which nodes
// after it use and a free node (AddFree) must free before the graph can be
// instantiated: the graph's launches allocate and free it each time, and
// may share it with other graphs' memory in between.
func (g *Graph) AddAlloc(after []*GraphNode, bytes int) (*GraphNode, *GraphMemory, error) {
	const op = "Graph.AddAlloc"
	if bytes <= 0 {
		return nil, nil, errorf(op, ErrInvalidValue, "%d bytes: an alloc node allocates at least one", bytes)
	}
	if err := g.notInBody(op, "an alloc node"); err != nil {
		return nil, nil, err
	}
	r, err := g.begin(op, after)
	if err != nil {
		return nil, nil, err
	}
	defer r.leaveRoot()
	p := driver.GraphNodeParams{Type: driver.GraphNodeMemAlloc}
	a := (*driver.MemAllocNodeParams)(unsafe.Pointer(&p.Params))
	a.PoolProps = driver.MemPoolProps{AllocType: driver.MemAllocationTypePinned, LocType: driver.MemLocationTypeDevice, LocID: int32(r.ctx.dev.ordinal)}
	a.Bytesize = uintptr(bytes)
	n, err := g.addNode(op, after, &p)
	if err != nil {
		return nil, nil, err
	}
	m := &allocation{base: a.Dptr, size: uintptr(bytes), graphOnly: true}
	m.ctx = r.ctx
	m.lt.ArmUntracked()
	r.b.made[m] = false
	return n, &GraphMemory{mem: m, alloc: n}, nil
}

// AddFree adds a node that frees m, memory of this graph's alloc node.
// The free node must run after m's alloc node and after every node that
// uses m, as CUDA rules: after must name the alloc node or nodes after it,
// or AddFree returns ErrInvalidValue; no node after the free node may use
// m.
func (g *Graph) AddFree(after []*GraphNode, m *GraphMemory) (*GraphNode, error) {
	const op = "Graph.AddFree"
	if err := g.notInBody(op, "a free node"); err != nil {
		return nil, err
	}
	r, err := g.begin(op, after)
	if err != nil {
		return nil, err
	}
	defer r.leaveRoot()
	_, a := m.deviceMemory()
	freed, ok := r.b.made[a]
	switch {
	case a == nil:
		return nil, errorf(op, ErrInvalidValue, "nil or zero *GraphMemory")
	case !ok:
		return nil, errorf(op, ErrInvalidValue, "memory of another graph's alloc node")
	case freed:
		return nil, errorf(op, ErrInvalidValue, "the memory is freed by a free node already")
	case !runsAfter(after, m.alloc):
		return nil, errorf(op, ErrInvalidValue, "the free node would not run after its alloc node: name the alloc node, or nodes after it and after every node that uses the memory, in after")
	}
	p := driver.GraphNodeParams{Type: driver.GraphNodeMemFree}
	(*driver.MemFreeNodeParams)(unsafe.Pointer(&p.Params)).Dptr = a.base
	n, err := g.addNode(op, after, &p)
	if err != nil {
		return nil, err
	}
	r.b.made[a] = true
	return n, nil
}

// SetKernelParams changes, in the instance alone, the grid, block, dynamic
// shared memory and arguments of kernel node n, a node of the graph the
// instance was made or last updated from (not of a conditional body),
// without instantiating again: the next launches run with them, those
// queued before keep theirs. The kernel stays n's. The memory the new
// arguments use is kept from being freed while the instance runs with it:
// until n is set again, the instance is updated (Update), or closed. Then
// what the earlier call named can be freed, unless the graph uses it too;
// Free waits for the launches queued with it first, as for any buffer a
// stream used. The node's launch attributes stay: cfg must give the same
// ones AddKernel was given, and the new grid must be a whole number of its
// clusters.
func (e *GraphExec) SetKernelParams(n *GraphNode, cfg LaunchConfig, args ...any) error {
	const op = "GraphExec.SetKernelParams"
	if err := e.valid(op); err != nil {
		return err
	}
	if n == nil || n.g == nil {
		return errorf(op, ErrInvalidValue, "nil or zero *GraphNode")
	}
	if n.fn == nil {
		return errorf(op, ErrInvalidValue, "the node is not a kernel node (Graph.AddKernel)")
	}
	if err := e.enter(op, "the graph instance"); err != nil {
		return err
	}
	defer e.leave()
	x := e.st
	x.mu.Lock()
	defer x.mu.Unlock()
	if n.g != x.graph {
		return errorf(op, ErrInvalidValue, "the node is not a node of the graph the instance was made or last updated from (a conditional body's nodes cannot be set)")
	}
	if err := n.g.hold(op, "the node's graph"); err != nil {
		return err
	}
	defer n.g.release()
	if a := cfg.nodeAttributes(); a != n.attrs {
		return errorf(op, ErrInvalidValue, "launch attributes: %s, where the node was added with %s (an instance keeps a node's attributes)", attributeList(&a), attributeList(&n.attrs))
	}
	pb := paramBlocks.Get().(*paramBlock)
	defer paramBlocks.Put(pb)
	p, held, err := n.fn.kernelParams(op, pb, cfg, args)
	if err != nil {
		return err
	}
	defer releaseAll(held)
	var uses []*allocation
	n.g.b.mu.Lock()
	for _, m := range kernelMemory(args) {
		if err := n.g.b.checkMem(op, m); err != nil {
			n.g.b.mu.Unlock()
			return err
		}
		if !m.graphOnly {
			uses = append(uses, m)
		}
	}
	n.g.b.mu.Unlock()
	err = check(op, driver.GraphExecNodeSetParams(e.ctx.handle, x.handle, n.handle, unsafe.Pointer(&p)))
	runtime.KeepAlive(pb)
	if err != nil {
		err.(*Error).Detail = join(err.(*Error).Detail, "kernel "+n.fn.name)
		return err
	}
	for _, m := range uses {
		m.graphs.n.Add(1)
	}
	for _, m := range x.set[n] {
		m.graphs.n.Add(-1)
	}
	if x.set == nil {
		x.set = map[*GraphNode][]*allocation{}
	}
	x.set[n] = uses
	return nil
}

// attributeList lists cfg's launch attributes, "none" for none.
func attributeList(cfg *LaunchConfig) string {
	if text := cfg.attributeText(); text != "" {
		return strings.TrimPrefix(text, ", ")
	}
	return "none"
}

package cuda

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
)

// GraphCondition is a conditional handle of a graph: the value an If or a
// While node tests (Graph.AddIf, Graph.AddWhile). It is set to its initial
// value at the start of every launch of the graph, and on the device by a
// set-condition or count-down node (Graph.AddSetCondition,
// Graph.AddCountDown), or by a kernel of one's own that calls
// cudaGraphSetConditional on the handle (Handle). The zero GraphCondition
// is not usable.
type GraphCondition struct {
	g      *Graph
	handle uint64
}

// Handle returns the conditional handle's value, to pass to a kernel of
// one's own that sets it (cudaGraphSetConditional, linked with the CUDA
// device runtime).
func (c *GraphCondition) Handle() uint64 {
	if c == nil {
		return 0
	}
	return c.handle
}

func (c *GraphCondition) valid(op string) error {
	if c == nil || c.g == nil {
		return errorf(op, ErrInvalidValue, "nil or zero *GraphCondition: make one with Graph.NewCondition")
	}
	return nil
}

// conditionalVersion is the first driver with conditional nodes (CUDA
// 12.4).
var conditionalVersion = Version{Major: 12, Minor: 4}

// needConditionals returns ErrNotSupported on a driver without
// conditional nodes.
func needConditionals(op string) error {
	v, err := DriverVersion()
	if err != nil {
		return err
	}
	if v.Major < conditionalVersion.Major || v.Major == conditionalVersion.Major && v.Minor < conditionalVersion.Minor {
		return errorf(op, ErrNotSupported, "conditional graph nodes need a CUDA %v driver or later; this one is %v", conditionalVersion, v)
	}
	return nil
}

// NewCondition makes a conditional handle of g, set to initial at the start
// of every launch of the graph (CUDA 12.4 and later).
func (g *Graph) NewCondition(initial uint32) (*GraphCondition, error) {
	const op = "Graph.NewCondition"
	if err := g.valid(op); err != nil {
		return nil, err
	}
	if err := needConditionals(op); err != nil {
		return nil, err
	}
	r, err := g.enterRoot(op)
	if err != nil {
		return nil, err
	}
	defer r.leaveRoot()
	c := &GraphCondition{g: g}
	if err := check(op, driver.GraphConditionalHandleCreate(r.ctx.handle, &c.handle, g.handle, r.ctx.handle, initial, driver.GraphCondAssignDefault)); err != nil {
		return nil, err
	}
	return c, nil
}

// AddIf adds a node that runs its body, a graph returned empty to add
// nodes to, once if c is not 0 when the node runs. c must be a condition
// of g. The body holds kernel, copy, memset and conditional nodes only; it
// is part of g, closed and instantiated with it.
func (g *Graph) AddIf(after []*GraphNode, c *GraphCondition) (*GraphNode, *Graph, error) {
	return g.addConditional("Graph.AddIf", after, c, driver.GraphCondIf)
}

// AddWhile adds a node that runs its body, a graph returned empty to add
// nodes to, again and again while c is not 0: when the node starts and
// after each run of the body, whose nodes set c (a count-down node at its
// end, say). c must be a condition of g. The body holds kernel, copy,
// memset and conditional nodes only; it is part of g.
func (g *Graph) AddWhile(after []*GraphNode, c *GraphCondition) (*GraphNode, *Graph, error) {
	return g.addConditional("Graph.AddWhile", after, c, driver.GraphCondWhile)
}

func (g *Graph) addConditional(op string, after []*GraphNode, c *GraphCondition, typ int32) (*GraphNode, *Graph, error) {
	if err := c.valid(op); err != nil {
		return nil, nil, err
	}
	if c.g != g {
		return nil, nil, errorf(op, ErrInvalidValue, "the condition is another graph's: make it with this graph's NewCondition")
	}
	r, err := g.begin(op, after)
	if err != nil {
		return nil, nil, err
	}
	defer r.leaveRoot()
	p := driver.GraphNodeParams{Type: driver.GraphNodeConditional}
	cp := (*driver.ConditionalNodeParams)(unsafe.Pointer(&p.Params))
	*cp = driver.ConditionalNodeParams{Handle: c.handle, Type: typ, Size: 1, Ctx: r.ctx.handle}
	n, err := g.addNode(op, after, &p)
	if err != nil {
		return nil, nil, err
	}
	// The driver's array of bodies, valid as long as the node.
	body := *cp.GraphOut
	return n, &Graph{handle: body, parent: g}, nil
}

// AddSetCondition adds a node that sets c to the first 32-bit word of
// word, device memory the graph's nodes write the condition to (at least 4
// bytes, 4-byte aligned). c must be a condition of g or of the graph g is
// part of.
func (g *Graph) AddSetCondition(after []*GraphNode, c *GraphCondition, word Memory) (*GraphNode, error) {
	return g.addSetCondition("Graph.AddSetCondition", after, c, word, 0)
}

// AddCountDown adds a node that takes one from the first 32-bit word of
// counter (at least 4 bytes, 4-byte aligned; not below 0) and sets c to
// the result: at the end of a While node's body, a counter of k runs the
// body k times. c must be a condition of g or of the graph g is part of.
func (g *Graph) AddCountDown(after []*GraphNode, c *GraphCondition, counter Memory) (*GraphNode, error) {
	return g.addSetCondition("Graph.AddCountDown", after, c, counter, 1)
}

func (g *Graph) addSetCondition(op string, after []*GraphNode, c *GraphCondition, word Memory, decrement uint32) (*GraphNode, error) {
	if err := g.valid(op); err != nil {
		return nil, err
	}
	if err := c.valid(op); err != nil {
		return nil, err
	}
	if c.g.root() != g.root() {
		return nil, errorf(op, ErrInvalidValue, "the condition is another graph's")
	}
	if word == nil {
		return nil, errorf(op, ErrInvalidValue, "nil word: the condition's word is 4 bytes of device memory")
	}
	if word.deviceBytes() < 4 {
		return nil, errorf(op, ErrInvalidValue, "%d bytes: the condition's word needs 4", word.deviceBytes())
	}
	// The kernel reads (and counts down) a 32-bit word: a GPU faults on
	// one that is not 4-byte aligned, which would end the context.
	if p, _ := word.deviceMemory(); p%4 != 0 {
		return nil, errorf(op, ErrInvalidValue, "the condition's word at %#x is not 4-byte aligned", uint64(p))
	}
	f, err := g.root().ctx.setConditionKernel(op)
	if err != nil {
		return nil, err
	}
	return g.AddKernel(after, f, LaunchConfig{Grid: Dim3{X: 1}, Block: Dim3{X: 1}}, c.handle, word, decrement)
}

// EnvDeviceRuntime names the CUDA device runtime library (libcudadevrt.a;
// cudadevrt.lib on Windows) that the set-condition kernel is linked with,
// in place of looking for it in the toolkit's usual places.
const EnvDeviceRuntime = "GOCUDA_CUDADEVRT"

// deviceRuntime returns the path of the CUDA device runtime library: the
// override, or the first in the toolkit's places that exists.
func deviceRuntime(op string) (string, error) {
	if p := os.Getenv(EnvDeviceRuntime); p != "" {
		return p, nil
	}
	name, sub := "libcudadevrt.a", []string{"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"}
	if runtime.GOOS == "windows" {
		name, sub = "cudadevrt.lib", []string{`lib\x64`}
	}
	var roots []string
	for _, v := range []string{"CUDA_HOME", "CUDA_PATH"} {
		if d := os.Getenv(v); d != "" {
			roots = append(roots, d)
		}
	}
	roots = append(roots, "/usr/local/cuda", "/usr/lib/cuda", "/opt/cuda")
	var tried []string
	for _, r := range roots {
		for _, s := range sub {
			p := filepath.Join(r, s, name)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			tried = append(tried, p)
		}
	}
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/" + name, "/usr/lib/aarch64-linux-gnu/" + name} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", errorf(op, ErrNotSupported, "the set-condition kernel calls the CUDA device runtime, %s, which is part of the CUDA toolkit and was not found (looked in %d places, first %s): install the toolkit, or set %s to the file", name, len(tried), tried[0], EnvDeviceRuntime)
}

// setConditionPTX is the set-condition kernel: it counts word down when
// decrement is set (not below 0) and sets the handle to it, through the
// device runtime's cudaGraphSetConditional. The fake driver runs a C
// version of it (internal/fakecuda/csrc/kernels.c), matched by its text.
const setConditionPTX = `.version 7.0
.target sm_52
.address_size 64

.extern .func cudaGraphSetConditional(.param .b64 handle, .param .b32 value);

.visible .entry gocuda_set_condition(.param .u64 handle, .param .u64 word, .param .u32 decrement)
{
	.reg .pred %p<2>;
	.reg .b32 %r<3>;
	.reg .b64 %rd<2>;

	ld.param.u64 %rd0, [handle];
	ld.param.u64 %rd1, [word];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.u32 %r0, [decrement];
	ld.global.u32 %r1, [%rd1];
	setp.ne.u32 %p0, %r0, 0;
	setp.ne.u32 %p1, %r1, 0;
	and.pred %p0, %p0, %p1;
	@%p0 sub.u32 %r1, %r1, 1;
	@%p0 st.global.u32 [%rd1], %r1;
	{
	.param .b64 h;
	.param .b32 v;
	st.param.b64 [h], %rd0;
	st.param.b32 [v], %r1;
	call.uni cudaGraphSetConditional, (h, v);
	}
	ret;
}
`

// condKernel is a context's set-condition kernel, linked and loaded at
// its first use and unloaded by Context.Close.
type condKernel struct {
	mu  sync.Mutex // guards mod and fn; a leaf
	mod *Module
	fn  *Function
}

// setConditionKernel returns the context's set-condition kernel, linking
// it with the device runtime at the first call.
func (c *Context) setConditionKernel(op string) (*Function, error) {
	k := &c.cond
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fn != nil && !k.mod.lt.IsClosed() {
		return k.fn, nil
	}
	image, err := c.linkWithDeviceRuntime(op, setConditionPTX)
	if err != nil {
		return nil, err
	}
	mod, err := c.LoadModule(image)
	if err != nil {
		return nil, err
	}
	fn, err := mod.Function("gocuda_set_condition")
	if err != nil {
		mod.Close()
		return nil, err
	}
	k.mod, k.fn = mod, fn
	return fn, nil
}

// closeCondKernel unloads the set-condition kernel, if loaded and no
// graph uses it any more.
func (c *Context) closeCondKernel() {
	k := &c.cond
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.mod != nil && k.mod.Close() == nil {
		k.mod, k.fn = nil, nil
	}
}

// linkWithDeviceRuntime links PTX text with the device runtime and
// returns the linked image.
func (c *Context) linkWithDeviceRuntime(op, ptx string) ([]byte, error) {
	lib, err := deviceRuntime(op)
	if err != nil {
		return nil, err
	}
	if err := c.bind(op); err != nil {
		return nil, err
	}
	defer c.unbind()
	var st driver.LinkState
	if err := check(op, driver.LinkCreate(c.handle, 0, nil, nil, &st)); err != nil {
		return nil, err
	}
	image, err := linkImage(op, c.handle, st, ptx, lib)
	// The image is the link state's until it is destroyed: linkImage
	// copied it. A failed destroy is an error of its own, after a success.
	if derr := check(op, driver.LinkDestroy(c.handle, st)); err == nil && derr != nil {
		return nil, derr
	}
	return image, err
}

// linkImage adds ptx and the library lib to the link state st and returns
// a copy of the linked image.
func linkImage(op string, ctx driver.Context, st driver.LinkState, ptx, lib string) ([]byte, error) {
	text := append([]byte(ptx), 0)
	name := append([]byte("gocuda_set_condition.ptx"), 0)
	if err := check(op, driver.LinkAddData(ctx, st, driver.JITInputPTX, unsafe.Pointer(&text[0]), uintptr(len(text)), &name[0], 0, nil, nil)); err != nil {
		return nil, err
	}
	path := append([]byte(lib), 0)
	if err := check(op, driver.LinkAddFile(ctx, st, driver.JITInputLibrary, &path[0], 0, nil, nil)); err != nil {
		err.(*Error).Detail = join(err.(*Error).Detail, "linking with "+lib)
		return nil, err
	}
	var out unsafe.Pointer
	var size uintptr
	if err := check(op, driver.LinkComplete(ctx, st, unsafe.Pointer(&out), &size)); err != nil {
		return nil, err
	}
	return append([]byte(nil), unsafe.Slice((*byte)(out), size)...), nil
}

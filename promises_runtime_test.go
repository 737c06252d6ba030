package cuda_test

import (
	"errors"
	"io"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// This file tests the promises of the root package's runtime (devices,
// contexts, streams, events, graphs, modules and launches) at their edges,
// as a user who reads only the docs would: objects used after their
// context or module is closed, calls with nothing to do on closed objects,
// launches at the limits of their shapes and arguments.

// TestPromiseRuntimeAfterContextClose: once a context is closed, every
// method of an object made in it returns ErrClosed (Context.Close), the
// calls with nothing to queue too: a launch of no blocks, whose kernel's
// parameters an earlier launch read already.
func TestPromiseRuntimeAfterContextClose(t *testing.T) {
	// No CheckLeaks: a driver graph (and, on the fake, an instance)
	// belongs to no context, and Graph.Close after Context.Close, which
	// binds no context, destroys nothing: the fake still counts them.
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	s := must(ctx.NewStream())(t)
	e1 := must(ctx.NewEvent())(t)
	e2 := must(ctx.NewEvent())(t)
	m := loadKernels(t, ctx)
	vadd := must(m.Function("vadd_f32"))(t)
	empty := must(m.Function("empty"))(t)
	b := must(cuda.Alloc[float32](ctx, 4))(t)
	one := cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}, Stream: s}
	// A first launch reads each kernel's parameters: a later launch
	// need not reach the module's context for them.
	if err := vadd.Launch(one, b, b, b, uint32(4)); err != nil {
		t.Fatal(err)
	}
	if err := empty.Launch(one); err != nil {
		t.Fatal(err)
	}
	must(0, e1.Record(s))(t)
	must(0, e2.Record(s))(t)
	g := must(s.Capture(cuda.CaptureGlobal, func() error { return empty.Launch(one) }))(t)
	x := must(g.Instantiate())(t)
	built := must(ctx.NewGraph())(t)
	node := must(built.AddKernel(nil, empty, cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 1}}))(t)
	bx := must(built.Instantiate())(t)
	must(0, s.Synchronize())(t)
	noBlocks := cuda.LaunchConfig{Block: cuda.Dim3{X: 4}, Stream: s}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	wantErrors(t, cuda.ErrClosed, map[string]error{
		"Stream.Synchronize":          s.Synchronize(),
		"Stream.Query":                second(s.Query()),
		"Stream.WaitEvent":            s.WaitEvent(e1),
		"Stream.Capture":              second(s.Capture(cuda.CaptureGlobal, func() error { return nil })),
		"Stream.Do":                   s.Do(func(uintptr) error { return nil }),
		"Event.Record":                e1.Record(s),
		"Event.Synchronize":           e1.Synchronize(),
		"Event.Query":                 second(e1.Query()),
		"ElapsedTime":                 second(cuda.ElapsedTime(e1, e2)),
		"Function.Launch":             vadd.Launch(one, b, b, b, uint32(4)),
		"Function.Launch no blocks":   vadd.Launch(noBlocks, b, b, b, uint32(0)),
		"Function.Launch no args":     empty.Launch(noBlocks),
		"Function.Attribute":          second(vadd.Attribute(cuda.FuncMaxThreadsPerBlock)),
		"Function.MaxActiveBlocks":    second(vadd.MaxActiveBlocks(128, 0)),
		"Module.Function":             second(m.Function("vadd_f32")),
		"Graph.Nodes":                 second(g.Nodes()),
		"Graph.WriteDot":              g.WriteDot(io.Discard, false),
		"Graph.Instantiate":           second(g.Instantiate()),
		"Graph.AddEmpty":              second(built.AddEmpty(nil)),
		"Graph.AddHost":               second(built.AddHost(nil, func() {})),
		"GraphExec.Launch":            x.Launch(s),
		"GraphExec.Update":            second(x.Update(g)),
		"GraphExec.SetKernelParams":   bx.SetKernelParams(node, cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 1}}),
		"Context.NewStream":           second(ctx.NewStream()),
		"Context.NewEvent":            second(ctx.NewEvent()),
		"Context.NewGraph":            second(ctx.NewGraph()),
		"Context.Synchronize":         ctx.Synchronize(),
		"Context.Do":                  ctx.Do(func() error { return nil }),
		"Context.MemoryStats":         second(ctx.MemoryStats()),
		"Context.StreamPriorityRange": third(ctx.StreamPriorityRange()),
	})
	for name, err := range map[string]error{"GraphExec.Close": x.Close(), "GraphExec.Close built": bx.Close(),
		"Graph.Close": g.Close(), "Graph.Close built": built.Close(), "Event.Close": errors.Join(e1.Close(), e2.Close()),
		"Module.Close": m.Close(), "DeviceBuffer.Free": b.Free(), "Stream.Close": s.Close()} {
		if err != nil {
			t.Errorf("%s after Context.Close: %v", name, err)
		}
	}
}

// TestPromiseWaitEventOfClosedContext: Stream.WaitEvent takes an event of
// another context, even of another device; once that context is closed
// the event is an object of a closed context, and the wait returns
// ErrClosed instead of handing the driver an event its context destroyed.
func TestPromiseWaitEventOfClosedContext(t *testing.T) {
	ctxs := cudatest.Contexts(t, 2)
	if ctxs == nil {
		return
	}
	s := cudatest.Stream(t, ctxs[0])
	other := must(cuda.NewContext(ctxs[1].Device()))(t)
	os := must(other.NewStream())(t)
	e := must(other.NewEvent())(t)
	must(0, e.Record(os))(t)
	if err := s.WaitEvent(e); err != nil {
		t.Fatalf("WaitEvent of another device's event: %v", err)
	}
	// ctxs[1] retains the same primary context: close it too, so that
	// the driver destroys the event.
	if err := errors.Join(other.Close(), ctxs[1].Close()); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitEvent(e); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("WaitEvent of an event whose context is closed: %v; want ErrClosed", err)
	}
	if err := errors.Join(e.Close(), os.Close()); err != nil {
		t.Errorf("closing the event and stream after their context: %v", err)
	}
}

// TestPromiseBodyPrints: a conditional node's body is a graph in use, part
// of its graph: it prints as one (not as a zero Graph), with its graph's
// device, and closed once its graph is closed.
func TestPromiseBodyPrints(t *testing.T) {
	ctx := cudatest.Context(t)
	g := must(ctx.NewGraph())(t)
	c := must(g.NewCondition(0))(t)
	_, body := must2(g.AddIf(nil, c))(t)
	dev := ctx.Device().String()
	if got, want := body.String(), "cuda.Graph{"+dev+", conditional body}"; got != want {
		t.Errorf("a body prints %q, want %q", got, want)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := body.String(), "cuda.Graph{"+dev+", conditional body, closed}"; got != want {
		t.Errorf("a body of a closed graph prints %q, want %q", got, want)
	}
}

// TestPromiseLaunchRefuses: a launch whose configuration or arguments are
// wrong returns ErrInvalidValue (a freed buffer ErrClosed) and queues
// nothing, a grid of no blocks too: its configuration and arguments are
// checked as any launch's. A graph's kernel node is refused the same, and
// the graph keeps the nodes it had.
func TestPromiseLaunchRefuses(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := loadKernels(t, ctx)
	vadd := must(m.Function("vadd_f32"))(t) // (.u64 a, .u64 b, .u64 c, .u32 n)
	b := must(cuda.Alloc[float32](ctx, 4))(t)
	defer b.Free()
	freed := must(cuda.Alloc[float32](ctx, 4))(t)
	must(0, freed.Free())(t)
	var nilBuf *cuda.DeviceBuffer[float32]
	ok := []any{b, b, b, uint32(4)}
	type plain struct {
		A int32
		B int // no fixed C counterpart
	}
	for _, c := range []struct {
		name string
		cfg  cuda.LaunchConfig
		args []any
		want error
	}{
		{"negative grid Y", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1, Y: -1}, Block: cuda.Dim3{X: 4}}, ok, cuda.ErrInvalidValue},
		{"negative grid X", cuda.LaunchConfig{Grid: cuda.Dim3{X: -1}, Block: cuda.Dim3{X: 4}}, ok, cuda.ErrInvalidValue},
		{"grid past 2^32", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1 << 33}, Block: cuda.Dim3{X: 4}}, ok, cuda.ErrInvalidValue},
		{"block of no threads", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}}, ok, cuda.ErrInvalidValue},
		{"block Z past 2^32", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 1, Z: 1 << 32}}, ok, cuda.ErrInvalidValue},
		{"negative shared memory", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}, SharedMemBytes: -1}, ok, cuda.ErrInvalidValue},
		{"negative cluster", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}, Cluster: cuda.Dim3{X: -1}}, ok, cuda.ErrInvalidValue},
		{"cluster policy without clusters", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}, ClusterPolicy: cuda.ClusterPolicySpread}, ok, cuda.ErrInvalidValue},
		{"too few arguments", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, ok[:3], cuda.ErrInvalidValue},
		{"too many arguments", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, append(ok[:4:4], uint32(0)), cuda.ErrInvalidValue},
		{"Go int", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, []any{b, b, b, 4}, cuda.ErrInvalidValue},
		{"uint64 for .u32", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, []any{b, b, b, uint64(4)}, cuda.ErrInvalidValue},
		{"float32 for .u32", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, []any{b, b, b, float32(4)}, cuda.ErrInvalidValue},
		{"bool", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, []any{b, b, b, true}, cuda.ErrInvalidValue},
		{"nil", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, []any{b, nil, b, uint32(4)}, cuda.ErrInvalidValue},
		{"nil buffer", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, []any{b, nilBuf, b, uint32(4)}, cuda.ErrInvalidValue},
		{"slice", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, []any{b, []float32{1}, b, uint32(4)}, cuda.ErrInvalidValue},
		{"pointer", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, []any{b, new(uint64), b, uint32(4)}, cuda.ErrInvalidValue},
		{"struct with an int", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, []any{b, plain{}, b, uint32(4)}, cuda.ErrInvalidValue},
		{"empty struct", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, []any{b, struct{}{}, b, uint32(4)}, cuda.ErrInvalidValue},
		{"freed buffer", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, []any{b, freed, b, uint32(4)}, cuda.ErrClosed},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Stream = s
			if err := vadd.Launch(cfg, c.args...); !errors.Is(err, c.want) {
				t.Errorf("Launch: %v; want %v", err, c.want)
			}
			if c.cfg.Grid.X > 0 && c.cfg.Grid.X <= math.MaxUint32 && c.cfg.Grid.Y >= 0 { // the grid is not what is wrong
				empty := cfg
				empty.Grid.X = 0
				if err := vadd.Launch(empty, c.args...); !errors.Is(err, c.want) {
					t.Errorf("Launch of no blocks: %v; want %v", err, c.want)
				}
			}
			g := must(ctx.NewGraph())(t)
			defer g.Close()
			if _, err := g.AddKernel(nil, vadd, c.cfg, c.args...); !errors.Is(err, c.want) {
				t.Errorf("Graph.AddKernel: %v; want %v", err, c.want)
			}
			if n := must(g.Nodes())(t); n != 0 {
				t.Errorf("the graph has %d node(s) after a refused AddKernel", n)
			}
		})
	}
	if q := must(s.Query())(t); !q {
		t.Error("the stream has work after refused launches")
	}
}

// TestPromiseUnloadedModuleRefuses: once its module is closed, a
// Function's methods return ErrClosed (Function: "valid until the module
// is closed"), a launch of no blocks and a graph's kernel node too.
func TestPromiseUnloadedModuleRefuses(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := loadKernels(t, ctx)
	f := must(m.Function("vadd_f32"))(t)
	b := must(cuda.Alloc[float32](ctx, 4))(t)
	defer b.Free()
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}, Stream: s}
	must(0, f.Launch(cfg, b, b, b, uint32(4)))(t) // its parameters are known from now on
	g := must(ctx.NewGraph())(t)
	defer g.Close()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	noBlocks := cfg
	noBlocks.Grid.X = 0
	wantErrors(t, cuda.ErrClosed, map[string]error{
		"Launch":                    f.Launch(cfg, b, b, b, uint32(4)),
		"Launch of no blocks":       f.Launch(noBlocks, b, b, b, uint32(0)),
		"Attribute":                 second(f.Attribute(cuda.FuncNumRegs)),
		"SetAttribute":              f.SetAttribute(cuda.FuncMaxDynamicSharedSize, 0),
		"MaxActiveBlocks":           second(f.MaxActiveBlocks(32, 0)),
		"MaxCooperativeBlocks":      second(f.MaxCooperativeBlocks(32, 0)),
		"SuggestBlockSize":          second(f.SuggestBlockSize(0, 0)),
		"SuggestBlockSizeFunc":      second(f.SuggestBlockSizeFunc(func(int) int { return 0 }, 0)),
		"AvailableDynamicSharedMem": second(f.AvailableDynamicSharedMem(1, 32)),
		"Module.Function":           second(m.Function("vadd_f32")),
		"Global":                    second(cuda.Global[float32](m, "anything")),
		"Graph.AddKernel":           second(g.AddKernel(nil, f, cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 4}}, b, b, b, uint32(4))),
	})
	if n := must(g.Nodes())(t); n != 0 {
		t.Errorf("the graph has %d node(s) after a refused AddKernel", n)
	}
}

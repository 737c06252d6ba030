package cuda_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// loadLaunchKernels loads testdata/launch.ptx: cluster_info,
// cluster_exchange and grid_sync, for compute capability 9.0. It skips
// on an older device, which cannot load them, and fails on one of 9.0 or
// later.
func loadLaunchKernels(t testing.TB, ctx *cuda.Context) *cuda.Module {
	t.Helper()
	cc := must(ctx.Device().ComputeCapability())(t)
	if cc.Major < 9 {
		t.Skipf("%v is compute capability %d.%d: the kernels need 9.0", ctx.Device(), cc.Major, cc.Minor)
	}
	ptx, err := os.ReadFile("testdata/launch.ptx")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ctx.LoadModule(ptx)
	if err != nil {
		t.Fatalf("LoadModule(launch.ptx): %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestClusterLaunch: blocks read their rank and cluster from the special
// registers as the cluster shape asked for, under each scheduling policy,
// and read a neighbour's shared memory through the cluster, at sizes 1 to
// 8 and, where the device has room, 16 (a non-portable size the kernel
// must allow first).
func TestClusterLaunch(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := loadLaunchKernels(t, ctx)
	info := must(m.Function("cluster_info"))(t)
	exchange := must(m.Function("cluster_exchange"))(t)
	const blocks = 128
	out := must(cuda.Alloc[uint32](ctx, 4*blocks))(t)
	defer out.Free()

	run := func(t *testing.T, f *cuda.Function, cluster int, policy cuda.ClusterPolicy, words int) []uint32 {
		t.Helper()
		if err := out.Memset32(0xffffffff); err != nil {
			t.Fatal(err)
		}
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: 64}, Stream: s, Cluster: cuda.Dim3{X: cluster}, ClusterPolicy: policy}
		if err := f.Launch(cfg, out); err != nil {
			t.Fatalf("%s, cluster of %d: %v", f.Name(), cluster, err)
		}
		got := make([]uint32, 4*blocks)
		if err := out.CopyToHost(got); err != nil {
			t.Fatal(err)
		}
		return got[:words*blocks]
	}
	sizes := []int{1, 2, 4, 8}
	if err := info.SetAttribute(cuda.FuncNonPortableClusterSizeAllowed, 1); err != nil {
		t.Fatalf("allowing clusters of 16: %v", err)
	}
	if err := exchange.SetAttribute(cuda.FuncNonPortableClusterSizeAllowed, 1); err != nil {
		t.Fatalf("allowing clusters of 16: %v", err)
	}
	n := must(info.MaxActiveClusters(cuda.LaunchConfig{Block: cuda.Dim3{X: 64}, Cluster: cuda.Dim3{X: 16}}))(t)
	t.Logf("clusters of 16 blocks of 64 threads the device runs at once: %d", n)
	if n > 0 {
		sizes = append(sizes, 16)
	}
	for _, c := range sizes {
		for _, policy := range []cuda.ClusterPolicy{cuda.ClusterPolicyDefault, cuda.ClusterPolicySpread, cuda.ClusterPolicyLoadBalancing} {
			t.Run(fmt.Sprintf("info/%d/%v", c, policy), func(t *testing.T) {
				got := run(t, info, c, policy, 4)
				for b := range blocks {
					want := [4]uint32{uint32(b % c), uint32(b / c), uint32(c), uint32(b)}
					if [4]uint32(got[4*b:4*b+4]) != want {
						t.Fatalf("block %d: rank, cluster, size, block = %v, want %v", b, got[4*b:4*b+4], want)
					}
				}
			})
		}
		t.Run(fmt.Sprintf("exchange/%d", c), func(t *testing.T) {
			got := run(t, exchange, c, cuda.ClusterPolicyDefault, 1)
			for b := range blocks {
				next := b/c*c + (b%c+1)%c
				if want := uint32(next*1000 + 7); got[b] != want {
					t.Fatalf("block %d read %d from its cluster's next block, want %d (block %d's)", b, got[b], want, next)
				}
			}
		})
	}
}

// TestCooperativeLaunch: a grid of as many blocks as the device holds at
// once passes a barrier of the whole grid, every block seeing every
// other's flag; one block more is refused before launching, in words with
// the numbers.
func TestCooperativeLaunch(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := loadLaunchKernels(t, ctx)
	sync := must(m.Function("grid_sync"))(t)
	const block = 32
	limit := must(sync.MaxCooperativeBlocks(block, 0))(t)
	per := must(sync.MaxActiveBlocks(block, 0))(t)
	sms := must(ctx.Device().MultiprocessorCount())(t)
	if limit != per*sms || limit == 0 {
		t.Fatalf("MaxCooperativeBlocks = %d, want MaxActiveBlocks %d × %d multiprocessors", limit, per, sms)
	}
	flags := must(cuda.Alloc[uint32](ctx, limit+1))(t)
	defer flags.Free()
	counter := must(cuda.Alloc[uint32](ctx, 1))(t)
	defer counter.Free()
	out := must(cuda.Alloc[uint32](ctx, limit+1))(t)
	defer out.Free()
	for _, grid := range []int{1, limit / 2, limit} {
		t.Run(fmt.Sprint(grid), func(t *testing.T) {
			for _, b := range []*cuda.DeviceBuffer[uint32]{flags, counter, out} {
				if err := b.Memset32(0); err != nil {
					t.Fatal(err)
				}
			}
			cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: grid}, Block: cuda.Dim3{X: block}, Stream: s, Cooperative: true}
			if err := sync.Launch(cfg, flags, counter, out); err != nil {
				t.Fatal(err)
			}
			got := make([]uint32, grid)
			if err := must(out.Slice(0, grid))(t).CopyToHost(got); err != nil {
				t.Fatal(err)
			}
			for b, n := range got {
				if n != uint32(grid) {
					t.Fatalf("block %d counted %d flags after the grid's barrier, want %d", b, n, grid)
				}
			}
			c := []uint32{0}
			if err := counter.CopyToHost(c); err != nil {
				t.Fatal(err)
			}
			if c[0] != uint32(grid) {
				t.Errorf("counter %d, want %d", c[0], grid)
			}
		})
	}
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: limit + 1}, Block: cuda.Dim3{X: block}, Stream: s, Cooperative: true}
	err := sync.Launch(cfg, flags, counter, out)
	if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), fmt.Sprintf("holds at once, %d (%d a multiprocessor × %d multiprocessors", limit, per, sms)) {
		t.Errorf("cooperative launch of %d blocks: %v; want ErrInvalidValue with the device's %d", limit+1, err, limit)
	}
	// Two dimensions: the blocks are counted across them.
	cfg.Grid = cuda.Dim3{X: limit, Y: 2}
	if err := sync.Launch(cfg, flags, counter, out); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("cooperative launch of %d×2 blocks: %v; want ErrInvalidValue", limit, err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// TestLaunchPriority: a launch at the context's greatest priority runs,
// and one outside the range is refused with the range.
func TestLaunchPriority(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	saxpy := must(loadKernels(t, ctx).Function("saxpy"))(t)
	least, greatest, err := ctx.StreamPriorityRange()
	if err != nil {
		t.Fatal(err)
	}
	x := must(cuda.FromHost(ctx, []float32{1, 2, 3}))(t)
	defer x.Free()
	y := must(cuda.FromHost(ctx, []float32{10, 20, 30}))(t)
	defer y.Free()
	cfg := cuda.LaunchConfigFor(3, s)
	cfg.Priority = greatest
	if greatest == 0 {
		t.Logf("the context has one priority, %d", least)
	}
	if err := saxpy.Launch(cfg, float32(2), x, y, uint32(3)); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 3)
	if err := y.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	if got[0] != 12 || got[1] != 24 || got[2] != 36 {
		t.Errorf("saxpy at priority %d: %v, want [12 24 36]", greatest, got)
	}
	cfg.Priority = least + 1
	if err := saxpy.Launch(cfg, float32(2), x, y, uint32(3)); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "outside the context's range") {
		t.Errorf("priority %d: %v; want ErrInvalidValue giving the range", least+1, err)
	}
	// An empty grid runs nothing, but its configuration is checked as any
	// other's: a bad one fails now, not once the data grows.
	empty := must(cuda.Alloc[float32](ctx, 0))(t)
	defer empty.Free()
	cfg = cuda.LaunchConfigFor(0, s)
	cfg.Priority = least + 1
	if err := saxpy.Launch(cfg, float32(2), empty, empty, uint32(0)); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "outside the context's range") {
		t.Errorf("priority %d on an empty grid: %v; want ErrInvalidValue giving the range", least+1, err)
	}
	cfg.Priority = greatest
	if err := saxpy.Launch(cfg, float32(2), empty, empty, uint32(0)); err != nil {
		t.Errorf("an empty grid at priority %d: %v", greatest, err)
	}
}

// chainLaunches queues k launches of chain_step over x (one word a thread,
// blocks of 256), each a programmatic dependent launch when pdl.
func chainLaunches(f *cuda.Function, s *cuda.Stream, x *cuda.DeviceBuffer[uint32], k int, pdl bool) error {
	cfg := cuda.LaunchConfigFor(x.Len(), s)
	cfg.ProgrammaticDependent = pdl
	for i := range k {
		if err := f.Launch(cfg, x, uint32(x.Len())); err != nil {
			return fmt.Errorf("launch %d of %d: %w", i+1, k, err)
		}
	}
	return nil
}

// TestProgrammaticDependentLaunch: a chain of kernels, each reading what
// the one before wrote, gives the same words with programmatic dependent
// launches as without, on a stream and captured into a graph launched
// twice: each kernel waits for the one before, though it may start
// earlier.
func TestProgrammaticDependentLaunch(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	step := must(loadLaunchKernels(t, ctx).Function("chain_step"))(t)
	const n, k = 1 << 16, 200
	x := must(cuda.Zeroed[uint32](ctx, n))(t)
	defer x.Free()
	expect := func(t *testing.T, want uint32) {
		t.Helper()
		got := make([]uint32, n)
		if err := x.CopyToHost(got); err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if v != want {
				t.Fatalf("word %d is %d, want %d: a kernel of the chain did not wait for the one before", i, v, want)
			}
		}
	}
	for _, pdl := range []bool{false, true} {
		t.Run(fmt.Sprintf("programmatic=%v", pdl), func(t *testing.T) {
			if err := x.Memset32(0); err != nil {
				t.Fatal(err)
			}
			if err := chainLaunches(step, s, x, k, pdl); err != nil {
				t.Fatal(err)
			}
			expect(t, k)
			g := must(s.Capture(cuda.CaptureGlobal, func() error { return chainLaunches(step, s, x, k, pdl) }))(t)
			defer g.Close()
			e := must(g.Instantiate())(t)
			defer e.Close()
			for range 2 {
				if err := e.Launch(s); err != nil {
					t.Fatal(err)
				}
			}
			expect(t, 3*k)
		})
	}
}

// TestLaunchAttributeErrors: shapes and settings checked before anything
// is launched, each refused in words.
func TestLaunchAttributeErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := loadLaunchKernels(t, ctx)
	info := must(m.Function("cluster_info"))(t)
	out := must(cuda.Alloc[uint32](ctx, 4*64))(t)
	defer out.Free()
	base := cuda.LaunchConfig{Grid: cuda.Dim3{X: 64}, Block: cuda.Dim3{X: 32}, Stream: s}
	for _, tt := range []struct {
		name string
		edit func(*cuda.LaunchConfig)
		want string
	}{
		{"grid not whole clusters", func(c *cuda.LaunchConfig) { c.Grid.X = 63; c.Cluster.X = 2 }, "not a whole number of clusters"},
		{"cluster Y without X", func(c *cuda.LaunchConfig) { c.Cluster.Y = 2 }, "every dimension"},
		{"negative cluster", func(c *cuda.LaunchConfig) { c.Cluster.X = -2 }, "every dimension"},
		{"policy without cluster", func(c *cuda.LaunchConfig) { c.ClusterPolicy = cuda.ClusterPolicySpread }, "without a Cluster"},
		{"unknown policy", func(c *cuda.LaunchConfig) { c.Cluster.X = 2; c.ClusterPolicy = 7 }, "cluster policy 7"},
		{"priority out of int32", func(c *cuda.LaunchConfig) { c.Priority = 1 << 40 }, "out of range"},
		{"cooperative block of 2^32 threads", func(c *cuda.LaunchConfig) { c.Cooperative = true; c.Block = cuda.Dim3{X: 1 << 16, Y: 1 << 16} }, "4294967296 threads"},
		{"cooperative block of 2^96 threads", func(c *cuda.LaunchConfig) {
			c.Cooperative = true
			c.Block = cuda.Dim3{X: 1<<32 - 1, Y: 1<<32 - 1, Z: 1<<32 - 1}
		}, "more than 2147483647 threads"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.edit(&cfg)
			err := info.Launch(cfg, out)
			if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v; want ErrInvalidValue saying %q", err, tt.want)
			}
		})
	}
	// More blocks a cluster than the kernel allows: the driver's refusal,
	// naming the launch.
	cfg := base
	cfg.Cluster.X = 32
	if err := info.Launch(cfg, out); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "cluster {32 1 1}") {
		t.Errorf("cluster of 32: %v; want ErrInvalidValue naming the cluster", err)
	}
	if _, err := info.MaxActiveClusters(cuda.LaunchConfig{Block: cuda.Dim3{X: 32}}); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("MaxActiveClusters without a cluster: %v", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// TestLaunchAttributesOlderDevice: a device before compute capability 9.0
// refuses clusters with ErrNotSupported in words (the fake plays one);
// cooperative launches and priorities still work.
func TestLaunchAttributesOlderDevice(t *testing.T) {
	if !cudatest.InChild(t) {
		cudatest.RunChild(t, "GOCUDA_TEST_DRIVER=fake", "GOCUDA_REQUIRE_GPU=", "FAKECUDA_COMPUTE_CAPABILITY=8.0")
		return
	}
	ctx := cudatest.Context(t)
	if cc := must(ctx.Device().ComputeCapability())(t); cc.Major >= 9 {
		t.Fatalf("the fake plays compute capability %d.%d, not 8.0", cc.Major, cc.Minor)
	}
	s := cudatest.Stream(t, ctx)
	saxpy := must(loadKernels(t, ctx).Function("saxpy"))(t)
	x := must(cuda.Alloc[float32](ctx, 64))(t)
	defer x.Free()
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: 2}, Block: cuda.Dim3{X: 32}, Stream: s, Cluster: cuda.Dim3{X: 2}}
	err := saxpy.Launch(cfg, float32(1), x, x, uint32(64))
	if !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "(compute capability 8.0) cannot run thread block clusters, which need compute capability 9.0") {
		t.Errorf("cluster launch on 8.0: %v; want ErrNotSupported in words", err)
	}
	if _, err := saxpy.MaxActiveClusters(cfg); !errors.Is(err, cuda.ErrNotSupported) {
		t.Errorf("MaxActiveClusters on 8.0: %v; want ErrNotSupported", err)
	}
	cfg.Cluster = cuda.Dim3{}
	cfg.ProgrammaticDependent = true
	// Twice: the second reads the compute capability the context keeps.
	for range 2 {
		err = saxpy.Launch(cfg, float32(1), x, x, uint32(64))
		if !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "(compute capability 8.0) cannot start a kernel before the previous one ends") {
			t.Errorf("programmatic dependent launch on 8.0: %v; want ErrNotSupported in words", err)
		}
	}
	cfg.ProgrammaticDependent = false
	cfg.Cooperative = true
	if err := saxpy.Launch(cfg, float32(1), x, x, uint32(64)); err != nil {
		t.Errorf("cooperative launch on 8.0: %v", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// TestLaunchAttributesCapture: a cluster launch and a cooperative one
// captured into a graph run again at each launch of it.
func TestLaunchAttributesCapture(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := loadLaunchKernels(t, ctx)
	info := must(m.Function("cluster_info"))(t)
	sync := must(m.Function("grid_sync"))(t)
	const blocks = 16
	out := must(cuda.Alloc[uint32](ctx, 4*blocks))(t)
	defer out.Free()
	flags := must(cuda.Alloc[uint32](ctx, blocks))(t)
	defer flags.Free()
	counter := must(cuda.Alloc[uint32](ctx, 1))(t)
	defer counter.Free()
	counts := must(cuda.Alloc[uint32](ctx, blocks))(t)
	defer counts.Free()
	g := must(s.Capture(cuda.CaptureGlobal, func() error {
		if err := info.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: 32}, Stream: s, Cluster: cuda.Dim3{X: 4}}, out); err != nil {
			return err
		}
		return sync.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: 32}, Stream: s, Cooperative: true}, flags, counter, counts)
	}))(t)
	defer g.Close()
	e := must(g.Instantiate())(t)
	defer e.Close()
	for round := 1; round <= 2; round++ {
		for _, b := range []*cuda.DeviceBuffer[uint32]{out, flags, counter, counts} {
			if err := b.Memset32(0); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Launch(s); err != nil {
			t.Fatal(err)
		}
		got := make([]uint32, 4*blocks)
		if err := out.CopyToHost(got); err != nil {
			t.Fatal(err)
		}
		for b := range blocks {
			if got[4*b] != uint32(b%4) || got[4*b+1] != uint32(b/4) || got[4*b+2] != 4 {
				t.Fatalf("round %d, block %d: %v, want rank %d of cluster %d of 4", round, b, got[4*b:4*b+4], b%4, b/4)
			}
		}
		c := make([]uint32, blocks)
		if err := counts.CopyToHost(c); err != nil {
			t.Fatal(err)
		}
		for b, n := range c {
			if n != blocks {
				t.Fatalf("round %d, block %d counted %d flags, want %d", round, b, n, blocks)
			}
		}
	}
}

// TestLaunchAttributesGraphNodes: kernel nodes added with launch attributes
// run with them (clusters, a cooperative grid, a priority), an instance
// keeps them when a node's arguments and grid are set again, and what
// cannot be is refused in words, leaving the graph as it was.
func TestLaunchAttributesGraphNodes(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := loadLaunchKernels(t, ctx)
	info := must(m.Function("cluster_info"))(t)
	sync := must(m.Function("grid_sync"))(t)
	const blocks = 16
	out := must(cuda.Alloc[uint32](ctx, 4*2*blocks))(t)
	defer out.Free()
	out2 := must(cuda.Alloc[uint32](ctx, 4*blocks))(t)
	defer out2.Free()
	flags := must(cuda.Alloc[uint32](ctx, blocks))(t)
	defer flags.Free()
	counter := must(cuda.Alloc[uint32](ctx, 1))(t)
	defer counter.Free()
	counts := must(cuda.Alloc[uint32](ctx, blocks))(t)
	defer counts.Free()
	_, greatest := must2(ctx.StreamPriorityRange())(t)

	g := must(ctx.NewGraph())(t)
	defer g.Close()
	clustered := cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: 32}, Cluster: cuda.Dim3{X: 4}}
	a := must(g.AddKernel(nil, info, clustered, out))(t)
	coop := cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: 32}, Cooperative: true}
	b := must(g.AddKernel([]*cuda.GraphNode{a}, sync, coop, flags, counter, counts))(t)
	spread := cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: 32}, Cluster: cuda.Dim3{X: 2}, ClusterPolicy: cuda.ClusterPolicySpread, Priority: greatest}
	must(g.AddKernel([]*cuda.GraphNode{b}, info, spread, out2))(t)

	// The refusals, each leaving the graph's three nodes.
	for _, tt := range []struct {
		name string
		cfg  cuda.LaunchConfig
		err  error
		want string
	}{
		{"programmatic dependent", cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: 32}, ProgrammaticDependent: true}, cuda.ErrNotSupported, "capture the launches"},
		{"grid not whole clusters", cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks - 2}, Block: cuda.Dim3{X: 32}, Cluster: cuda.Dim3{X: 4}}, cuda.ErrInvalidValue, "not a whole number of clusters"},
		{"cooperative grid too large", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1 << 20}, Block: cuda.Dim3{X: 32}, Cooperative: true}, cuda.ErrInvalidValue, "more blocks than"},
		{"priority out of range", cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: 32}, Priority: greatest - 100}, cuda.ErrInvalidValue, "outside the context's range"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := g.AddKernel(nil, info, tt.cfg, out)
			if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v; want %v saying %q", err, tt.err, tt.want)
			}
			if n := must(g.Nodes())(t); n != 3 {
				t.Errorf("the graph has %d nodes after the refusal, want 3", n)
			}
		})
	}

	e := must(g.Instantiate())(t)
	defer e.Close()
	run := func(t *testing.T, n int) {
		t.Helper()
		for _, b := range []*cuda.DeviceBuffer[uint32]{out, out2, flags, counter, counts} {
			if err := b.Memset32(0xffffffff); err != nil {
				t.Fatal(err)
			}
		}
		if err := counter.Memset32(0); err != nil {
			t.Fatal(err)
		}
		if err := flags.Memset32(0); err != nil {
			t.Fatal(err)
		}
		if err := e.Launch(s); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			buf     *cuda.DeviceBuffer[uint32]
			blocks  int
			cluster int
		}{{out, n, 4}, {out2, blocks, 2}} {
			got := must(toHost(c.buf))(t)
			for b := range c.blocks {
				want := [4]uint32{uint32(b % c.cluster), uint32(b / c.cluster), uint32(c.cluster), uint32(b)}
				if [4]uint32(got[4*b:4*b+4]) != want {
					t.Fatalf("block %d of %d: rank, cluster, size, block = %v, want %v", b, c.blocks, got[4*b:4*b+4], want)
				}
			}
		}
		for b, v := range must(toHost(counts))(t) {
			if v != blocks {
				t.Fatalf("block %d of the cooperative node counted %d flags, want %d", b, v, blocks)
			}
		}
	}
	t.Run("run", func(t *testing.T) { run(t, blocks) })
	t.Run("set again, attributes kept", func(t *testing.T) {
		more := clustered
		more.Grid.X = 2 * blocks
		if err := e.SetKernelParams(a, more, out); err != nil {
			t.Fatal(err)
		}
		run(t, 2*blocks)
	})
	t.Run("set again, refused", func(t *testing.T) {
		plain := clustered
		plain.Cluster = cuda.Dim3{}
		if err := e.SetKernelParams(a, plain, out); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "where the node was added with cluster {4 1 1}") {
			t.Errorf("without the node's cluster: %v; want ErrInvalidValue naming it", err)
		}
		odd := clustered
		odd.Grid.X = blocks + 2
		if err := e.SetKernelParams(a, odd, out); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "not a whole number of clusters") {
			t.Errorf("a grid of %d blocks in clusters of 4: %v; want ErrInvalidValue", odd.Grid.X, err)
		}
		run(t, 2*blocks) // the instance as the last good call left it
	})
}

// TestLaunchAttributesGraphNodeRefused: when the driver refuses a kernel
// node's attribute, the node is taken out again and the graph is as it
// was.
func TestLaunchAttributesGraphNodeRefused(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	info := must(loadLaunchKernels(t, ctx).Function("cluster_info"))(t)
	out := must(cuda.Alloc[uint32](ctx, 4*16))(t)
	defer out.Free()
	g := must(ctx.NewGraph())(t)
	defer g.Close()
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: 16}, Block: cuda.Dim3{X: 32}, Cluster: cuda.Dim3{X: 4}}
	must(g.AddKernel(nil, info, cfg, out))(t)
	f.Fail("cuGraphKernelNodeSetAttribute", 1, 1)
	if _, err := g.AddKernel(nil, info, cfg, out); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "launch attributes") {
		t.Fatalf("%v; want the driver's CUDA_ERROR_INVALID_VALUE, saying what was set", err)
	}
	if n := must(g.Nodes())(t); n != 1 {
		t.Fatalf("the graph has %d nodes, want the 1 before the refusal", n)
	}
	e := must(g.Instantiate())(t)
	defer e.Close()
	if err := out.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Free of a buffer the graph uses: %v; want ErrInvalidValue", err)
	}
}

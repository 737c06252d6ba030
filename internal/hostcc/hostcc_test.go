package hostcc_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/hostcc"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

// kernels exercise what the fake must get right to run compute's
// kernels: a block barrier with static shared memory, dynamic shared
// memory, warp shuffles of each kind (a tree, a broadcast of a group's
// lane, up, xor, a ballot), grids of two and three dimensions, scalar
// parameters of each size, and the last block of a grid found by an
// atomic counter.
const kernels = `
extern "C" __global__ void reverse(int* x) {
	__shared__ int s[256];
	const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	s[threadIdx.x] = x[i];
	__syncthreads();
	x[i] = s[blockDim.x - 1 - threadIdx.x];
}
extern "C" __global__ void rotate(float* x, int by) {
	extern __shared__ float d[];
	const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	d[threadIdx.x] = x[i];
	__syncthreads();
	x[i] = d[(threadIdx.x + by) % blockDim.x];
}
extern "C" __global__ __launch_bounds__(1024) void warps(const double* x, double* sum, int* lane0, int* up, int* flip, unsigned* votes, long long n) {
	const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	double v = i < n ? x[i] : 0;
	for (int k = 16; k > 0; k >>= 1) v += __shfl_down_sync(0xffffffffu, v, k);
	if (threadIdx.x % 32 == 0) sum[i / 32] = v;
	const int lane = threadIdx.x % 32;
	lane0[i] = __shfl_sync(0xffffffffu, lane * 10, 3, 8);
	up[i] = __shfl_up_sync(0xffffffffu, lane, 2);
	flip[i] = __shfl_xor_sync(0xffffffffu, lane, 1);
	const unsigned b = __ballot_sync(0xffffffffu, lane % 3 == 0);
	if (lane == 0) votes[i / 32] = b;
}
extern "C" __global__ void grid3(unsigned* out, unsigned char c, short s, unsigned long long big) {
	const unsigned bx = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
	const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	out[bx * blockDim.x * blockDim.y * blockDim.z + t] = bx * 1000 + t + c + s + (unsigned)(big >> 40);
}
extern "C" __global__ void last(unsigned* counter, int* lasts) {
	__shared__ bool is_last;
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0) is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
	__syncthreads();
	if (is_last && threadIdx.x == 0) { atomicAdd(lasts, 1); *counter = 0; }
}
extern "C" __global__ void order(unsigned* next, unsigned* ticket) {
	if (threadIdx.x == 0) ticket[blockIdx.x] = atomicAdd(next, 1u);
}
extern "C" __global__ void stuck(int* x) {
	if (threadIdx.x < 16) x[0] = __shfl_sync(0xffffffffu, 1, 0); // lanes 16 to 31 never come
	else __syncthreads();
}
extern "C" __global__ void ring(int* out, int w, int rounds) {
	extern __shared__ int d[];
	__shared__ int own[64];
	const unsigned rank = blockIdx.x % w;
	const long long b = blockIdx.x + (long long)gridDim.x * blockIdx.y;
	int acc = 0;
	for (int k = 0; k < rounds; k++) {
		d[threadIdx.x] = (int)(b * 100 + threadIdx.x + k);
		own[threadIdx.x] = (int)b;
		gocuda_hostcc_cluster_sync();
		const int* next = gocuda_hostcc_map_shared(d, (rank + 1) % w);
		acc += next[(threadIdx.x + 1) % blockDim.x] + own[threadIdx.x] * 1000;
		gocuda_hostcc_cluster_sync();
	}
	out[b * blockDim.x + threadIdx.x] = acc;
}
extern "C" __global__ void clusterstuck(int* x) {
	if (threadIdx.x < 32) __syncthreads(); // the other warp waits at the cluster's barrier
	else gocuda_hostcc_cluster_sync();
	x[0] = 1;
}
extern "C" __global__ void farrank(int* x) {
	extern __shared__ int d[];
	x[0] = *gocuda_hostcc_map_shared(d, 2);
}
extern "C" __global__ void mathf(float* x) { x[threadIdx.x] = expf(x[threadIdx.x]) + sqrt(x[threadIdx.x]) + max(1.0f, x[threadIdx.x]); }
`

// load returns a stream of a context of the test's and the kernels
// loaded in the context.
func load(t *testing.T) (*cuda.Stream, *cuda.Module) {
	t.Helper()
	skipUnlessFake(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	mod := loadIn(t, ctx)
	t.Cleanup(func() { mod.Close() })
	return s, mod
}

func skipUnlessFake(t *testing.T) {
	t.Helper()
	if !cudatest.IsFake() {
		t.Skip("the fake driver runs host-compiled kernels; a GPU does not")
	}
	if !hostcc.Available() {
		t.Skip("no C++ compiler")
	}
	t.Setenv(hostcc.EnvCache, t.TempDir())
}

func loadIn(t *testing.T, ctx *cuda.Context) *cuda.Module {
	t.Helper()
	image, err := hostcc.Compile(kernels, "kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := ctx.LoadModule(image)
	if err != nil {
		t.Fatalf("%v\n%s", err, image)
	}
	return mod
}

func fn(t *testing.T, mod *cuda.Module, name string) *cuda.Function {
	t.Helper()
	f, err := mod.Function(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRun(t *testing.T) { testRun(t) }

func testRun(t *testing.T) {
	s, mod := load(t)
	ctx := s.Context()
	launch := func(f *cuda.Function, cfg cuda.LaunchConfig, args ...any) {
		t.Helper()
		cfg.Stream = s
		if err := f.Launch(cfg, args...); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("reverse", func(t *testing.T) {
		x := make([]int32, 1024)
		for i := range x {
			x[i] = int32(i)
		}
		d := cudatest.Upload(t, ctx, x)
		launch(fn(t, mod, "reverse"), cuda.LaunchConfig{Grid: cuda.Dim3{X: 4}, Block: cuda.Dim3{X: 256}}, d)
		for i, g := range cudatest.Download(t, d) {
			if want := int32(i/256*256 + 255 - i%256); g != want {
				t.Fatalf("x[%d] = %d, want %d", i, g, want)
			}
		}
	})
	t.Run("dynamic shared", func(t *testing.T) {
		x := make([]float32, 192)
		for i := range x {
			x[i] = float32(i)
		}
		d := cudatest.Upload(t, ctx, x)
		launch(fn(t, mod, "rotate"), cuda.LaunchConfig{Grid: cuda.Dim3{X: 2}, Block: cuda.Dim3{X: 96}, SharedMemBytes: 96 * 4}, d, int32(5))
		for i, g := range cudatest.Download(t, d) {
			if want := float32(i/96*96 + (i%96+5)%96); g != want {
				t.Fatalf("x[%d] = %v, want %v", i, g, want)
			}
		}
	})
	t.Run("warps", func(t *testing.T) {
		const n, threads = 1000, 1024
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(i)
		}
		dx := cudatest.Upload(t, ctx, x)
		sum := cudatest.Must(cuda.Alloc[float64](ctx, threads/32))(t)
		lane0 := cudatest.Must(cuda.Alloc[int32](ctx, threads))(t)
		up := cudatest.Must(cuda.Alloc[int32](ctx, threads))(t)
		flip := cudatest.Must(cuda.Alloc[int32](ctx, threads))(t)
		votes := cudatest.Must(cuda.Alloc[uint32](ctx, threads/32))(t)
		for _, b := range []interface{ Free() error }{sum, lane0, up, flip, votes} {
			defer b.Free()
		}
		launch(fn(t, mod, "warps"), cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: threads}}, dx, sum, lane0, up, flip, votes, int64(n))
		for w, g := range cudatest.Download(t, sum) {
			var want float64
			for i := 32 * w; i < 32*w+32 && i < n; i++ {
				want += float64(i)
			}
			if g != want {
				t.Fatalf("warp %d: sum %v, want %v", w, g, want)
			}
		}
		gl, gu, gf := cudatest.Download(t, lane0), cudatest.Download(t, up), cudatest.Download(t, flip)
		for i := range threads {
			lane := int32(i % 32)
			wantUp := lane - 2
			if lane < 2 {
				wantUp = lane
			}
			if want := (lane/8*8 + 3) * 10; gl[i] != want || gu[i] != wantUp || gf[i] != lane^1 {
				t.Fatalf("thread %d: shfl %d up %d xor %d, want %d %d %d", i, gl[i], gu[i], gf[i], want, wantUp, lane^1)
			}
		}
		for w, g := range cudatest.Download(t, votes) {
			if g != 0x49249249 {
				t.Fatalf("warp %d: ballot %#x, want 0x49249249", w, g)
			}
		}
	})
	t.Run("grid3", func(t *testing.T) {
		grid, block := cuda.Dim3{X: 3, Y: 2, Z: 2}, cuda.Dim3{X: 4, Y: 3, Z: 2}
		out := cudatest.Must(cuda.Alloc[uint32](ctx, 12*24))(t)
		defer out.Free()
		launch(fn(t, mod, "grid3"), cuda.LaunchConfig{Grid: grid, Block: block}, out, uint8(7), int16(-2), uint64(3)<<40)
		for i, g := range cudatest.Download(t, out) {
			if want := uint32(i/24*1000 + i%24 + 7 - 2 + 3); g != want {
				t.Fatalf("out[%d] = %d, want %d", i, g, want)
			}
		}
	})
	t.Run("last block", func(t *testing.T) {
		counter := cudatest.Must(cuda.Zeroed[uint32](ctx, 1))(t)
		defer counter.Free()
		lasts := cudatest.Must(cuda.Zeroed[int32](ctx, 1))(t)
		defer lasts.Free()
		launch(fn(t, mod, "last"), cuda.LaunchConfig{Grid: cuda.Dim3{X: 9}, Block: cuda.Dim3{X: 64}}, counter, lasts)
		if g := cudatest.Download(t, lasts)[0]; g != 1 {
			t.Errorf("%d blocks found they were the last, want 1", g)
		}
		if g := cudatest.Download(t, counter)[0]; g != 0 {
			t.Errorf("the counter: %d, want 0 again", g)
		}
	})
	// Thread block clusters: the blocks of a cluster run together,
	// each with static shared memory of its own, meet at the cluster's
	// barrier again and again, and read each other's dynamic shared
	// memory; without clusters a block is a cluster of one.
	for _, c := range []struct {
		name          string
		grid, cluster cuda.Dim3
		w             int
	}{
		{"clusters of 4", cuda.Dim3{X: 8, Y: 1, Z: 1}, cuda.Dim3{X: 4, Y: 1, Z: 1}, 4},
		{"clusters of 2 by rows", cuda.Dim3{X: 4, Y: 3, Z: 1}, cuda.Dim3{X: 2, Y: 1, Z: 1}, 2},
		{"no clusters", cuda.Dim3{X: 3, Y: 2, Z: 1}, cuda.Dim3{}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			const threads, rounds = 48, 3
			blocks := c.grid.X * c.grid.Y
			out := cudatest.Must(cuda.Alloc[int32](ctx, blocks*threads))(t)
			defer out.Free()
			launch(fn(t, mod, "ring"), cuda.LaunchConfig{Grid: c.grid, Block: cuda.Dim3{X: threads}, Cluster: c.cluster, SharedMemBytes: threads * 4}, out, int32(c.w), int32(rounds))
			for i, g := range cudatest.Download(t, out) {
				b, th := i/threads, i%threads
				x, y := b%c.grid.X, b/c.grid.X
				next := x/c.w*c.w + (x%c.w+1)%c.w + c.grid.X*y
				var want int32
				for k := range rounds {
					want += int32(next*100+(th+1)%threads+k) + int32(b*1000)
				}
				if g != want {
					t.Fatalf("block %d thread %d: %d, want %d", b, th, g, want)
				}
			}
		})
	}
	t.Run("math", func(t *testing.T) {
		d := cudatest.Upload(t, ctx, []float32{0, 4})
		launch(fn(t, mod, "mathf"), cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 2}}, d)
		if g := cudatest.Download(t, d); g[0] != 2 || g[1] < 60.59 || g[1] > 60.61 {
			t.Errorf("exp + sqrt + max: %v, want [2 60.598]", g)
		}
	})
}

// TestReverseSchedule: with the blocks, warps and lanes run last first
// (FAKECUDA_HOST_SCHEDULE=reverse, in a child process: the fake reads it
// once) the kernels of TestRun, which have no races, give the same
// results.
func TestReverseSchedule(t *testing.T) {
	if cudatest.InChild(t) {
		testRun(t)
		s, mod := load(t)
		next := cudatest.Must(cuda.Zeroed[uint32](s.Context(), 1))(t)
		defer next.Free()
		ticket := cudatest.Must(cuda.Zeroed[uint32](s.Context(), 3))(t)
		defer ticket.Free()
		if err := fn(t, mod, "order").Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: 3}, Block: cuda.Dim3{X: 32}, Stream: s}, next, ticket); err != nil {
			t.Fatal(err)
		}
		if g := cudatest.Download(t, ticket); g[0] != 2 || g[2] != 0 {
			t.Errorf("the blocks' order: %v, want [2 1 0] (the last first)", g)
		}
		return
	}
	skipUnlessFake(t)
	cudatest.RunChild(t, "FAKECUDA_HOST_SCHEDULE=reverse")
}

// TestKernelFaults: threads that wait at barriers that cannot open (a
// warp's and the block's; the block's and the cluster's), and an address
// mapped to a rank the cluster does not have, fail the launch (a GPU
// hangs or faults), each in a child process, since the fault is the
// device's for good (the tests after it, or the next -count, would fail).
func TestKernelFaults(t *testing.T) {
	skipUnlessFake(t)
	for _, c := range []struct {
		name   string
		kernel string
		cfg    cuda.LaunchConfig
	}{
		{"a warp's and the block's barrier", "stuck", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 64}}},
		{"both barriers", "clusterstuck", cuda.LaunchConfig{Grid: cuda.Dim3{X: 2}, Block: cuda.Dim3{X: 64}, Cluster: cuda.Dim3{X: 2, Y: 1, Z: 1}}},
		{"rank past the cluster", "farrank", cuda.LaunchConfig{Grid: cuda.Dim3{X: 2}, Block: cuda.Dim3{X: 32}, Cluster: cuda.Dim3{X: 2, Y: 1, Z: 1}, SharedMemBytes: 16}},
		{"rank past a block alone", "farrank", cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 32}, SharedMemBytes: 16}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !cudatest.InChild(t) {
				cudatest.RunChild(t)
				return
			}
			ctx := cudatest.Must(cuda.NewContext(cudatest.Device(t)))(t)
			s := cudatest.Must(ctx.NewStream())(t)
			mod := loadIn(t, ctx)
			x := cudatest.Must(cuda.Zeroed[int32](ctx, 1))(t)
			c.cfg.Stream = s
			if err := fn(t, mod, c.kernel).Launch(c.cfg, x); err != nil {
				t.Fatal(err)
			}
			if err := s.Synchronize(); !errors.Is(err, cuda.Result(719)) {
				t.Errorf("%s: %v, want CUDA_ERROR_LAUNCH_FAILED", c.kernel, err)
			}
		})
	}
}

// TestCompileError: the compiler's log names the source as given.
func TestCompileError(t *testing.T) {
	if !hostcc.Available() {
		t.Skip("no C++ compiler")
	}
	t.Setenv(hostcc.EnvCache, t.TempDir())
	_, err := hostcc.Compile("extern \"C\" __global__ void k(float* x) { x[0] = ; }", "broken.cu")
	var ce *hostcc.CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Log, "broken.cu:1:") {
		t.Fatalf("got %v; want a CompileError naming broken.cu:1", err)
	}
}

package cuda_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// occupancyKernels are the kernels the occupancy tests ask about: those of
// testdata/kernels.ptx on either driver, and on the real one those of
// testdata/occupancy.ptx too, of other register and shared-memory use.
func occupancyKernels(t *testing.T, ctx *cuda.Context) map[string]*cuda.Function {
	t.Helper()
	fs := map[string]*cuda.Function{}
	m := loadKernels(t, ctx)
	for _, name := range []string{"vadd_f32", "saxpy", "reverse"} {
		fs[name] = must(m.Function(name))(t)
	}
	if cudatest.IsFake() {
		return fs
	}
	occ := must(ctx.LoadModule(must(os.ReadFile("testdata/occupancy.ptx"))(t)))(t)
	t.Cleanup(func() { occ.Close() })
	for _, name := range []string{"occ_plain", "occ_shared12k", "occ_shared40k", "occ_reqntid", "occ_regs"} {
		fs[name] = must(occ.Function(name))(t)
	}
	return fs
}

// TestOccupancy checks the occupancy calls against each other for every
// kernel: a suggestion's blocks per multiprocessor are MaxActiveBlocks of
// its block size, and no other block size holds more threads; the
// suggestion computed in Go (SuggestBlockSizeFunc) is the driver's for a
// fixed shared memory size; the room AvailableDynamicSharedMem gives
// holds the blocks asked for; bad arguments are refused in words.
func TestOccupancy(t *testing.T) {
	ctx := cudatest.Context(t)
	sms := must(ctx.Device().MultiprocessorCount())(t)
	for name, f := range occupancyKernels(t, ctx) {
		t.Run(name, func(t *testing.T) {
			limit := must(f.Attribute(cuda.FuncMaxThreadsPerBlock))(t)
			for _, shared := range []int{0, 1 << 10, 20 << 10, 48 << 10} {
				for _, maxBlock := range []int{0, 100, 512} {
					o := must(f.SuggestBlockSize(shared, maxBlock))(t)
					g := must(f.SuggestBlockSizeFunc(func(int) int { return shared }, maxBlock))(t)
					if o != g {
						t.Errorf("shared %d, limit %d: the driver suggests %+v, Go %+v", shared, maxBlock, o, g)
					}
					if o.BlockSize == 0 { // nothing fits
						continue
					}
					if o.BlockSize > limit || maxBlock > 0 && o.BlockSize > maxBlock || o.MinGridSize != o.BlocksPerSM*sms {
						t.Errorf("shared %d, limit %d: %+v (kernel limit %d, %d multiprocessors)", shared, maxBlock, o, limit, sms)
					}
					if n := must(f.MaxActiveBlocks(o.BlockSize, shared))(t); n != o.BlocksPerSM {
						t.Errorf("shared %d: %d blocks of %d a multiprocessor, MaxActiveBlocks says %d", shared, o.BlocksPerSM, o.BlockSize, n)
					}
					top := limit
					if maxBlock > 0 {
						top = min(limit, maxBlock)
					}
					for size := 32; size <= top; size += 32 {
						if n := must(f.MaxActiveBlocks(size, shared))(t); n*size > o.BlocksPerSM*o.BlockSize {
							t.Errorf("shared %d, limit %d: %d blocks of %d threads hold more than the suggestion %+v", shared, maxBlock, n, size, o)
						}
					}
				}
			}
			// Shared memory by block size: the suggestion is the best of
			// every multiple of the warp.
			perThread := func(n int) int { return 48 * n }
			o := must(f.SuggestBlockSizeFunc(perThread, 0))(t)
			for size := 32; size <= limit; size += 32 {
				if n := must(f.MaxActiveBlocks(size, perThread(size)))(t); n*size > o.BlocksPerSM*o.BlockSize {
					t.Errorf("48 bytes a thread: %d blocks of %d hold more than the suggestion %+v", n, size, o)
				}
			}
			// The room for more blocks is no larger, and no more than the
			// kernel may have without SetAttribute. (It need not hold the
			// blocks: on the H200 the driver's room for 5 blocks of 128
			// threads, 46592 bytes, holds 4 by MaxActiveBlocks.)
			block, allowed := min(limit, 128), must(f.Attribute(cuda.FuncMaxDynamicSharedSize))(t)
			last := allowed
			for _, blocks := range []int{1, 2, 5} {
				room, err := f.AvailableDynamicSharedMem(blocks, block)
				if err != nil { // that many blocks do not fit at all
					last = 0
					continue
				}
				if room > last {
					t.Errorf("%d blocks of %d threads: room for %d bytes each, more than for fewer blocks (%d)", blocks, block, room, last)
				}
				last = room
			}
		})
	}
	f := must(loadKernels(t, ctx).Function("saxpy"))(t)
	if room, err := f.AvailableDynamicSharedMem(64, 1024); err == nil {
		t.Errorf("room for 64 blocks of 1024 threads on a multiprocessor: %d bytes, want an error", room)
	}
	if _, err := f.SuggestBlockSize(0, 1<<40); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "block size limit 1099511627776") {
		t.Errorf("SuggestBlockSize(0, 1<<40): %v; want ErrInvalidValue naming the limit", err)
	}
	for name, err := range map[string]error{
		"MaxActiveBlocks(0, 0)":               second(f.MaxActiveBlocks(0, 0)),
		"MaxActiveBlocks(64, -1)":             second(f.MaxActiveBlocks(64, -1)),
		"SuggestBlockSize(-1, 0)":             second(f.SuggestBlockSize(-1, 0)),
		"SuggestBlockSize(0, -5)":             second(f.SuggestBlockSize(0, -5)),
		"SuggestBlockSizeFunc(nil, 0)":        second(f.SuggestBlockSizeFunc(nil, 0)),
		"SuggestBlockSizeFunc(negative, 0)":   second(f.SuggestBlockSizeFunc(func(int) int { return -1 }, 0)),
		"SuggestBlockSizeFunc(f, -1)":         second(f.SuggestBlockSizeFunc(func(int) int { return 0 }, -1)),
		"AvailableDynamicSharedMem(0, 128)":   second(f.AvailableDynamicSharedMem(0, 128)),
		"AvailableDynamicSharedMem(1, 0)":     second(f.AvailableDynamicSharedMem(1, 0)),
		"AvailableDynamicSharedMem(1, 1<<40)": second(f.AvailableDynamicSharedMem(1, 1<<40)),
		// X past uint32 whose product with Y wraps to 4 threads.
		"MaxActiveClusters(block {2^62+1 4 1})":  second(f.MaxActiveClusters(cuda.LaunchConfig{Block: cuda.Dim3{X: 1<<62 + 1, Y: 4}, Cluster: cuda.Dim3{X: 2}})),
		"MaxActiveClusters(block {2^16 2^16 1})": second(f.MaxActiveClusters(cuda.LaunchConfig{Block: cuda.Dim3{X: 1 << 16, Y: 1 << 16}, Cluster: cuda.Dim3{X: 2}})),
	} {
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "Function.") {
			t.Errorf("%s: %v; want an error wrapping ErrInvalidValue", name, err)
		}
	}
}

// TestOccupancyMatchesC compares gocuda's answers with the driver's from C
// (bench/cref/occupancy.c, whose output GOCUDA_CREF_OCCUPANCY names; the
// GPU scripts run it): the same numbers for every kernel and question,
// SuggestBlockSizeFunc's included, which the C program gets through the
// driver's own callback.
func TestOccupancyMatchesC(t *testing.T) {
	path := os.Getenv("GOCUDA_CREF_OCCUPANCY")
	if path == "" {
		t.Skip("GOCUDA_CREF_OCCUPANCY names no output of bench/cref/occupancy.c")
	}
	ctx := cudatest.Context(t)
	fs := occupancyKernels(t, ctx)
	file := must(os.Open(path))(t)
	defer file.Close()
	lines := 0
	for sc := bufio.NewScanner(file); sc.Scan(); lines++ {
		var name, what string
		var a, b int
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		name, what = fields[0], fields[1]
		f := fs[name]
		if f == nil {
			t.Fatalf("unknown kernel in %q", sc.Text())
		}
		var got string
		switch what {
		case "active":
			fmt.Sscan(strings.Join(fields[2:], " "), &a, &b)
			got = fmt.Sprintf("%s active %d %d %d", name, a, b, must(f.MaxActiveBlocks(a, b))(t))
		case "suggest":
			fmt.Sscan(strings.Join(fields[2:], " "), &a, &b)
			o := must(f.SuggestBlockSize(a, b))(t)
			got = fmt.Sprintf("%s suggest %d %d %d %d", name, a, b, o.MinGridSize, o.BlockSize)
		case "suggestfn":
			fmt.Sscan(strings.Join(fields[2:], " "), &a, &b)
			o := must(f.SuggestBlockSizeFunc(func(n int) int { return a * n }, b))(t)
			got = fmt.Sprintf("%s suggestfn %d %d %d %d", name, a, b, o.MinGridSize, o.BlockSize)
		case "available":
			fmt.Sscan(strings.Join(fields[2:], " "), &a, &b)
			room, err := f.AvailableDynamicSharedMem(a, b)
			if err != nil {
				room = -1
			}
			got = fmt.Sprintf("%s available %d %d %d", name, a, b, room)
		default:
			t.Fatalf("unknown line %q", sc.Text())
		}
		if got != sc.Text() {
			t.Errorf("C: %s\nGo: %s", sc.Text(), got)
		}
	}
	if lines == 0 {
		t.Fatalf("%s is empty", path)
	}
	t.Logf("%d answers compared with C's", lines)
}

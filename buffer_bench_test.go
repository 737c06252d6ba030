package cuda_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// copySizes are the transfer sizes benchmarked, in bytes: 150 KiB, 196 KiB
// and 4.7 MiB (the sizes of the first measurements) among them. bench/cref/copybench.c uses the same.
var copySizes = []int{4, 4 << 10, 16 << 10, 64 << 10, 150 << 10, 196 << 10, 256 << 10,
	1 << 20, 4928307, 16 << 20, 64 << 20, 256 << 20, 1 << 30}

func sizeName(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// arenaBytes is the least memory a benchmark walks through, a transfer's
// worth at a time, so that no cache holds what a transfer moves; at most
// maxSlots transfers' worth, so that the smallest transfers, which measure
// latency, do not measure page walks instead.
const (
	arenaBytes = 256 << 20
	maxSlots   = 4096
)

// arenas is device and host memory for a benchmark of sizes up to largest.
type arenas struct {
	dev  *cuda.DeviceBuffer[byte]
	host []byte
}

// slots returns the arenas cut into n-byte transfers, made before the
// timing starts so that the smallest transfers time the copy alone.
func (a arenas) slots(tb testing.TB, n int) ([]*cuda.DeviceBuffer[byte], [][]byte) {
	k := min(len(a.host)/n, maxSlots)
	devs, hosts := make([]*cuda.DeviceBuffer[byte], k), make([][]byte, k)
	for i := range k {
		devs[i], hosts[i] = must(a.dev.Slice(i*n, n))(tb), a.host[i*n:(i+1)*n]
	}
	return devs, hosts
}

// benchCopies runs copy for each size, on host memory from host.
func benchCopies(b *testing.B, host func(b *testing.B, ctx *cuda.Context, n int) []byte, copy func(*cuda.DeviceBuffer[byte], []byte) error) {
	ctx := cudatest.Context(b)
	size := max(arenaBytes, slices.Max(copySizes))
	a := arenas{dev: must(cuda.Alloc[byte](ctx, size))(b), host: host(b, ctx, size)}
	defer a.dev.Free()
	for _, n := range copySizes {
		b.Run(sizeName(n), func(b *testing.B) {
			devs, hosts := a.slots(b, n)
			if err := copy(devs[0], hosts[0]); err != nil { // warm up
				b.Fatal(err)
			}
			b.SetBytes(int64(n))
			i := 1
			for b.Loop() {
				if err := copy(devs[i%len(devs)], hosts[i%len(devs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func pageable(_ *testing.B, _ *cuda.Context, n int) []byte { return random[byte](n) }

func pinned(b *testing.B, ctx *cuda.Context, n int) []byte {
	p := must(cuda.AllocPinned[byte](ctx, n))(b)
	b.Cleanup(func() { p.Free() })
	copy(p.Data(), random[byte](n))
	return p.Data()
}

func registered(b *testing.B, ctx *cuda.Context, n int) []byte {
	h := random[byte](n)
	r := must(cuda.Register(ctx, h))(b)
	b.Cleanup(func() { r.Close() })
	return h
}

// pairSlots returns the slots of the i-th pair of transfers a paired
// benchmark compares, one from each half of n: adjacent slots would let the
// hardware prefetcher, running ahead of the first transfer, warm the
// memory of the second.
func pairSlots(i, n int) (int, int) {
	if n < 2 {
		return 0, 0
	}
	h := n / 2
	return i % h, h + i%h
}

// BenchmarkCopyPaired alternates, copy by copy, CopyFromHost (or
// CopyToHost) with the bare driver call on the same memory in the same
// process, and reports each one's mean time and their ratio. The pageable
// path's time wanders by tens of percent between runs, in C as in Go
// (docs/performance.md); pairing the two copies cancels that out and
// leaves gocuda's own cost.
func BenchmarkCopyPaired(b *testing.B) {
	ctx := cudatest.Context(b)
	size := max(arenaBytes, slices.Max(copySizes))
	a := arenas{dev: must(cuda.Alloc[byte](ctx, size))(b), host: random[byte](size)}
	defer a.dev.Free()
	for _, dir := range []struct {
		name string
		up   bool
		copy func(*cuda.DeviceBuffer[byte], []byte) error
	}{{"up", true, up}, {"down", false, down}} {
		for _, n := range copySizes[7:] { // 1 MiB up: where the pageable target applies
			b.Run(dir.name+"/"+sizeName(n), func(b *testing.B) {
				devs, hosts := a.slots(b, n)
				var gocuda, raw time.Duration
				err := ctx.Do(func() error {
					// Each copy gets its own slot, so that neither finds the
					// other's data in the CPU's caches, and they take turns
					// going first.
					for i := 0; b.Loop(); i++ {
						j, k := pairSlots(i, len(devs))
						t0 := time.Now()
						if i%2 == 1 {
							if r := cuda.CopyRaw(devs[k], hosts[k], dir.up); r != 0 {
								return fmt.Errorf("driver copy: %d", r)
							}
						}
						t1 := time.Now()
						if err := dir.copy(devs[j], hosts[j]); err != nil {
							return err
						}
						t2 := time.Now()
						if i%2 == 0 {
							if r := cuda.CopyRaw(devs[k], hosts[k], dir.up); r != 0 {
								return fmt.Errorf("driver copy: %d", r)
							}
						}
						t3 := time.Now()
						gocuda, raw = gocuda+t2.Sub(t1), raw+t1.Sub(t0)+t3.Sub(t2)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(gocuda.Nanoseconds())/float64(b.N), "gocuda-ns/op")
				b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "driver-ns/op")
				b.ReportMetric(float64(gocuda)/float64(raw), "ratio")
			})
		}
	}
}

func BenchmarkCopyFromMapped(b *testing.B) { benchCopies(b, mapped, up) }
func BenchmarkCopyToMapped(b *testing.B)   { benchCopies(b, mapped, down) }

func up(d *cuda.DeviceBuffer[byte], h []byte) error   { return d.CopyFromHost(h) }
func down(d *cuda.DeviceBuffer[byte], h []byte) error { return d.CopyToHost(h) }

func BenchmarkCopyFromHost(b *testing.B)       { benchCopies(b, pageable, up) }
func BenchmarkCopyToHost(b *testing.B)         { benchCopies(b, pageable, down) }
func BenchmarkCopyFromPinned(b *testing.B)     { benchCopies(b, pinned, up) }
func BenchmarkCopyToPinned(b *testing.B)       { benchCopies(b, pinned, down) }
func BenchmarkCopyFromRegistered(b *testing.B) { benchCopies(b, registered, up) }
func BenchmarkCopyToRegistered(b *testing.B)   { benchCopies(b, registered, down) }

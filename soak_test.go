package cuda_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/track"
)

// EnvSoakOps, set to a number of operations, makes TestSoak run (the GPU
// script sets 1000000); unset, it is skipped.
const EnvSoakOps = "GOCUDA_SOAK_OPS"

// soakSample is what the soak measures at its start and end.
type soakSample struct {
	free       uint64 // device memory free, bytes
	rss, vmLck uint64 // the process's resident and locked memory, bytes
	goroutines int
	live       track.Snapshot
}

func sampleSoak(t *testing.T, ctx *cuda.Context) soakSample {
	t.Helper()
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
	debug.FreeOSMemory() // a collection, and the freed pages back to the system: RSS then measures what is held
	free, _, err := ctx.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	s := soakSample{free: free, goroutines: runtime.NumGoroutine(), live: track.Take()}
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			s.rss = kb << 10
		case "VmLck:":
			s.vmLck = kb << 10
		}
	}
	return s
}

// TestSoak runs GOCUDA_SOAK_OPS mixed operations from 8 goroutines
// (allocations, every copy route, kernels, streams, events and staging
// buffers made and closed, errors provoked on purpose) and checks that
// device memory, the process's resident and locked memory, its goroutines
// and gocuda's live objects end where they were after a warm-up: within
// 16 MiB of device memory (the driver keeps some per thread: see
// TestDeviceMemoryAfterChurn), 64 MiB of resident memory (512 on the fake,
// whose device memory is the process's), exactly the same locked memory and
// live objects, and at most 4 more goroutines.
func TestSoak(t *testing.T) {
	total, _ := strconv.Atoi(os.Getenv(EnvSoakOps))
	if total <= 0 {
		t.Skipf("set %s to a number of operations to run the soak", EnvSoakOps)
	}
	ctx := cudatest.Context(t)
	m := loadKernels(t, ctx)
	vadd := must(m.Function("vadd_s32"))(t)
	const workers = 8
	var ops, provoked atomic.Int64
	hosts := make([][]int32, workers) // one each, for the whole soak: the Go heap stays put
	for i := range hosts {
		hosts[i] = make([]int32, 3<<20)
	}
	run := func(n int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- soakWorker(rand.New(rand.NewPCG(uint64(w), uint64(n))), ctx, vadd, hosts[w], n/workers, &ops, &provoked)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	run(max(total/10, workers)) // warm-up: the driver's and the runtime's caches fill
	// The fake's device memory is this process's own (malloc keeps what
	// it was given): it is allowed more.
	rssTolerance := uint64(64 << 20)
	if cudatest.IsFake() {
		rssTolerance = 512 << 20
	}
	before := sampleSoak(t, ctx)
	run(total)
	after := sampleSoak(t, ctx)
	mib := func(n uint64) float64 { return float64(n) / (1 << 20) }
	t.Logf("soak: %d operations (%d errors provoked on purpose) on %s: device free %.1f -> %.1f MiB, RSS %.1f -> %.1f MiB, locked %.1f -> %.1f MiB, goroutines %d -> %d, live objects %v -> %v",
		ops.Load(), provoked.Load(), cudatest.Kind(), mib(before.free), mib(after.free), mib(before.rss), mib(after.rss),
		mib(before.vmLck), mib(after.vmLck), before.goroutines, after.goroutines, before.live.Live, after.live.Live)
	switch {
	case before.free > after.free && before.free-after.free > 16<<20:
		t.Errorf("device memory free fell by %.1f MiB", mib(before.free-after.free))
	case after.rss > before.rss && after.rss-before.rss > rssTolerance:
		t.Errorf("resident memory grew by %.1f MiB", mib(after.rss-before.rss))
	case after.vmLck != before.vmLck:
		t.Errorf("locked memory went from %.1f to %.1f MiB", mib(before.vmLck), mib(after.vmLck))
	case after.goroutines > before.goroutines+4:
		t.Errorf("goroutines went from %d to %d", before.goroutines, after.goroutines)
	case after.live.Live != before.live.Live:
		t.Errorf("live objects went from %v to %v", before.live.Live, after.live.Live)
	}
}

// soakWorker makes n mixed operations.
func soakWorker(r *rand.Rand, ctx *cuda.Context, vadd *cuda.Function, host []int32, n int, ops, provoked *atomic.Int64) error {
	s, err := ctx.NewStream()
	if err != nil {
		return err
	}
	defer s.Close()
	var sb cuda.StagingBuffer
	defer sb.Close()
	sizes := []int{1, 1000, 64 << 10, 1 << 20, 3 << 20}
	for i := 0; i < n; i++ {
		ops.Add(1)
		k := sizes[r.IntN(len(sizes))]
		if k > 4096 && r.IntN(8) != 0 {
			k = 1 + r.IntN(4096) // mostly small: a million operations in minutes
		}
		var err error
		switch r.IntN(10) {
		case 0, 1:
			err = soakRoundTrip(&sb, ctx, s, host[:k], r.IntN(3))
		case 2:
			b, aerr := cuda.Alloc[int32](ctx, k)
			if aerr != nil {
				return aerr
			}
			err = vadd.Launch(cuda.LaunchConfigFor(k, s), b, b, b, uint32(k))
			if err == nil {
				err = s.Synchronize()
			}
			if ferr := b.Free(); err == nil {
				err = ferr
			}
		case 3:
			e, eerr := ctx.NewEvent(cuda.EventDisableTiming)
			if eerr != nil {
				return eerr
			}
			err = e.Record(s)
			if err == nil {
				err = e.Synchronize()
			}
			if cerr := e.Close(); err == nil {
				err = cerr
			}
		case 4:
			s2, serr := ctx.NewStream()
			if serr != nil {
				return serr
			}
			err = s2.Close()
		case 5:
			sb2 := new(cuda.StagingBuffer)
			err = soakRoundTrip(sb2, ctx, s, host[:k], 1)
			if cerr := sb2.Close(); err == nil {
				err = cerr
			}
		case 6: // bad input, on purpose
			provoked.Add(1)
			if _, perr := cuda.Alloc[int32](ctx, -1); !errors.Is(perr, cuda.ErrInvalidValue) {
				return fmt.Errorf("Alloc(-1): %v", perr)
			}
		case 7: // too much, on purpose
			provoked.Add(1)
			if _, perr := cuda.Alloc[byte](ctx, 1<<50); !errors.Is(perr, cuda.ErrOutOfMemory) {
				return fmt.Errorf("Alloc(1 PiB): %v", perr)
			}
		default:
			b, aerr := cuda.Zeroed[int32](ctx, k)
			if aerr != nil {
				return aerr
			}
			err = b.Memset32Async(5, s)
			if err == nil {
				err = b.CopyToHostAsync(host[:k], s)
			}
			if err == nil {
				err = s.Synchronize()
			}
			if err == nil && host[k-1] != 5 {
				err = fmt.Errorf("memset of %d elements: last is %d", k, host[k-1])
			}
			if ferr := b.Free(); err == nil {
				err = ferr
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// soakRoundTrip moves host to a new buffer and back through sb by route
// (0: Upload/Download, 1: UploadWith/DownloadInto, 2: plain copies).
func soakRoundTrip(sb *cuda.StagingBuffer, ctx *cuda.Context, s *cuda.Stream, host []int32, route int) error {
	b, err := cuda.Alloc[int32](ctx, len(host))
	if err != nil {
		return err
	}
	defer b.Free()
	host[0], host[len(host)-1] = 7, 9
	switch route {
	case 0:
		if err := cuda.Upload(sb, b, host, s); err != nil {
			return err
		}
		return cuda.Download(sb, host, b, s)
	case 1:
		if err := cuda.UploadWith(sb, b, len(host), s, func(p []int32) { copy(p, host) }); err != nil {
			return err
		}
		got, err := cuda.DownloadInto(sb, b, len(host), s)
		if err == nil && (got[0] != host[0] || got[len(got)-1] != host[len(host)-1]) {
			return fmt.Errorf("round trip of %d elements: data differs", len(host))
		}
		return err
	default:
		if err := b.CopyFromHost(host); err != nil {
			return err
		}
		return b.CopyToHost(host)
	}
}

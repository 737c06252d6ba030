package cuda_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// hammerPool is what the hammer's goroutines share and pull from under
// each other: buffers, streams and a module with its global, replaced as
// others free and close them.
type hammerPool struct {
	ctx     *cuda.Context
	ptx     []byte
	mu      sync.Mutex
	bufs    []*cuda.DeviceBuffer[uint32]
	streams []*cuda.Stream
	mod     *cuda.Module
	fn      *cuda.Function
	global  *cuda.DeviceBuffer[uint32]
	made    []interface{ Close() error } // everything made, closed at the end
	frees   []*cuda.DeviceBuffer[uint32]
}

const hammerLen = 1024

func (p *hammerPool) buf(r *rand.Rand) *cuda.DeviceBuffer[uint32] {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bufs[r.IntN(len(p.bufs))]
}

func (p *hammerPool) stream(r *rand.Rand) *cuda.Stream {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.streams[r.IntN(len(p.streams))]
}

func (p *hammerPool) module() (*cuda.Function, *cuda.DeviceBuffer[uint32]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fn, p.global
}

// replaceBuf frees a buffer others use and puts a new one in its place.
func (p *hammerPool) replaceBuf(r *rand.Rand) error {
	p.mu.Lock()
	i := r.IntN(len(p.bufs))
	old := p.bufs[i]
	p.mu.Unlock()
	if err := old.Free(); err != nil {
		return fmt.Errorf("Free: %w", err)
	}
	b, err := cuda.Alloc[uint32](p.ctx, hammerLen)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.bufs[i] = b
	p.frees = append(p.frees, b)
	p.mu.Unlock()
	return nil
}

// replaceStream closes a stream others queue on and puts a new one in its
// place.
func (p *hammerPool) replaceStream(r *rand.Rand) error {
	p.mu.Lock()
	i := r.IntN(len(p.streams))
	old := p.streams[i]
	p.mu.Unlock()
	if err := old.Close(); err != nil {
		return fmt.Errorf("Stream.Close: %w", err)
	}
	s, err := p.ctx.NewStream()
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.streams[i] = s
	p.made = append(p.made, s)
	p.mu.Unlock()
	return nil
}

// replaceModule unloads the module whose kernel and global others use and
// loads it again.
func (p *hammerPool) replaceModule() error {
	p.mu.Lock()
	old := p.mod
	p.mu.Unlock()
	if err := old.Close(); err != nil {
		return fmt.Errorf("Module.Close: %w", err)
	}
	return p.loadModule()
}

func (p *hammerPool) loadModule() error {
	m, err := p.ctx.LoadModule(p.ptx)
	if err != nil {
		return err
	}
	fn, err := m.Function("vadd_s32")
	if err != nil {
		m.Close()
		return err
	}
	g, err := cuda.Global[uint32](m, "table")
	if err != nil {
		m.Close()
		return err
	}
	p.mu.Lock()
	p.mod, p.fn, p.global = m, fn, g
	p.made = append(p.made, m)
	p.mu.Unlock()
	return nil
}

// hammerOp is one of the mixed operations of a worker, on its own stream
// and staging buffer and the pool's shared objects.
func hammerOp(r *rand.Rand, p *hammerPool, s *cuda.Stream, sb *cuda.StagingBuffer, host []uint32) error {
	b := p.buf(r)
	switch r.IntN(14) {
	case 0:
		return b.CopyFromHost(host)
	case 1:
		if err := b.CopyToHostAsync(host, s); err != nil {
			return err
		}
		return s.Synchronize()
	case 2:
		sl, err := b.Slice(16, 64)
		if err != nil {
			return err
		}
		return sl.CopyToHost(host[:64])
	case 3:
		v, err := cuda.ViewAs[uint16](b)
		if err != nil {
			return err
		}
		return v.Memset16Async(7, s)
	case 4:
		return b.Memset32Async(9, p.stream(r))
	case 5:
		return cuda.Upload(sb, b, host, s)
	case 6:
		return cuda.Download(sb, host, b, s)
	case 7:
		fn, _ := p.module()
		return fn.Launch(cuda.LaunchConfigFor(hammerLen, s), b, b, b, uint32(hammerLen))
	case 8:
		_, g := p.module()
		return g.CopyFromHost(host[:4])
	case 9:
		return p.ctx.Do(func() error { _, _, err := p.ctx.MemInfo(); return err })
	case 10:
		return s.Do(func(uintptr) error { return b.Memset8Async(1, s) }, b)
	case 11:
		// Stream-ordered memory on a shared stream that others close: its
		// memory kept and reused by the stream, or freed with it.
		t := p.stream(r)
		d, err := cuda.AllocAsync[uint32](t, hammerLen>>r.IntN(3))
		if err != nil {
			return err
		}
		return errors.Join(d.Memset32Async(3, t), d.Free())
	case 12:
		// Stream-ordered memory on the worker's stream, reused from one
		// call to the next: each holds what was copied into it.
		n := hammerLen >> r.IntN(3)
		d, err := cuda.AllocAsync[uint32](s, n)
		if err != nil {
			return err
		}
		want := uint32(r.Uint32())
		src, got := make([]uint32, n), make([]uint32, n)
		for i := range src {
			src[i] = want + uint32(i)
		}
		err = errors.Join(d.CopyFromHostAsync(src, s), d.CopyToHostAsync(got, s), d.Free())
		if err == nil {
			err = s.Synchronize()
		}
		if err == nil && (got[0] != want || got[n-1] != want+uint32(n-1)) {
			err = fmt.Errorf("a stream-ordered buffer read %d..%d, want %d..%d", got[0], got[n-1], want, want+uint32(n-1))
		}
		return err
	default:
		other := p.buf(r)
		if other == b {
			return nil
		}
		return b.CopyFromDeviceAsync(other, s)
	}
}

// TestHammer: 64 goroutines on one context: workers mixing operations on
// their own streams and the shared buffers, streams and module, while
// others free those buffers, close those streams and unload that module
// under them, and the context is closed under everything. Every operation
// returns success or ErrClosed; no deadlock (a watchdog prints every
// goroutine's stack and fails), no race (under -race), nothing left once
// the context is closed.
func TestHammer(t *testing.T) {
	cudatest.CheckLeaks(t)
	ptx, err := os.ReadFile("testdata/kernels.ptx")
	if err != nil {
		t.Fatal(err)
	}
	const goroutines = 64
	ops := 150
	if cudatest.IsFake() || raceEnabled {
		ops = 60
	}
	watchdog := time.AfterFunc(2*time.Minute, func() {
		buf := make([]byte, 1<<22)
		fmt.Fprintf(os.Stderr, "TestHammer: not done after 2 minutes: deadlock\n%s", buf[:runtime.Stack(buf, true)])
		os.Exit(2)
	})
	defer watchdog.Stop()
	var done, refused atomic.Int64
	for round := range 3 {
		p := &hammerPool{ptx: ptx}
		p.ctx = must(cuda.NewContext(cudatest.Device(t)))(t)
		for range 8 {
			b := must(cuda.Alloc[uint32](p.ctx, hammerLen))(t)
			p.bufs, p.frees = append(p.bufs, b), append(p.frees, b)
		}
		for range 4 {
			s := must(p.ctx.NewStream())(t)
			p.streams, p.made = append(p.streams, s), append(p.made, s)
		}
		if err := p.loadModule(); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var progress atomic.Int64
		errs := make(chan error, goroutines)
		check := func(what string, err error) bool {
			switch {
			case err == nil:
				done.Add(1)
			case errors.Is(err, cuda.ErrClosed):
				refused.Add(1)
			default:
				select {
				case errs <- fmt.Errorf("round %d, %s: %w", round, what, err):
				default:
				}
				return false
			}
			return true
		}
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(round), uint64(g)))
				switch {
				case g < 48: // workers
					s, err := p.ctx.NewStream()
					if !check("NewStream", err) || err != nil {
						return
					}
					defer s.Close()
					sb, err := cuda.NewStagingBufferOptions(nil, 0, cuda.StagingOptions{Pipeline: smallPipeline})
					if !check("NewStagingBufferOptions", err) || err != nil {
						return
					}
					defer sb.Close()
					host := make([]uint32, hammerLen)
					for range ops {
						if !check("operation", hammerOp(r, p, s, sb, host)) {
							return
						}
						progress.Add(1)
					}
				case g < 56:
					for range ops / 4 {
						if !check("freeing buffers in use", p.replaceBuf(r)) {
							return
						}
					}
				case g < 60:
					for range ops / 8 {
						if !check("closing streams in use", p.replaceStream(r)) {
							return
						}
					}
				case g < 62:
					for range ops / 16 {
						if !check("unloading the module in use", p.replaceModule()) {
							return
						}
					}
				default: // the context, closed under everything, once the workers are well on
					deadline := time.Now().Add(5 * time.Second)
					for progress.Load() < int64(48*ops/2) && time.Now().Before(deadline) {
						time.Sleep(time.Millisecond)
					}
					check("Context.Close", p.ctx.Close())
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		// The context is closed: what is left goes with it, and every
		// Close and Free says so without an error.
		p.ctx.Close()
		for _, b := range p.frees {
			if err := b.Free(); err != nil {
				t.Errorf("Free after the context closed: %v", err)
			}
		}
		for _, c := range p.made {
			if err := c.Close(); err != nil {
				t.Errorf("Close after the context closed: %v", err)
			}
		}
	}
	t.Logf("hammer: 3 rounds of %d goroutines: %d operations succeeded, %d refused with ErrClosed", goroutines, done.Load(), refused.Load())
	if done.Load() == 0 || refused.Load() == 0 {
		t.Errorf("the hammer did not mix: %d succeeded, %d refused", done.Load(), refused.Load())
	}
}

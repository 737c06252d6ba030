package cuda_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestReleaseWaitsForQueuedCopies: Registered.Close and PinnedBuffer.Free
// right after asynchronous copies on their memory were queued, the stream
// not synchronized. Unlocking the memory under a DMA still queued faults
// the copy's context (an H100 answered CUDA_ERROR_LAUNCH_FAILED, every
// later call failing; the fake sets the same sticky error): the release
// waits for those copies instead, and the data the copies moved is whole.
func TestReleaseWaitsForQueuedCopies(t *testing.T) {
	const n, copies = 16 << 20, 4 // several copies of 16 MiB: the last still queued when the release comes
	for _, tt := range []struct {
		owner  string
		toHost bool
	}{
		{"Registered", false},
		{"Registered", true},
		{"PinnedBuffer", false},
		{"PinnedBuffer", true},
	} {
		name := tt.owner + " to the device"
		if tt.toHost {
			name = tt.owner + " to the host"
		}
		t.Run(name, func(t *testing.T) {
			ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
			defer ctx.Close()
			s := must(ctx.NewStream())(t)
			devData, hostData := random[byte](n), random[byte](n)
			dev := must(cuda.FromHost(ctx, devData))(t)
			defer dev.Free()
			var host []byte
			var release func() error
			switch tt.owner {
			case "Registered":
				host = bytes.Clone(hostData)
				release = must(cuda.Register(ctx, host))(t).Close
			case "PinnedBuffer":
				p := must(cuda.AllocPinned[byte](ctx, n))(t)
				host = p.Data()
				copy(host, hostData)
				release = p.Free
			}
			for range copies {
				var err error
				if tt.toHost {
					err = dev.CopyToHostAsync(host, s)
				} else {
					err = dev.CopyFromHostAsync(host, s)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := release(); err != nil {
				t.Fatalf("%s released with copies queued: %v", tt.owner, err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatalf("Synchronize after the release: %v", err)
			}
			got := must(dev.ToHost())(t)
			switch {
			case !tt.toHost && !bytes.Equal(got, hostData):
				t.Errorf("the device holds %d of %d bytes other than the copies'", differing(got, hostData), n)
			case tt.toHost && tt.owner == "Registered" && !bytes.Equal(host, devData):
				t.Errorf("the registered slice holds %d of %d bytes other than the device's", differing(host, devData), n)
			}
		})
	}
}

// TestReleaseAfterRefusedCopyInCapture: a copy refused because its stream
// captures queued nothing, so the release has nothing to wait for (a
// capturing stream cannot be synchronized): in a relaxed capture it
// succeeds while the capture is under way. In a thread-local capture the
// driver refuses the unregistering on the capturing thread (an H100 did:
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, the capture invalidated): the
// memory stays registered, and a Close after the capture succeeds.
func TestReleaseAfterRefusedCopyInCapture(t *testing.T) {
	for _, tt := range []struct {
		name    string
		mode    cuda.CaptureMode
		refused bool
	}{
		{"relaxed", cuda.CaptureRelaxed, false},
		{"thread-local", cuda.CaptureThreadLocal, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
			defer ctx.Close()
			s := must(ctx.NewStream())(t)
			host := make([]float32, 1024)
			reg := must(cuda.Register(ctx, host))(t)
			dev := must(cuda.Alloc[float32](ctx, len(host)))(t)
			defer dev.Free()
			var closeErr error
			g, err := s.Capture(tt.mode, func() error {
				if err := dev.CopyFromHostAsync(host, s); !errors.Is(err, cuda.ErrInvalidValue) {
					t.Errorf("CopyFromHostAsync in a capture: %v; want ErrInvalidValue", err)
				}
				closeErr = reg.Close()
				return dev.Memset32Async(0, s)
			})
			if !tt.refused {
				if closeErr != nil {
					t.Errorf("Registered.Close in the capture, after the refused copy: %v", closeErr)
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := g.Close(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if closeErr == nil {
				t.Fatal("Registered.Close on a thread-local capture's thread succeeded; the driver refuses it")
			}
			if err == nil {
				g.Close()
				t.Error("the capture survived a refused unregistering; the driver invalidates it")
			}
			if err := dev.CopyFromHostAsync(host, s); err != nil {
				t.Errorf("a copy from the memory after the refused Close: %v", err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
			if err := reg.Close(); err != nil {
				t.Errorf("Registered.Close after the capture: %v", err)
			}
		})
	}
}

// TestQueuedCopyOnLockedAllocs: recording the stream of a copy queued on
// page-locked memory allocates nothing once the stream is known: such a
// copy allocates no more than one of ordinary memory.
func TestQueuedCopyOnLockedAllocs(t *testing.T) {
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	defer ctx.Close()
	s := must(ctx.NewStream())(t)
	dev := must(cuda.Alloc[float32](ctx, 4096))(t)
	defer dev.Free()
	ordinary, registered := make([]float32, 4096), make([]float32, 4096)
	reg := must(cuda.Register(ctx, registered))(t)
	defer reg.Close()
	allocs := func(host []float32) float64 {
		var err error
		n := testing.AllocsPerRun(50, func() {
			err = errors.Join(err, dev.CopyFromHostAsync(host, s), dev.CopyToHostAsync(host, s))
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if o, r := allocs(ordinary), allocs(registered); r > o {
		t.Errorf("two copies queued on registered memory allocate %v times, on ordinary memory %v", r, o)
	}
}

// TestReleasesAtOnceWaitForQueuedCopies: two Registered.Close calls at
// once, copies queued: the second does not unregister the memory while
// the first still waits for the copies.
func TestReleasesAtOnceWaitForQueuedCopies(t *testing.T) {
	const n = 16 << 20
	for range 5 {
		ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
		s := must(ctx.NewStream())(t)
		host := random[byte](n)
		dev := must(cuda.Alloc[byte](ctx, n))(t)
		reg := must(cuda.Register(ctx, host))(t)
		for range 4 {
			if err := dev.CopyFromHostAsync(host, s); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Go(func() { errs[i] = reg.Close() })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("Registered.Close twice at once: %v", err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatalf("Synchronize after the releases: %v", err)
		}
		if got := must(dev.ToHost())(t); !bytes.Equal(got, host) {
			t.Fatalf("the device holds %d of %d bytes other than the copies'", differing(got, host), n)
		}
		dev.Free()
		ctx.Close()
	}
}

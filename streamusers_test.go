package cuda_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestSyncCopySeesStreamWork checks what the package overview promises: a
// synchronous call on a buffer sees the work queued on it before, on any of
// gocuda's non-blocking streams, without a Synchronize. Each writer queues
// work that leaves every element 8 behind slow kernels on the same stream
// (on the fake every piece of stream work runs later anyway); each reader
// then reads the buffer synchronously at once.
func TestSyncCopySeesStreamWork(t *testing.T) {
	ctx := cudatest.Context(t)
	mod := loadKernels(t, ctx)
	saxpy := must(mod.Function("saxpy"))(t)
	n := 1 << 12
	if !cudatest.IsFake() {
		n = 1 << 22
	}
	ones := make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	x := must(cuda.FromHost(ctx, ones))(t)
	defer x.Free()
	scratch := must(cuda.Zeroed[float32](ctx, 1<<22))(t)
	defer scratch.Free()
	busy := func(t *testing.T, s *cuda.Stream) {
		t.Helper()
		sx := must(scratch.Slice(0, 1<<22))(t)
		for range 4 {
			if err := saxpy.Launch(cuda.LaunchConfigFor(1<<22, s), float32(1), sx, scratch, uint32(1<<22)); err != nil {
				t.Fatal(err)
			}
		}
	}
	eights := make([]float32, n)
	for i := range eights {
		eights[i] = 8
	}
	src := must(cuda.FromHost(ctx, eights))(t)
	defer src.Free()

	writers := []struct {
		name  string
		write func(t *testing.T, y *cuda.DeviceBuffer[float32], s *cuda.Stream) error
	}{
		{"Launch", func(t *testing.T, y *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			for range 8 {
				if err := saxpy.Launch(cuda.LaunchConfigFor(n, s), float32(1), x, y, uint32(n)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"Memset32Async", func(t *testing.T, y *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return y.Memset32Async(math.Float32bits(8), s)
		}},
		{"CopyFromDeviceAsync", func(t *testing.T, y *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return y.CopyFromDeviceAsync(src, s)
		}},
		{"CopyFromHostAsync", func(t *testing.T, y *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return y.CopyFromHostAsync(eights, s)
		}},
		{"GraphExec.Launch", func(t *testing.T, y *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			cs := cudatest.Stream(t, ctx)
			g, err := cs.Capture(cuda.CaptureGlobal, func() error { return y.CopyFromDeviceAsync(src, cs) })
			if err != nil {
				return err
			}
			defer g.Close()
			e, err := g.Instantiate()
			if err != nil {
				return err
			}
			t.Cleanup(func() { e.Close() })
			return e.Launch(s)
		}},
	}
	readers := []struct {
		name string
		read func(t *testing.T, y *cuda.DeviceBuffer[float32]) ([]float32, error)
	}{
		{"CopyToHost", func(t *testing.T, y *cuda.DeviceBuffer[float32]) ([]float32, error) {
			got := make([]float32, n)
			return got, y.CopyToHost(got)
		}},
		{"CopyFromDevice", func(t *testing.T, y *cuda.DeviceBuffer[float32]) ([]float32, error) {
			d := must(cuda.Zeroed[float32](ctx, n))(t)
			defer d.Free()
			if err := d.CopyFromDevice(y); err != nil {
				return nil, err
			}
			got := make([]float32, n)
			return got, d.CopyToHost(got)
		}},
		{"CopyPeer", func(t *testing.T, y *cuda.DeviceBuffer[float32]) ([]float32, error) {
			d := must(cuda.Zeroed[float32](ctx, n))(t)
			defer d.Free()
			if _, err := cuda.CopyPeer(d, y); err != nil {
				return nil, err
			}
			got := make([]float32, n)
			return got, d.CopyToHost(got)
		}},
		{"WriteTo", func(t *testing.T, y *cuda.DeviceBuffer[float32]) ([]float32, error) {
			var w bytes.Buffer
			if _, err := y.WriteTo(&w); err != nil {
				return nil, err
			}
			got := make([]float32, n)
			return got, binary.Read(&w, binary.LittleEndian, got)
		}},
	}
	for _, w := range writers {
		for _, r := range readers {
			t.Run(w.name+"/"+r.name, func(t *testing.T) {
				s := cudatest.Stream(t, ctx)
				y := must(cuda.Zeroed[float32](ctx, n))(t)
				t.Cleanup(func() { y.Free() }) // after the graph instance's Close
				busy(t, s)
				if err := w.write(t, y, s); err != nil {
					t.Fatal(err)
				}
				got, err := r.read(t, y)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range got {
					if v != 8 {
						t.Fatalf("element %d is %v, want 8: the synchronous read did not wait for the stream's work", i, v)
					}
				}
			})
		}
	}
}

// TestSyncWriteAfterStreamRead: a synchronous write into a buffer waits for
// the kernels queued before it that read the buffer, so that they read what
// was there when they were queued.
func TestSyncWriteAfterStreamRead(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	saxpy := must(loadKernels(t, ctx).Function("saxpy"))(t)
	n := 1 << 12
	if !cudatest.IsFake() {
		n = 1 << 22
	}
	ones := make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	writes := []struct {
		name  string
		write func(x *cuda.DeviceBuffer[float32]) error
	}{
		{"CopyFromHost", func(x *cuda.DeviceBuffer[float32]) error { return x.CopyFromHost(make([]float32, n)) }},
		{"Memset8", func(x *cuda.DeviceBuffer[float32]) error { return x.Memset8(0) }},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			x := must(cuda.FromHost(ctx, ones))(t)
			defer x.Free()
			y := must(cuda.Zeroed[float32](ctx, n))(t)
			defer y.Free()
			for range 8 {
				if err := saxpy.Launch(cuda.LaunchConfigFor(n, s), float32(1), x, y, uint32(n)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.write(x); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, n)
			if err := y.CopyToHost(got); err != nil {
				t.Fatal(err)
			}
			for i, v := range got {
				if v != 8 {
					t.Fatalf("element %d is %v, want 8: the write landed before the kernels that read x ran", i, v)
				}
			}
		})
	}
}

// TestStreamUsersStayShort: a buffer used by many short-lived streams and
// no synchronous call records few of them (closed streams are dropped as
// the list grows), and still orders a synchronous call after an open one.
func TestStreamUsersStayShort(t *testing.T) {
	ctx := cudatest.Context(t)
	b := must(cuda.Zeroed[float32](ctx, 16))(t)
	defer b.Free()
	for range 100 {
		s := must(ctx.NewStream())(t)
		if err := b.Memset32Async(1, s); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := cuda.StreamUsers(b); n > 9 {
		t.Errorf("%d streams recorded after 100 closed ones; want at most 9", n)
	}
	open := cudatest.Stream(t, ctx)
	if err := b.Memset32Async(2, open); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 16)
	if err := b.CopyToHost(got); err != nil || got[0] != math.Float32frombits(2) {
		t.Errorf("after a Memset32Async on the open stream: %v, %v", got[0], err)
	}
}

// TestOwnStreamNotRecorded: a buffer from AllocAsync records no stream
// for the work queued on the stream it was allocated on (a synchronous
// call waits for that stream anyway), only another's; and a synchronous
// read after launches on its own stream still sees them.
func TestOwnStreamNotRecorded(t *testing.T) {
	ctx := cudatest.Context(t)
	s, other := cudatest.Stream(t, ctx), cudatest.Stream(t, ctx)
	saxpy := must(loadKernels(t, ctx).Function("saxpy"))(t)
	const n = 1 << 12
	ones := make([]float32, n)
	for i := range ones {
		ones[i] = 1
	}
	x := must(cuda.FromHost(ctx, ones))(t)
	defer x.Free()
	y := must(cuda.AllocAsync[float32](s, n))(t)
	defer y.Free()
	if err := y.Memset32Async(0, s); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if err := saxpy.Launch(cuda.LaunchConfigFor(n, s), float32(1), x, y, uint32(n)); err != nil {
			t.Fatal(err)
		}
	}
	if got := cuda.StreamUsers(y); got != 0 {
		t.Errorf("%d streams recorded after work on the buffer's own stream; want 0", got)
	}
	if got := cuda.StreamUsers(x); got != 1 {
		t.Errorf("x, from FromHost, records %d streams after the launches; want 1", got)
	}
	got := make([]float32, n)
	if err := y.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 8 {
			t.Fatalf("element %d is %v, want 8: the synchronous read did not wait for the buffer's stream", i, v)
		}
	}
	if err := y.Memset32Async(0, other); err != nil {
		t.Fatal(err)
	}
	if got := cuda.StreamUsers(y); got != 1 {
		t.Errorf("%d streams recorded after work on another stream; want 1", got)
	}
	// y's Free queues its release on s, which other's memset must not
	// outlive (Free's doc: the caller orders other streams' uses first;
	// the fake faults a memset of memory freed under it).
	if err := other.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

package cuda_test

import (
	"errors"
	"math"
	"os"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/fakecuda"
)

// The fuzz targets run generated arguments against the fake driver (CI:
// scripts/fuzz.sh, FAKECUDA_MEMORY bounding what the fake gives); on a GPU
// only their seeds run. Each checks that bad input is an error wrapping
// ErrInvalidValue (or, for sizes the device cannot hold, ErrOutOfMemory)
// and good input works, never a panic or a half-changed object.

// validOrOOM fails t unless err is nil or wraps ErrInvalidValue or
// ErrOutOfMemory.
func validOrOOM(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, cuda.ErrInvalidValue) && !errors.Is(err, cuda.ErrOutOfMemory) {
		t.Fatalf("%s: %v wraps neither ErrInvalidValue nor ErrOutOfMemory", what, err)
	}
}

func FuzzAllocSizes(f *testing.F) {
	for _, n := range []int64{0, 1, -1, 3, 1 << 20, math.MaxInt64, math.MaxInt64 / 3, 1 << 40, math.MinInt64} {
		f.Add(n, uint8(0))
	}
	f.Fuzz(func(t *testing.T, n int64, kind uint8) {
		ctx := cudatest.Context(t)
		check := func(size uintptr, err error, free func() error) {
			want := n >= 0 && uint64(n) <= math.MaxInt64/uint64(size) // empty buffers are valid
			switch {
			case err == nil && !want:
				t.Fatalf("%d elements of %d bytes accepted", n, size)
			case err == nil:
				if ferr := free(); ferr != nil {
					t.Fatal(ferr)
				}
			case want && !errors.Is(err, cuda.ErrOutOfMemory):
				t.Fatalf("%d elements of %d bytes: %v; want success or ErrOutOfMemory", n, size, err)
			default:
				validOrOOM(t, "Alloc", err)
			}
		}
		switch kind % 4 {
		case 0:
			b, err := cuda.Alloc[byte](ctx, int(n))
			check(1, err, b.Free)
		case 1:
			b, err := cuda.Alloc[[3]uint8](ctx, int(n))
			check(3, err, b.Free)
		case 2:
			b, err := cuda.Zeroed[float64](ctx, int(n))
			check(8, err, b.Free)
		default:
			b, err := cuda.AllocPinned[[16]byte](ctx, int(n))
			check(16, err, b.Free)
		}
	})
}

func FuzzSliceAndView(f *testing.F) {
	for _, s := range [][3]int{{0, 0, 0}, {0, 64, 1}, {10, 20, 2}, {0, -1, 3}, {-1, 1, 4}, {64, 0, 5}, {65, 0, 6}, {63, 2, 7}, {math.MaxInt, 1, 8}, {1, math.MaxInt, 15}} {
		f.Add(s[0], s[1], uint8(s[2]))
	}
	f.Fuzz(func(t *testing.T, off, n int, view uint8) {
		ctx := cudatest.Context(t)
		const size = 64
		b := must(cuda.FromHost(ctx, random[byte](size)))(t)
		defer b.Free()
		s, err := b.Slice(off, n)
		inRange := off >= 0 && n >= 0 && off <= size && n <= size-off
		if (err == nil) != inRange {
			t.Fatalf("Slice(%d, %d) of %d: %v", off, n, size, err)
		}
		if err != nil {
			validOrOOM(t, "Slice", err)
			return
		}
		if s.Len() != n || s.Ptr() != b.Ptr()+cuda.DevicePtr(off) {
			t.Fatalf("Slice(%d, %d): length %d at %#x", off, n, s.Len(), s.Ptr()-b.Ptr())
		}
		viewAs(t, s, int(view%16)+1)
	})
}

// viewAs views b as [k]byte elements (sizes 1 to 16) and as the aligned
// numbers of that size, checking the rules, and copies through the view.
func viewAs(t *testing.T, b *cuda.DeviceBuffer[byte], k int) {
	t.Helper()
	try := func(v interface{ Len() int }, err error, size, align int, roundTrip func() error) {
		t.Helper()
		// An empty view is valid at any address, as every empty buffer.
		want := b.Len()%size == 0 && (b.Len() == 0 || int(b.Ptr())%align == 0)
		if (err == nil) != want {
			t.Fatalf("view of %d bytes at %#x as %d-byte elements (aligned %d): %v", b.Len(), uint64(b.Ptr()), size, align, err)
		}
		if err != nil {
			validOrOOM(t, "ViewAs", err)
			return
		}
		if v.Len() != b.Len()/size {
			t.Fatalf("view has %d elements, want %d", v.Len(), b.Len()/size)
		}
		if err := roundTrip(); err != nil {
			t.Fatal(err)
		}
	}
	switch k {
	case 1:
		v, err := cuda.ViewAs[[1]byte](b)
		try(v, err, 1, 1, func() error { return roundTripBuf(v) })
	case 2:
		v, err := cuda.ViewAs[uint16](b)
		try(v, err, 2, 2, func() error { return roundTripBuf(v) })
	case 3:
		v, err := cuda.ViewAs[[3]byte](b)
		try(v, err, 3, 1, func() error { return roundTripBuf(v) })
	case 4:
		v, err := cuda.ViewAs[float32](b)
		try(v, err, 4, 4, func() error { return roundTripBuf(v) })
	case 8:
		v, err := cuda.ViewAs[uint64](b)
		try(v, err, 8, 8, func() error { return roundTripBuf(v) })
	case 16:
		v, err := cuda.ViewAs[complex128](b)
		try(v, err, 16, 8, func() error { return roundTripBuf(v) })
	default:
		v, err := viewBytes(b, k)
		try(v, err, k, 1, func() error { return nil })
	}
}

// viewBytes views b as [k]byte for the sizes viewAs has no case for.
func viewBytes(b *cuda.DeviceBuffer[byte], k int) (interface{ Len() int }, error) {
	switch k {
	case 5:
		return cuda.ViewAs[[5]byte](b)
	case 6:
		return cuda.ViewAs[[6]byte](b)
	case 7:
		return cuda.ViewAs[[7]byte](b)
	case 9:
		return cuda.ViewAs[[9]byte](b)
	case 10:
		return cuda.ViewAs[[10]byte](b)
	case 11:
		return cuda.ViewAs[[11]byte](b)
	case 12:
		return cuda.ViewAs[[12]byte](b)
	case 13:
		return cuda.ViewAs[[13]byte](b)
	case 14:
		return cuda.ViewAs[[14]byte](b)
	default:
		return cuda.ViewAs[[15]byte](b)
	}
}

// roundTripBuf copies random data into b and back.
func roundTripBuf[T any](b *cuda.DeviceBuffer[T]) error {
	src, got := random[T](b.Len()), make([]T, b.Len())
	if err := b.CopyFromHost(src); err != nil {
		return err
	}
	if err := b.CopyToHost(got); err != nil {
		return err
	}
	if !equal(src, got) {
		return errors.New("round trip through the view: data differs")
	}
	return nil
}

// FuzzStagingOptions: NewStagingBufferOptions refuses options out of range
// with ErrInvalidValue (a negative threshold always) and builds a buffer of
// the others that reports them; that buffer (or, where they were refused, a
// zero one) reserves and moves data correctly.
func FuzzStagingOptions(f *testing.F) {
	f.Add(1, 64<<10, 2, 1, 0, 0, 1, 0)
	f.Add(2<<20, 16<<20, 3, 16, 0, 0, 5<<20, 1<<20)
	f.Add(0, 0, 0, 0, 0, 0, 0, -1)
	f.Add(0, 64<<10, 2, 1, 0, 0, 0, -1)
	f.Add(math.MaxInt, math.MaxInt, 16, 16, math.MaxInt, 0, 3, math.MaxInt)
	f.Add(100, 64<<10*1000, 16, 2, -1, 0, 1<<20, 1<<40)
	f.Add(1, 64<<10, 2, 1, 1<<20, 1, 200<<10, 0)
	f.Add(0, 0, 0, 0, 0, math.MinInt, 4096, 64<<10)
	f.Fuzz(func(t *testing.T, minBytes, chunk, slots, workers, stage, upStage, n, reserve int) {
		ctx := cudatest.Context(t)
		s := cudatest.Stream(t, ctx)
		opts := cuda.StagingOptions{
			AutoStageMaxBytes:   stage,
			UploadStageMaxBytes: upStage,
			Pipeline:            cuda.StagingPipeline{UploadMinBytes: minBytes, DownloadMinBytes: minBytes, ChunkBytes: chunk, Slots: slots, Workers: workers},
		}
		sb, err := cuda.NewStagingBufferOptions(nil, 0, opts)
		validOrOOM(t, "NewStagingBufferOptions", err)
		switch {
		case err == nil && (stage < 0 || upStage < 0):
			t.Fatalf("options %+v with a negative threshold accepted", opts)
		case err != nil && sb != nil:
			t.Fatalf("refused options %+v returned a buffer too", opts)
		case err != nil:
			sb = new(cuda.StagingBuffer) // the defaults
		default:
			want := opts
			if want.Pipeline == (cuda.StagingPipeline{}) {
				want.Pipeline = cuda.DefaultStagingPipeline()
			}
			if sb.Options() != want || sb.Stats() != (cuda.StagingStats{}) || sb.Capacity() != 0 {
				t.Fatalf("built with %+v: options %+v, stats %+v, capacity %d", opts, sb.Options(), sb.Stats(), sb.Capacity())
			}
		}
		defer sb.Close()
		if err := sb.Reserve(ctx, reserve); err != nil {
			validOrOOM(t, "Reserve", err)
		} else if sb.Capacity() < reserve {
			t.Fatalf("Reserve(%d): capacity %d", reserve, sb.Capacity())
		}
		n = 1 + int(uint(n)%(3<<20))
		b := must(cuda.Alloc[byte](ctx, n))(t)
		defer b.Free()
		src, got := random[byte](n), make([]byte, n)
		before := sb.Stats()
		err = cuda.Upload(sb, b, src, s)
		if err == nil {
			err = cuda.Download(sb, got, b, s)
		}
		if err != nil {
			// Pinning more than the fake holds is the one failure allowed.
			if !errors.Is(err, cuda.ErrOutOfMemory) {
				t.Fatalf("round trip of %d bytes with %+v: %v", n, sb.Options(), err)
			}
			return
		}
		if !equal(src, got) {
			t.Fatalf("round trip of %d bytes with %+v: data differs", n, sb.Options())
		}
		if st := sb.Stats(); st.BytesUp-before.BytesUp != int64(n) || st.BytesDown-before.BytesDown != int64(n) {
			t.Fatalf("stats %+v after a round trip of %d bytes", st, n)
		}
	})
}

func FuzzLaunchConfig(f *testing.F) {
	f.Add(1, 0, 0, 256, 0, 0, 0)
	f.Add(0, 1, 1, 1, 1, 1, 0)
	f.Add(1, 1, 1, 2048, 1, 1, 0)
	f.Add(math.MaxInt, 1, 1, 1, 1, 1, -1)
	f.Add(1, 65536, 1, 32, 32, 2, 1<<20)
	f.Fuzz(func(t *testing.T, gx, gy, gz, bx, by, bz, shared int) {
		ctx := cudatest.Context(t)
		s := cudatest.Stream(t, ctx)
		ptx, err := os.ReadFile("testdata/kernels.ptx")
		if err != nil {
			t.Fatal(err)
		}
		m := must(ctx.LoadModule(ptx))(t)
		defer m.Close()
		fn := must(m.Function("vadd_f32"))(t)
		a := must(cuda.Alloc[float32](ctx, 1))(t)
		defer a.Free()
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: gx, Y: gy, Z: gz}, Block: cuda.Dim3{X: bx, Y: by, Z: bz}, SharedMemBytes: shared, Stream: s}
		// n = 0: whatever the shape, the kernel has nothing to do.
		if err := fn.Launch(cfg, a, a, a, uint32(0)); err != nil && !errors.Is(err, cuda.ErrInvalidValue) {
			t.Fatalf("Launch(%+v): %v; want success or ErrInvalidValue", cfg, err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatalf("the stream after Launch(%+v): %v", cfg, err)
		}
	})
}

func FuzzCopyLengths(f *testing.F) {
	f.Add(8, 8, uint8(0))
	f.Add(8, 7, uint8(1))
	f.Add(1, 0, uint8(2))
	f.Add(4, -1, uint8(3))
	f.Fuzz(func(t *testing.T, bufLen, hostLen int, op uint8) {
		ctx := cudatest.Context(t)
		s := cudatest.Stream(t, ctx)
		bufLen, hostLen = 1+int(uint(bufLen)%4096), int(uint(hostLen)%4097)
		b := must(cuda.Alloc[uint32](ctx, bufLen))(t)
		defer b.Free()
		other := must(cuda.Alloc[uint32](ctx, max(hostLen, 1)))(t)
		defer other.Free()
		host := make([]uint32, hostLen)
		var sb cuda.StagingBuffer
		defer sb.Close()
		var err error
		switch op % 7 {
		case 0:
			err = b.CopyFromHost(host)
		case 1:
			err = b.CopyToHost(host)
		case 2:
			err = b.CopyFromHostAsync(host, s)
		case 3:
			err = b.CopyToHostAsync(host, s)
		case 4:
			err = cuda.Upload(&sb, b, host, s)
		case 5:
			err = cuda.Download(&sb, host, b, s)
		default:
			if other.Len() != hostLen {
				return
			}
			err = b.CopyFromDevice(other)
		}
		if (err == nil) != (hostLen == bufLen) {
			t.Fatalf("copy %d of %d elements to or from %d: %v", op%7, hostLen, bufLen, err)
		}
		validOrOOM(t, "copy", err)
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestHelpersTellTheFake: a process that inherits GOCUDA_LIBCUDA naming the
// fake driver (a go test -fuzz worker, a child test) runs against the fake
// knowing it, so that cudatest.Fake gives it the fake's controls instead of
// starting yet another process.
func TestHelpersTellTheFake(t *testing.T) {
	if !cudatest.InChild(t) {
		path, err := fakecuda.Build()
		if err != nil {
			t.Fatal(err)
		}
		cudatest.RunChild(t, cudatest.EnvDriver+"=", cudatest.EnvRequireGPU+"=", driver.EnvLibrary+"="+path)
		return
	}
	if !cudatest.IsFake() {
		t.Fatalf("with %s naming the fake, the helpers think the driver is %s", driver.EnvLibrary, cudatest.Kind())
	}
	if cudatest.Fake(t) == nil {
		t.Fatal("cudatest.Fake gave no controls")
	}
}

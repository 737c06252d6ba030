package cuda_test

import (
	"bytes"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestEmptyBuffers: a buffer of no elements is valid everywhere, as CuPy's
// and PyTorch's empty arrays are: every way of making one, every copy,
// slice, view, memset, transfer and launch over it succeeds and moves
// nothing, and freeing it leaks nothing.
func TestEmptyBuffers(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	vadd := must(loadKernels(t, ctx).Function("vadd_f32"))(t)
	makers := []struct {
		name string
		make func() (*cuda.DeviceBuffer[float32], error)
	}{
		{"Alloc", func() (*cuda.DeviceBuffer[float32], error) { return cuda.Alloc[float32](ctx, 0) }},
		{"Zeroed", func() (*cuda.DeviceBuffer[float32], error) { return cuda.Zeroed[float32](ctx, 0) }},
		{"FromHost empty", func() (*cuda.DeviceBuffer[float32], error) { return cuda.FromHost(ctx, []float32{}) }},
		{"FromHost nil", func() (*cuda.DeviceBuffer[float32], error) { return cuda.FromHost[float32](ctx, nil) }},
		{"AllocAsync", func() (*cuda.DeviceBuffer[float32], error) { return cuda.AllocAsync[float32](s, 0) }},
		{"FromRaw", func() (*cuda.DeviceBuffer[float32], error) { return cuda.FromRaw[float32](ctx, 0, 0) }},
		{"Slice of a buffer", func() (*cuda.DeviceBuffer[float32], error) {
			b, err := cuda.Alloc[float32](ctx, 4)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { b.Free() })
			return b.Slice(4, 0)
		}},
		// An empty buffer at an address no float32 is aligned at: it holds
		// no element to misalign.
		{"ViewAs of an empty slice at an odd address", func() (*cuda.DeviceBuffer[float32], error) {
			b, err := cuda.Alloc[byte](ctx, 8)
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { b.Free() })
			odd, err := b.Slice(1, 0)
			if err != nil {
				return nil, err
			}
			return cuda.ViewAs[float32](odd)
		}},
	}
	for _, mk := range makers {
		t.Run(mk.name, func(t *testing.T) {
			b := must(mk.make())(t)
			if b.Len() != 0 || b.ByteSize() != 0 {
				t.Fatalf("Len %d, ByteSize %d; want 0, 0", b.Len(), b.ByteSize())
			}
			other := must(cuda.Alloc[float32](ctx, 0))(t)
			defer other.Free()
			var sb cuda.StagingBuffer
			defer sb.Close()
			var out bytes.Buffer
			steps := map[string]error{
				"CopyFromHost":          b.CopyFromHost(nil),
				"CopyToHost":            b.CopyToHost([]float32{}),
				"CopyFromHostAsync":     b.CopyFromHostAsync(nil, s),
				"CopyToHostAsync":       b.CopyToHostAsync(nil, s),
				"CopyFromDevice":        b.CopyFromDevice(other),
				"CopyFromDeviceAsync":   other.CopyFromDeviceAsync(b, s),
				"Slice":                 second(b.Slice(0, 0)),
				"ViewAs":                second(cuda.ViewAs[byte](b)),
				"Memset8":               b.Memset8(1),
				"Memset32":              b.Memset32(1),
				"Memset16Async":         b.Memset16Async(1, s),
				"Upload":                cuda.Upload(&sb, b, nil, s),
				"Download":              cuda.Download(&sb, nil, b, s),
				"UploadWith":            cuda.UploadWith(&sb, b, 0, s, func([]float32) { t.Error("fill called for no elements") }),
				"DownloadInto":          second(cuda.DownloadInto(&sb, b, 0, s)),
				"ReadFrom":              second(b.ReadFrom(bytes.NewReader(nil))),
				"WriteTo":               second(b.WriteTo(&out)),
				"CopyPeer":              second(cuda.CopyPeer(other, b)),
				"Launch of zero blocks": vadd.Launch(cuda.LaunchConfigFor(0, s), b, b, b, uint32(0)),
				"Synchronize":           s.Synchronize(),
			}
			for name, err := range steps {
				if err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
			if out.Len() != 0 {
				t.Errorf("WriteTo wrote %d bytes", out.Len())
			}
			if err := cuda.Upload(&sb, b, []float32{1}, s); err == nil {
				t.Error("Upload of one element into an empty buffer succeeded")
			}
			if err := b.CopyToHost(make([]float32, 1)); err == nil {
				t.Error("CopyToHost into one element succeeded")
			}
			if err := b.Free(); err != nil {
				t.Fatal(err)
			}
			if err := b.Free(); err != nil {
				t.Fatalf("second Free: %v", err)
			}
		})
	}
}

// TestEmptyAllocations covers what empty buffers of the other makers do:
// FreeOn of an empty stream-ordered buffer, an empty pinned buffer, and an
// export refused in words.
func TestEmptyAllocations(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	b := must(cuda.AllocAsync[int32](s, 0))(t)
	if err := b.FreeOn(cudatest.Stream(t, ctx)); err != nil {
		t.Errorf("FreeOn of an empty stream-ordered buffer: %v", err)
	}
	p := must(cuda.AllocPinned[int32](ctx, 0))(t)
	if p.Len() != 0 || len(p.Data()) != 0 {
		t.Errorf("empty pinned buffer: Len %d, Data %d elements", p.Len(), len(p.Data()))
	}
	if err := p.Free(); err != nil {
		t.Error(err)
	}
	e := must(cuda.Alloc[int32](ctx, 0))(t)
	defer e.Free()
	if _, err := e.IPCHandle(); err == nil {
		t.Error("IPCHandle of an empty buffer succeeded")
	}
	if got := cuda.LaunchConfigFor(0, s).Grid.X; got != 0 {
		t.Errorf("LaunchConfigFor(0) has %d blocks, want 0", got)
	}
}

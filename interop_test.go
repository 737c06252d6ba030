package cuda_test

import (
	"errors"
	"runtime"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestContextDo(t *testing.T) {
	ctx := cudatest.Context(t)
	sentinel := errors.New("from fn")
	// Run on many goroutines so that some run on threads where another
	// context, or none, was current.
	for range 8 {
		go runtime.Gosched()
	}
	err := ctx.Do(func() error {
		if !cuda.IsCurrent(ctx) {
			t.Error("the context is not current inside Do")
		}
		return sentinel
	})
	if !errors.Is(err, sentinel) {
		t.Fatalf("Do returned %v, want fn's error", err)
	}
	if err := ctx.Do(nil); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Do(nil) = %v", err)
	}
	if err := (*cuda.Context)(nil).Do(func() error { return nil }); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("nil Context.Do = %v", err)
	}
	closed := must(cuda.NewContext(cudatest.Device(t)))(t)
	closed.Close()
	ran := false
	if err := closed.Do(func() error { ran = true; return nil }); !errors.Is(err, cuda.ErrClosed) || ran {
		t.Errorf("Do on a closed context = %v (fn ran: %v)", err, ran)
	}
}

func TestStreamDo(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	src := must(cuda.FromHost(ctx, random[uint32](4099)))(t)
	defer src.Free()
	dst := must(cuda.Alloc[uint32](ctx, 4099))(t)
	defer dst.Free()
	// Work queued through Do is ordered with gocuda's own on the stream:
	// here a device-to-device copy queued "by another library" (gocuda's
	// own async copy stands in for it), then a download.
	var handle uintptr
	err := s.Do(func(stream uintptr) error {
		handle = stream
		if !cuda.IsCurrent(ctx) {
			t.Error("the context is not current inside Stream.Do")
		}
		return dst.CopyFromDeviceAsync(src, s)
	}, src, dst, dst)
	if err != nil || handle == 0 {
		t.Fatalf("Do = %v, handle %#x", err, handle)
	}
	want, got := make([]uint32, 4099), make([]uint32, 4099)
	src.CopyToHost(want)
	if err := dst.CopyToHostAsync(got, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if !equal(got, want) {
		t.Fatal("data differs after the copy queued in Do")
	}

	other := must(cuda.NewContext(cudatest.Device(t)))(t)
	defer other.Close()
	foreign := must(cuda.Alloc[byte](other, 16))(t)
	defer foreign.Free()
	freed := must(cuda.Alloc[byte](ctx, 16))(t)
	freed.Free()
	fn := func(uintptr) error { t.Error("fn ran"); return nil }
	for _, tt := range []struct {
		name string
		s    *cuda.Stream
		fn   func(uintptr) error
		mem  []cuda.Memory
		want error
	}{
		{"nil stream", nil, fn, nil, cuda.ErrInvalidValue},
		{"nil function", s, nil, nil, cuda.ErrInvalidValue},
		{"nil buffer", s, fn, []cuda.Memory{(*cuda.DeviceBuffer[float32])(nil)}, cuda.ErrInvalidValue},
		{"nil interface", s, fn, []cuda.Memory{nil}, cuda.ErrInvalidValue},
		{"buffer of another context", s, fn, []cuda.Memory{foreign}, cuda.ErrInvalidValue},
		{"freed buffer", s, fn, []cuda.Memory{src, freed}, cuda.ErrClosed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.s.Do(tt.fn, tt.mem...); !errors.Is(err, tt.want) {
				t.Errorf("Do = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestDoNested: a Do of another context inside fn, Context.Do's or
// Stream.Do's, leaves the outer context current again when it returns, so
// that the rest of fn's library calls still find the outer one's device.
func TestDoNested(t *testing.T) {
	ctx0, ctx1 := twoContexts(t)
	if ctx0 == nil {
		return
	}
	s1 := cudatest.Stream(t, ctx1)
	for _, tt := range []struct {
		name  string
		inner func() error
	}{
		{"Context.Do", func() error {
			return ctx1.Do(func() error {
				if !cuda.IsCurrent(ctx1) {
					t.Error("the inner context is not current inside the inner Do")
				}
				return nil
			})
		}},
		{"Stream.Do", func() error { return s1.Do(func(uintptr) error { return nil }) }},
		{"a Do that fails", func() error { return ctx1.Do(func() error { return errors.New("inner") }) }},
		{"a Do of the same context", func() error { return ctx0.Do(func() error { return nil }) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ctx0.Do(func() error {
				tt.inner()
				if !cuda.IsCurrent(ctx0) {
					t.Errorf("after %s of another context inside Do, the outer context is no longer current", tt.name)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// BenchmarkStreamDo times a Stream.Do of a function that does nothing,
// holding one buffer: what a library call through Do (cuBLAS, NCCL) costs
// beside its own work.
func BenchmarkStreamDo(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	x := must(cuda.Alloc[float32](ctx, 256))(b)
	defer x.Free()
	fn := func(uintptr) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Do(fn, x); err != nil {
			b.Fatal(err)
		}
	}
}

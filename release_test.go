package cuda_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// releasable is an object TestFailedReleaseRetried releases: use shows it
// still works, close releases it.
type releasable struct {
	use, close func() error
}

// stagingObject is a staging buffer holding 64 KiB, released by release.
func stagingObject(release func(*cuda.StagingBuffer) error) func(*testing.T, *cuda.Context) releasable {
	return func(t *testing.T, ctx *cuda.Context) releasable {
		sb, err := cuda.NewStagingBuffer(ctx, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		return releasable{func() error {
			if sb.Capacity() != 1<<16 {
				return errors.New("capacity lost")
			}
			return nil
		}, func() error { return release(sb) }}
	}
}

// TestFailedReleaseRetried: when the driver refuses to release a resource
// (the bind before it, or the call itself), Close or Free returns the
// error naming the call, the object stays owned and usable, the fake still
// holds the resource, and a second Close releases it.
func TestFailedReleaseRetried(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ptx, err := os.ReadFile("testdata/kernels.ptx")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call string // the release call made to fail
		kind string // the fake's count of the resource, "" if it has none
		make func(t *testing.T, ctx *cuda.Context) releasable
	}{
		{"DeviceBuffer.Free", "cuMemFree_v2", "device", func(t *testing.T, ctx *cuda.Context) releasable {
			b, err := cuda.Alloc[float32](ctx, 64)
			if err != nil {
				t.Fatal(err)
			}
			return releasable{func() error { return b.CopyFromHost(make([]float32, 64)) }, b.Free}
		}},
		{"PinnedBuffer.Free", "cuMemFreeHost", "host", func(t *testing.T, ctx *cuda.Context) releasable {
			b, err := cuda.AllocPinned[float32](ctx, 64)
			if err != nil {
				t.Fatal(err)
			}
			return releasable{func() error {
				if b.Data() == nil {
					return errors.New("Data is nil")
				}
				return nil
			}, b.Free}
		}},
		{"Registered.Close", "cuMemHostUnregister", "registered", func(t *testing.T, ctx *cuda.Context) releasable {
			r, err := cuda.Register(ctx, make([]float32, 1024))
			if err != nil {
				t.Fatal(err)
			}
			return releasable{func() error {
				if r.Len() != 1024 {
					return errors.New("wrong length")
				}
				return nil
			}, r.Close}
		}},
		{"Stream.Close destroy", "cuStreamDestroy_v2", "stream", func(t *testing.T, ctx *cuda.Context) releasable {
			s, err := ctx.NewStream()
			if err != nil {
				t.Fatal(err)
			}
			return releasable{s.Synchronize, s.Close}
		}},
		{"Stream.Close wait", "cuStreamSynchronize", "stream", func(t *testing.T, ctx *cuda.Context) releasable {
			s, err := ctx.NewStream()
			if err != nil {
				t.Fatal(err)
			}
			return releasable{func() error { _, err := s.Query(); return err }, s.Close}
		}},
		{"Event.Close", "cuEventDestroy_v2", "event", func(t *testing.T, ctx *cuda.Context) releasable {
			e, err := ctx.NewEvent()
			if err != nil {
				t.Fatal(err)
			}
			return releasable{e.Synchronize, e.Close}
		}},
		{"Module.Close", "cuModuleUnload", "", func(t *testing.T, ctx *cuda.Context) releasable {
			m, err := ctx.LoadModule(ptx)
			if err != nil {
				t.Fatal(err)
			}
			return releasable{func() error { _, err := m.Function("empty"); return err }, m.Close}
		}},
		{"Context.Close", "cuDevicePrimaryCtxRelease_v2", "", func(t *testing.T, _ *cuda.Context) releasable {
			c, err := cuda.NewContext(cudatest.Device(t))
			if err != nil {
				t.Fatal(err)
			}
			return releasable{func() error { _, _, err := c.MemInfo(); return err }, c.Close}
		}},
		{"StagingBuffer.Close", "cuMemFreeHost", "host", stagingObject((*cuda.StagingBuffer).Close)},
		{"StagingBuffer.ShrinkToFit", "cuMemFreeHost", "host", stagingObject((*cuda.StagingBuffer).ShrinkToFit)},
	}
	for _, tt := range tests {
		for _, fail := range []string{tt.call, "cuCtxGetCurrent"} {
			t.Run(tt.name+"/"+fail, func(t *testing.T) {
				if fail == "cuCtxGetCurrent" && tt.name == "Context.Close" {
					t.Skip("releasing a context binds nothing")
				}
				ctx := cudatest.Context(t)
				obj := tt.make(t, ctx)
				live := 0
				if tt.kind != "" {
					live = f.Live(tt.kind)
				}
				f.Fail(fail, 1, 999)
				err := obj.close()
				f.ResetFaults()
				var ce *cuda.Error
				if !errors.As(err, &ce) || ce.Call != fail || !errors.Is(err, cuda.Result(999)) {
					t.Fatalf("close with %s failing: %v; want a *cuda.Error naming %s with code 999", fail, err, fail)
				}
				if !strings.Contains(err.Error(), "still open") {
					t.Errorf("error %q does not say the object is still open", err)
				}
				if tt.kind != "" && f.Live(tt.kind) != live {
					t.Errorf("the fake holds %d %s resources after the failed close, want %d", f.Live(tt.kind), tt.kind, live)
				}
				if err := obj.use(); err != nil {
					t.Errorf("object unusable after a failed close: %v", err)
				}
				if err := obj.close(); err != nil {
					t.Fatalf("second close: %v", err)
				}
				if tt.kind != "" && f.Live(tt.kind) != live-1 {
					t.Errorf("the fake holds %d %s resources after the second close, want %d", f.Live(tt.kind), tt.kind, live-1)
				}
				if err := obj.close(); err != nil {
					t.Errorf("third close: %v, want nil", err)
				}
			})
		}
	}
}

package cuda_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// twoContexts returns contexts on devices 0 and 1. Where the driver sees
// one device, the calling test runs again in a child process against the
// fake driver with two (and extra environment), and twoContexts returns nils.
func twoContexts(t *testing.T, env ...string) (*cuda.Context, *cuda.Context) {
	t.Helper()
	if n, _ := cuda.DeviceCount(); n < 2 {
		if cudatest.InChild(t) {
			t.Fatalf("the child sees %d device(s), want 2", n)
		}
		cudatest.RunChild(t, append([]string{cudatest.EnvDriver + "=fake", cudatest.EnvRequireGPU + "=", "FAKECUDA_DEVICES=2"}, env...)...)
		return nil, nil
	}
	cudatest.CheckLeaks(t)
	open := func(ordinal int) *cuda.Context {
		ctx := must(cuda.NewContext(must(cuda.GetDevice(ordinal))))
		t.Cleanup(func() { ctx.Close() })
		return ctx
	}
	return open(0), open(1)
}

func TestPeerCopy(t *testing.T) {
	ctx0, ctx1 := twoContexts(t)
	if ctx0 == nil {
		return
	}
	can, err := ctx1.Device().CanAccessPeer(ctx0.Device())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s driver: device 1 can access device 0: %v", cudatest.Kind(), can)
	src := must(cuda.FromHost(ctx0, random[int32](10007)))
	defer src.Free()
	dst := must(cuda.Alloc[int32](ctx1, 10007))
	defer dst.Free()
	check := func(what string) {
		t.Helper()
		want, got := make([]int32, 10007), make([]int32, 10007)
		src.CopyToHost(want)
		dst.CopyToHost(got)
		if !equal(got, want) {
			t.Fatalf("%s: data differs", what)
		}
	}
	path, err := cuda.CopyPeer(dst, src)
	if err != nil || path != cuda.PeerStaged {
		t.Fatalf("CopyPeer without peer access = %v, %v; want staged", path, err)
	}
	check("staged copy")
	if !can {
		t.Skip("the devices cannot access each other")
	}
	for range 2 { // enabling twice is no error
		if err := ctx1.EnablePeerAccess(ctx0); err != nil {
			t.Fatalf("EnablePeerAccess: %v", err)
		}
	}
	src.Memset32(0x5a5a5a5a)
	if path, err := cuda.CopyPeer(dst, src); err != nil || path != cuda.PeerDirect {
		t.Fatalf("CopyPeer with peer access = %v, %v; want direct", path, err)
	}
	check("direct copy")
	s := cudatest.Stream(t, ctx1)
	src.Memset32(0x01020304)
	if path, err := cuda.CopyPeerAsync(dst, src, s); err != nil || path != cuda.PeerDirect {
		t.Fatalf("CopyPeerAsync = %v, %v", path, err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	check("asynchronous copy")
	for range 2 { // disabling twice is no error
		if err := ctx1.DisablePeerAccess(ctx0); err != nil {
			t.Fatalf("DisablePeerAccess: %v", err)
		}
	}
	if path, _ := cuda.CopyPeer(dst, src); path != cuda.PeerStaged {
		t.Errorf("CopyPeer after DisablePeerAccess went %v", path)
	}
}

func TestPeerErrors(t *testing.T) {
	ctx0, ctx1 := twoContexts(t)
	if ctx0 == nil {
		return
	}
	other := must(cuda.NewContext(ctx0.Device())) // a second context of device 0
	defer other.Close()
	a := must(cuda.Alloc[float32](ctx0, 8))
	defer a.Free()
	b := must(cuda.Alloc[float32](ctx1, 9))
	defer b.Free()
	s0 := cudatest.Stream(t, ctx0)
	wantErrors(t, cuda.ErrInvalidValue, map[string]error{
		"same device":          ctx0.EnablePeerAccess(other),
		"nil peer":             ctx0.EnablePeerAccess(nil),
		"nil context":          (*cuda.Context)(nil).DisablePeerAccess(ctx1),
		"length mismatch":      second(cuda.CopyPeer(a, b)),
		"nil buffer":           second(cuda.CopyPeer[float32](nil, b)),
		"stream of the source": second(cuda.CopyPeerAsync(must(b.Slice(0, 8)), a, s0)),
		"nil stream":           second(cuda.CopyPeerAsync(must(b.Slice(0, 8)), a, nil)),
	})
	if _, err := cuda.GetDevice(2); !errors.Is(err, cuda.ErrInvalidDevice) {
		t.Errorf("GetDevice(2) with two devices: %v", err)
	}
}

// TestPeerUnsupported: devices that cannot reach each other refuse peer
// access and still copy, through the host.
func TestPeerUnsupported(t *testing.T) {
	ctx0, ctx1 := twoContexts(t, "FAKECUDA_PEER=0")
	if ctx0 == nil {
		return
	}
	if can, _ := ctx1.Device().CanAccessPeer(ctx0.Device()); can {
		t.Skip("these devices can access each other")
	}
	if err := ctx1.EnablePeerAccess(ctx0); !errors.Is(err, cuda.ErrNotSupported) {
		t.Errorf("EnablePeerAccess between devices that cannot: %v; want ErrNotSupported", err)
	}
	src := must(cuda.FromHost(ctx0, []int64{1, 2, 3}))
	defer src.Free()
	dst := must(cuda.Alloc[int64](ctx1, 3))
	defer dst.Free()
	if path, err := cuda.CopyPeer(dst, src); err != nil || path != cuda.PeerStaged {
		t.Fatalf("CopyPeer = %v, %v; want staged", path, err)
	}
	got := make([]int64, 3)
	dst.CopyToHost(got)
	if !equal(got, []int64{1, 2, 3}) {
		t.Errorf("got %v", got)
	}
}

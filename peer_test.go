package cuda_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// twoContexts returns contexts on devices 0 and 1, or nils where the test
// ran in a child process instead (cudatest.Contexts).
func twoContexts(t *testing.T, env ...string) (*cuda.Context, *cuda.Context) {
	t.Helper()
	ctxs := cudatest.Contexts(t, 2, env...)
	if ctxs == nil {
		return nil, nil
	}
	return ctxs[0], ctxs[1]
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
	src := must(cuda.FromHost(ctx0, random[int32](10007)))(t)
	defer src.Free()
	dst := must(cuda.Alloc[int32](ctx1, 10007))(t)
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
	other := must(cuda.NewContext(ctx0.Device()))(t) // a second context of device 0
	defer other.Close()
	a := must(cuda.Alloc[float32](ctx0, 8))(t)
	defer a.Free()
	b := must(cuda.Alloc[float32](ctx1, 9))(t)
	defer b.Free()
	s0 := cudatest.Stream(t, ctx0)
	wantErrors(t, cuda.ErrInvalidValue, map[string]error{
		"same device":           ctx0.EnablePeerAccess(other),
		"nil peer":              ctx0.EnablePeerAccess(nil),
		"nil context":           (*cuda.Context)(nil).DisablePeerAccess(ctx1),
		"length mismatch":       second(cuda.CopyPeer(a, b)),
		"nil buffer":            second(cuda.CopyPeer[float32](nil, b)),
		"stream of the source":  second(cuda.CopyPeerAsync(must(b.Slice(0, 8))(t), a, s0)),
		"nil stream":            second(cuda.CopyPeerAsync(must(b.Slice(0, 8))(t), a, nil)),
		"overlap":               second(cuda.CopyPeer(must(a.Slice(0, 4))(t), must(a.Slice(2, 4))(t))),
		"overlap, asynchronous": second(cuda.CopyPeerAsync(must(a.Slice(3, 4))(t), must(a.Slice(1, 4))(t), s0)),
		"one buffer":            second(cuda.CopyPeer(a, a)),
	})
	// A zero or closed context is named as such, before the two devices
	// are compared (a zero Context's device reads as device 0).
	closed0 := must(cuda.NewContext(ctx0.Device()))(t)
	closed0.Close()
	for _, tt := range []struct {
		name     string
		err      error
		sentinel error
		says     string
	}{
		{"zero peer", ctx0.EnablePeerAccess(new(cuda.Context)), cuda.ErrInvalidValue, "the peer context is a zero value"},
		{"zero context", new(cuda.Context).EnablePeerAccess(ctx1), cuda.ErrInvalidValue, "the context is a zero value"},
		{"both zero", new(cuda.Context).DisablePeerAccess(new(cuda.Context)), cuda.ErrInvalidValue, "the context is a zero value"},
		{"closed peer of the same device", ctx0.EnablePeerAccess(closed0), cuda.ErrClosed, "the peer context"},
		{"closed context", closed0.DisablePeerAccess(ctx0), cuda.ErrClosed, "the context"},
		{"closed peer", ctx1.DisablePeerAccess(closed0), cuda.ErrClosed, "the peer context"},
	} {
		if !errors.Is(tt.err, tt.sentinel) || !strings.Contains(fmt.Sprint(tt.err), tt.says) {
			t.Errorf("%s: %v; want %v, saying %q", tt.name, tt.err, tt.sentinel, tt.says)
		}
	}
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
	src := must(cuda.FromHost(ctx0, []int64{1, 2, 3}))(t)
	defer src.Free()
	dst := must(cuda.Alloc[int64](ctx1, 3))(t)
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

// BenchmarkCopyPeer copies 1 MiB to 1 GiB from device 0 to device 1 with
// peer access (direct where the devices can reach each other) and without
// (staged through the host by the driver).
func BenchmarkCopyPeer(b *testing.B) {
	if n, _ := cuda.DeviceCount(); n < 2 {
		b.Skipf("needs two devices; the %s driver sees %d", cudatest.Kind(), n)
	}
	ctx0 := must(cuda.NewContext(must(cuda.GetDevice(0))(b)))(b)
	defer ctx0.Close()
	ctx1 := must(cuda.NewContext(must(cuda.GetDevice(1))(b)))(b)
	defer ctx1.Close()
	for _, enable := range []bool{true, false} {
		if enable {
			if err := ctx1.EnablePeerAccess(ctx0); err != nil {
				b.Logf("no peer access: %v", err)
				continue
			}
		} else if err := ctx1.DisablePeerAccess(ctx0); err != nil {
			b.Fatal(err)
		}
		for size := 1 << 20; size <= 1<<30; size *= 4 {
			src := must(cuda.Zeroed[byte](ctx0, size))(b)
			dst := must(cuda.Alloc[byte](ctx1, size))(b)
			var path cuda.PeerPath
			b.Run(fmt.Sprintf("%s/%s", map[bool]string{true: "peer", false: "nopeer"}[enable], sizeName(size)), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					var err error
					if path, err = cuda.CopyPeer(dst, src); err != nil {
						b.Fatal(err)
					}
				}
				if want := map[bool]cuda.PeerPath{true: cuda.PeerDirect, false: cuda.PeerStaged}[enable]; path != want {
					b.Fatalf("copied %v, want %v", path, want)
				}
			})
			src.Free()
			dst.Free()
		}
	}
}

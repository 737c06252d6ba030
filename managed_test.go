package cuda_test

import (
	"errors"
	"fmt"
	"log"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestManaged: managed memory is one []T for the host and a device buffer
// for the device: written on the host, copied and computed on by the
// device, read back on the host; prefetches and advice reach the driver
// and read back as attributes; Free ends Data; MemoryStats count it.
func TestManaged(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	const n = 1 << 16
	m := must(cuda.AllocManaged[float32](ctx, n, cuda.AttachGlobal))(t)
	defer m.Free()
	data := m.Data()
	if len(data) != n || m.Len() != n {
		t.Fatalf("Data has %d elements, Len %d; want %d", len(data), m.Len(), n)
	}
	for i, v := range data {
		if v != 0 {
			t.Fatalf("element %d = %v: not zeroed", i, v)
		}
	}
	for i := range data {
		data[i] = float32(i)
	}
	// The device sees the host's writes, and the host the device's.
	got := make([]float32, n)
	if err := m.Buffer().CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	if got[n-1] != n-1 {
		t.Fatalf("the device read %v at the end, want %v", got[n-1], float32(n-1))
	}
	plain := must(cuda.FromHost(ctx, make([]float32, n)))(t)
	defer plain.Free()
	if err := m.Buffer().CopyFromDevice(plain); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Synchronize(); err != nil { // a device-to-device copy may end after the call
		t.Fatal(err)
	}
	if data[7] != 0 {
		t.Fatalf("after a device copy of zeros, the host reads %v", data[7])
	}
	if st := must(ctx.MemoryStats())(t).Managed; st.Bytes != 4*n || st.Buffers != 1 {
		t.Errorf("MemoryStats: managed %+v", st)
	}

	dev := ctx.Device()
	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"Prefetch to the device", func() error { return m.Prefetch(cuda.OnDevice(dev), s) }},
		{"Advise read mostly", func() error { return m.Advise(cuda.AdviseReadMostly, cuda.Location{}) }},
		{"Advise preferred location", func() error { return m.Advise(cuda.AdvisePreferredLocation, cuda.OnDevice(dev)) }},
		{"Advise accessed by", func() error { return m.Advise(cuda.AdviseAccessedBy, cuda.OnDevice(dev)) }},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	a := must(m.Attributes())(t)
	if want := (cuda.ManagedAttributes{ReadMostly: true, PreferredLocation: cuda.OnDevice(dev), LastPrefetch: cuda.OnDevice(dev)}); a != want {
		t.Errorf("Attributes after the advice: %+v, want %+v", a, want)
	}
	if err := m.Prefetch(cuda.OnHost(), s); err != nil {
		t.Fatal(err)
	}
	if err := m.Advise(cuda.AdviseUnsetReadMostly, cuda.Location{}); err != nil {
		t.Fatal(err)
	}
	if err := m.Advise(cuda.AdviseUnsetPreferredLocation, cuda.OnDevice(dev)); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if a := must(m.Attributes())(t); a.ReadMostly || a.PreferredLocation != (cuda.Location{}) || !a.LastPrefetch.IsHost() {
		t.Errorf("Attributes after unsetting and a prefetch to the host: %+v", a)
	}
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if m.Data() != nil {
		t.Error("Data after Free is not nil")
	}
	if st := must(ctx.MemoryStats())(t).Managed; st.Bytes != 0 || st.Allocations != 1 {
		t.Errorf("MemoryStats after Free: managed %+v", st)
	}
	if err := m.Prefetch(cuda.OnHost(), s); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Prefetch after Free: %v, want ErrClosed", err)
	}
}

func TestManagedErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	m := must(cuda.AllocManaged[int32](ctx, 100, cuda.AttachHost))(t)
	defer m.Free()
	var nilBuf *cuda.ManagedBuffer[int32]
	// An empty buffer moves nothing, but still checks what it is given.
	empty0 := must(cuda.AllocManaged[int32](ctx, 0, cuda.AttachGlobal))(t)
	defer empty0.Free()
	for name, err := range map[string]error{
		"Prefetch of an empty buffer to no location":    empty0.Prefetch(cuda.Location{}, s),
		"Prefetch of an empty buffer on a nil stream":   empty0.Prefetch(cuda.OnHost(), nil),
		"Advise 7 of an empty buffer":                   empty0.Advise(7, cuda.OnHost()),
		"Advise preferred of an empty buffer, no place": empty0.Advise(cuda.AdvisePreferredLocation, cuda.Location{}),
	} {
		if !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("%s: %v, want an error wrapping ErrInvalidValue", name, err)
		}
	}
	for _, n := range []int{0, 10} {
		freed := must(cuda.AllocManaged[int32](ctx, n, cuda.AttachGlobal))(t)
		if err := freed.Free(); err != nil {
			t.Fatal(err)
		}
		wantErrors(t, cuda.ErrClosed, map[string]error{
			fmt.Sprintf("Prefetch of a freed buffer of %d", n):   freed.Prefetch(cuda.OnHost(), s),
			fmt.Sprintf("Advise of a freed buffer of %d", n):     freed.Advise(cuda.AdviseReadMostly, cuda.OnHost()),
			fmt.Sprintf("Attributes of a freed buffer of %d", n): second(freed.Attributes()),
		})
	}
	for name, err := range map[string]error{
		"attach 0":                        second(cuda.AllocManaged[int32](ctx, 10, 0)),
		"negative length":                 second(cuda.AllocManaged[int32](ctx, -1, cuda.AttachGlobal)),
		"nil context":                     second(cuda.AllocManaged[int32](nil, 10, cuda.AttachGlobal)),
		"Prefetch to no location":         m.Prefetch(cuda.Location{}, s),
		"Prefetch on a nil stream":        m.Prefetch(cuda.OnHost(), nil),
		"Advise 0":                        m.Advise(0, cuda.OnHost()),
		"Advise 7":                        m.Advise(7, cuda.OnHost()),
		"Advise preferred, no location":   m.Advise(cuda.AdvisePreferredLocation, cuda.Location{}),
		"Prefetch of a nil buffer":        nilBuf.Prefetch(cuda.OnHost(), s),
		"Advise of a zero buffer":         new(cuda.ManagedBuffer[int32]).Advise(cuda.AdviseReadMostly, cuda.OnHost()),
		"Attributes of a nil buffer":      second(nilBuf.Attributes()),
		"Prefetch to a device of another": m.Prefetch(cuda.OnDevice(cuda.Device{}), cudatest.Stream(t, cudatest.Context(t))),
	} {
		if !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("%s: %v, want an error wrapping ErrInvalidValue", name, err)
		}
	}
	if nilBuf.Data() != nil || new(cuda.ManagedBuffer[int32]).Data() != nil {
		t.Error("a nil or zero buffer's Data is not nil")
	}
	empty := must(cuda.AllocManaged[int32](ctx, 0, cuda.AttachGlobal))(t)
	if len(empty.Data()) != 0 || empty.Prefetch(cuda.OnHost(), s) != nil || empty.Free() != nil {
		t.Error("an empty managed buffer does not work")
	}
	for _, l := range []cuda.Location{{}, cuda.OnHost(), cuda.OnDevice(ctx.Device())} {
		if d, ok := l.Device(); ok != (l == cuda.OnDevice(ctx.Device())) || ok && d != ctx.Device() {
			t.Errorf("%v.Device() = %v, %v", l, d, ok)
		}
	}
	if got := fmt.Sprint(cuda.Location{}, cuda.OnHost(), cuda.OnDevice(ctx.Device()), cuda.AdviseAccessedBy, cuda.Advice(9)); got != "none host cuda:0 accessed by Advice(9)" {
		t.Errorf("names: %q", got)
	}
}

// TestManagedNoConcurrentAccess: on a device without concurrent managed
// access a prefetch to it is refused in words, and to the host still
// works (the fake plays such a device).
func TestManagedNoConcurrentAccess(t *testing.T) {
	if !cudatest.InChild(t) {
		cudatest.RunChild(t, "GOCUDA_TEST_DRIVER=fake", "GOCUDA_REQUIRE_GPU=", "FAKECUDA_CONCURRENT_MANAGED=0")
		return
	}
	ctx := cudatest.Context(t)
	if v := must(ctx.Device().Attribute(cuda.AttrConcurrentManagedAccess))(t); v != 0 {
		t.Fatal("the fake plays a device with concurrent managed access")
	}
	s := cudatest.Stream(t, ctx)
	m := must(cuda.AllocManaged[byte](ctx, 4096, cuda.AttachGlobal))(t)
	defer m.Free()
	err := m.Prefetch(cuda.OnDevice(ctx.Device()), s)
	if !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "concurrent managed access") {
		t.Errorf("Prefetch to the device: %v, want ErrNotSupported saying why", err)
	}
	if err := m.Prefetch(cuda.OnHost(), s); err != nil {
		t.Errorf("Prefetch to the host: %v", err)
	}
}

// Managed memory: the host fills it as a slice, the device copies it, and
// the host reads the copy back through the slice of another.
func ExampleAllocManaged() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	src, err := cuda.AllocManaged[int32](ctx, 4, cuda.AttachGlobal)
	if err != nil {
		log.Fatal(err)
	}
	defer src.Free()
	dst, err := cuda.AllocManaged[int32](ctx, 4, cuda.AttachGlobal)
	if err != nil {
		log.Fatal(err)
	}
	defer dst.Free()
	copy(src.Data(), []int32{1, 2, 3, 4})
	if err := src.Prefetch(cuda.OnDevice(ctx.Device()), s); err != nil {
		log.Fatal(err)
	}
	if err := dst.Buffer().CopyFromDeviceAsync(src.Buffer(), s); err != nil {
		log.Fatal(err)
	}
	if err := s.Synchronize(); err != nil { // before the host reads what the device wrote
		log.Fatal(err)
	}
	fmt.Println(dst.Data())
	// Output: [1 2 3 4]
}

package cuda_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

type particle struct {
	X, Y, Z float32
	ID      uint32
	Tag     [4]uint8
}

func roundTrip[T any](t *testing.T, ctx *cuda.Context, n int) {
	t.Helper()
	src := random[T](n)
	buf, err := cuda.FromHost(ctx, src)
	if err != nil {
		t.Fatalf("FromHost(%d): %v", n, err)
	}
	defer buf.Free()
	if buf.Len() != n || buf.ByteSize() != n*int(unsafe.Sizeof(src[0])) {
		t.Errorf("Len %d ByteSize %d for %d elements", buf.Len(), buf.ByteSize(), n)
	}
	dst := make([]T, n)
	if err := buf.CopyToHost(dst); err != nil {
		t.Fatal(err)
	}
	if !equal(src, dst) {
		t.Fatalf("round trip of %d %T: data differs", n, src[0])
	}
	src2 := random[T](n)
	if err := buf.CopyFromHost(src2); err != nil {
		t.Fatal(err)
	}
	if err := buf.CopyToHost(dst); err != nil {
		t.Fatal(err)
	}
	if !equal(src2, dst) {
		t.Fatalf("second round trip of %d %T: data differs", n, src[0])
	}
}

func TestRoundTrip(t *testing.T) {
	ctx := cudatest.Context(t)
	sizes := []int{1, 3, 1000, 4097, 1<<20 + 7}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			roundTrip[float32](t, ctx, n)
			roundTrip[float64](t, ctx, n)
			roundTrip[int8](t, ctx, n)
			roundTrip[uint32](t, ctx, n)
			roundTrip[[4]byte](t, ctx, n)
			roundTrip[particle](t, ctx, n)
		})
	}
	t.Run("256MiB", func(t *testing.T) {
		if testing.Short() {
			t.Skip("large")
		}
		roundTrip[byte](t, ctx, 256<<20)
	})
}

func TestZeroed(t *testing.T) {
	ctx := cudatest.Context(t)
	// Dirty the memory first, so that zeros come from Zeroed.
	b, err := cuda.FromHost(ctx, random[uint32](4099))
	if err != nil {
		t.Fatal(err)
	}
	b.Free()
	z, err := cuda.Zeroed[uint32](ctx, 4099)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Free()
	dst := random[uint32](4099)
	if err := z.CopyToHost(dst); err != nil {
		t.Fatal(err)
	}
	for i, v := range dst {
		if v != 0 {
			t.Fatalf("element %d = %d after Zeroed", i, v)
		}
	}
}

func TestAllocErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	tests := []struct {
		name string
		err  func() error
		want error
		msg  string
	}{
		{"negative", func() error { _, err := cuda.Alloc[float32](ctx, -5); return err }, cuda.ErrInvalidValue, "length -5"},
		{"empty of a zero-sized type", func() error { _, err := cuda.Zeroed[struct{}](ctx, 0); return err }, cuda.ErrInvalidValue, "size zero"},
		{"empty on a nil context", func() error { _, err := cuda.Alloc[float32](nil, 0); return err }, cuda.ErrInvalidValue, "nil *Context"},
		{"overflow", func() error { _, err := cuda.Alloc[[1 << 20]byte](ctx, 1<<50); return err }, cuda.ErrInvalidValue, "overflow"},
		{"out of memory", func() error { _, err := cuda.Alloc[[1 << 20]byte](ctx, 1<<30); return err }, cuda.ErrOutOfMemory, "GiB requested"},
		{"zero-sized type", func() error { _, err := cuda.Alloc[struct{}](ctx, 4); return err }, cuda.ErrInvalidValue, "size zero"},
		{"nil context", func() error { _, err := cuda.Alloc[int](nil, 4); return err }, cuda.ErrInvalidValue, "nil *Context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("got %v; want %v saying %q", err, tt.want, tt.msg)
			}
		})
	}
}

type withPointer struct {
	A float32
	P *int
}

type nested struct {
	A [2]struct {
		B float32
		S string
	}
}

func TestElementTypes(t *testing.T) {
	ctx := cudatest.Context(t)
	tests := []struct {
		name  string
		err   error
		field string
	}{
		{"pointer", second(cuda.Alloc[*int](ctx, 1)), "*int is a ptr"},
		{"string", second(cuda.Alloc[string](ctx, 1)), "string is a string"},
		{"slice", second(cuda.Alloc[[]int](ctx, 1)), "is a slice"},
		{"map", second(cuda.Alloc[map[int]int](ctx, 1)), "is a map"},
		{"interface", second(cuda.Alloc[any](ctx, 1)), "is a interface"},
		{"func", second(cuda.Alloc[func()](ctx, 1)), "is a func"},
		{"chan", second(cuda.Alloc[chan int](ctx, 1)), "is a chan"},
		{"struct field", second(cuda.Alloc[withPointer](ctx, 1)), "withPointer.P"},
		{"nested field", second(cuda.Alloc[nested](ctx, 1)), "nested.A[0].S"},
		{"pinned", second(cuda.AllocPinned[*int](ctx, 1)), "ptr"},
		{"register", second(cuda.Register(ctx, []string{"x"})), "string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, cuda.ErrInvalidValue) || !strings.Contains(tt.err.Error(), tt.field) {
				t.Errorf("got %v; want ErrInvalidValue naming %q", tt.err, tt.field)
			}
		})
	}
	b, err := cuda.Alloc[bool](ctx, 8)
	if err != nil {
		t.Fatalf("Alloc[bool]: %v", err)
	}
	defer b.Free()
	bytes := must(cuda.Alloc[byte](ctx, 8))(t)
	defer bytes.Free()
	if _, err := cuda.ViewAs[bool](bytes); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "bool") {
		t.Errorf("ViewAs[bool]: %v; want ErrInvalidValue", err)
	}
}

func TestLengthMismatch(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	b := must(cuda.Alloc[float32](ctx, 10))(t)
	defer b.Free()
	other := must(cuda.Alloc[float32](ctx, 11))(t)
	defer other.Free()
	for name, err := range map[string]error{
		"CopyFromHost":        b.CopyFromHost(make([]float32, 9)),
		"CopyToHost":          b.CopyToHost(make([]float32, 11)),
		"CopyFromDevice":      b.CopyFromDevice(other),
		"CopyFromHostAsync":   b.CopyFromHostAsync(make([]float32, 9), s),
		"CopyToHostAsync":     b.CopyToHostAsync(make([]float32, 11), s),
		"CopyFromDeviceAsync": b.CopyFromDeviceAsync(other, s),
	} {
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "10") {
			t.Errorf("%s with a wrong length: %v; want ErrInvalidValue with both lengths", name, err)
		}
	}
	if err := b.CopyFromHost(make([]float32, 9)); !strings.Contains(err.Error(), "9") {
		t.Errorf("message %q lacks the source length", err)
	}
}

func TestSliceAndView(t *testing.T) {
	ctx := cudatest.Context(t)
	src := random[uint32](1000)
	b := must(cuda.FromHost(ctx, src))(t)
	defer b.Free()

	sl, err := b.Slice(100, 50)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, 50)
	if err := sl.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	if !equal(got, src[100:150]) {
		t.Error("Slice(100, 50) reads the wrong elements")
	}
	patch := random[uint32](50)
	if err := sl.CopyFromHost(patch); err != nil {
		t.Fatal(err)
	}
	copy(src[100:], patch)
	all := make([]uint32, 1000)
	b.CopyToHost(all)
	if !equal(all, src) {
		t.Error("writing through a slice changed other elements")
	}
	if sl.Ptr() != b.Ptr()+400 {
		t.Errorf("slice pointer %#x, want owner + 400", sl.Ptr())
	}
	for _, r := range [][2]int{{-1, 1}, {0, 1001}, {1000, 1}, {999, 2}, {5, -1}, {1, math.MaxInt}, {math.MaxInt, math.MaxInt}} {
		_, err := b.Slice(r[0], r[1])
		if !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Slice(%d, %d): %v; want ErrInvalidValue", r[0], r[1], err)
		}
		// The range named is the one asked for, even where its end
		// passes MaxInt.
		if end := fmt.Sprint(uint64(r[0]) + uint64(r[1])); r[0] >= 0 && r[1] >= 0 && !strings.Contains(err.Error(), " to "+end+" ") {
			t.Errorf("Slice(%d, %d): %v; want it to name elements %d to %s", r[0], r[1], err, r[0], end)
		}
	}
	if empty, err := b.Slice(1000, 0); err != nil || empty.Len() != 0 || empty.CopyToHost(nil) != nil {
		t.Errorf("empty slice at the end: %v", err)
	}

	// Views: float32, [4]byte and a struct over the same bytes.
	f := must(cuda.ViewAs[float32](b))(t)
	fs := make([]float32, f.Len())
	f.CopyToHost(fs)
	if f.Len() != 1000 || unsafe.Slice((*uint32)(unsafe.Pointer(&fs[0])), 1000)[7] != src[7] {
		t.Error("float32 view reads other bits")
	}
	bytes4 := must(cuda.ViewAs[[4]byte](b))(t)
	bs := make([][4]byte, bytes4.Len())
	bytes4.CopyToHost(bs)
	if *(*uint32)(unsafe.Pointer(&bs[3])) != src[3] {
		t.Error("[4]byte view reads other bytes")
	}
	parts := must(cuda.ViewAs[particle](b))(t) // 20 bytes: 4000/20 = 200
	if parts.Len() != 200 {
		t.Errorf("particle view has %d elements, want 200", parts.Len())
	}
	back := must(cuda.ViewAs[uint32](parts))(t)
	if back.Len() != 1000 {
		t.Errorf("view of a view: %d elements", back.Len())
	}
	odd := must(b.Slice(0, 3))(t) // 12 bytes
	if _, err := cuda.ViewAs[[8]byte](odd); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "12 bytes") {
		t.Errorf("ViewAs of 12 bytes as [8]byte: %v", err)
	}
	if _, err := cuda.ViewAs[struct{}](b); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("ViewAs zero-sized: %v", err)
	}
	if _, err := cuda.ViewAs[float64](must(b.Slice(1, 4))(t)); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("ViewAs[float64] at a 4-byte offset: %v; want ErrInvalidValue (misaligned)", err)
	}

	// Free on a slice or view frees nothing; the owner's Free closes all.
	if err := sl.Free(); err != nil {
		t.Fatal(err)
	}
	if err := f.CopyToHost(fs); err != nil {
		t.Errorf("view after freeing a slice: %v", err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	wantErrors(t, cuda.ErrClosed, map[string]error{
		"owner":        b.CopyToHost(all),
		"slice":        sl.CopyToHost(got),
		"view":         f.CopyToHost(fs),
		"view of view": back.CopyFromHost(all),
		"Slice":        second(b.Slice(0, 1)),
		"ViewAs":       second(cuda.ViewAs[byte](b)),
		"Memset":       f.Memset32(1),
	})
}

func TestFromRaw(t *testing.T) {
	ctx := cudatest.Context(t)
	src := random[float32](256)
	owner := must(cuda.FromHost(ctx, src))(t)
	defer owner.Free()
	raw, err := cuda.FromRaw[float32](ctx, owner.Ptr(), 256)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 256)
	if err := raw.CopyToHost(got); err != nil || !equal(got, src) {
		t.Fatalf("FromRaw reads %v", err)
	}
	if err := raw.Free(); err != nil {
		t.Fatal(err)
	}
	if err := raw.CopyToHost(got); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("FromRaw buffer after Free: %v; want ErrClosed", err)
	}
	if err := owner.CopyToHost(got); err != nil || !equal(got, src) {
		t.Errorf("the owner after Free of a raw wrap: %v", err)
	}
	empty, err := cuda.FromRaw[float32](ctx, 0, 0)
	if err != nil || empty.Len() != 0 || empty.CopyFromHost(nil) != nil || empty.Free() != nil {
		t.Errorf("zero-length FromRaw: %v", err)
	}
	// No element to misalign: an empty buffer at an odd address, as an
	// empty Slice of a byte buffer there is.
	odd, err := cuda.FromRaw[float32](ctx, owner.Ptr()+2, 0)
	if err != nil || odd.Len() != 0 || odd.Memset32(1) != nil || odd.Free() != nil {
		t.Errorf("zero-length FromRaw at an odd address: %v", err)
	}
	wantErrors(t, cuda.ErrInvalidValue, map[string]error{
		"negative":   second(cuda.FromRaw[float32](ctx, owner.Ptr(), -1)),
		"null":       second(cuda.FromRaw[float32](ctx, 0, 4)),
		"misaligned": second(cuda.FromRaw[float32](ctx, owner.Ptr()+2, 4)),
		"nil ctx":    second(cuda.FromRaw[float32](nil, owner.Ptr(), 4)),
	})
	// A closed context takes no new buffer, as Alloc's does not.
	closed := must(cuda.NewContext(ctx.Device()))(t)
	closed.Close()
	wantErrors(t, cuda.ErrClosed, map[string]error{
		"closed ctx":              second(cuda.FromRaw[float32](closed, owner.Ptr(), 4)),
		"closed ctx, empty":       second(cuda.FromRaw[float32](closed, 0, 0)),
		"Alloc in the closed ctx": second(cuda.Alloc[float32](closed, 0)),
	})
}

func TestCopyFromDevice(t *testing.T) {
	ctx := cudatest.Context(t)
	src := random[int32](5001)
	a := must(cuda.FromHost(ctx, src))(t)
	defer a.Free()
	b := must(cuda.Alloc[int32](ctx, 5001))(t)
	defer b.Free()
	if err := b.CopyFromDevice(a); err != nil {
		t.Fatal(err)
	}
	got := make([]int32, 5001)
	b.CopyToHost(got)
	if !equal(got, src) {
		t.Error("CopyFromDevice: data differs")
	}
	// Between two slices of one allocation.
	lo, hi := must(a.Slice(0, 2000))(t), must(a.Slice(3000, 2000))(t)
	if err := lo.CopyFromDevice(hi); err != nil {
		t.Fatal(err)
	}
	a.CopyToHost(got)
	if !equal(got[:2000], src[3000:5000]) {
		t.Error("copy between slices of one buffer: data differs")
	}
	if err := must(a.Slice(0, 2000))(t).CopyFromDevice(must(a.Slice(1000, 2000))(t)); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("overlapping copy: %v; want ErrInvalidValue", err)
	}
	other := cudatest.Context(t)
	c := must(cuda.Alloc[int32](other, 5001))(t)
	defer c.Free()
	if err := c.CopyFromDevice(a); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "different contexts") {
		t.Errorf("copy across contexts: %v", err)
	}
}

// TestCopyFromFreedBuffer: a copy whose source or destination was freed
// returns ErrClosed, even when the other buffer names memory at the freed
// one's address, which an address comparison alone calls an overlap
// (TestHammer met it: a buffer freed, and its address allocated again,
// between a copy's checks).
func TestCopyFromFreedBuffer(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	copies := []struct {
		name string
		copy func(dst, src *cuda.DeviceBuffer[int32]) error
	}{
		{"CopyFromDevice", func(dst, src *cuda.DeviceBuffer[int32]) error { return dst.CopyFromDevice(src) }},
		{"CopyFromDeviceAsync", func(dst, src *cuda.DeviceBuffer[int32]) error { return dst.CopyFromDeviceAsync(src, s) }},
		{"CopyPeer", func(dst, src *cuda.DeviceBuffer[int32]) error { _, err := cuda.CopyPeer(dst, src); return err }},
		{"CopyPeerAsync", func(dst, src *cuda.DeviceBuffer[int32]) error { _, err := cuda.CopyPeerAsync(dst, src, s); return err }},
	}
	for _, c := range copies {
		for _, freed := range []string{"dst", "src"} {
			t.Run(c.name+"/"+freed+" freed", func(t *testing.T) {
				old := must(cuda.Alloc[int32](ctx, 4096))(t)
				if err := old.Free(); err != nil {
					t.Fatal(err)
				}
				// Memory the allocator could hand out again at once.
				again := must(cuda.FromRaw[int32](ctx, old.Ptr(), 4096))(t)
				dst, src := old, again
				if freed == "src" {
					dst, src = again, old
				}
				if err := c.copy(dst, src); !errors.Is(err, cuda.ErrClosed) {
					t.Errorf("%s with %s freed and its address allocated again: %v; want ErrClosed", c.name, freed, err)
				}
			})
		}
	}
}

func TestMemset(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	b := must(cuda.Alloc[uint32](ctx, 1001))(t)
	defer b.Free()
	got := make([]uint32, 1001)
	check := func(name string, want uint32) {
		t.Helper()
		for i, v := range got {
			if v != want {
				t.Fatalf("%s: element %d = %#x, want %#x", name, i, v, want)
			}
		}
	}
	b.Memset8(0xab)
	b.CopyToHost(got)
	check("Memset8", 0xabababab)
	b.Memset16(0x1234)
	b.CopyToHost(got)
	check("Memset16", 0x12341234)
	b.Memset32(0xdeadbeef)
	b.CopyToHost(got)
	check("Memset32", 0xdeadbeef)
	b.Memset32Async(0x01020304, s)
	s.Synchronize()
	b.CopyToHost(got)
	check("Memset32Async", 0x01020304)
	b.Memset16Async(0xbeef, s)
	b.Memset8Async(0x11, s)
	s.Synchronize()
	b.CopyToHost(got)
	check("Memset8Async after Memset16Async", 0x11111111)

	odd := must(cuda.Alloc[byte](ctx, 7))(t)
	defer odd.Free()
	if err := odd.Memset16(1); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Memset16 of 7 bytes: %v; want ErrInvalidValue", err)
	}
	if err := must(odd.Slice(1, 4))(t).Memset32(1); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Memset32 at an odd address: %v; want ErrInvalidValue", err)
	}
	if err := b.Memset8Async(1, nil); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Memset8Async with a nil stream: %v", err)
	}
}

// TestAsyncTwoStreams orders two streams with an event: s1 uploads, s2 waits
// for it, copies on the device and downloads.
func TestAsyncTwoStreams(t *testing.T) {
	ctx := cudatest.Context(t)
	s1, s2 := cudatest.Stream(t, ctx), cudatest.Stream(t, ctx)
	ev := must(ctx.NewEvent(cuda.EventDisableTiming))(t)
	defer ev.Close()
	const n = 1 << 16
	a := must(cuda.Alloc[float32](ctx, n))(t)
	defer a.Free()
	b := must(cuda.Alloc[float32](ctx, n))(t)
	defer b.Free()
	for round := range 5 {
		src := random[float32](n)
		dst := make([]float32, n)
		if err := a.CopyFromHostAsync(src, s1); err != nil {
			t.Fatal(err)
		}
		ev.Record(s1)
		s2.WaitEvent(ev)
		if err := b.CopyFromDeviceAsync(a, s2); err != nil {
			t.Fatal(err)
		}
		if err := b.CopyToHostAsync(dst, s2); err != nil {
			t.Fatal(err)
		}
		if err := s2.Synchronize(); err != nil {
			t.Fatal(err)
		}
		s1.Synchronize()
		if !equal(src, dst) {
			t.Fatalf("round %d: data differs", round)
		}
	}
	other := cudatest.Context(t)
	so := cudatest.Stream(t, other)
	if err := a.CopyFromHostAsync(make([]float32, n), so); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("async copy on a stream of another context: %v", err)
	}
	if err := a.CopyToHostAsync(make([]float32, n), nil); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("async copy on a nil stream: %v", err)
	}
}

// TestAsyncUnderGC queues copies from fresh Go slices that nothing else
// references, collects garbage, and only then synchronizes.
func TestAsyncUnderGC(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	const n, rounds = 1 << 14, 16
	bufs := make([]*cuda.DeviceBuffer[uint64], rounds)
	sums := make([]uint64, rounds)
	for i := range bufs {
		bufs[i] = must(cuda.Alloc[uint64](ctx, n))(t)
		defer bufs[i].Free()
		src := random[uint64](n)
		for _, v := range src {
			sums[i] += v
		}
		if err := bufs[i].CopyFromHostAsync(src, s); err != nil {
			t.Fatal(err)
		}
		// Garbage of the same size, to reuse src's memory if it were freed.
		for range 4 {
			g := make([]uint64, n)
			g[0] = 1
			runtime.KeepAlive(g)
		}
		runtime.GC()
	}
	outs := make([][]uint64, rounds)
	for i := range bufs {
		outs[i] = make([]uint64, n)
		if err := bufs[i].CopyToHostAsync(outs[i], s); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.GC()
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i, out := range outs {
		var sum uint64
		for _, v := range out {
			sum += v
		}
		if sum != sums[i] {
			t.Errorf("round %d: checksum %d, want %d", i, sum, sums[i])
		}
	}
}

// TestMissingSynchronizeShows proves the fake's streams run later: reading
// before synchronizing sees the old data. The fake runs the copy 100 µs
// later; a loaded machine can keep this goroutine off its processor longer,
// so the proof is one attempt of ten seeing the old data (a fake that ran
// copies at once would show it in none).
func TestMissingSynchronizeShows(t *testing.T) {
	if cudatest.Fake(t) == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	b := must(cuda.FromHost(ctx, random[byte](4096)))(t)
	defer b.Free()
	early := 0
	for range 10 {
		dst := make([]byte, 4096)
		if err := b.CopyToHostAsync(dst, s); err != nil {
			t.Fatal(err)
		}
		if equal(dst, make([]byte, 4096)) {
			early++
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if equal(dst, make([]byte, 4096)) {
			t.Fatal("the copy did not run by Synchronize")
		}
	}
	if early == 0 {
		t.Error("the fake's stream ran the copy before the call returned, 10 times out of 10")
	}
}

func TestManyGoroutines(t *testing.T) {
	ctx := cudatest.Context(t)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			s, err := ctx.NewStream()
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			for i := range 20 {
				n := 1 + rand.IntN(10000)
				src := random[uint16](n)
				b, err := cuda.FromHost(ctx, src)
				if err != nil {
					errs <- err
					return
				}
				dst := make([]uint16, n)
				if i%2 == 0 {
					err = b.CopyToHost(dst)
				} else if err = b.CopyToHostAsync(dst, s); err == nil {
					err = s.Synchronize()
				}
				b.Free()
				if err != nil {
					errs <- err
					return
				}
				if !equal(src, dst) {
					errs <- fmt.Errorf("data differs")
					return
				}
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPinnedBuffer(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	p := must(cuda.AllocPinned[float64](ctx, 3333))(t)
	if p.Len() != 3333 || len(p.Data()) != 3333 {
		t.Fatalf("Len %d", p.Len())
	}
	src := random[float64](3333)
	copy(p.Data(), src)
	b := must(cuda.Alloc[float64](ctx, 3333))(t)
	defer b.Free()
	if err := b.CopyFromHost(p.Data()); err != nil {
		t.Fatal(err)
	}
	clear(p.Data())
	if err := b.CopyToHostAsync(p.Data(), s); err != nil {
		t.Fatal(err)
	}
	s.Synchronize()
	if !equal(p.Data(), src) {
		t.Error("pinned round trip: data differs")
	}
	if err := p.Free(); err != nil {
		t.Fatal(err)
	}
	if p.Free() != nil || p.Data() != nil {
		t.Error("after Free: second Free failed or Data not nil")
	}
}

func TestRegister(t *testing.T) {
	ctx := cudatest.Context(t)
	host := random[int32](1 << 18)
	r, err := cuda.Register(ctx, host)
	if err != nil {
		t.Fatal(err)
	}
	b := must(cuda.Alloc[int32](ctx, len(host)))(t)
	defer b.Free()
	if err := b.CopyFromHost(host); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(host)
	clear(host)
	if err := b.CopyToHost(host); err != nil {
		t.Fatal(err)
	}
	if !equal(host, want) {
		t.Error("registered round trip: data differs")
	}
	if _, err := cuda.Register(ctx, host[100:200]); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("registering overlapping memory: %v; want ErrInvalidValue", err)
	}
	if _, err := cuda.Register(ctx, []int32{}); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("registering an empty slice: %v", err)
	}
	if _, err := cuda.Register(ctx, make([]struct{}, 2)); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "size zero") {
		t.Errorf("registering two elements of size zero: %v; want ErrInvalidValue saying the type has size zero", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	r2, err := cuda.Register(ctx, host)
	if err != nil {
		t.Fatalf("registering again after Close: %v", err)
	}
	r2.Close()
}

func TestBufferForgotten(t *testing.T) {
	ctx := cudatest.Context(t)
	before := trackForgotten()
	func() {
		must(cuda.Alloc[byte](ctx, 1<<20))(t)
		must(cuda.AllocPinned[byte](ctx, 1<<16))(t)
		must(cuda.Register(ctx, make([]byte, 1<<16)))(t)
	}()
	if !cudatest.GC(func() bool { return trackForgotten() >= before+3 }) {
		t.Fatal("the cleanups of unreachable buffers did not run")
	}
}

func TestNilBuffer(t *testing.T) {
	var b *cuda.DeviceBuffer[float32]
	if b.Len() != 0 || b.ByteSize() != 0 || b.Ptr() != 0 || b.Context() != nil || b.Free() != nil {
		t.Error("nil buffer accessors")
	}
	wantErrors(t, cuda.ErrInvalidValue, map[string]error{
		"CopyFromHost": b.CopyFromHost(nil),
		"CopyToHost":   b.CopyToHost(nil),
		"Slice":        second(b.Slice(0, 0)),
		"ViewAs":       second(cuda.ViewAs[byte](b)),
		"Memset8":      b.Memset8(0),
	})
}

// TestLegacyWorkSettled: after a synchronous copy from pageable memory,
// which may return before its DMA is done, the next work queued on a stream
// first waits for the legacy default stream.
func TestLegacyWorkSettled(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	b := must(cuda.Alloc[byte](ctx, 64))(t)
	defer b.Free()
	dst := make([]byte, 64)
	if err := b.CopyToHostAsync(dst, s); err != nil { // nothing to settle yet
		t.Fatal(err)
	}
	s.Synchronize()
	if err := b.CopyFromHost(random[byte](64)); err != nil {
		t.Fatal(err)
	}
	f.Fail("cuStreamSynchronize", 1, 999)
	err := b.CopyToHostAsync(dst, s)
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Call != "cuStreamSynchronize" || ce.Code != 999 {
		t.Fatalf("async copy after a pageable CopyFromHost: %v; want the failed cuStreamSynchronize of the legacy stream", err)
	}
	if err := b.CopyToHostAsync(dst, s); err != nil { // settles again, and succeeds
		t.Fatalf("retry: %v", err)
	}
	f.Fail("cuStreamSynchronize", 1, 999)
	if err := b.CopyToHostAsync(dst, s); err != nil {
		t.Errorf("nothing left to settle, yet: %v", err)
	}
	f.ResetFaults()
	s.Synchronize()
}

// TestContextClosedUnderPins: Go memory pinned for an asynchronous copy is
// released even when the context is closed before the stream, and when the
// stream is forgotten; a Pinner collected while pinning would crash.
func TestContextClosedUnderPins(t *testing.T) {
	for _, forget := range []bool{false, true} {
		ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
		s := must(ctx.NewStream())(t)
		b := must(cuda.Alloc[byte](ctx, 1<<16))(t)
		if err := b.CopyFromHostAsync(random[byte](1<<16), s); err != nil {
			t.Fatal(err)
		}
		b.Free()
		ctx.Close()
		if forget {
			s = nil
		} else if err := s.Close(); err != nil {
			t.Errorf("Stream.Close after the context: %v", err)
		}
		for range 3 {
			runtime.GC()
		}
	}
}

// TestCopyOverlap: a device-to-device copy between overlapping ranges is
// refused, whichever buffers name the ranges: slices of one allocation,
// two Buffers of one GrowableBuffer, or a FromRaw buffer over another's
// memory (each a record of its own over the same addresses).
func TestCopyOverlap(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	owner := must(cuda.FromHost(ctx, random[int32](100)))(t)
	defer owner.Free()
	raw := must(cuda.FromRaw[int32](ctx, owner.Ptr(), 100))(t)
	defer raw.Free()
	g := must(cuda.NewGrowableBuffer[int32](ctx, 1000))(t)
	defer g.Free()
	if err := g.Resize(100); err != nil {
		t.Fatal(err)
	}
	g1, g2 := must(g.Buffer())(t), must(g.Buffer())(t)
	slice := func(b *cuda.DeviceBuffer[int32], off, n int) *cuda.DeviceBuffer[int32] {
		t.Helper()
		return must(b.Slice(off, n))(t)
	}
	for _, c := range []struct {
		name     string
		dst, src *cuda.DeviceBuffer[int32]
		overlap  bool
	}{
		{"itself", owner, owner, true},
		{"slices one element apart", slice(owner, 0, 99), slice(owner, 1, 99), true},
		{"adjacent slices", slice(owner, 0, 50), slice(owner, 50, 50), false},
		{"two Buffers of a growable buffer", slice(g1, 0, 99), slice(g2, 1, 99), true},
		{"two Buffers of a growable buffer, apart", slice(g1, 0, 50), slice(g2, 50, 50), false},
		{"FromRaw over the owner", slice(raw, 0, 50), slice(owner, 25, 50), true},
		{"the owner over FromRaw, apart", slice(owner, 50, 50), slice(raw, 0, 50), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for call, err := range map[string]error{
				"CopyFromDevice":      c.dst.CopyFromDevice(c.src),
				"CopyFromDeviceAsync": c.dst.CopyFromDeviceAsync(c.src, s),
			} {
				switch {
				case !c.overlap && err != nil:
					t.Errorf("%s: %v", call, err)
				case c.overlap && (!errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "overlap")):
					t.Errorf("%s: %v; want ErrInvalidValue saying the ranges overlap", call, err)
				}
			}
		})
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// stillRegistered keeps reachable, to the end of the process, memory
// registered through a Context closed while another Context retained the
// primary context: the driver still holds it registered, gocuda cannot
// unregister it any more, and the Go runtime must not hand its address out
// again (a later Register there would find it registered).
var stillRegistered [][]int32

// TestPageLockedAfterContextClose: memory page-locked through a Context
// since closed counts as ordinary memory (the driver unlocks it at the
// primary context's last release, which gocuda cannot see), and a transfer
// treats it as such: Upload pipelines it rather than handing it to the DMA
// engine as locked.
func TestPageLockedAfterContextClose(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	const n = 4 << 20 // int32s: 16 MiB, pipelined by default when not locked
	dst := must(cuda.Alloc[int32](ctx, n))(t)
	defer dst.Free()
	upload := func(t *testing.T, src []int32) cuda.StagingStats {
		t.Helper()
		var sb cuda.StagingBuffer
		defer sb.Close()
		if err := cuda.Upload(&sb, dst, src, s); err != nil {
			t.Fatal(err)
		}
		return sb.Stats()
	}
	other := must(cuda.NewContext(ctx.Device()))(t)
	host := random[int32](n)
	stillRegistered = append(stillRegistered, host)
	r := must(cuda.Register(other, host))(t)
	if st := upload(t, host); st.Direct != 1 {
		t.Fatalf("registered memory: %+v; want a direct transfer", st)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if st := upload(t, host); st.Pipelined != 1 {
		t.Errorf("memory registered in a closed context: %+v; want it pipelined as ordinary memory", st)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

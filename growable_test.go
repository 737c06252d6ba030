package cuda_test

import (
	"errors"
	"fmt"
	"log"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// checkPrefix fails t unless the first len(want) elements of b are want.
func checkPrefix[T comparable](t *testing.T, b *cuda.DeviceBuffer[T], want []T) {
	t.Helper()
	got := make([]T, len(want))
	if err := must(b.Slice(0, len(want)))(t).CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("element %d = %v, want %v", i, got[i], want[i])
		}
	}
}

// TestGrowableBuffer: the buffer grows in place (same address, the data
// kept, no copy), its Buffers work with copies and kernels across the
// pieces mapped, shrinking closes the Buffers past the new length and
// unmaps, and Free gives everything back.
func TestGrowableBuffer(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	saxpy := must(loadKernels(t, ctx).Function("saxpy"))(t) // y = a*x + y
	const maxLen = 64 << 20
	g := must(cuda.NewGrowableBuffer[float32](ctx, maxLen))(t)
	defer g.Free()
	if g.Len() != 0 || g.Cap() != 0 || g.MaxLen() < maxLen || g.Ptr() == 0 {
		t.Fatalf("new: Len %d, Cap %d, MaxLen %d, Ptr %v", g.Len(), g.Cap(), g.MaxLen(), g.Ptr())
	}
	emptyView := must(g.Buffer())(t)
	if emptyView.Len() != 0 {
		t.Errorf("Buffer of an empty growable buffer: %d elements", emptyView.Len())
	}
	ptr := g.Ptr()
	before := must(ctx.MemoryStats())(t).Device

	// A first piece, filled.
	first := make([]float32, 1000)
	for i := range first {
		first[i] = float32(7 * i)
	}
	if err := g.Resize(len(first)); err != nil {
		t.Fatal(err)
	}
	small := must(g.Buffer())(t)
	if err := small.CopyFromHost(first); err != nil {
		t.Fatal(err)
	}
	// A second piece: the first's data stay, at the same address, and the
	// first Buffer still works.
	const n = 5<<20 + 3
	if err := g.Resize(n); err != nil {
		t.Fatal(err)
	}
	if g.Ptr() != ptr || g.Len() != n || g.Cap() < n {
		t.Fatalf("grown: Ptr %v (was %v), Len %d, Cap %d", g.Ptr(), ptr, g.Len(), g.Cap())
	}
	checkPrefix(t, small, first)
	big := must(g.Buffer())(t)
	if big.Ptr() != ptr || big.Len() != n {
		t.Fatalf("Buffer: Ptr %v, Len %d; want %v, %d", big.Ptr(), big.Len(), ptr, n)
	}
	// A copy and a kernel across both pieces.
	host := make([]float32, n)
	for i := range host {
		host[i] = float32(i % 1000)
	}
	if err := big.CopyFromHost(host); err != nil {
		t.Fatal(err)
	}
	if err := saxpy.Launch(cuda.LaunchConfigFor(n, s), float32(2), big, big, uint32(n)); err != nil {
		t.Fatal(err)
	}
	for i := range host {
		host[i] *= 3
	}
	checkPrefix(t, big, host)
	stats := must(ctx.MemoryStats())(t).Device
	if grown := stats.Bytes - before.Bytes; grown < int64(n)*4 || grown != int64(g.Cap())*4 {
		t.Errorf("device bytes counted grew by %d, want the %d bytes mapped", grown, g.Cap()*4)
	}

	// Shrinking below the first piece's end: the Buffers longer than the
	// new length close, the first piece stays with its data.
	if err := g.Resize(500); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*cuda.DeviceBuffer[float32]{"small": small, "big": big} {
		if err := b.CopyFromHost(host[:1]); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("%s Buffer after shrinking below it: %v, want ErrClosed", name, err)
		}
	}
	if g.Cap() >= n {
		t.Errorf("Cap %d after shrinking to 500: the second piece is still mapped", g.Cap())
	}
	short := must(g.Buffer())(t)
	checkPrefix(t, short, host[:500])
	if got := must(ctx.MemoryStats())(t).Device.Bytes - before.Bytes; got != int64(g.Cap())*4 {
		t.Errorf("device bytes counted after shrinking: %d more than before, want %d", got, g.Cap()*4)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := g.Free(); err != nil {
		t.Fatal(err)
	}
	if err := g.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	if _, err := g.Buffer(); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Buffer after Free: %v, want ErrClosed", err)
	}
	// Free closes every Buffer, the empty one made at length 0 too.
	wantErrors(t, cuda.ErrClosed, map[string]error{
		"the Buffer of 500 after Free": short.CopyFromHost(host[:500]),
		"the empty Buffer after Free":  emptyView.CopyFromHost(nil),
		"a Slice of the empty Buffer":  second(emptyView.Slice(0, 0)),
	})
	if err := g.Resize(1); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Resize after Free: %v, want ErrClosed", err)
	}
	after := must(ctx.MemoryStats())(t).Device
	if after.Bytes != before.Bytes || after.Buffers != before.Buffers-1 {
		t.Errorf("after Free: %d bytes in %d buffers, want %d in %d", after.Bytes, after.Buffers, before.Bytes, before.Buffers-1)
	}
}

// TestGrowableBufferInGraph: a Buffer a graph uses keeps the buffer from
// shrinking below it or being freed, with nothing changed.
func TestGrowableBufferInGraph(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	g := must(cuda.NewGrowableBuffer[int32](ctx, 1<<20))(t)
	defer g.Free()
	if err := g.Resize(1000); err != nil {
		t.Fatal(err)
	}
	b := must(g.Buffer())(t)
	graph := must(s.Capture(cuda.CaptureGlobal, func() error { return b.Memset32Async(7, s) }))(t)
	for name, err := range map[string]error{"Resize(10)": g.Resize(10), "Free": g.Free()} {
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "graph") {
			t.Errorf("%s with a graph using a Buffer: %v; want ErrInvalidValue naming the graph", name, err)
		}
	}
	if g.Len() != 1000 {
		t.Errorf("Len %d after the refused shrink, want 1000", g.Len())
	}
	if err := graph.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Resize(10); err != nil {
		t.Errorf("Resize(10) after the graph's Close: %v", err)
	}
}

// TestGrowableBufferErrors: bad lengths and types refused in words.
func TestGrowableBufferErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	// MaxInt/8 float64s fit in 2^63 bytes, but not once rounded up to
	// the allocation granularity.
	for _, n := range []int{0, -1, math.MaxInt, math.MaxInt / 8} {
		if _, err := cuda.NewGrowableBuffer[float64](ctx, n); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "maximum length") {
			t.Errorf("NewGrowableBuffer(%d): %v; want ErrInvalidValue", n, err)
		}
	}
	if _, err := cuda.NewGrowableBuffer[*int](ctx, 10); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("NewGrowableBuffer of pointers: %v; want ErrInvalidValue", err)
	}
	g := must(cuda.NewGrowableBuffer[uint16](ctx, 100))(t)
	defer g.Free()
	for _, n := range []int{-1, g.MaxLen() + 1} {
		if err := g.Resize(n); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), fmt.Sprint(n)) {
			t.Errorf("Resize(%d): %v; want ErrInvalidValue naming it", n, err)
		}
	}
	if err := g.Resize(g.MaxLen()); err != nil {
		t.Errorf("Resize(MaxLen): %v", err)
	}
}

// BenchmarkGrowableGrow grows a buffer from 1 GiB to 16 GiB in 1 GiB
// steps, timing each step: "in-place" is GrowableBuffer.Resize (one piece
// mapped, nothing copied); "copy" allocates the new size, copies the old
// buffer into it and frees the old, as a plain buffer must.
func BenchmarkGrowableGrow(b *testing.B) {
	ctx := cudatest.Context(b)
	const step, steps = 1 << 30, 16
	free, _, err := ctx.MemInfo()
	if err != nil {
		b.Fatal(err)
	}
	if free < 2*steps*step+step {
		b.Skipf("%v has %d bytes free: the copy needs 33 GiB", ctx.Device(), free)
	}
	b.Run("in-place", func(b *testing.B) {
		for b.Loop() {
			g := must(cuda.NewGrowableBuffer[byte](ctx, steps*step))(b)
			for i := 1; i <= steps; i++ {
				if err := g.Resize(i * step); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := g.Free(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*steps), "µs/step")
	})
	b.Run("copy", func(b *testing.B) {
		for b.Loop() {
			cur := must(cuda.Alloc[byte](ctx, step))(b)
			for i := 2; i <= steps; i++ {
				next := must(cuda.Alloc[byte](ctx, i*step))(b)
				if err := must(next.Slice(0, cur.Len()))(b).CopyFromDevice(cur); err != nil {
					b.Fatal(err)
				}
				if err := cur.Free(); err != nil {
					b.Fatal(err)
				}
				cur = next
			}
			if err := ctx.Synchronize(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cur.Free()
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*(steps-1)), "µs/step")
	})
}

// BenchmarkGrowableCopy copies 1 GiB of pinned memory into a grown
// GrowableBuffer (16 pieces of 64 MiB) and into an Alloc'd buffer, each
// way: the issue's goal is the same bandwidth.
func BenchmarkGrowableCopy(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	const n = 1 << 30
	h := must(cuda.AllocPinned[byte](ctx, n))(b)
	defer h.Free()
	g := must(cuda.NewGrowableBuffer[byte](ctx, n))(b)
	defer g.Free()
	for i := 1; i <= 16; i++ {
		if err := g.Resize(i * n / 16); err != nil {
			b.Fatal(err)
		}
	}
	grown := must(g.Buffer())(b)
	plain := must(cuda.Alloc[byte](ctx, n))(b)
	defer plain.Free()
	for _, tt := range []struct {
		name string
		d    *cuda.DeviceBuffer[byte]
	}{{"growable", grown}, {"alloc", plain}} {
		for _, up := range []bool{true, false} {
			dir := "to-host"
			if up {
				dir = "to-device"
			}
			b.Run(tt.name+"/"+dir, func(b *testing.B) {
				b.SetBytes(n)
				for b.Loop() {
					var err error
					if up {
						err = tt.d.CopyFromHostAsync(h.Data(), s)
					} else {
						err = tt.d.CopyToHostAsync(h.Data(), s)
					}
					if err == nil {
						err = s.Synchronize()
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// A buffer that grows without moving: its address stays, and what it held
// stays in place.
func ExampleGrowableBuffer() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	g, err := cuda.NewGrowableBuffer[int32](ctx, 1<<30) // 4 GiB of addresses, no memory yet
	if err != nil {
		log.Fatal(err)
	}
	defer g.Free()
	if err := g.Resize(3); err != nil {
		log.Fatal(err)
	}
	b, err := g.Buffer()
	if err != nil {
		log.Fatal(err)
	}
	if err := b.CopyFromHost([]int32{1, 2, 3}); err != nil {
		log.Fatal(err)
	}
	addr := g.Ptr()
	if err := g.Resize(10 << 20); err != nil { // 40 MiB: more memory mapped behind
		log.Fatal(err)
	}
	b, err = g.Buffer() // the new length, at the same address
	if err != nil {
		log.Fatal(err)
	}
	front, err := b.Slice(0, 3)
	if err != nil {
		log.Fatal(err)
	}
	head := make([]int32, 3)
	if err := front.CopyToHost(head); err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.Ptr() == addr, b.Len(), head)
	// Output: true 10485760 [1 2 3]
}

// TestGrowableBufferViewsForgotten: the Buffers a program drops are
// forgotten, so that a loop asking for the Buffer at every step, as a
// program reading the current length must, keeps no record of each; the
// Buffers still held are closed by Free.
func TestGrowableBufferViewsForgotten(t *testing.T) {
	ctx := cudatest.Context(t)
	g := must(cuda.NewGrowableBuffer[float32](ctx, 1<<20))(t)
	defer g.Free()
	kept := []*cuda.DeviceBuffer[float32]{must(g.Buffer())(t)}
	for _, n := range []int{0, 1000, 1000, 1 << 20} {
		if err := g.Resize(n); err != nil {
			t.Fatal(err)
		}
		for range 1000 {
			if _, err := g.Buffer(); err != nil {
				t.Fatal(err)
			}
		}
		kept = append(kept, must(g.Buffer())(t))
	}
	if !cudatest.GC(func() bool {
		_, err := g.Buffer() // drops the records of the Buffers collected
		return err == nil && cuda.GrowableViews(g) <= len(kept)+1
	}) {
		t.Errorf("%d Buffers recorded after 4000 were dropped; want at most the %d kept and one", cuda.GrowableViews(g), len(kept)+1)
	}
	if err := g.Free(); err != nil {
		t.Fatal(err)
	}
	for i, b := range kept {
		if err := b.CopyToHost(make([]float32, b.Len())); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("Buffer %d (of %d elements) after Free: %v; want ErrClosed", i, b.Len(), err)
		}
	}
}

// lenWriter is a writer that, once its first Write has begun, waits for
// proceed and then asks the growable buffer its length and capacity.
type lenWriter struct {
	g                *cuda.GrowableBuffer[float32]
	writing, proceed chan struct{}
	once             sync.Once
}

func (w *lenWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		close(w.writing)
		<-w.proceed
		w.g.Len()
		w.g.Cap()
	})
	return len(p), nil
}

// TestGrowableBufferLenDuringShrink: a call in flight on a Buffer (here
// WriteTo, whose writer asks the length) may ask Len and Cap while a
// Resize waits for it to close that Buffer: the two do not wait for each
// other.
func TestGrowableBufferLenDuringShrink(t *testing.T) {
	ctx := cudatest.Context(t)
	g := must(cuda.NewGrowableBuffer[float32](ctx, 1<<20))(t)
	// Freed at the end, not deferred: where the two deadlock, Free would
	// wait for ever too.
	if err := g.Resize(1000); err != nil {
		t.Fatal(err)
	}
	view := must(g.Buffer())(t)
	probe := must(view.Slice(0, 0))(t) // ErrClosed once the view's close has begun
	w := &lenWriter{g: g, writing: make(chan struct{}), proceed: make(chan struct{})}
	wrote := make(chan error, 1)
	go func() { _, err := view.WriteTo(w); wrote <- err }()
	<-w.writing
	resized := make(chan error, 1)
	go func() { resized <- g.Resize(0) }()
	for probe.CopyToHost(nil) == nil { // the Resize holds the buffer and waits for WriteTo
		runtime.Gosched()
	}
	close(w.proceed)
	within(t, 30*time.Second, "WriteTo asking Len during a shrink", func() {
		if err := <-wrote; err != nil {
			t.Errorf("WriteTo: %v", err)
		}
		if err := <-resized; err != nil {
			t.Errorf("Resize(0): %v", err)
		}
	})
	if g.Len() != 0 || g.Cap() != 0 {
		t.Errorf("Len %d, Cap %d after Resize(0)", g.Len(), g.Cap())
	}
	if err := g.Free(); err != nil {
		t.Fatal(err)
	}
}

package cuda_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// This file tests the memory layer's promises at their edges, as a user
// who reads only the docs would: lengths and offsets at their limits,
// objects used after their context is closed, releases that fail twice
// over, readers and writers at the io contracts' corners, and goroutines
// racing a shrink.

// TestPromiseClosedContextRefuses: once a context is closed, every method
// of an object made in it returns ErrClosed (Context.Close), those that
// reach no driver function too: a Slice or ViewAs, a GrowableBuffer's
// Buffer and a Resize within its memory, and the calls on an empty buffer,
// which have nothing to move.
func TestPromiseClosedContextRefuses(t *testing.T) {
	for _, n := range []int{0, 16} {
		t.Run(fmt.Sprintf("%d elements", n), func(t *testing.T) {
			cudatest.CheckLeaks(t)
			ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
			s := must(ctx.NewStream())(t)
			b := must(cuda.Alloc[int32](ctx, n))(t)
			m := must(cuda.AllocManaged[int32](ctx, n, cuda.AttachGlobal))(t)
			g := must(cuda.NewGrowableBuffer[int32](ctx, 1<<20))(t)
			if err := g.Resize(n); err != nil {
				t.Fatal(err)
			}
			var sb cuda.StagingBuffer
			if err := ctx.Close(); err != nil {
				t.Fatal(err)
			}
			wantErrors(t, cuda.ErrClosed, map[string]error{
				"DeviceBuffer.Slice":        second(b.Slice(0, 0)),
				"ViewAs":                    second(cuda.ViewAs[byte](b)),
				"DeviceBuffer.CopyFromHost": b.CopyFromHost(make([]int32, n)),
				"DeviceBuffer.ToHost":       second(b.ToHost()),
				"ManagedBuffer.Prefetch":    m.Prefetch(cuda.OnHost(), s),
				"ManagedBuffer.Advise":      m.Advise(cuda.AdviseReadMostly, cuda.OnHost()),
				"ManagedBuffer.Attributes":  second(m.Attributes()),
				"GrowableBuffer.Buffer":     second(g.Buffer()),
				"GrowableBuffer.Resize":     g.Resize(n), // within the memory mapped: no driver call
				"Upload":                    cuda.Upload(&sb, b, make([]int32, n), s),
				"Download":                  cuda.Download(&sb, make([]int32, n), b, s),
				"UploadWith":                cuda.UploadWith(&sb, b, n, s, func([]int32) {}),
				"DownloadInto":              second(cuda.DownloadInto(&sb, b, n, s)),
			})
			if g.Len() != 0 {
				t.Errorf("GrowableBuffer.Len %d after Context.Close, want 0: the context's Close frees it", g.Len())
			}
			// Releasing after the context is not an error: the driver freed
			// what it held.
			for name, err := range map[string]error{"DeviceBuffer.Free": b.Free(), "ManagedBuffer.Free": m.Free(),
				"StagingBuffer.Close": sb.Close(), "Stream.Close": s.Close()} {
				if err != nil {
					t.Errorf("%s after Context.Close: %v", name, err)
				}
			}
			if m.Data() != nil {
				t.Error("ManagedBuffer.Data after Context.Close is not nil")
			}
			if err := g.Free(); err != nil {
				t.Errorf("GrowableBuffer.Free after Context.Close: %v", err)
			}
		})
	}
}

// TestPromiseGrowableUndoFails: a growth whose step fails undoes what it
// did; where the undo fails too (the unmap or the release of the new
// piece), the buffer keeps track of what is left, so that it still grows
// once the driver answers again, and Free releases everything: nothing
// stays mapped in its addresses to block them for good.
func TestPromiseGrowableUndoFails(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	for _, c := range []struct{ fail, undo string }{
		{"cuMemSetAccess", "cuMemUnmap"},
		{"cuMemSetAccess", "cuMemRelease"},
		{"cuMemMap", "cuMemRelease"},
	} {
		t.Run(c.fail+" then "+c.undo, func(t *testing.T) {
			ctx := cudatest.Context(t)
			vmm := f.Live("vmm")
			g := must(cuda.NewGrowableBuffer[byte](ctx, 8<<20))(t)
			f.Fail(c.fail, 1, 999)
			f.Fail(c.undo, 1, 999)
			if err := g.Resize(1 << 20); err == nil {
				t.Fatalf("Resize with %s failing: no error", c.fail)
			}
			if g.Len() != 0 || g.Cap() != 0 {
				t.Errorf("after the failed growth: Len %d, Cap %d; want 0, 0", g.Len(), g.Cap())
			}
			f.ResetFaults()
			if err := g.Resize(1 << 20); err != nil {
				t.Errorf("Resize once the driver answers again: %v", err)
			}
			b := must(g.Buffer())(t)
			data := random[byte](1 << 20)
			if err := b.CopyFromHost(data); err != nil || !equal(cudatest.Download(t, b), data) {
				t.Errorf("the grown buffer's data: %v", err)
			}
			if err := g.Free(); err != nil {
				t.Errorf("Free: %v", err)
			}
			if n := f.Live("vmm") - vmm; n != 0 {
				t.Errorf("the fake still holds %d reservation(s) or piece(s) of virtual memory after Free", n)
			}
		})
	}
}

// TestPromiseFromRawInRange: FromRaw refuses memory that would run past
// the last address (the slices' and copies' address arithmetic would wrap
// round to 0), and takes memory that ends exactly at it.
func TestPromiseFromRawInRange(t *testing.T) {
	ctx := cudatest.Context(t)
	top := cuda.DevicePtr(math.MaxUint64 - 7) // the last 8 bytes
	for _, c := range []struct {
		name string
		ptr  cuda.DevicePtr
		n    int
		ok   bool
	}{
		{"the last 8 bytes", top, 1, true},
		{"8 bytes past the end", top, 2, false},
		{"half the address space from past its middle", 1<<63 + 16, math.MaxInt64 / 8, false},
		{"empty at the top", top, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := cuda.FromRaw[uint64](ctx, c.ptr, c.n)
			if c.ok {
				if err != nil {
					t.Fatalf("FromRaw(%#x, %d): %v", uint64(c.ptr), c.n, err)
				}
				if err := b.Free(); err != nil {
					t.Error(err)
				}
				return
			}
			if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "address space") {
				t.Errorf("FromRaw(%#x, %d): %v; want ErrInvalidValue saying the memory passes the end of the address space", uint64(c.ptr), c.n, err)
			}
		})
	}
}

// TestPromiseHandleNilReceiver: decoding into a nil handle is an error,
// not a panic.
func TestPromiseHandleNilReceiver(t *testing.T) {
	text := []byte(strings.Repeat("0a", 64))
	for name, decode := range map[string]func() error{
		"IPCHandle":      func() error { return (*cuda.IPCHandle)(nil).UnmarshalText(text) },
		"IPCEventHandle": func() error { return (*cuda.IPCEventHandle)(nil).UnmarshalText(text) },
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("panic: %v", p)
					}
				}()
				err = decode()
			}()
			if !errors.Is(err, cuda.ErrInvalidValue) {
				t.Errorf("UnmarshalText into a nil *%s: %v; want ErrInvalidValue", name, err)
			}
		})
	}
}

// TestPromiseShrinkRacesGraph: a GrowableBuffer's Buffer that a graph
// takes while a shrink closes it ends one way or the other, never both:
// either the graph's node fails (the Buffer is closed) or the shrink does
// (a graph uses the Buffer). Both succeeding leaves a graph writing memory
// the shrink unmapped. The race is narrow: it runs many times.
func TestPromiseShrinkRacesGraph(t *testing.T) {
	ctx := cudatest.Context(t)
	g := must(cuda.NewGrowableBuffer[int32](ctx, 1<<20))(t)
	defer g.Free()
	rounds := 20000
	if testing.Short() {
		rounds = 2000
	}
	for i := range rounds {
		if err := g.Resize(1000); err != nil {
			t.Fatal(err)
		}
		b := must(g.Buffer())(t)
		graph := must(ctx.NewGraph())(t)
		var addErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, addErr = graph.AddMemset(nil, b, 7, 4)
		}()
		shrinkErr := g.Resize(0)
		<-done
		if addErr == nil && shrinkErr == nil {
			graph.Close()
			t.Fatalf("round %d: a graph took the Buffer and the shrink closed it and unmapped its memory", i)
		}
		if err := graph.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPromiseSliceBounds: Slice refuses offsets and lengths out of range,
// those whose sum overflows included, in words; slices of slices count
// from their own start, and all of them close with the owner's Free.
func TestPromiseSliceBounds(t *testing.T) {
	ctx := cudatest.Context(t)
	b := cudatest.Upload(t, ctx, []int32{0, 1, 2, 3, 4, 5, 6, 7})
	for _, c := range []struct{ off, n int }{
		{-1, 1}, {0, -1}, {9, 0}, {0, 9}, {1, 8}, {8, 1},
		{1, math.MaxInt}, {math.MaxInt, 1}, {math.MaxInt, math.MaxInt}, {math.MinInt, 0},
	} {
		if _, err := b.Slice(c.off, c.n); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Slice(%d, %d) of 8: %v; want ErrInvalidValue", c.off, c.n, err)
		}
	}
	owner := must(cuda.FromHost(ctx, []int32{0, 1, 2, 3, 4, 5, 6, 7}))(t)
	s1 := must(owner.Slice(2, 5))(t)      // 2..6
	s2 := must(s1.Slice(1, 3))(t)         // 3..5
	s3 := must(cuda.ViewAs[byte](s2))(t)  // 12 bytes
	s4 := must(s3.Slice(4, 4))(t)         // element 4
	end := must(s1.Slice(s1.Len(), 0))(t) // empty, at the end
	if got := cudatest.Download(t, s2); !equal(got, []int32{3, 4, 5}) {
		t.Errorf("slice of a slice: %v, want [3 4 5]", got)
	}
	if got := cudatest.Download(t, s4); !bytes.Equal(got, []byte{4, 0, 0, 0}) {
		t.Errorf("slice of a view of a slice: %v", got)
	}
	if _, err := s2.Slice(1, 3); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("a slice past its own end, within the owner's: %v; want ErrInvalidValue", err)
	}
	for _, sl := range []interface{ Free() error }{s1, s2, s3, s4, end} {
		if err := sl.Free(); err != nil {
			t.Errorf("Free of a slice: %v", err)
		}
	}
	if err := s2.CopyFromHost([]int32{9, 9, 9}); err != nil {
		t.Errorf("a slice after a slice's Free: %v", err)
	}
	if err := owner.Free(); err != nil {
		t.Fatal(err)
	}
	wantErrors(t, cuda.ErrClosed, map[string]error{
		"slice":             s1.CopyToHost(make([]int32, 5)),
		"slice of a slice":  s2.Memset8(0),
		"view of a slice":   second(s3.ToHost()),
		"slice of the view": second(s4.Slice(0, 1)),
		"empty slice":       end.CopyFromHost(nil),
		"ViewAs":            second(cuda.ViewAs[int16](s1)),
	})
}

// TestPromiseStagingLengths: Upload, Download, UploadWith and DownloadInto
// move every length right, 0, 1 and odd ones included, below, at and past
// the pinned memory reserved (which then grows), on every route.
func TestPromiseStagingLengths(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	for _, opts := range []struct {
		name string
		o    cuda.StagingOptions
	}{
		{"direct", cuda.StagingOptions{Pipeline: smallPipeline}},
		{"staged", cuda.StagingOptions{AutoStageMaxBytes: math.MaxInt, Pipeline: smallPipeline}},
		{"pipelined", cuda.StagingOptions{Pipeline: cuda.StagingPipeline{UploadMinBytes: 1, DownloadMinBytes: 1,
			ChunkBytes: 64 << 10, Slots: 2, Workers: 2}}},
	} {
		t.Run(opts.name, func(t *testing.T) {
			sb := must(cuda.NewStagingBufferOptions(ctx, 64<<10, opts.o))(t)
			defer sb.Close()
			for _, n := range []int{0, 1, 3, 64<<10 - 1, 64 << 10, 64<<10 + 1, 1<<20 + 7} {
				b := must(cuda.Alloc[byte](ctx, n))(t)
				src, got := random[byte](n), make([]byte, n)
				err := errors.Join(cuda.Upload(sb, b, src, s), cuda.Download(sb, got, b, s))
				if err != nil || !bytes.Equal(got, src) {
					t.Errorf("%d bytes up and down: %v (equal: %v)", n, err, bytes.Equal(got, src))
				}
				src = random[byte](n)
				filled := 0
				err = cuda.UploadWith(sb, b, n, s, func(p []byte) { filled = len(p); copy(p, src) })
				into, ierr := cuda.DownloadInto(sb, b, n, s)
				if err != nil || ierr != nil || filled != n && n > 0 || len(into) != n || !bytes.Equal(into, src) {
					t.Errorf("%d bytes with and into: %v, %v (filled %d, got %d)", n, err, ierr, filled, len(into))
				}
				for _, m := range []int{n - 1, n + 1} {
					if m < 0 {
						continue
					}
					if err := cuda.Upload(sb, b, make([]byte, m), s); !errors.Is(err, cuda.ErrInvalidValue) {
						t.Errorf("Upload of %d bytes into %d: %v; want ErrInvalidValue", m, n, err)
					}
				}
				if err := b.Free(); err != nil {
					t.Fatal(err)
				}
			}
			if err := cuda.UploadWith(sb, must(cuda.Alloc[byte](ctx, 0))(t), -1, s, func([]byte) {}); !errors.Is(err, cuda.ErrInvalidValue) {
				t.Errorf("UploadWith of -1 elements: %v; want ErrInvalidValue", err)
			}
		})
	}
}

// eofWithData returns its data in one Read together with io.EOF, as the
// io.Reader contract allows.
type eofWithData struct{ data []byte }

func (r *eofWithData) Read(p []byte) (int, error) {
	n := copy(p, r.data)
	r.data = r.data[n:]
	if len(r.data) == 0 {
		return n, io.EOF
	}
	return n, nil
}

// TestPromiseReaderContract: ReadFrom takes what the io.Reader contract
// allows (bytes with io.EOF, one byte at a time, bytes with an error of
// the reader's, which comes back), leaves a reader at offsets where a
// sequential read would, and WriteTo into a writer that writes less than
// it was given, without an error, is io.ErrShortWrite.
func TestPromiseReaderContract(t *testing.T) {
	ctx := cudatest.Context(t)
	const n = 100<<10 + 3 // odd, over one chunk
	data := random[byte](n)
	b := must(cuda.Alloc[byte](ctx, n))(t)
	defer b.Free()
	broken := errors.New("the reader broke")
	for _, c := range []struct {
		name string
		r    io.Reader
		want error
	}{
		{"bytes with io.EOF", &eofWithData{data}, nil},
		{"one byte at a time", iotest.OneByteReader(bytes.NewReader(data)), nil},
		{"half and then an error", iotest.DataErrReader(io.MultiReader(bytes.NewReader(data[:n/2]), iotest.ErrReader(broken))), broken},
		{"a timeout, then the rest", iotest.TimeoutReader(onlyReader{bytes.NewReader(data)}), iotest.ErrTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := b.Memset8(0); err != nil {
				t.Fatal(err)
			}
			got, err := b.ReadFrom(c.r)
			if c.want != nil {
				if !errors.Is(err, c.want) {
					t.Errorf("ReadFrom: %d, %v; want %v", got, err, c.want)
				}
				return
			}
			if err != nil || got != n || !bytes.Equal(cudatest.Download(t, b), data) {
				t.Errorf("ReadFrom: %d, %v; want %d bytes, the data", got, err, n)
			}
		})
	}
	t.Run("offset of a reader at offsets", func(t *testing.T) {
		long := append(random[byte](7), data...)
		long = append(long, 1, 2, 3)
		for _, short := range []bool{false, true} {
			src := long
			if short {
				src = long[:7+n/3]
			}
			r := bytes.NewReader(src)
			if _, err := r.Seek(7, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			got, err := b.ReadFrom(r)
			pos, _ := r.Seek(0, io.SeekCurrent)
			if pos != 7+got {
				t.Errorf("short %v: read %d bytes (%v) from offset 7, the reader is at %d; want %d", short, got, err, pos, 7+got)
			}
			if short != (err != nil) || short && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("short %v: %v", short, err)
			}
		}
	})
	t.Run("a short write", func(t *testing.T) {
		got, err := b.WriteTo(shortWriter{})
		if !errors.Is(err, io.ErrShortWrite) || got != 1 {
			t.Errorf("WriteTo into a writer that takes one byte and says nothing: %d, %v; want 1, io.ErrShortWrite", got, err)
		}
	})
}

// shortWriter takes one byte of each Write and reports no error.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return min(len(p), 1), nil }

// TestPromiseGrowableConcurrent: goroutines copying through a
// GrowableBuffer's Buffers while another resizes it up and down see their
// calls succeed or return ErrClosed (the shrink closed their Buffer), never
// another error, a data race or a fault.
func TestPromiseGrowableConcurrent(t *testing.T) {
	ctx := cudatest.Context(t)
	g := must(cuda.NewGrowableBuffer[int32](ctx, 4<<20))(t)
	defer g.Free()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var copied atomic.Int64
	errs := make([]error, 4)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				b, err := g.Buffer()
				if err != nil {
					errs[w] = err
					return
				}
				// Each goroutine its own elements: copies into the same
				// memory at once are the program's race, not gocuda's.
				off := w * 250
				n := min(max(b.Len()-off, 0), 250)
				src := random[int32](n)
				got := make([]int32, n)
				sl, err := b.Slice(min(off, b.Len()), n)
				if err == nil {
					err = errors.Join(sl.CopyFromHost(src), sl.CopyToHost(got))
				}
				if err == nil && !equal(got, src) {
					err = errors.New("read back other data than written")
				}
				if err != nil && !errors.Is(err, cuda.ErrClosed) {
					errs[w] = err
					return
				}
				copied.Add(1)
			}
		}()
	}
	// Resize until the goroutines have copied a while, between resizes.
	sizes := []int{100, 1 << 20, 10, 3 << 20, 0, 600 << 10}
	for i := 0; i < 120 || copied.Load() < 500 && i < 100000; i++ {
		if err := g.Resize(sizes[i%len(sizes)]); err != nil {
			t.Error(err)
		}
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Errorf("goroutine %d: %v", w, err)
		}
	}
}

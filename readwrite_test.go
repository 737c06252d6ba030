package cuda_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// onlyReader hides every method of a reader but Read: the sequential path.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// ioFixture returns n random bytes, a device buffer of n bytes (freed at
// cleanup) and an IOConfig with sb (nil: a staging buffer closed at
// cleanup) and a stream of ctx.
func ioFixture(t *testing.T, ctx *cuda.Context, sb *cuda.StagingBuffer, n int) ([]byte, *cuda.DeviceBuffer[byte], cuda.IOConfig) {
	t.Helper()
	if sb == nil {
		sb = new(cuda.StagingBuffer)
		t.Cleanup(func() { sb.Close() })
	}
	buf := must(cuda.Alloc[byte](ctx, n))(t)
	t.Cleanup(func() { buf.Free() })
	return randomBytes(n), buf, cuda.IOConfig{Staging: sb, Stream: cudatest.Stream(t, ctx)}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestReadFromWriteTo(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	sb := must(cuda.NewStagingBuffer(ctx, 64<<20))(t)
	defer sb.Close()
	dir := t.TempDir()
	for _, n := range []int{1, 1000, 5<<20 + 3, 70 << 20} {
		data := randomBytes(n)
		file := filepath.Join(dir, "data")
		if err := os.WriteFile(file, append(append([]byte("head"), data...), "tail"...), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, how := range []struct {
			name   string
			reader func(t *testing.T) (io.Reader, func() int64) // the reader, and where it stands after
			config cuda.IOConfig
		}{
			{"bytes.Reader", func(t *testing.T) (io.Reader, func() int64) {
				r := bytes.NewReader(append(data, "more"...))
				return r, func() int64 { return int64(r.Size()) - int64(r.Len()) }
			}, cuda.IOConfig{Staging: sb, Stream: s}},
			{"sequential", func(t *testing.T) (io.Reader, func() int64) {
				r := bytes.NewReader(append(data, "more"...))
				return onlyReader{r}, func() int64 { return int64(r.Size()) - int64(r.Len()) }
			}, cuda.IOConfig{Staging: sb, Stream: s}},
			{"os.File", func(t *testing.T) (io.Reader, func() int64) {
				f := must(os.Open(file))(t)
				t.Cleanup(func() { f.Close() })
				if _, err := f.Seek(4, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				return f, func() int64 { off, _ := f.Seek(0, io.SeekCurrent); return off - 4 }
			}, cuda.IOConfig{}},
		} {
			t.Run(sizeName(n)+"/"+how.name, func(t *testing.T) {
				buf := must(cuda.Alloc[byte](ctx, n))(t)
				defer buf.Free()
				r, offset := how.reader(t)
				var last int64
				c := how.config
				c.Progress = func(done int64) {
					if done <= last || done > int64(n) {
						t.Errorf("progress %d after %d, of %d", done, last, n)
					}
					last = done
				}
				got, err := cuda.ReadFrom(buf, r, c)
				if err != nil || got != int64(n) {
					t.Fatalf("ReadFrom: %d, %v; want %d bytes", got, err, n)
				}
				if last != int64(n) {
					t.Errorf("the last progress said %d of %d", last, n)
				}
				if off := offset(); off != int64(n) {
					t.Errorf("the reader stands at %d, want %d: only the buffer's bytes are read", off, n)
				}
				back := make([]byte, n)
				if err := buf.CopyToHost(back); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(back, data) {
					t.Fatal("the device holds other bytes than the source's")
				}
				var out bytes.Buffer
				last = 0
				if got, err := cuda.WriteTo(buf, &out, c); err != nil || got != int64(n) {
					t.Fatalf("WriteTo: %d, %v", got, err)
				}
				if !bytes.Equal(out.Bytes(), data) {
					t.Fatal("WriteTo wrote other bytes than the device's")
				}
				if last != int64(n) {
					t.Errorf("WriteTo's last progress said %d of %d", last, n)
				}
			})
		}
	}
}

// TestReadFromInterfaces: a buffer is an io.ReaderFrom and an io.WriterTo,
// whose methods move its bytes as the functions do.
func TestReadFromInterfaces(t *testing.T) {
	ctx := cudatest.Context(t)
	data := randomBytes(3 << 20)
	buf := must(cuda.Alloc[uint32](ctx, len(data)/4))(t)
	defer buf.Free()
	var rf io.ReaderFrom = buf
	var wt io.WriterTo = buf
	if n, err := rf.ReadFrom(bytes.NewReader(data)); err != nil || n != int64(len(data)) {
		t.Fatalf("ReadFrom: %d, %v", n, err)
	}
	var out bytes.Buffer
	if n, err := wt.WriteTo(&out); err != nil || n != int64(len(data)) {
		t.Fatalf("WriteTo: %d, %v", n, err)
	}
	if !bytes.Equal(out.Bytes(), data) {
		t.Fatal("the bytes did not come back")
	}
}

// failingWriter fails once it has taken limit bytes, and counts the writes
// it is asked for after that.
type failingWriter struct {
	limit, n, after int
	err             error
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n == w.limit {
		w.after++
		return 0, w.err
	}
	if w.n+len(p) > w.limit {
		k := w.limit - w.n
		w.n = w.limit
		return k, w.err
	}
	w.n += len(p)
	return len(p), nil
}

// TestReadFromErrors: a short source, a failing reader or writer: each an
// error that says where, wrapping the cause, with the staging buffer and
// the buffer usable after it.
func TestReadFromErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	sb := must(cuda.NewStagingBuffer(ctx, 64<<20))(t)
	defer sb.Close()
	const n = 20 << 20
	data, buf, c := ioFixture(t, ctx, sb, n)
	broken := errors.New("the disk is on fire")
	for _, tc := range []struct {
		name   string
		r      io.Reader
		want   error
		says   string
		nbytes int64
	}{
		{"short", bytes.NewReader(data[:n-5]), io.ErrUnexpectedEOF, "the source ended after 20971515 of the 20971520 bytes", n - 5},
		{"short sequential", onlyReader{bytes.NewReader(data[:12345])}, io.ErrUnexpectedEOF, "the source ended after 12345 of", 12345},
		{"empty", onlyReader{bytes.NewReader(nil)}, io.ErrUnexpectedEOF, "ended after 0 of", 0},
		{"failing", io.MultiReader(bytes.NewReader(data[:9<<20]), iotest.ErrReader(broken)), broken, "reading the source at byte 9437184", 9 << 20},
		{"no progress", io.MultiReader(bytes.NewReader(data[:3<<20]), badReader{count: 0}), io.ErrNoProgress, "at byte 3145728", 3 << 20},
		{"negative count", onlyReader{badReader{count: -1}}, cuda.ErrInvalidValue, "Read reported -1 bytes", 0},
		{"count past the buffer", onlyReader{badReader{count: 1 << 30}}, cuda.ErrInvalidValue, "Read reported 1073741824 bytes", 0},
		{"ReadAt count past the buffer", badReaderAt{bytes.NewReader(data)}, cuda.ErrInvalidValue, "ReadAt reported", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cuda.ReadFrom(buf, tc.r, c)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("ReadFrom: %v; want %v saying %q", err, tc.want, tc.says)
			}
			// Whole chunks are counted as they are handed over.
			if got > tc.nbytes {
				t.Errorf("ReadFrom says %d bytes read; the source had %d", got, tc.nbytes)
			}
			// Usable again, at once.
			if got, err := cuda.ReadFrom(buf, bytes.NewReader(data), c); err != nil || got != n {
				t.Fatalf("ReadFrom after the failure: %d, %v", got, err)
			}
		})
	}
	w := &failingWriter{limit: 10<<20 + 7, err: broken}
	if got, err := cuda.WriteTo(buf, w, c); !errors.Is(err, broken) || got != 10<<20+7 || !strings.Contains(err.Error(), "writing byte 10485767") {
		t.Errorf("WriteTo into a failing writer: %d, %v", got, err)
	}
	if w.after != 0 {
		t.Errorf("WriteTo wrote %d more times after the writer failed", w.after)
	}
	for _, m := range []int{-1, 1 << 30} {
		if _, err := cuda.WriteTo(buf, badWriter{count: m}, c); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "Write reported") {
			t.Errorf("WriteTo into a writer that reports %d bytes written: %v, want ErrInvalidValue", m, err)
		}
	}
	var out bytes.Buffer
	if _, err := cuda.WriteTo(buf, &out, c); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Errorf("WriteTo after the failure: %v", err)
	}
	for name, err := range map[string]error{
		"ReadFrom nil reader": errOnly(cuda.ReadFrom(buf, nil, c)),
		"WriteTo nil writer":  errOnly(cuda.WriteTo(buf, nil, c)),
		"ReadFrom zero":       errOnly(cuda.ReadFrom(&cuda.DeviceBuffer[byte]{}, bytes.NewReader(data), c)),
		"WriteTo nil buffer":  errOnly(cuda.WriteTo[byte](nil, &out, c)),
	} {
		if !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A zero Stream in the IOConfig is said to be one, not to be of
	// another context.
	zero := cuda.IOConfig{Staging: sb, Stream: &cuda.Stream{}}
	for name, err := range map[string]error{
		"ReadFrom on a zero stream": errOnly(cuda.ReadFrom(buf, bytes.NewReader(data), zero)),
		"WriteTo on a zero stream":  errOnly(cuda.WriteTo(buf, &out, zero)),
	} {
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "zero value") {
			t.Errorf("%s: %v; want ErrInvalidValue saying the stream is a zero value", name, err)
		}
	}
}

func errOnly[T any](_ T, err error) error { return err }

// badReader's Read reports count bytes, whatever it was given, and no
// error; badWriter's Write the same.
type badReader struct{ count int }

func (b badReader) Read([]byte) (int, error) { return b.count, nil }

type badWriter struct{ count int }

func (b badWriter) Write([]byte) (int, error) { return b.count, nil }

// badReaderAt reads at offsets but reports a byte more than it was asked.
type badReaderAt struct{ *bytes.Reader }

func (b badReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.Reader.ReadAt(p, off)
	return n + 1, err
}

// panicky panics in its Read, ReadAt or Write once it has taken limit
// bytes.
type panicky struct {
	limit, n int
}

var errPanicky = errors.New("the reader's own panic")

func (p *panicky) take(b []byte) (int, error) {
	if p.n+len(b) > p.limit {
		panic(errPanicky)
	}
	p.n += len(b)
	return len(b), nil
}

func (p *panicky) Read(b []byte) (int, error)  { return p.take(b) }
func (p *panicky) Write(b []byte) (int, error) { return p.take(b) }

type panickyAt struct{ panicky }

func (p *panickyAt) ReadAt(b []byte, off int64) (int, error) {
	if off+int64(len(b)) > int64(p.limit) {
		panic(errPanicky)
	}
	return len(b), nil
}

func (p *panickyAt) Seek(off int64, whence int) (int64, error) { return off, nil }

// TestReadFromPanics: a reader or writer that panics, in order or at
// offsets, has its panic raised again on the caller's goroutine, as a
// Read or Write called there would, once the other reads or writes and the
// DMAs are done; the buffer, the staging buffer and the stream are usable
// after it, and nothing leaks (the context's checks at cleanup).
func TestReadFromPanics(t *testing.T) {
	ctx := cudatest.Context(t)
	const n = 20 << 20
	data, buf, c := ioFixture(t, ctx, nil, n)
	for _, tc := range []struct {
		name string
		call func() (int64, error)
	}{
		{"in order", func() (int64, error) { return cuda.ReadFrom(buf, &panicky{limit: 9 << 20}, c) }},
		{"at offsets", func() (int64, error) { return cuda.ReadFrom(buf, &panickyAt{panicky{limit: 9 << 20}}, c) }},
		{"writer", func() (int64, error) { return cuda.WriteTo(buf, &panicky{limit: 9 << 20}, c) }},
		{"first chunk", func() (int64, error) { return cuda.ReadFrom(buf, &panicky{limit: 0}, cuda.IOConfig{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			func() {
				defer func() {
					if p := recover(); p != errPanicky {
						t.Errorf("recovered %v; want the reader's panic", p)
					}
				}()
				n, err := tc.call()
				t.Errorf("returned %d, %v; want a panic", n, err)
			}()
			if got, err := cuda.ReadFrom(buf, bytes.NewReader(data), c); err != nil || got != n {
				t.Fatalf("ReadFrom after the panic: %d, %v", got, err)
			}
			var out bytes.Buffer
			if _, err := cuda.WriteTo(buf, &out, c); err != nil || !bytes.Equal(out.Bytes(), data) {
				t.Fatalf("WriteTo after the panic: %v", err)
			}
		})
	}
}

// counting counts the bytes read from or written to it.
type counting struct {
	r io.Reader
	n atomic.Int64
}

func (c *counting) Read(b []byte) (int, error) {
	m, err := c.r.Read(b)
	c.n.Add(int64(m))
	return m, err
}

func (c *counting) Write(b []byte) (int, error) {
	c.n.Add(int64(len(b)))
	return len(b), nil
}

// TestProgressPanics: a Progress callback that panics has its panic raised
// on the caller's goroutine, as any call there would; the transfer stops
// (a reader read in order, or a writer, is taken at most a few chunks
// further), and everything is usable after it.
func TestProgressPanics(t *testing.T) {
	ctx := cudatest.Context(t)
	const n = 40 << 20
	data, buf, c := ioFixture(t, ctx, nil, n)
	errProgress := errors.New("progress's own panic")
	for _, tc := range []struct {
		name    string
		move    func(c cuda.IOConfig, k *counting) (int64, error)
		counted bool // k sees the bytes moved
	}{
		{"in order", func(c cuda.IOConfig, k *counting) (int64, error) {
			k.r = onlyReader{bytes.NewReader(data)}
			return cuda.ReadFrom(buf, k, c)
		}, true},
		{"at offsets", func(c cuda.IOConfig, _ *counting) (int64, error) { return cuda.ReadFrom(buf, bytes.NewReader(data), c) }, false},
		{"writer", func(c cuda.IOConfig, k *counting) (int64, error) { return cuda.WriteTo(buf, k, c) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var at int64
			pc := c
			pc.Progress = func(done int64) {
				if done >= 4<<20 {
					at = done
					panic(errProgress)
				}
			}
			k := new(counting)
			func() {
				defer func() {
					if p := recover(); p != errProgress {
						t.Errorf("recovered %v; want Progress's panic", p)
					}
				}()
				got, err := tc.move(pc, k)
				t.Errorf("returned %d, %v; want a panic", got, err)
			}()
			// The goroutine that reads or writes may be a chunk or two
			// (of 1 MiB) ahead of the progress the caller saw.
			if moved := k.n.Load(); tc.counted && moved > at+3<<20 {
				t.Errorf("%d bytes moved after Progress panicked at %d", moved, at)
			}
			if got, err := cuda.ReadFrom(buf, bytes.NewReader(data), c); err != nil || got != n {
				t.Fatalf("ReadFrom after the panic: %d, %v", got, err)
			}
		})
	}
}

// slowReader reads at most 256 KiB a call, a millisecond apart, saying
// when the first read is done.
type slowReader struct {
	r     io.Reader
	n     atomic.Int64
	first chan struct{}
}

func (s *slowReader) Read(b []byte) (int, error) {
	time.Sleep(time.Millisecond)
	m, err := s.r.Read(b[:min(len(b), 256<<10)])
	if s.n.Add(int64(m)) == int64(m) {
		close(s.first)
	}
	return m, err
}

// TestContextCloseDuringReadFrom: Context.Close waits for a ReadFrom in
// flight, whose reads, DMAs and waits run on a goroutine of gocuda's under
// the caller's hold of the context: the ReadFrom completes, and the Close
// returns after it, having freed the staging buffer the context keeps when
// the call used that one.
func TestContextCloseDuringReadFrom(t *testing.T) {
	for _, given := range []bool{true, false} {
		name := map[bool]string{true: "given staging and stream", false: "the context's staging"}[given]
		t.Run(name, func(t *testing.T) {
			cudatest.CheckLeaks(t)
			ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
			const n = 4 << 20
			data := randomBytes(n)
			buf := must(cuda.Alloc[byte](ctx, n))(t)
			var c cuda.IOConfig
			if given {
				c = cuda.IOConfig{Staging: new(cuda.StagingBuffer), Stream: must(ctx.NewStream())(t)}
			}
			r := &slowReader{r: bytes.NewReader(data), first: make(chan struct{})}
			closed := make(chan int64, 1)
			within(t, 10*time.Second, "ReadFrom beside Context.Close", func() {
				go func() {
					<-r.first
					if err := ctx.Close(); err != nil {
						t.Errorf("Context.Close: %v", err)
					}
					closed <- r.n.Load()
				}()
				got, err := cuda.ReadFrom(buf, r, c)
				if err != nil || got != n {
					t.Errorf("ReadFrom beside Close: %d, %v; want %d bytes", got, err, n)
				}
				if read := <-closed; read != n {
					t.Errorf("Context.Close returned with %d of the %d bytes read: it did not wait for ReadFrom", read, n)
				}
			})
			if _, err := buf.ReadFrom(bytes.NewReader(data)); !errors.Is(err, cuda.ErrClosed) {
				t.Errorf("ReadFrom after Context.Close: %v, want ErrClosed", err)
			}
			c.Staging.Close()
			c.Stream.Close()
			buf.Free()
		})
	}
}

// TestReadFromKeepsStaging: ReadFrom and WriteTo given no staging buffer
// use the one their context keeps, page-locking no memory after the first
// call; calls beside each other each get their own and all succeed; one
// is kept, and Context.Close frees it.
func TestReadFromKeepsStaging(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	cudatest.CheckLeaks(t)
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	defer ctx.Close()
	host := f.Live("host")
	const n = 3<<20 + 5
	data := randomBytes(n)
	buf := must(cuda.Alloc[byte](ctx, n))(t)
	defer buf.Free()
	for i := range 3 {
		f.ResetCounts()
		if _, err := buf.ReadFrom(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := buf.WriteTo(&out); err != nil || !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("round %d: WriteTo: %v, equal %v", i, err, bytes.Equal(out.Bytes(), data))
		}
		if a := f.Counts()["cuMemHostAlloc"]; i > 0 && a != 0 {
			t.Errorf("round %d: %d cuMemHostAlloc calls: the context's staging buffer was not reused", i, a)
		}
		if kept := f.Live("host") - host; kept != 1 {
			t.Errorf("round %d: %d page-locked allocations kept, want the context's one", i, kept)
		}
	}
	const calls = 8
	bufs := make([]*cuda.DeviceBuffer[byte], calls)
	for i := range bufs {
		bufs[i] = must(cuda.Alloc[byte](ctx, 1<<20))(t)
		defer bufs[i].Free()
	}
	errs := make(chan error, calls)
	for i, b := range bufs {
		go func() {
			want := bytes.Repeat([]byte{byte(i)}, 1<<20)
			if _, err := b.ReadFrom(bytes.NewReader(want)); err != nil {
				errs <- err
				return
			}
			var out bytes.Buffer
			if _, err := b.WriteTo(&out); err != nil || !bytes.Equal(out.Bytes(), want) {
				errs <- fmt.Errorf("buffer %d: WriteTo: %v, data equal %v", i, err, bytes.Equal(out.Bytes(), want))
				return
			}
			errs <- nil
		}()
	}
	for range calls {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if kept := f.Live("host") - host; kept != 1 {
		t.Errorf("after %d calls at once: %d page-locked allocations kept, want one", calls, kept)
	}
	for _, b := range append(bufs, buf) {
		b.Free()
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if kept := f.Live("host") - host; kept != 0 {
		t.Errorf("Context.Close left %d page-locked allocations", kept)
	}
}

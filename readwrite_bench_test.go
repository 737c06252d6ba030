package cuda_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// BenchmarkReadFromStream reads 256 MiB from readers that are not files
// (an os.Pipe, a TCP connection on loopback), fed by a goroutine writing
// from memory: into device memory (ReadFrom, at several shapes of its
// pipeline for such readers: slots × chunk size), and into ordinary
// memory, 4 MiB after 4 MiB, into one buffer or walking through 64 MiB (the
// source's own speed, the limit to compare with; io.Discard's small buffer
// stays in the cache and is faster than any consumer of the data), and
// into 4 MiB of page-locked memory, as ReadFrom's slots are, with no DMA.
func BenchmarkReadFromStream(b *testing.B) {
	const n = 256 << 20
	dst, c := streamBench(b, n)
	src := make([]byte, 4<<20)
	feed := func(w io.WriteCloser) {
		defer w.Close()
		for left := n; left > 0; left -= len(src) {
			if _, err := w.Write(src[:min(len(src), left)]); err != nil {
				return
			}
		}
	}
	sources := map[string]func(b *testing.B) io.Reader{
		"pipe": func(b *testing.B) io.Reader {
			r, w, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			go feed(w)
			b.Cleanup(func() { r.Close() })
			return r
		},
		"tcp": func(b *testing.B) io.Reader {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			go func() {
				c, err := l.Accept()
				if err == nil {
					feed(c)
				}
			}()
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			return c
		},
	}
	for _, name := range []string{"pipe", "tcp"} {
		open := sources[name]
		for _, foot := range []int{4 << 20, 64 << 20, -4 << 20} {
			into := fmt.Sprintf("%dMiB", foot>>20)
			buf := random[byte](max(foot, -foot))
			if foot < 0 {
				// Page-locked memory, as ReadFrom's slots are, without
				// the DMA: whether pinned memory itself reads slower.
				foot = -foot
				into = fmt.Sprintf("pinned%dMiB", foot>>20)
				pb := must(cuda.AllocPinned[byte](dst.Context(), foot))(b)
				b.Cleanup(func() { pb.Free() })
				buf = pb.Data()
			}
			b.Run(fmt.Sprintf("%s/source/into=%s", name, into), func(b *testing.B) {
				b.SetBytes(n)
				for b.Loop() {
					r := open(b)
					for off := 0; off < n; off += 4 << 20 {
						at := off % foot
						if _, err := io.ReadFull(r, buf[at:at+min(4<<20, n-off)]); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
		for _, shape := range [][2]int{{16, 4 << 20}, {4, 1 << 20}, {8, 1 << 20}, {4, 2 << 20}, {4, 512 << 10}, {2, 512 << 10}, {4, 256 << 10}, {8, 256 << 10}, {3, 512 << 10}} {
			b.Run(fmt.Sprintf("%s/ReadFrom/slots=%d/chunk=%dKiB", name, shape[0], shape[1]>>10), func(b *testing.B) {
				slots, chunk := cuda.SetIOShape(true, shape[0], shape[1])
				defer cuda.SetIOShape(true, slots, chunk)
				b.SetBytes(n)
				for b.Loop() {
					if _, err := cuda.ReadFrom(dst, open(b), c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkReadFromShape reads the file GOCUDA_SAFETENSORS_FILE names (any
// file; in the page cache after the first read) into device memory with
// ReadFrom, at several shapes of its pipeline: slots in flight × chunk size.
func BenchmarkReadFromShape(b *testing.B) {
	path := os.Getenv("GOCUDA_SAFETENSORS_FILE")
	if path == "" {
		b.Skip("set GOCUDA_SAFETENSORS_FILE to a large file")
	}
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	f := must(os.Open(path))(b)
	defer f.Close()
	st := must(f.Stat())(b)
	dst := must(cuda.Alloc[byte](ctx, int(st.Size())))(b)
	defer dst.Free()
	sb := new(cuda.StagingBuffer)
	defer sb.Close()
	for _, shape := range [][2]int{{8, 8 << 20}, {16, 8 << 20}, {16, 4 << 20}, {32, 2 << 20}, {16, 16 << 20}, {24, 4 << 20}, {8, 4 << 20}} {
		b.Run(fmt.Sprintf("slots=%d/chunk=%dMiB", shape[0], shape[1]>>20), func(b *testing.B) {
			slots, chunk := cuda.SetIOShape(false, shape[0], shape[1])
			defer cuda.SetIOShape(false, slots, chunk)
			b.SetBytes(st.Size())
			for b.Loop() {
				if _, err := cuda.ReadFrom(dst, io.NewSectionReader(f, 0, st.Size()), cuda.IOConfig{Staging: sb, Stream: s}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteToStream writes 256 MiB of device memory to an os.Pipe
// drained by a goroutine into a 4 MiB buffer: with WriteTo, and from an
// ordinary 4 MiB buffer (the pipe's own speed).
func BenchmarkWriteToStream(b *testing.B) {
	const n = 256 << 20
	src, c := streamBench(b, n)
	// pipe returns the pipe's writer and a channel that yields once its
	// reader has drained everything.
	pipe := func(b *testing.B) (io.WriteCloser, chan error) {
		r, w, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			defer r.Close()
			buf := make([]byte, 4<<20)
			for left := n; left > 0; left -= len(buf) {
				if _, err := io.ReadFull(r, buf[:min(len(buf), left)]); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		return w, done
	}
	b.Run("pipe/source", func(b *testing.B) {
		b.SetBytes(n)
		buf := random[byte](4 << 20)
		for b.Loop() {
			w, done := pipe(b)
			for off := 0; off < n; off += len(buf) {
				if _, err := w.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
			w.Close()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pipe/WriteTo", func(b *testing.B) {
		b.SetBytes(n)
		for b.Loop() {
			w, done := pipe(b)
			if _, err := cuda.WriteTo(src, w, c); err != nil {
				b.Fatal(err)
			}
			w.Close()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	})
}

// streamBench returns, for the streams' benchmarks, n bytes of device
// memory and an IOConfig with a staging buffer and a stream, all released
// at cleanup; on the fake it skips b: its DMA is a memmove, nothing to
// measure.
func streamBench(b *testing.B, n int) (*cuda.DeviceBuffer[byte], cuda.IOConfig) {
	b.Helper()
	if cudatest.IsFake() {
		b.Skip("the fake's DMA is a memmove: nothing to measure")
	}
	ctx := cudatest.Context(b)
	buf := must(cuda.Alloc[byte](ctx, n))(b)
	b.Cleanup(func() { buf.Free() })
	sb := new(cuda.StagingBuffer)
	b.Cleanup(func() { sb.Close() })
	return buf, cuda.IOConfig{Staging: sb, Stream: cudatest.Stream(b, ctx)}
}

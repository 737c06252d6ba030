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
// from memory: into device memory (ReadFrom), and into an ordinary 4 MiB
// buffer, chunk after chunk (the source's own speed, the limit to compare
// with; io.Discard's small buffer stays in the cache and is faster than any
// consumer of the data).
func BenchmarkReadFromStream(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	const n = 256 << 20
	if cudatest.IsFake() {
		b.Skip("the fake's DMA is a memmove: nothing to measure")
	}
	dst := must(cuda.Alloc[byte](ctx, n))(b)
	defer dst.Free()
	sb := new(cuda.StagingBuffer)
	defer sb.Close()
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
		b.Run(name+"/source", func(b *testing.B) {
			b.SetBytes(n)
			buf := make([]byte, 4<<20)
			for b.Loop() {
				r := open(b)
				for left := n; left > 0; left -= len(buf) {
					if _, err := io.ReadFull(r, buf[:min(len(buf), left)]); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(name+"/ReadFrom", func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				if _, err := cuda.ReadFrom(dst, open(b), cuda.IOConfig{Staging: sb, Stream: s}); err != nil {
					b.Fatal(err)
				}
			}
		})
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
			slots, chunk := cuda.SetIOShape(shape[0], shape[1])
			defer cuda.SetIOShape(slots, chunk)
			b.SetBytes(st.Size())
			for b.Loop() {
				if _, err := cuda.ReadFrom(dst, io.NewSectionReader(f, 0, st.Size()), cuda.IOConfig{Staging: sb, Stream: s}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package cuda_test

import (
	"io"
	"net"
	"os"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// BenchmarkReadFromStream reads 256 MiB from readers that are not files
// (an os.Pipe, a TCP connection on loopback), fed by a goroutine writing
// from memory: into device memory (ReadFrom), and into io.Discard (the
// source's own speed, the limit to compare with).
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
			for b.Loop() {
				if _, err := io.Copy(io.Discard, open(b)); err != nil {
					b.Fatal(err)
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

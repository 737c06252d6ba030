package safetensors_test

import (
	"fmt"
	"io"
	"os"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/safetensors"
)

// EnvBenchFile names the file BenchmarkLoad and BenchmarkReadPinned read
// (bench/pyref/torch_safetensors.py makes one of 2 GiB).
const envBenchFile = "GOCUDA_SAFETENSORS_FILE"

func benchFile(b *testing.B) string {
	path := os.Getenv(envBenchFile)
	if path == "" {
		b.Skip("set " + envBenchFile + " to a .safetensors file")
	}
	return path
}

// BenchmarkLoad loads every tensor of the file into device memory, with a
// staging buffer kept across loads, in GB/s of the file's data.
func BenchmarkLoad(b *testing.B) {
	path := benchFile(b)
	ctx := cudatest.Context(b)
	f, err := safetensors.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sb := new(cuda.StagingBuffer)
	defer sb.Close()
	s := cudatest.Stream(b, ctx)
	c := cuda.IOConfig{Staging: sb, Stream: s}
	st, _ := os.Stat(path)
	b.SetBytes(st.Size() - f.DataOffset)
	for b.Loop() {
		w, err := f.Load(ctx, c)
		if err != nil {
			b.Fatal(err)
		}
		if err := w.Free(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadPinned is the limit BenchmarkLoad's reads have: the file
// read by several goroutines at once, 8 MiB each, into page-locked memory,
// with no DMA.
func BenchmarkReadPinned(b *testing.B) {
	path := benchFile(b)
	ctx := cudatest.Context(b)
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	const chunk = 8 << 20
	for _, readers := range []int{4, 8, 16} {
		pinned, err := cuda.AllocPinned[byte](ctx, readers*chunk)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			b.SetBytes(st.Size())
			for b.Loop() {
				var wg sync.WaitGroup
				for r := range readers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						buf := pinned.Data()[r*chunk : (r+1)*chunk]
						for off := int64(r) * chunk; off < st.Size(); off += int64(readers) * chunk {
							if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
			}
		})
		pinned.Free()
	}
}

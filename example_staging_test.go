package cuda_test

import (
	"fmt"
	"log"
	"os"

	cuda "github.com/gocuda/cuda"
)

func ExampleStagingBuffer() {
	ctx := newContext()
	defer ctx.Close()
	s, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	buf, err := cuda.Alloc[float32](ctx, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()

	var sb cuda.StagingBuffer // ready to use; pins memory on first need
	defer sb.Close()
	if err := cuda.Upload(&sb, buf, []float32{1, 2, 3, 4}, s); err != nil {
		log.Fatal(err)
	}
	out := make([]float32, 4)
	if err := cuda.Download(&sb, out, buf, s); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [1 2 3 4]
}

func ExampleNewStagingBuffer() {
	ctx := newContext()
	defer ctx.Close()

	// Pin up front, so the millisecond-scale page-locking stays out of the
	// steady-state loop.
	sb, err := cuda.NewStagingBuffer(ctx, 1<<20)
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	fmt.Println(sb.Capacity(), "bytes pinned")
	// Output: 1048576 bytes pinned
}

func ExampleUploadWith() {
	ctx := newContext()
	defer ctx.Close()
	s, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	buf, err := cuda.Alloc[int32](ctx, 5)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	var sb cuda.StagingBuffer
	defer sb.Close()

	// Write the data straight into pinned memory: nothing to copy after.
	err = cuda.UploadWith(&sb, buf, 5, s, func(p []int32) {
		for i := range p {
			p[i] = int32(i * i)
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	// Read the results where the DMA engine put them, until the next call.
	got, err := cuda.DownloadInto(&sb, buf, 5, s)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got)
	// Output: [0 1 4 9 16]
}

func ExampleFunction_Launch() {
	ctx := newContext()
	defer ctx.Close()
	s, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ptx, err := os.ReadFile("testdata/kernels.ptx")
	if err != nil {
		log.Fatal(err)
	}
	mod, err := ctx.LoadModule(ptx)
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	vadd, err := mod.Function("vadd_f32")
	if err != nil {
		log.Fatal(err)
	}
	a, err := cuda.FromHost(ctx, []float32{1, 2, 3})
	if err != nil {
		log.Fatal(err)
	}
	b, err := cuda.FromHost(ctx, []float32{10, 20, 30})
	if err != nil {
		log.Fatal(err)
	}
	c, err := cuda.Alloc[float32](ctx, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	defer b.Free()
	defer c.Free()

	// One thread per element, in blocks of cuda.LinearBlock; the kernel
	// skips the threads past n.
	if err := vadd.Launch(cuda.LaunchConfigFor(3, s), a, b, c, uint32(3)); err != nil {
		log.Fatal(err)
	}
	out := make([]float32, 3)
	c.CopyToHostAsync(out, s)
	if err := s.Synchronize(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [11 22 33]
}

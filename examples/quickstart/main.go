// Quickstart: SAXPY (y = a·x + y) on 16 Mi float32 values. It compiles the
// kernel with NVRTC, moves the data through a staging buffer, launches, checks
// the result against the CPU and prints the time of each step.
//
//	go run ./examples/quickstart
package main

import (
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nvrtc"
)

const source = `
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned n) {
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}`

func main() {
	log.SetFlags(0)
	const n, a = 16 << 20, float32(2.5)
	step := func(name string, start time.Time) {
		fmt.Printf("%-28s %10v\n", name, time.Since(start).Round(time.Microsecond))
	}

	start := time.Now()
	ctx, s, err := cuda.Open(0) // device 0's context, and a stream to queue work on
	check(err)
	defer ctx.Close()
	defer s.Close()
	name, _ := ctx.Device().Name()
	step("open "+name, start)

	start = time.Now()
	out, err := nvrtc.Compile(ctx, source, nvrtc.Options{Name: "saxpy.cu"})
	check(err)
	mod, err := ctx.LoadModule(out.Image)
	check(err)
	defer mod.Close()
	saxpy, err := mod.Function("saxpy")
	check(err)
	step("compile and load the kernel", start)

	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = rand.Float32(), rand.Float32()
	}
	dx, err := cuda.Alloc[float32](ctx, n)
	check(err)
	defer dx.Free()
	dy, err := cuda.Alloc[float32](ctx, n)
	check(err)
	defer dy.Free()

	var sb cuda.StagingBuffer // reused pinned memory: the fast way to and from the device
	defer sb.Close()
	start = time.Now()
	check(cuda.Upload(&sb, dx, x, s))
	check(cuda.Upload(&sb, dy, y, s))
	step(fmt.Sprintf("upload 2 × %d MiB", n*4>>20), start)

	begin, end := must(ctx.NewEvent()), must(ctx.NewEvent())
	defer begin.Close()
	defer end.Close()
	start = time.Now()
	check(begin.Record(s))
	check(saxpy.Launch(cuda.LaunchConfigFor(n, s), a, dx, dy, uint32(n)))
	check(end.Record(s))
	check(end.Synchronize())
	kernel, err := cuda.ElapsedTime(begin, end)
	check(err)
	step("launch and wait", start)
	fmt.Printf("%-28s %10v  (%.0f GB/s: 12 bytes read and written per element)\n", "  of which the kernel", kernel.Round(time.Microsecond),
		12*float64(n)/kernel.Seconds()/1e9)

	start = time.Now()
	got, err := cuda.DownloadInto(&sb, dy, n, s) // read in place, in pinned memory
	check(err)
	step(fmt.Sprintf("download %d MiB", n*4>>20), start)

	start = time.Now()
	for i := range got {
		want := a*x[i] + y[i]
		if math.Abs(float64(got[i]-want)) > 1e-5*math.Max(1, math.Abs(float64(want))) {
			log.Fatalf("y[%d] = %v, want %v", i, got[i], want)
		}
	}
	step("check on the CPU", start)
	fmt.Println("ok: y = a·x + y on", n, "elements")
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func must[T any](v T, err error) T {
	check(err)
	return v
}

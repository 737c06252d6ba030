package nvrtc_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nvrtc"
)

// Compile CUDA C++ at run time for the device, load it, and launch it on
// Go data. (It needs NVIDIA's NVRTC library beside the driver; on a machine
// without it, Compile returns an error wrapping cuda.ErrNotSupported, a
// *cuda.LibraryError whose Tried lists every place it looked.)
func ExampleCompile() {
	const source = `
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned n) {
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = a * x[i] + y[i];
}`
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	out, err := nvrtc.Compile(ctx, source, nvrtc.Options{Name: "saxpy.cu"})
	if err != nil {
		log.Fatal(err) // a compile error carries NVRTC's log
	}
	mod, err := ctx.LoadModule(out.Image)
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	saxpy, err := mod.Function("saxpy")
	if err != nil {
		log.Fatal(err)
	}
	x, err := cuda.FromHost(ctx, []float32{1, 2, 3})
	if err != nil {
		log.Fatal(err)
	}
	defer x.Free()
	y, err := cuda.FromHost(ctx, []float32{10, 20, 30})
	if err != nil {
		log.Fatal(err)
	}
	defer y.Free()
	if err := saxpy.Launch(cuda.LaunchConfigFor(3, s), float32(2), x, y, uint32(3)); err != nil {
		log.Fatal(err)
	}
	got, err := y.ToHost() // waits for the kernel
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got)
	// Output: [12 24 36]
}

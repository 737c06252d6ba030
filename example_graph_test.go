package cuda_test

import (
	"fmt"
	"log"
	"os"

	cuda "github.com/gocuda/cuda"
)

// Capture a step once, replay it many times, and re-capture when its
// arguments change: an update in place when the shape stays the same.
func ExampleStream_Capture() {
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
	add, err := mod.Function("vadd_s32")
	if err != nil {
		log.Fatal(err)
	}
	// Buffers before the graphs that use them: deferred calls run last
	// first, and a buffer cannot be freed while a graph uses it.
	ones, err := cuda.FromHost(ctx, []int32{1, 1, 1, 1})
	if err != nil {
		log.Fatal(err)
	}
	defer ones.Free()
	sum, err := cuda.Zeroed[int32](ctx, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer sum.Free()
	threes, err := cuda.FromHost(ctx, []int32{3, 3, 3, 3})
	if err != nil {
		log.Fatal(err)
	}
	defer threes.Free()

	step := func(x *cuda.DeviceBuffer[int32]) func() error {
		return func() error { // sum += x, twice
			for range 2 {
				if err := add.Launch(cuda.LaunchConfigFor(4, s), x, sum, sum, uint32(4)); err != nil {
					return err
				}
			}
			return nil
		}
	}
	graph, err := s.Capture(cuda.CaptureGlobal, step(ones))
	if err != nil {
		log.Fatal(err)
	}
	defer graph.Close()
	exec, err := graph.Instantiate()
	if err != nil {
		log.Fatal(err)
	}
	defer exec.Close()
	for range 10 {
		if err := exec.Launch(s); err != nil {
			log.Fatal(err)
		}
	}

	// The same step on other data: the instance is updated, not rebuilt.
	again, err := s.Capture(cuda.CaptureGlobal, step(threes))
	if err != nil {
		log.Fatal(err)
	}
	defer again.Close()
	rebuilt, err := exec.Update(again)
	if err != nil {
		log.Fatal(err)
	}
	if err := exec.Launch(s); err != nil {
		log.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		log.Fatal(err)
	}
	out := make([]int32, 4)
	if err := sum.CopyToHost(out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out, "rebuilt:", rebuilt)
	// Output: [26 26 26 26] rebuilt: false
}

package cuda_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
)

// A launch shaped by the occupancy calls: the block size that keeps the
// most threads resident, and a grid that fills every multiprocessor once
// (enough for a kernel that strides over its elements; vadd_s32 does not,
// so it gets a block per blockSize elements).
func ExampleFunction_SuggestBlockSize() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	mod, err := ctx.LoadModule([]byte(vaddS32PTX))
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	f, err := mod.Function("vadd_s32")
	if err != nil {
		log.Fatal(err)
	}
	o, err := f.SuggestBlockSize(0, 0) // no dynamic shared memory, no limit of ours
	if err != nil {
		log.Fatal(err)
	}
	n := 1 << 20
	a, err := cuda.Zeroed[int32](ctx, n)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: (n + o.BlockSize - 1) / o.BlockSize}, Block: cuda.Dim3{X: o.BlockSize}, Stream: s}
	if err := f.Launch(cfg, a, a, a, uint32(n)); err != nil {
		log.Fatal(err)
	}
	fmt.Println("a whole number of warps:", o.BlockSize%32 == 0)
	fmt.Println("every multiprocessor busy:", o.MinGridSize >= o.BlocksPerSM && o.BlocksPerSM > 0)
	// Output:
	// a whole number of warps: true
	// every multiprocessor busy: true
}

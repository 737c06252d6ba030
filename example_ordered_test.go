package cuda_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
)

// A scratch buffer per step of a loop, allocated and freed in stream order:
// each AllocAsync reuses the memory the previous step's Free gave back to
// the pool once the stream got there.
func ExampleAllocAsync() {
	ctx := newContext()
	defer ctx.Close()
	s, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	out := make([]uint32, 4)
	for step := range 3 {
		scratch, err := cuda.AllocAsync[uint32](s, len(out))
		if err != nil {
			log.Fatal(err)
		}
		if err := scratch.Memset32Async(uint32(step), s); err != nil {
			log.Fatal(err)
		}
		if err := scratch.CopyToHostAsync(out, s); err != nil {
			log.Fatal(err)
		}
		if err := scratch.Free(); err != nil { // queued on s, after the copy
			log.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [2 2 2 2]
}

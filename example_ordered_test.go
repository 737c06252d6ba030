package cuda_test

import (
	"fmt"
	"log"
	"math"

	cuda "github.com/gocuda/cuda"
)

// A scratch buffer per step of a loop, allocated and freed in stream order:
// from the third step on, AllocAsync takes the memory the stream kept at the
// previous step's Free, with no driver call; the Synchronize gives it back
// to the pool.
func ExampleAllocAsync() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err) // no driver, or no GPU: the error says which
	}
	defer ctx.Close()
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

// A pool of one's own that keeps its memory across synchronizations, so
// that the next step's allocations reserve nothing new.
func ExampleAllocFromPool() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err) // no driver, or no GPU: the error says which
	}
	defer ctx.Close()
	defer s.Close()
	pool, err := ctx.NewMemPool()
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := pool.SetReleaseThreshold(math.MaxUint64); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		buf, err := cuda.AllocFromPool[float32](pool, s, 1<<18) // 1 MiB
		if err != nil {
			log.Fatal(err)
		}
		if err := buf.Memset32Async(0, s); err != nil {
			log.Fatal(err)
		}
		if err := buf.Free(); err != nil {
			log.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			log.Fatal(err)
		}
	}
	st, err := pool.Stats()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("in use:", st.Used, "bytes; kept for reuse:", st.Reserved >= 1<<20)
	// Output: in use: 0 bytes; kept for reuse: true
}

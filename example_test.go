package cuda_test

import (
	"fmt"
	"log"
	"math"

	cuda "github.com/gocuda/cuda"
)

func Example() {
	ctx, s, err := cuda.Open(0) // device 0's context, and a stream to queue work on
	if err != nil {
		log.Fatal(err) // no driver, or no GPU: the error says which, and how to fix it
	}
	defer ctx.Close()
	defer s.Close()

	buf, err := cuda.FromHost(ctx, []float32{1, 2, 3, 4})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	// Queued on s: it runs later, in s's order.
	if err := buf.Memset32Async(math.Float32bits(7), s); err != nil {
		log.Fatal(err)
	}
	// A synchronous copy waits for the work queued on its buffer.
	out := make([]float32, 4)
	if err := buf.CopyToHost(out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [7 7 7 7]
}

// ExampleContext_MemInfo reads how much of the device's memory is free.
func ExampleContext_MemInfo() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	free, total, err := ctx.MemInfo()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("free memory is at most the total:", free <= total)
	// Output: free memory is at most the total: true
}

func ExampleContext_NewStream() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()

	s, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	// ... queue work on s ...
	if err := s.Synchronize(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("done")
	// Output: done
}

func ExampleElapsedTime() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err) // no driver, or no GPU: the error says which
	}
	defer ctx.Close()
	defer s.Close()
	start, err := ctx.NewEvent()
	if err != nil {
		log.Fatal(err)
	}
	end, err := ctx.NewEvent()
	if err != nil {
		log.Fatal(err)
	}
	defer start.Close()
	defer end.Close()

	start.Record(s)
	// ... queue the work to time on s ...
	end.Record(s)
	if err := end.Synchronize(); err != nil {
		log.Fatal(err)
	}
	d, err := cuda.ElapsedTime(start, end)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("measured:", d >= 0)
	// Output: measured: true
}

func ExampleGetDevice() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		log.Fatal(err)
	}
	cc, err := dev.ComputeCapability()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("compute capability at least 3.0:", cc.Major >= 3)
	// Output: compute capability at least 3.0: true
}

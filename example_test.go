package cuda_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
)

func Example() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		log.Fatal(err) // no driver, or no GPU: the error says which, and how to fix it
	}
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()

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

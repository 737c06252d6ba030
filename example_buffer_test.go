package cuda_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
)

func ExampleAlloc() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()

	buf, err := cuda.Alloc[float32](ctx, 1024)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	if err := buf.CopyFromHost(make([]float32, 1024)); err != nil {
		log.Fatal(err)
	}
	fmt.Println(buf.Len(), "elements,", buf.ByteSize(), "bytes")
	// Output: 1024 elements, 4096 bytes
}

func ExampleZeroed() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()

	buf, err := cuda.Zeroed[int32](ctx, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	out := []int32{9, 9, 9, 9}
	if err := buf.CopyToHost(out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [0 0 0 0]
}

func ExampleFromHost() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()

	buf, err := cuda.FromHost(ctx, []float64{1.5, 2.5, 3.5})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	out := make([]float64, buf.Len())
	buf.CopyToHost(out)
	fmt.Println(out)
	// Output: [1.5 2.5 3.5]
}

func ExampleFromRaw() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	owner, err := cuda.FromHost(ctx, []uint32{1, 2, 3, 4})
	if err != nil {
		log.Fatal(err)
	}
	defer owner.Free()

	// A pointer from another library, wrapped without copying: Free on the
	// wrap frees nothing.
	view, err := cuda.FromRaw[uint32](ctx, owner.Ptr(), 4)
	if err != nil {
		log.Fatal(err)
	}
	out := make([]uint32, 4)
	view.CopyToHost(out)
	view.Free()
	fmt.Println(out)
	// Output: [1 2 3 4]
}

func ExampleViewAs() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	buf, err := cuda.FromHost(ctx, []uint32{0x04030201})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()

	bytes, err := cuda.ViewAs[byte](buf)
	if err != nil {
		log.Fatal(err)
	}
	out := make([]byte, bytes.Len())
	bytes.CopyToHost(out)
	fmt.Println(out)
	// Output: [1 2 3 4]
}

func ExampleDeviceBuffer_Slice() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	buf, err := cuda.FromHost(ctx, []int16{10, 20, 30, 40, 50})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()

	mid, err := buf.Slice(1, 3)
	if err != nil {
		log.Fatal(err)
	}
	out := make([]int16, 3)
	mid.CopyToHost(out)
	fmt.Println(out)
	// Output: [20 30 40]
}

func ExampleAllocPinned() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err) // no driver, or no GPU: the error says which
	}
	defer ctx.Close()
	defer s.Close()

	host, err := cuda.AllocPinned[float32](ctx, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer host.Free()
	copy(host.Data(), []float32{1, 2, 3})
	buf, err := cuda.Alloc[float32](ctx, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	// Pinned memory needs no pin: the copy is a plain DMA.
	buf.CopyFromHostAsync(host.Data(), s)
	s.Synchronize()
	out := make([]float32, 3)
	buf.CopyToHost(out)
	fmt.Println(out)
	// Output: [1 2 3]
}

func ExampleRegister() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()

	frames := make([]uint8, 1<<20) // reused for many transfers
	reg, err := cuda.Register(ctx, frames)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	buf, err := cuda.Alloc[uint8](ctx, len(frames))
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	for i := range 3 {
		frames[0] = uint8(i)
		buf.CopyFromHost(frames) // straight to the DMA engine
	}
	fmt.Println("registered", reg.Len(), "bytes")
	// Output: registered 1048576 bytes
}

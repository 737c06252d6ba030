package cuda_test

import (
	"bytes"
	"fmt"
	"io"
	"os"

	cuda "github.com/gocuda/cuda"
)

// Reading from an io.Reader straight into device memory, and back out to
// an io.Writer. With a file, several goroutines read it at once.
func ExampleReadFrom() {
	dev, _ := cuda.GetDevice(0)
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	buf, err := cuda.Alloc[byte](ctx, 12)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer buf.Free()
	// Without a staging buffer of its own a call uses the one the context
	// keeps until Close; with one, the caller decides when its pinned
	// memory is freed.
	sb := new(cuda.StagingBuffer)
	defer sb.Close()
	c := cuda.IOConfig{Staging: sb}
	n, err := cuda.ReadFrom(buf, bytes.NewReader([]byte("hello, GPU!\n")), c)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("read", n, "bytes")
	if _, err := cuda.WriteTo(buf, os.Stdout, c); err != nil {
		fmt.Println(err)
	}
	// Output:
	// read 12 bytes
	// hello, GPU!
}

// Watching a long load: Progress is called on the calling goroutine after
// each chunk. The reader here is not an io.ReaderAt (as a pipe or a
// network connection is not), so it is read in order, in chunks of up to
// 1 MiB.
func ExampleIOConfig_progress() {
	dev, _ := cuda.GetDevice(0)
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	const n = 4 << 20
	buf, err := cuda.Alloc[byte](ctx, n)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer buf.Free()
	src := io.MultiReader(bytes.NewReader(make([]byte, n)))
	c := cuda.IOConfig{Progress: func(done int64) {
		fmt.Printf("%d of %d MiB\n", done>>20, n>>20)
	}}
	if _, err := cuda.ReadFrom(buf, src, c); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 1 of 4 MiB
	// 2 of 4 MiB
	// 3 of 4 MiB
	// 4 of 4 MiB
}

// Sharing a buffer with another process (which may use CuPy or PyTorch):
// the handle travels as text; the other process opens it with OpenIPC (or
// cupy.cuda.runtime.ipcOpenMemHandle), and an exported event tells it when
// the data is ready.
func ExampleDeviceBuffer_IPCHandle() {
	dev, _ := cuda.GetDevice(0)
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	buf, err := cuda.FromHost(ctx, []float32{1, 2, 3, 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer buf.Free()
	h, err := buf.IPCHandle()
	if err != nil {
		fmt.Println(err)
		return
	}
	text, _ := h.MarshalText()
	fmt.Println(len(text), "hex digits to hand over")

	// In the other process:
	//
	//	var h cuda.IPCHandle
	//	h.UnmarshalText(text)
	//	shared, err := cuda.OpenIPC[float32](ctx, h, 4)
	//	...
	//	shared.Free() // closes the mapping; the memory stays the exporter's

	// Output: 128 hex digits to hand over
}

package cudnn_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
)

// The output shape of ResNet-50's first convolution: 7×7 filters, stride
// 2, padding 3, over a batch of 32 images of 224×224.
func ExampleConvOutput() {
	x := cudnn.Shape{N: 32, C: 3, H: 224, W: 224}
	w := cudnn.Shape{N: 64, C: 3, H: 7, W: 7}
	y, err := cudnn.ConvOutput(x, w, cudnn.Conv2D{PadH: 3, PadW: 3, StrideH: 2, StrideW: 2})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(y)
	// Output: 32×64×112×112
}

// A 3×3 convolution with padding 1 of a 4×4 image by a filter that sums
// each pixel's neighbourhood, then a ReLU fused with a bias.
func ExampleConvForward() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cudnn.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	img, _ := cuda.FromHost(ctx, []float32{
		1, 2, 3, 4,
		5, 6, 7, 8,
		9, 10, 11, 12,
		13, 14, 15, 16,
	})
	defer img.Free()
	ones, _ := cuda.FromHost(ctx, []float32{1, 1, 1, 1, 1, 1, 1, 1, 1})
	defer ones.Free()
	out, _ := cuda.Alloc[float32](ctx, 16)
	defer out.Free()
	x := cudnn.Tensor[float32]{Data: img, Shape: cudnn.Shape{N: 1, C: 1, H: 4, W: 4}}
	w := cudnn.Tensor[float32]{Data: ones, Shape: cudnn.Shape{N: 1, C: 1, H: 3, W: 3}}
	p := cudnn.Conv2D{PadH: 1, PadW: 1}
	shape, _ := cudnn.ConvOutput(x.Shape, w.Shape, p)
	y := cudnn.Tensor[float32]{Data: out, Shape: shape}
	if err := cudnn.ConvForward(h, y, x, w, p); err != nil {
		log.Fatal(err)
	}
	sums, _ := out.ToHost()
	fmt.Println(sums)

	bias, _ := cuda.FromHost(ctx, []float32{-50})
	defer bias.Free()
	if err := cudnn.ConvBiasActivation(h, y, x, w, bias, cudnn.ReLU, p); err != nil {
		log.Fatal(err)
	}
	relu, _ := out.ToHost()
	fmt.Println(relu)
	// Output:
	// [14 24 30 22 33 54 63 45 57 90 99 69 46 72 78 54]
	// [0 0 0 0 0 4 13 0 7 40 49 19 0 22 28 4]
}

// Max pooling 2×2 windows of two channels laid out NHWC (each pixel's
// channels together).
func ExamplePoolForward() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cudnn.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	// Channel 0 counts 1 to 16, channel 1 is its negative.
	data := make([]cuda.BFloat16, 32)
	for i := range 16 {
		data[2*i] = cuda.NewBFloat16(float32(i + 1))
		data[2*i+1] = cuda.NewBFloat16(-float32(i + 1))
	}
	in, _ := cuda.FromHost(ctx, data)
	defer in.Free()
	x := cudnn.Tensor[cuda.BFloat16]{Data: in, Shape: cudnn.Shape{N: 1, C: 2, H: 4, W: 4}, Layout: cudnn.NHWC}
	p := cudnn.Pool2D{Mode: cudnn.MaxPool, WindowH: 2, WindowW: 2}
	shape, _ := cudnn.PoolOutput(x.Shape, p)
	out, _ := cuda.Alloc[cuda.BFloat16](ctx, shape.Len())
	defer out.Free()
	if err := cudnn.PoolForward(h, cudnn.Tensor[cuda.BFloat16]{Data: out, Shape: shape, Layout: cudnn.NHWC}, x, p); err != nil {
		log.Fatal(err)
	}
	pooled, _ := out.ToHost()
	fmt.Println(shape, pooled)
	// Output: 1×2×2×2 [6 -1 8 -3 14 -9 16 -11]
}

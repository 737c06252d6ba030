package cuda_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
)

func ExampleStagingBuffer() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err) // no driver, or no GPU: the error says which
	}
	defer ctx.Close()
	defer s.Close()
	buf, err := cuda.Alloc[float32](ctx, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()

	var sb cuda.StagingBuffer // ready to use; pins memory on first need
	defer sb.Close()
	if err := cuda.Upload(&sb, buf, []float32{1, 2, 3, 4}, s); err != nil {
		log.Fatal(err)
	}
	out := make([]float32, 4)
	if err := cuda.Download(&sb, out, buf, s); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [1 2 3 4]
}

func ExampleNewStagingBuffer() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		log.Fatal(err)
	}
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()

	// Pin up front, so the millisecond-scale page-locking stays out of the
	// steady-state loop.
	sb, err := cuda.NewStagingBuffer(ctx, 1<<20)
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	fmt.Println(sb.Capacity(), "bytes pinned")
	// Output: 1048576 bytes pinned
}

func ExampleUploadWith() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err) // no driver, or no GPU: the error says which
	}
	defer ctx.Close()
	defer s.Close()
	buf, err := cuda.Alloc[int32](ctx, 5)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	var sb cuda.StagingBuffer
	defer sb.Close()

	// Write the data straight into pinned memory: nothing to copy after.
	err = cuda.UploadWith(&sb, buf, 5, s, func(p []int32) {
		for i := range p {
			p[i] = int32(i * i)
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	// Read the results where the DMA engine put them, until the next call.
	got, err := cuda.DownloadInto(&sb, buf, 5, s)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got)
	// Output: [0 1 4 9 16]
}

// vaddPTX is the kernel ExampleFunction_Launch runs, c[i] = a[i] + b[i],
// in PTX, which the driver compiles for the device. From CUDA C:
//
//	extern "C" __global__ void vadd_f32(const float *a, const float *b, float *c, unsigned n) {
//		unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//		if (i < n) c[i] = a[i] + b[i];
//	}
//
// package nvrtc compiles that at run time (see its example).
const vaddPTX = `.version 7.0
.target sm_60
.address_size 64

.visible .entry vadd_f32(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
	.reg .pred p;
	.reg .b32 r<6>;
	.reg .f32 f<4>;
	.reg .b64 rd<9>;
	ld.param.u64 rd1, [a];
	ld.param.u64 rd2, [b];
	ld.param.u64 rd3, [c];
	ld.param.u32 r1, [n];
	mov.u32 r2, %ctaid.x;
	mov.u32 r3, %ntid.x;
	mov.u32 r4, %tid.x;
	mad.lo.s32 r5, r2, r3, r4;
	setp.ge.u32 p, r5, r1;
	@p bra DONE;
	cvta.to.global.u64 rd4, rd1;
	cvta.to.global.u64 rd5, rd2;
	cvta.to.global.u64 rd6, rd3;
	mul.wide.u32 rd7, r5, 4;
	add.s64 rd8, rd4, rd7;
	ld.global.f32 f1, [rd8];
	add.s64 rd8, rd5, rd7;
	ld.global.f32 f2, [rd8];
	add.f32 f3, f1, f2;
	add.s64 rd8, rd6, rd7;
	st.global.f32 [rd8], f3;
DONE:
	ret;
}
`

func ExampleFunction_Launch() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err) // no driver, or no GPU: the error says which
	}
	defer ctx.Close()
	defer s.Close()
	mod, err := ctx.LoadModule([]byte(vaddPTX))
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	vadd, err := mod.Function("vadd_f32")
	if err != nil {
		log.Fatal(err)
	}
	a, err := cuda.FromHost(ctx, []float32{1, 2, 3})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	b, err := cuda.FromHost(ctx, []float32{10, 20, 30})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Free()
	c, err := cuda.Alloc[float32](ctx, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Free()

	// One thread per element, in blocks of cuda.LinearBlock; the kernel
	// skips the threads past n.
	if err := vadd.Launch(cuda.LaunchConfigFor(3, s), a, b, c, uint32(3)); err != nil {
		log.Fatal(err)
	}
	// A synchronous copy waits for the work queued on c: no Synchronize.
	out := make([]float32, 3)
	if err := c.CopyToHost(out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [11 22 33]
}

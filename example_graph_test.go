package cuda_test

import (
	"errors"
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
)

// vaddS32PTX is the kernel ExampleStream_Capture runs: c[i] = a[i] + b[i]
// over int32, as ExampleFunction_Launch's vadd_f32 over float32.
const vaddS32PTX = `.version 7.0
.target sm_60
.address_size 64

.visible .entry vadd_s32(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
	.reg .pred p;
	.reg .b32 r<9>;
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
	ld.global.u32 r6, [rd8];
	add.s64 rd8, rd5, rd7;
	ld.global.u32 r7, [rd8];
	add.s32 r8, r6, r7;
	add.s64 rd8, rd6, rd7;
	st.global.u32 [rd8], r8;
DONE:
	ret;
}
`

// Capture a step once, replay it many times, and re-capture when its
// arguments change: an update in place when the shape stays the same.
func ExampleStream_Capture() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err) // no driver, or no GPU: the error says which
	}
	defer ctx.Close()
	defer s.Close()
	mod, err := ctx.LoadModule([]byte(vaddS32PTX))
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

// Capture two branches that run side by side: a second stream joins the
// capture by waiting on an event recorded on the capturing stream (a fork),
// and is joined back by an event the capturing stream waits on.
func ExampleStream_Capture_fork() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	side, err := ctx.NewStream()
	if err != nil {
		log.Fatal(err)
	}
	defer side.Close()
	fork, err := ctx.NewEvent(cuda.EventDisableTiming)
	if err != nil {
		log.Fatal(err)
	}
	defer fork.Close()
	join, err := ctx.NewEvent(cuda.EventDisableTiming)
	if err != nil {
		log.Fatal(err)
	}
	defer join.Close()
	mod, err := ctx.LoadModule([]byte(vaddS32PTX))
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	add, err := mod.Function("vadd_s32")
	if err != nil {
		log.Fatal(err)
	}
	a, err := cuda.FromHost(ctx, []int32{1, 2, 3, 4})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	twice, err := cuda.Alloc[int32](ctx, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer twice.Free()
	thrice, err := cuda.Alloc[int32](ctx, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer thrice.Free()

	graph, err := s.Capture(cuda.CaptureGlobal, func() error {
		if err := fork.Record(s); err != nil {
			return err
		}
		if err := side.WaitEvent(fork); err != nil { // side joins the capture
			return err
		}
		// One branch on s, the other on side: independent nodes.
		if err := add.Launch(cuda.LaunchConfigFor(4, s), a, a, twice, uint32(4)); err != nil {
			return err
		}
		if err := add.Launch(cuda.LaunchConfigFor(4, side), a, a, thrice, uint32(4)); err != nil {
			return err
		}
		if err := add.Launch(cuda.LaunchConfigFor(4, side), thrice, a, thrice, uint32(4)); err != nil {
			return err
		}
		if err := join.Record(side); err != nil {
			return err
		}
		return s.WaitEvent(join) // side's branch joined back
	})
	if err != nil {
		log.Fatal(err)
	}
	defer graph.Close()
	exec, err := graph.Instantiate()
	if err != nil {
		log.Fatal(err)
	}
	defer exec.Close()
	if err := exec.Launch(s); err != nil {
		log.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		log.Fatal(err)
	}
	got2, got3 := make([]int32, 4), make([]int32, 4)
	if err := errors.Join(twice.CopyToHost(got2), thrice.CopyToHost(got3)); err != nil {
		log.Fatal(err)
	}
	fmt.Println(got2, got3, "side captures now:", side.Capturing())
	// Output: [2 4 6 8] [3 6 9 12] side captures now: false
}

// Build a graph node by node: a memset, then a kernel after it, then a
// copy after the kernel; change the kernel's arguments in the instance
// without building it again.
func ExampleContext_NewGraph() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	mod, err := ctx.LoadModule([]byte(vaddS32PTX))
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	add, err := mod.Function("vadd_s32")
	if err != nil {
		log.Fatal(err)
	}
	a, err := cuda.FromHost(ctx, []int32{1, 2, 3, 4})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	b, err := cuda.Alloc[int32](ctx, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Free()
	sum, err := cuda.Alloc[int32](ctx, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer sum.Free()
	out, err := cuda.Alloc[int32](ctx, 4)
	if err != nil {
		log.Fatal(err)
	}
	defer out.Free()

	g, err := ctx.NewGraph()
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	tens, err := g.AddMemset(nil, b, 10, 4) // b = 10, 10, 10, 10
	if err != nil {
		log.Fatal(err)
	}
	k, err := g.AddKernel([]*cuda.GraphNode{tens}, add, cuda.LaunchConfigFor(4, nil), a, b, sum, uint32(4))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := g.AddCopy([]*cuda.GraphNode{k}, out, sum); err != nil {
		log.Fatal(err)
	}
	exec, err := g.Instantiate()
	if err != nil {
		log.Fatal(err)
	}
	defer exec.Close()
	got := make([]int32, 4)
	for _, x := range []*cuda.DeviceBuffer[int32]{a, sum} { // a + 10, then sum + 10
		if err := exec.SetKernelParams(k, cuda.LaunchConfigFor(4, nil), x, b, sum, uint32(4)); err != nil {
			log.Fatal(err)
		}
		if err := exec.Launch(s); err != nil {
			log.Fatal(err)
		}
		if err := out.CopyToHost(got); err != nil {
			log.Fatal(err)
		}
		fmt.Println(got)
	}
	// Output:
	// [11 12 13 14]
	// [21 22 23 24]
}

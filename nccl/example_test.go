package nccl_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nccl"
)

// All-reduce across every GPU of the machine: each rank contributes its
// rank+1, and every rank ends with the sum.
func Example() {
	devs, err := cuda.Devices()
	if err != nil {
		log.Fatal(err)
	}
	ctxs := make([]*cuda.Context, len(devs))
	for i, d := range devs {
		if ctxs[i], err = cuda.NewContext(d); err != nil {
			log.Fatal(err)
		}
		defer ctxs[i].Close()
	}
	comms, err := nccl.NewComms(ctxs)
	if err != nil {
		log.Fatal(err)
	}
	bufs := make([]*cuda.DeviceBuffer[float32], len(comms))
	streams := make([]*cuda.Stream, len(comms))
	for i, c := range comms {
		defer c.Close()
		if streams[i], err = c.Context().NewStream(); err != nil {
			log.Fatal(err)
		}
		defer streams[i].Close()
		if bufs[i], err = cuda.Alloc[float32](c.Context(), 1024); err != nil {
			log.Fatal(err)
		}
		defer bufs[i].Free()
		if err := bufs[i].Memset32Async(math.Float32bits(float32(c.Rank()+1)), streams[i]); err != nil {
			log.Fatal(err)
		}
	}
	// One goroutine drives every rank: queue them in one group.
	err = nccl.Group(func() error {
		for i, c := range comms {
			if err := nccl.AllReduce(c, bufs[i], bufs[i], nccl.Sum, streams[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	n := len(comms)
	want := float32(n * (n + 1) / 2)
	out := make([]float32, 1024)
	for i := range comms {
		if err := bufs[i].CopyToHostAsync(out, streams[i]); err != nil {
			log.Fatal(err)
		}
		if err := streams[i].Synchronize(); err != nil {
			log.Fatal(err)
		}
		if out[0] != want || out[1023] != want {
			log.Fatalf("rank %d: %v, want %v", i, out[0], want)
		}
	}
	fmt.Println("every rank holds the sum")
	// Output: every rank holds the sum
}

// A program started on every GPU of two hosts by a launcher, one process
// each, such as
//
//	torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint host0:29500 --no-python ./train
//	mpirun -np 16 -x MASTER_ADDR=host0 -x MASTER_PORT=29500 ./train
//
// makes its rank of one communicator from what the launcher told it
// (torchrun runs a program that is not Python's with --no-python; its ranks
// meet in torchrun's store). Started alone, as go test runs this example,
// it is a job of one rank.
func ExampleNewCommFromLaunch() {
	l, err := nccl.LaunchFromEnv()
	if err != nil {
		// No launcher: one rank, which makes the id and waits for nobody.
		l = nccl.Launch{Size: 1, Addr: "127.0.0.1:29500"}
	}
	ctx, s, err := cuda.Open(l.LocalRank) // a GPU per process of the host
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	deadline, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	comm, err := nccl.NewCommFromLaunch(deadline, ctx, l)
	if err != nil {
		log.Fatal(err)
	}
	defer comm.Close()
	fmt.Printf("rank %d of %d\n", comm.Rank(), comm.Size())
	// Output: rank 0 of 1
}

// Gather every GPU's part into a whole on each: the destination comes
// first, as in Go's copy, and here holds one part per rank.
func ExampleAllGather() {
	devs, err := cuda.Devices()
	if err != nil {
		log.Fatal(err)
	}
	ctxs := make([]*cuda.Context, len(devs))
	for i, d := range devs {
		if ctxs[i], err = cuda.NewContext(d); err != nil {
			log.Fatal(err)
		}
		defer ctxs[i].Close()
	}
	comms, err := nccl.NewComms(ctxs)
	if err != nil {
		log.Fatal(err)
	}
	n := len(comms)
	parts := make([]*cuda.DeviceBuffer[int32], n)
	wholes := make([]*cuda.DeviceBuffer[int32], n)
	streams := make([]*cuda.Stream, n)
	for i, c := range comms {
		defer c.Close()
		if streams[i], err = c.Context().NewStream(); err != nil {
			log.Fatal(err)
		}
		defer streams[i].Close()
		// Rank i's part is {10i, 10i+1}.
		if parts[i], err = cuda.FromHost(c.Context(), []int32{int32(10 * i), int32(10*i + 1)}); err != nil {
			log.Fatal(err)
		}
		defer parts[i].Free()
		if wholes[i], err = cuda.Alloc[int32](c.Context(), 2*n); err != nil {
			log.Fatal(err)
		}
		defer wholes[i].Free()
	}
	err = nccl.Group(func() error {
		for i, c := range comms {
			if err := nccl.AllGather(c, wholes[i], parts[i], streams[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	for i := range comms {
		if err := streams[i].Synchronize(); err != nil {
			log.Fatal(err)
		}
		whole, err := wholes[i].ToHost()
		if err != nil {
			log.Fatal(err)
		}
		for r := range n {
			if whole[2*r] != int32(10*r) || whole[2*r+1] != int32(10*r+1) {
				log.Fatalf("rank %d holds %v", i, whole)
			}
		}
	}
	fmt.Println("every rank holds every part, in rank order")
	// Output: every rank holds every part, in rank order
}

// Register a buffer for NCCL's zero-copy paths, all-reduce in it, and wait
// for the result while watching for a failed rank: Wait aborts the
// communicator rather than hang when another rank dies.
func ExampleComm_Wait() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	id, err := nccl.NewUniqueID()
	if err != nil {
		log.Fatal(err)
	}
	c, err := nccl.NewComm(ctx, id, 1, 0) // a job of one rank, for the example
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	buf, err := cuda.FromHost(ctx, []float32{1, 2, 3})
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Free()
	reg, err := c.Register(buf)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close() // before buf.Free: deferred calls run last first
	if err := nccl.AllReduce(c, buf, buf, nccl.Sum, s); err != nil {
		log.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Wait(wctx, s); err != nil {
		log.Fatal(err) // a rank failed (errors.Is(err, nccl.ResultRemoteError)), or the minute passed
	}
	out := make([]float32, 3)
	if err := buf.CopyToHost(out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [1 2 3]
}

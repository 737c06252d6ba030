package nccl_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nccl"
)

// Ranks in processes of their own, as launchers start them: each process
// reads its rank from the environment (nccl.LaunchFromEnv), rank 0 serves
// the UniqueID, and each rank works on device rank % DeviceCount. Where two
// ranks share a GPU (a machine with one), NCCL is told they are on hosts of
// their own, which it needs to accept two ranks on one GPU; they then meet
// over its socket transport on the loopback interface, which stands in for
// two hosts.

// envProcRank marks a process TestProcesses started as one of its ranks.
const envProcRank = "GOCUDA_TEST_NCCL_PROC"

// launched returns this process's launch when a launcher started it as
// one rank of two or more, and otherwise false. On a GPU other ranks share,
// it first sets what NCCL reads at its first call (see shareGPU).
func launched(t testing.TB) (nccl.Launch, bool) {
	t.Helper()
	l, err := nccl.LaunchFromEnv()
	if err != nil || l.Size < 2 {
		return l, false
	}
	if n, _ := cuda.DeviceCount(); n > 0 && n < l.Size {
		shareGPU(l.Rank)
	}
	return l, true
}

// shareGPU makes NCCL take this process's rank for one on a host of its
// own, reached through the socket transport on the loopback interface
// (where no interface is named), unless the variables are set already.
func shareGPU(rank int) {
	for k, v := range map[string]string{
		"NCCL_HOSTID":        "gocuda-rank-" + strconv.Itoa(rank),
		"NCCL_SOCKET_IFNAME": "lo",
		"NCCL_P2P_DISABLE":   "1",
		"NCCL_SHM_DISABLE":   "1",
	} {
		if _, ok := os.LookupEnv(k); !ok {
			os.Setenv(k, v)
		}
	}
}

// rankComm makes the communicator of the launched rank l, on device
// l.Rank % DeviceCount, with a stream; all three close when t ends.
func rankComm(t testing.TB, l nccl.Launch) (*nccl.Comm, *cuda.Stream) {
	t.Helper()
	requireNCCL(t)
	n := must(cuda.DeviceCount())(t)
	ctx := must(cuda.NewContext(must(cuda.GetDevice(l.Rank % n))(t)))(t)
	t.Cleanup(func() { ctx.Close() })
	deadline, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := must(nccl.NewCommFromLaunch(deadline, ctx, l))(t)
	t.Cleanup(func() { c.Close() })
	s := must(ctx.NewStream())(t)
	t.Cleanup(func() { s.Close() })
	return c, s
}

// TestProcesses starts two processes of this test binary as a launcher
// would (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), one rank
// each, on two GPUs or sharing one, and checks in each what a distributed
// job does: all-reduce, split, send and receive, all-to-all, a registered
// buffer, and the error another rank's abort leaves (procRank). It needs
// the real driver and NCCL: the fake's communicators live in one process.
func TestProcesses(t *testing.T) {
	if os.Getenv(envProcRank) != "" {
		procRank(t)
		return
	}
	requireNCCL(t)
	if cudatest.IsFake() {
		t.Skip("the fake driver's NCCL joins ranks of one process only")
	}
	host, port, _ := net.SplitHostPort(freeAddr(t))
	deadline, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	for r := range 2 {
		cmd := exec.CommandContext(deadline, os.Args[0], "-test.run=^TestProcesses$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), envProcRank+"=1", "RANK="+strconv.Itoa(r), "WORLD_SIZE=2", "LOCAL_RANK="+strconv.Itoa(r),
			"MASTER_ADDR="+host, "MASTER_PORT="+port, "NCCL_NVLS_ENABLE=0")
		wg.Go(func() { outs[r], errs[r] = cmd.CombinedOutput() })
	}
	wg.Wait()
	for r := range 2 {
		if errs[r] != nil || !strings.Contains(string(outs[r]), "--- PASS: TestProcesses") {
			t.Errorf("rank %d: %v\n%s", r, errs[r], outs[r])
		} else {
			t.Logf("rank %d:\n%s", r, outs[r])
		}
	}
}

// procRank is one rank of TestProcesses. Both ranks run the same steps in
// the same order, each a collective the other joins.
func procRank(t *testing.T) {
	l, ok := launched(t)
	if !ok {
		t.Fatal("no launch in the environment")
	}
	c, s := rankComm(t, l)
	r, ctx := c.Rank(), c.Context()
	if r != l.Rank || c.Size() != 2 {
		t.Fatalf("rank %d of %d, want %d of 2", r, c.Size(), l.Rank)
	}
	sync := func(t *testing.T) {
		t.Helper()
		if err := c.Wait(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("all-reduce", func(t *testing.T) {
		const n = 1 << 20
		in := make([]int64, 2*n)
		for i := range n {
			in[i], in[n+i] = int64(r+1), int64(i)
		}
		b := must(cuda.FromHost(ctx, in))(t)
		defer b.Free()
		if err := nccl.AllReduce(c, b, b, nccl.Sum, s); err != nil {
			t.Fatal(err)
		}
		sync(t)
		out := cudatest.Download(t, b)
		for i := range n {
			if out[i] != 3 || out[n+i] != 2*int64(i) {
				t.Fatalf("element %d: %d and %d, want 3 and %d", i, out[i], out[n+i], 2*i)
			}
		}
	})
	t.Run("split", func(t *testing.T) {
		swapped := must(c.Split(0, 1-r))(t)
		defer func() {
			// A non-blocking communicator's destroy, checked.
			if err := swapped.Close(); err != nil {
				t.Errorf("Close of the split communicator: %v", err)
			}
		}()
		if swapped.Rank() != 1-r || swapped.Size() != 2 {
			t.Fatalf("split with key %d: rank %d of %d", 1-r, swapped.Rank(), swapped.Size())
		}
		b := must(cuda.FromHost(ctx, []int32{int32(10 * (r + 1))}))(t)
		defer b.Free()
		// Broadcast from the split's rank 0, which is this communicator's
		// rank 1.
		if err := nccl.Broadcast(swapped, b, b, 0, s); err != nil {
			t.Fatal(err)
		}
		if err := swapped.Wait(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		if got := cudatest.Download(t, b)[0]; got != 20 {
			t.Errorf("broadcast from the split's rank 0: %d, want 20 (rank 1's)", got)
		}
		color := 1
		if r == 1 {
			color = nccl.NoColor
		}
		alone, err := c.Split(color, 0)
		switch {
		case err != nil:
			t.Fatal(err)
		case r == 1 && alone != nil:
			t.Errorf("NoColor gave a communicator of %d", alone.Size())
		case r == 0 && (alone == nil || alone.Size() != 1):
			t.Errorf("rank 0 alone: %v", alone)
		}
		if alone != nil {
			if err := alone.Close(); err != nil {
				t.Error(err)
			}
		}
	})
	t.Run("send and receive", func(t *testing.T) {
		const n = 4096
		mine := make([]float32, n)
		for i := range mine {
			mine[i] = float32(1000*r + i)
		}
		sb := must(cuda.FromHost(ctx, mine))(t)
		defer sb.Free()
		rb := must(cuda.Zeroed[float32](ctx, n))(t)
		defer rb.Free()
		err := nccl.Group(func() error {
			if err := nccl.Send(c, sb, 1-r, s); err != nil {
				return err
			}
			return nccl.Recv(c, rb, 1-r, s)
		})
		if err != nil {
			t.Fatal(err)
		}
		sync(t)
		got := cudatest.Download(t, rb)
		for i := range got {
			if want := float32(1000*(1-r) + i); got[i] != want {
				t.Fatalf("element %d from rank %d: %v, want %v", i, 1-r, got[i], want)
			}
		}
	})
	t.Run("all-to-all", func(t *testing.T) {
		const n = 3
		send := make([]int32, 2*n)
		for i := range send {
			send[i] = int32(100*r + i)
		}
		sb := must(cuda.FromHost(ctx, send))(t)
		defer sb.Free()
		rb := must(cuda.Zeroed[int32](ctx, 2*n))(t)
		defer rb.Free()
		if err := nccl.AllToAll(c, rb, sb, s); err != nil {
			t.Fatal(err)
		}
		sync(t)
		var want []int32
		for j := range 2 {
			for i := range n {
				want = append(want, int32(100*j+r*n+i))
			}
		}
		equal(t, "received", cudatest.Download(t, rb), want)
	})
	t.Run("registered buffer", func(t *testing.T) {
		b := must(cuda.FromHost(ctx, []float32{float32(r + 1), 5}))(t)
		defer b.Free()
		reg := must(c.Register(b))(t)
		if err := nccl.AllReduce(c, b, b, nccl.Sum, s); err != nil {
			t.Fatal(err)
		}
		sync(t)
		equal(t, "all-reduced", cudatest.Download(t, b), []float32{3, 10})
		if err := reg.Close(); err != nil {
			t.Fatal(err)
		}
	})
	// Last, as it ends the communicator: rank 1 aborts instead of joining
	// an all-reduce; rank 0's Wait returns NCCL's error, or its own
	// deadline's where NCCL notices nothing, and aborts either way.
	t.Run("other rank aborts", func(t *testing.T) {
		b := must(cuda.Zeroed[float32](ctx, 1024))(t)
		defer b.Free()
		if r == 1 {
			time.Sleep(100 * time.Millisecond)
			if err := c.Abort(); err != nil {
				t.Fatal(err)
			}
			return
		}
		const limit = 20 * time.Second
		wctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		start := time.Now()
		// The all-reduce itself may see the abort first: on this
		// non-blocking communicator it returns once NCCL has queued it,
		// which a failed peer can stop. Then this rank aborts, as Wait
		// would have.
		err := nccl.AllReduce(c, b, b, nccl.Sum, s)
		if err == nil {
			err = c.Wait(wctx, s)
		} else if aerr := c.Abort(); aerr != nil {
			t.Errorf("Abort after the all-reduce failed: %v", aerr)
		}
		d := time.Since(start)
		switch code := ncclCode(err); {
		case code != nccl.ResultSuccess:
			if !errors.Is(err, code) {
				t.Errorf("%v does not match %v with errors.Is", err, code)
			}
			t.Logf("after the other rank aborted, %v later: %v", d.Round(time.Millisecond), err)
		case errors.Is(err, context.DeadlineExceeded):
			t.Logf("NCCL reported nothing in %v: Wait aborted at its deadline: %v", limit, err)
		default:
			t.Fatalf("after the other rank aborted: %v; want NCCL's error or the deadline's", err)
		}
		if d > limit+time.Second {
			t.Errorf("Wait returned %v after it began, more than a second past its deadline", d)
		}
		if err := c.Err(); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("Err of the aborted communicator: %v; want ErrClosed", err)
		}
		if err := s.Synchronize(); err != nil {
			t.Errorf("the stream after the abort: %v", err)
		}
	})
}

// ncclCode returns the first NCCL result in err's chain other than
// success: what errors.Is(err, code) matches.
func ncclCode(err error) nccl.Result {
	for ; err != nil; err = errors.Unwrap(err) {
		if ne, ok := err.(*nccl.Error); ok && ne.Code != nccl.ResultSuccess {
			return ne.Code
		}
	}
	return nccl.ResultSuccess
}

// BenchmarkLaunched measures all-reduce (sum, in place) and all-to-all of
// float32 buffers of 16 to 256 MiB between ranks in processes of their
// own, beside bench/pyref/torch_collectives.py. It runs only as one rank of a
// job a launcher started, each rank with the same fixed -test.benchtime
// (the ranks must run the same number of collectives), for example on
// one machine:
//
//	for r in 0 1; do
//		RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29400 \
//			./nccl.test -test.run '^$' -test.bench BenchmarkLaunched -test.benchtime 10x &
//	done; wait
//
// It reports NCCL's bus bandwidth (busbw-GB/s: all-reduce 2(n-1)/n,
// all-to-all (n-1)/n of the algorithm's bytes/s) as nccl-tests counts it.
func BenchmarkLaunched(b *testing.B) {
	l, ok := launched(b)
	if !ok {
		b.Skip("run as one rank of a launched job: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (see the comment)")
	}
	c, s := rankComm(b, l)
	ctx, n := c.Context(), c.Size()
	for size := 16 << 20; size <= 256<<20; size *= 4 {
		x := must(cuda.Zeroed[float32](ctx, size/4))(b)
		y := must(cuda.Zeroed[float32](ctx, size/4))(b)
		for _, op := range []struct {
			name   string
			factor float64
			run    func() error
		}{
			{"allreduce", 2 * float64(n-1) / float64(n), func() error { return nccl.AllReduce(c, x, x, nccl.Sum, s) }},
			{"alltoall", float64(n-1) / float64(n), func() error { return nccl.AllToAll(c, y, x, s) }},
		} {
			b.Run(fmt.Sprintf("%s/%dMiB", op.name, size>>20), func(b *testing.B) {
				wait := func() {
					if err := c.Wait(context.Background(), s); err != nil {
						b.Fatal(err)
					}
				}
				// Warm up (NCCL connects lazily), and start together: the
				// collective returns on both ranks once both joined.
				if err := op.run(); err != nil {
					b.Fatal(err)
				}
				wait()
				b.SetBytes(int64(size))
				b.ResetTimer()
				for range b.N {
					if err := op.run(); err != nil {
						b.Fatal(err)
					}
				}
				wait()
				algbw := float64(size) * float64(b.N) / b.Elapsed().Seconds()
				b.ReportMetric(algbw*op.factor/1e9, "busbw-GB/s")
			})
		}
		x.Free()
		y.Free()
	}
}

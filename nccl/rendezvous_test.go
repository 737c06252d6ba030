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

func TestLaunchFromEnv(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		want nccl.Launch
		err  string // a part of the error; "" for none
	}{
		{"torchrun", map[string]string{"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "MASTER_ADDR": "node0", "MASTER_PORT": "1234"},
			nccl.Launch{Rank: 3, Size: 8, LocalRank: 1, Addr: "node0:1234", Launcher: "torchrun"}, ""},
		{"torchrun with its agent's store", map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "node0", "MASTER_PORT": "29400",
			"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RUN_ID": "job7", "TORCHELASTIC_RESTART_COUNT": "2"},
			nccl.WithAttempt(nccl.Launch{Rank: 1, Size: 2, Addr: "node0:29400", Launcher: "torchrun", TorchStore: true}, "job7/2"), ""},
		{"torchrun without its agent's store", map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "node0", "TORCHELASTIC_USE_AGENT_STORE": "False"},
			nccl.Launch{Rank: 1, Size: 2, Addr: "node0:29500", Launcher: "torchrun"}, ""},
		{"openmpi, the default port", map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0", "MASTER_ADDR": "10.0.0.1"},
			nccl.Launch{Rank: 0, Size: 2, Addr: "10.0.0.1:29500", Launcher: "openmpi"}, ""},
		{"pmi", map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1", "MASTER_ADDR": "h", "MASTER_PORT": "9"},
			nccl.Launch{Rank: 1, Size: 2, LocalRank: 1, Addr: "h:9", Launcher: "pmi"}, ""},
		{"slurm, an IPv6 host", map[string]string{"SLURM_PROCID": "5", "SLURM_NTASKS": "6", "SLURM_LOCALID": "1", "MASTER_ADDR": "fe80::1", "MASTER_PORT": "7000"},
			nccl.Launch{Rank: 5, Size: 6, LocalRank: 1, Addr: "[fe80::1]:7000", Launcher: "slurm"}, ""},
		{"torchrun's variables first", map[string]string{"RANK": "1", "WORLD_SIZE": "2", "SLURM_PROCID": "0", "SLURM_NTASKS": "4", "MASTER_ADDR": "a"},
			nccl.Launch{Rank: 1, Size: 2, Addr: "a:29500", Launcher: "torchrun"}, ""},
		{"no launcher", map[string]string{"MASTER_ADDR": "a"}, nccl.Launch{}, "none of RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE"},
		{"no address", map[string]string{"RANK": "0", "WORLD_SIZE": "1"}, nccl.Launch{}, "MASTER_ADDR (rank 0's host) is not set"},
		{"rank beyond size", map[string]string{"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "a"}, nccl.Launch{}, "RANK=2 is not below WORLD_SIZE=2"},
		{"size missing", map[string]string{"RANK": "0", "MASTER_ADDR": "a"}, nccl.Launch{}, `WORLD_SIZE="": want a whole number of at least 1`},
		{"rank not a number", map[string]string{"RANK": "x", "WORLD_SIZE": "2", "MASTER_ADDR": "a"}, nccl.Launch{}, `RANK="x"`},
		{"negative local rank", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "-1", "MASTER_ADDR": "a"}, nccl.Launch{}, `LOCAL_RANK="-1"`},
		{"bad port", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "a", "MASTER_PORT": "70000"}, nccl.Launch{}, `MASTER_PORT="70000"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nccl.LaunchFrom(func(k string) string { return tt.env[k] })
			if tt.err != "" {
				if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("LaunchFromEnv = %+v, %v; want ErrInvalidValue saying %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("LaunchFromEnv = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// freeAddr returns a loopback address with a port nothing listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// share runs ShareUniqueID for the ranks given of a job of size ranks at
// addr, each on a goroutine, and returns their ids and errors by rank.
func share(ctx context.Context, addr string, size int, ranks ...int) ([]nccl.UniqueID, []error) {
	return shareLaunch(ctx, nccl.Launch{Size: size, Addr: addr}, ranks...)
}

// shareLaunch is share for the ranks of l, a Launch but for its Rank.
func shareLaunch(ctx context.Context, l nccl.Launch, ranks ...int) ([]nccl.UniqueID, []error) {
	ids, errs := make([]nccl.UniqueID, l.Size), make([]error, l.Size)
	var wg sync.WaitGroup
	for _, r := range ranks {
		wg.Go(func() {
			l := l
			l.Rank = r
			ids[r], errs[r] = nccl.ShareUniqueID(ctx, l)
		})
	}
	wg.Wait()
	return ids, errs
}

// TestShareUniqueID: every rank gets rank 0's id, whichever starts first.
func TestShareUniqueID(t *testing.T) {
	requireNCCL(t)
	for _, size := range []int{1, 2, 5} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ranks := make([]int, size)
			for r := range ranks {
				ranks[r] = size - 1 - r // the last first
			}
			ids, errs := share(ctx, freeAddr(t), size, ranks...)
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			for r := range size {
				if ids[r] != ids[0] || ids[r] == (nccl.UniqueID{}) {
					t.Fatalf("rank %d got another id than rank 0's", r)
				}
			}
		})
	}
}

// TestRendezvousFailures: a rank that never comes, rank 0 missing, a rank
// told another size, a cancelled rendezvous: each ends with an error in
// words, wrapping ErrRendezvous, within the time given, and the ranks that
// could meet do.
func TestRendezvousFailures(t *testing.T) {
	requireNCCL(t)
	const limit = 500 * time.Millisecond
	t.Run("a rank never comes", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		addr := freeAddr(t)
		start := time.Now()
		_, errs := share(ctx, addr, 4, 0, 1, 3)
		if errs[1] != nil || errs[3] != nil {
			t.Fatalf("ranks 1 and 3 came: %v, %v", errs[1], errs[3])
		}
		checkFailed(t, errs[0], context.DeadlineExceeded, "rank 0 at "+addr+": ranks 2 did not come")
		if d := time.Since(start); d > limit+time.Second {
			t.Errorf("rank 0 gave up after %v, given %v", d, limit)
		}
	})
	t.Run("rank 0 never comes", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		addr := freeAddr(t)
		_, errs := share(ctx, addr, 2, 1)
		checkFailed(t, errs[1], context.DeadlineExceeded, "rank 1 cannot reach rank 0 at "+addr)
	})
	t.Run("a rank told another size", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		addr := freeAddr(t)
		var wg sync.WaitGroup
		var err0, wrong, right error
		wg.Go(func() { _, err0 = nccl.ShareUniqueID(ctx, nccl.Launch{Rank: 0, Size: 2, Addr: addr}) })
		_, wrong = nccl.ShareUniqueID(ctx, nccl.Launch{Rank: 1, Size: 3, Addr: addr})
		_, right = nccl.ShareUniqueID(ctx, nccl.Launch{Rank: 1, Size: 2, Addr: addr})
		wg.Wait()
		checkFailed(t, wrong, nil, "refused rank 1: rank 1 was told the job has 3 ranks; rank 0 was told 2")
		if err0 != nil || right != nil {
			t.Fatalf("after the refusal: rank 0 %v, rank 1 %v", err0, right)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		// Rank 0 waiting for rank 1, and rank 1 of another job waiting for
		// its rank 0.
		var errs [2]error
		var wg sync.WaitGroup
		addrs := []string{freeAddr(t), freeAddr(t)}
		for r := range 2 {
			wg.Go(func() { _, errs[r] = nccl.ShareUniqueID(ctx, nccl.Launch{Rank: r, Size: 2, Addr: addrs[r]}) })
		}
		wg.Wait()
		for _, err := range errs {
			checkFailed(t, err, context.Canceled, "")
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("returned %v after the start, the cancel at 100ms", d)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, l := range []nccl.Launch{{Rank: 0, Size: 0, Addr: "a:1"}, {Rank: 2, Size: 2, Addr: "a:1"}, {Rank: -1, Size: 2, Addr: "a:1"}, {Rank: 0, Size: 2, Addr: "nohostport"}} {
			if _, err := nccl.ShareUniqueID(context.Background(), l); !errors.Is(err, cuda.ErrInvalidValue) {
				t.Errorf("ShareUniqueID(%+v) = %v, want ErrInvalidValue", l, err)
			}
		}
		//lint:ignore SA1012 a nil context is the bad input under test
		if _, err := nccl.ShareUniqueID(nil, nccl.Launch{Size: 1, Addr: "a:1"}); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("a nil context: %v", err)
		}
	})
}

// checkFailed checks that err is a rendezvous failure that also matches
// also (when not nil) and says want.
func checkFailed(t *testing.T, err, also error, want string) {
	t.Helper()
	if !errors.Is(err, nccl.ErrRendezvous) || also != nil && !errors.Is(err, also) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v: want ErrRendezvous and %v, saying %q", err, also, want)
	}
}

// TestRendezvousProcesses: three processes, started as a launcher starts
// them (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), meet over loopback
// and get one id; then a job whose rank 2 is killed before it connects:
// rank 0 says which rank is missing when its time is up, rank 1 has the id.
func TestRendezvousProcesses(t *testing.T) {
	if os.Getenv("GOCUDA_TEST_RENDEZVOUS") != "" {
		rendezvousRank(t)
		return
	}
	requireNCCL(t)
	type proc struct {
		cmd *exec.Cmd
		out *strings.Builder
	}
	start := func(addr string, rank int, env ...string) proc {
		host, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(os.Args[0], "-test.run=^TestRendezvousProcesses$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "GOCUDA_TEST_RENDEZVOUS=1", "RANK="+strconv.Itoa(rank), "WORLD_SIZE=3",
			"MASTER_ADDR="+host, "MASTER_PORT="+port)
		cmd.Env = append(cmd.Env, env...)
		p := proc{cmd, new(strings.Builder)}
		cmd.Stdout, cmd.Stderr = p.out, p.out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("all meet", func(t *testing.T) {
		addr := freeAddr(t)
		var procs []proc
		for r := range 3 {
			procs = append(procs, start(addr, r))
		}
		var ids []string
		for r, p := range procs {
			if err := p.cmd.Wait(); err != nil {
				t.Fatalf("rank %d: %v\n%s", r, err, p.out)
			}
			ids = append(ids, idLine(p.out.String()))
		}
		if ids[0] == "" || ids[1] != ids[0] || ids[2] != ids[0] {
			t.Fatalf("ids %q: want one for all", ids)
		}
	})
	t.Run("rank 2 killed before it connects", func(t *testing.T) {
		addr := freeAddr(t)
		r0 := start(addr, 0, "GOCUDA_TEST_RENDEZVOUS_TIMEOUT=2s")
		r1 := start(addr, 1)
		r2 := start(addr, 2, "GOCUDA_TEST_RENDEZVOUS_SLEEP=1h")
		time.Sleep(200 * time.Millisecond)
		if err := r2.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		r2.cmd.Wait()
		begun := time.Now()
		if err := r1.cmd.Wait(); err != nil || idLine(r1.out.String()) == "" {
			t.Fatalf("rank 1: %v\n%s", err, r1.out)
		}
		err := r0.cmd.Wait()
		if err == nil || !strings.Contains(r0.out.String(), "ranks 2 did not come") {
			t.Fatalf("rank 0: %v, want it to fail naming rank 2:\n%s", err, r0.out)
		}
		if d := time.Since(begun); d > 5*time.Second {
			t.Errorf("rank 0 took %v to give up, given 2s", d)
		}
	})
}

// idLine returns the id a rank's process printed, "" if none.
func idLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id "); ok {
			return id
		}
	}
	return ""
}

// rendezvousRank is one process of TestRendezvousProcesses.
func rendezvousRank(t *testing.T) {
	if d, err := time.ParseDuration(os.Getenv("GOCUDA_TEST_RENDEZVOUS_SLEEP")); err == nil {
		time.Sleep(d)
	}
	timeout := 20 * time.Second
	if d, err := time.ParseDuration(os.Getenv("GOCUDA_TEST_RENDEZVOUS_TIMEOUT")); err == nil {
		timeout = d
	}
	l, err := nccl.LaunchFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	id, err := nccl.ShareUniqueID(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := id.MarshalText()
	fmt.Printf("id %s\n", text)
}

// TestNewCommFromLaunch: two ranks, each on a device of its own, meet over
// loopback and all-reduce.
func TestNewCommFromLaunch(t *testing.T) {
	requireNCCL(t)
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sums := make([][]int32, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			errs[r] = func() error {
				c, err := nccl.NewCommFromLaunch(ctx, ctxs[r], nccl.Launch{Rank: r, Size: 2, Addr: addr})
				if err != nil {
					return err
				}
				defer c.Close()
				s, err := ctxs[r].NewStream()
				if err != nil {
					return err
				}
				defer s.Close()
				b, err := cuda.FromHost(ctxs[r], []int32{int32(r + 1), 10})
				if err != nil {
					return err
				}
				defer b.Free()
				if err := nccl.AllReduce(c, b, b, nccl.Sum, s); err != nil {
					return err
				}
				sums[r] = make([]int32, 2)
				if err := b.CopyToHostAsync(sums[r], s); err != nil {
					return err
				}
				return s.Synchronize()
			}()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r := range 2 {
		equal(t, fmt.Sprintf("rank %d", r), sums[r], []int32{3, 20})
	}
	if _, err := nccl.NewCommFromLaunch(ctx, nil, nccl.Launch{Size: 1, Addr: addr}); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("a nil context: %v", err)
	}
}

// TestNewCommContextCancel: rank 0 of two, whose rank 1 never comes, gives
// up when its context ends: the half-made communicator is aborted within a
// second, and the error wraps the context's.
func TestNewCommContextCancel(t *testing.T) {
	requireNCCL(t)
	cc := cudatest.Context(t)
	id := must(nccl.NewUniqueID())(t)
	for _, tt := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 300*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			c, err := nccl.NewCommContext(ctx, cc, id, 2, 0)
			took := time.Since(start)
			if c != nil || !errors.Is(err, tt.want) || !strings.Contains(err.Error(), "aborted in") {
				t.Fatalf("NewCommContext = %v, %v; want %v, aborted", c, err, tt.want)
			}
			if over := took - 300*time.Millisecond; over > time.Second {
				t.Errorf("returned %v after the context ended, want under 1s", over)
			}
			t.Logf("%v (%v after the context ended)", err, (took - 300*time.Millisecond).Round(time.Millisecond))
		})
		id = must(nccl.NewUniqueID())(t) // a fresh id: the aborted rank's clique is gone
	}
	// A context already done: nothing begins.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := nccl.NewCommContext(done, cc, id, 1, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("a done context: %v", err)
	}
	// One rank alone needs nobody: made at once.
	c := must(nccl.NewCommContext(context.Background(), cc, must(nccl.NewUniqueID())(t), 1, 0))(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []error{
		errOf(nccl.NewCommContext(context.Background(), nil, id, 1, 0)),
		errOf(nccl.NewCommContext(context.Background(), cc, id, 0, 0)),
		errOf(nccl.NewCommContext(context.Background(), cc, id, 2, 2)),
	} {
		if !errors.Is(bad, cuda.ErrInvalidValue) {
			t.Errorf("bad input: %v, want ErrInvalidValue", bad)
		}
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	if _, err := nccl.NewCommContext(nil, cc, id, 1, 0); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("a nil context: %v", err)
	}
}

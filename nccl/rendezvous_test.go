package nccl_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nccl"
	"github.com/gocuda/cuda/nccl/internal/rendezvous"
)

// TestLaunchFromEnv: LaunchFromEnv is package rendezvous's reading of the
// launchers' variables (its TestFromEnv), every field passed on and its
// errors made ours.
func TestLaunchFromEnv(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		want nccl.Launch
		err  string // the error; "" for none
	}{
		{"torchrun", map[string]string{"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "MASTER_ADDR": "node0", "MASTER_PORT": "1234"},
			nccl.Launch{Rank: 3, Size: 8, LocalRank: 1, Addr: "node0:1234", Launcher: "torchrun"}, ""},
		{"torchrun with its agent's store", map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "node0", "MASTER_PORT": "29400",
			"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RUN_ID": "job7", "TORCHELASTIC_RESTART_COUNT": "2"},
			nccl.WithAttempt(nccl.Launch{Rank: 1, Size: 2, Addr: "node0:29400", Launcher: "torchrun", TorchStore: true}, "job7/2"), ""},
		{"openmpi, the default port", map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0", "MASTER_ADDR": "10.0.0.1"},
			nccl.Launch{Rank: 0, Size: 2, Addr: "10.0.0.1:29500", Launcher: "openmpi"}, ""},
		{"no launcher", map[string]string{"MASTER_ADDR": "a"}, nccl.Launch{},
			"nccl: LaunchFromEnv: invalid value: no launcher's variables: none of RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE"},
		{"bad port", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "a", "MASTER_PORT": "70000"}, nccl.Launch{},
			`nccl: LaunchFromEnv: invalid value: MASTER_PORT="70000": want a port from 1 to 65535`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nccl.LaunchFrom(func(k string) string { return tt.env[k] })
			if tt.err != "" {
				var e *nccl.Error
				if !errors.As(err, &e) || !errors.Is(err, cuda.ErrInvalidValue) || !strings.HasPrefix(err.Error(), tt.err) || got != (nccl.Launch{}) {
					t.Fatalf("LaunchFromEnv = %+v, %v; want a *nccl.Error of ErrInvalidValue saying %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("LaunchFromEnv = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestLaunchJob: ShareUniqueID hands package rendezvous every field of
// the Launch, its attempt too.
func TestLaunchJob(t *testing.T) {
	l := nccl.WithAttempt(nccl.Launch{Rank: 1, Size: 4, LocalRank: 1, Addr: "node0:29400", Launcher: "torchrun", TorchStore: true}, "job7/2")
	want := rendezvous.Job{Rank: 1, Size: 4, LocalRank: 1, Addr: "node0:29400", Launcher: "torchrun", TorchStore: true, Attempt: "job7/2"}
	if got := nccl.JobOf(l); got != want {
		t.Fatalf("job of %+v = %+v, want %+v", l, got, want)
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

// TestShareUniqueIDTorchStore: under torchrun the ranks meet in its
// agent's store (package rendezvous's TestTorchStore), whose errors are
// ours as those of the port are: here a server that is not PyTorch's store
// answers the ping wrong.
func TestShareUniqueIDTorchStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.ReadFull(c, make([]byte, 10)) // validation and ping
			c.Write([]byte{1, 2, 3, 4})
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = nccl.ShareUniqueID(ctx, nccl.Launch{Rank: 1, Size: 2, Addr: ln.Addr().String(), TorchStore: true})
	checkFailed(t, err, nil, "nccl: ShareUniqueID: rendezvous failed: rank 1: "+ln.Addr().String()+" is not a store of PyTorch 2.4 or later")
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

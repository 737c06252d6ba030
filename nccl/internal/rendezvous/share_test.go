package rendezvous_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocuda/cuda/nccl/internal/rendezvous"
)

// TestShare: every rank gets rank 0's id, whichever starts first.
func TestShare(t *testing.T) {
	for _, size := range []int{1, 2, 5} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ranks := make([]int, size)
			for r := range ranks {
				ranks[r] = size - 1 - r // the last first
			}
			ids, errs := share(ctx, freeAddr(t), size, ranks...)
			sameIDs(t, ids, errs)
		})
	}
}

// TestShareNewIDFails: the error of making the id is returned as it is,
// for package nccl to pass on, and nobody waits.
func TestShareNewIDFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	boom := errors.New("no id")
	fails := func() (rendezvous.ID, error) { return rendezvous.ID{1}, boom }
	for _, j := range []rendezvous.Job{
		{Size: 1, Addr: freeAddr(t)},
		{Size: 2, Addr: freeAddr(t)},
		{Size: 2, Addr: freeAddr(t), TorchStore: true},
	} {
		t.Run(fmt.Sprintf("size %d, store %v", j.Size, j.TorchStore), func(t *testing.T) {
			if j.TorchStore {
				j.Addr = newFakeStore(t).addr()
			}
			start := time.Now()
			if _, err := rendezvous.Share(ctx, j, defaultTimeout, fails); err != boom {
				t.Fatalf("Share = %v, want the id's error as it is", err)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestFailures: a rank that never comes, rank 0 missing, a rank told
// another size, a cancelled rendezvous: each ends with an error in words,
// within the time given, and the ranks that could meet do.
func TestFailures(t *testing.T) {
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
		wantFailed(t, errs[0], "rank 0 at "+addr+": ranks 2 did not come", context.DeadlineExceeded)
		if d := time.Since(start); d > limit+time.Second {
			t.Errorf("rank 0 gave up after %v, given %v", d, limit)
		}
	})
	t.Run("rank 0 never comes", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		addr := freeAddr(t)
		_, errs := share(ctx, addr, 2, 1)
		wantFailed(t, errs[1], "rank 1 cannot reach rank 0 at "+addr, context.DeadlineExceeded)
	})
	t.Run("a rank told another size", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		addr := freeAddr(t)
		var wg sync.WaitGroup
		var err0, wrong, right error
		wg.Go(func() {
			_, err0 = rendezvous.Share(ctx, rendezvous.Job{Rank: 0, Size: 2, Addr: addr}, defaultTimeout, newID)
		})
		_, wrong = rendezvous.Share(ctx, rendezvous.Job{Rank: 1, Size: 3, Addr: addr}, defaultTimeout, newID)
		_, right = rendezvous.Share(ctx, rendezvous.Job{Rank: 1, Size: 2, Addr: addr}, defaultTimeout, newID)
		wg.Wait()
		wantFailed(t, wrong, "refused rank 1: rank 1 was told the job has 3 ranks; rank 0 was told 2", nil)
		if errors.Is(wrong, context.DeadlineExceeded) || errors.Is(wrong, context.Canceled) {
			t.Errorf("a refusal within the time given matches the context's error: %v", wrong)
		}
		if err0 != nil || right != nil {
			t.Fatalf("after the refusal: rank 0 %v, rank 1 %v", err0, right)
		}
	})
	t.Run("a rank comes twice", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		addr := freeAddr(t)
		var wg sync.WaitGroup
		var err0 error
		wg.Go(func() {
			_, err0 = rendezvous.Share(ctx, rendezvous.Job{Rank: 0, Size: 3, Addr: addr}, defaultTimeout, newID)
		})
		_, first := rendezvous.Share(ctx, rendezvous.Job{Rank: 1, Size: 3, Addr: addr}, defaultTimeout, newID)
		_, again := rendezvous.Share(ctx, rendezvous.Job{Rank: 1, Size: 3, Addr: addr}, defaultTimeout, newID)
		_, last := rendezvous.Share(ctx, rendezvous.Job{Rank: 2, Size: 3, Addr: addr}, defaultTimeout, newID)
		wg.Wait()
		if first != nil || last != nil || err0 != nil {
			t.Fatalf("ranks 1, 2 and 0: %v, %v, %v", first, last, err0)
		}
		wantFailed(t, again, "refused rank 1: rank 1 came twice", nil)
	})
	t.Run("a hello of rank 0 or out of range", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		addr := freeAddr(t)
		var wg sync.WaitGroup
		var err0 error
		wg.Go(func() {
			_, err0 = rendezvous.Share(ctx, rendezvous.Job{Rank: 0, Size: 2, Addr: addr}, defaultTimeout, newID)
		})
		for _, rank := range []uint32{0, 2, 1 << 31} {
			if got, want := rawHello(t, ctx, addr, rank, 2), fmt.Sprintf("rank %d out of range [1, 2)", int(rank)); got != want {
				t.Errorf("hello of rank %d: refused with %q, want %q", rank, got, want)
			}
		}
		_, err1 := rendezvous.Share(ctx, rendezvous.Job{Rank: 1, Size: 2, Addr: addr}, defaultTimeout, newID)
		wg.Wait()
		if err0 != nil || err1 != nil {
			t.Fatalf("ranks 0 and 1 after the refusals: %v, %v", err0, err1)
		}
	})
	t.Run("a silent connection holds up no rank", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		addr := freeAddr(t)
		var wg sync.WaitGroup
		var err0 error
		wg.Go(func() {
			_, err0 = rendezvous.Share(ctx, rendezvous.Job{Rank: 0, Size: 3, Addr: addr}, defaultTimeout, newID)
		})
		silent := dialUntil(t, ctx, addr) // connects, says nothing
		defer silent.Close()
		closed := make(chan struct{}, 1)
		go func() {
			silent.Read(make([]byte, 1)) // until rank 0 closes it
			closed <- struct{}{}
		}()
		var err1 error
		served := make(chan struct{})
		go func() {
			_, err1 = rendezvous.Share(ctx, rendezvous.Job{Rank: 1, Size: 3, Addr: addr}, defaultTimeout, newID)
			close(served)
		}()
		// Rank 1 is served while the silent connection is open: rank 0,
		// waiting for rank 2 still, does not give up on it (close it) to get
		// to rank 1.
		select {
		case <-closed:
			t.Error("rank 0 closed the silent connection before serving rank 1: it waited for it")
			<-served
		case <-served:
		}
		_, err2 := rendezvous.Share(ctx, rendezvous.Job{Rank: 2, Size: 3, Addr: addr}, defaultTimeout, newID)
		wg.Wait()
		if err0 != nil || err1 != nil || err2 != nil {
			t.Fatalf("ranks 0, 1 and 2: %v, %v, %v", err0, err1, err2)
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
			wg.Go(func() {
				_, errs[r] = rendezvous.Share(ctx, rendezvous.Job{Rank: r, Size: 2, Addr: addrs[r]}, defaultTimeout, newID)
			})
		}
		wg.Wait()
		for _, err := range errs {
			wantFailed(t, err, "", context.Canceled)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("returned %v after the start, the cancel at 100ms", d)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, tt := range []struct {
			j    rendezvous.Job
			want string
		}{
			{rendezvous.Job{Rank: 0, Size: 0, Addr: "a:1"}, "size 0: want at least 1"},
			{rendezvous.Job{Rank: 2, Size: 2, Addr: "a:1"}, "rank 2 out of range [0, 2)"},
			{rendezvous.Job{Rank: -1, Size: 2, Addr: "a:1"}, "rank -1 out of range [0, 2)"},
			{rendezvous.Job{Rank: 0, Size: 2, Addr: "nohostport"}, `address "nohostport": want host:port`},
		} {
			_, err := rendezvous.Share(context.Background(), tt.j, defaultTimeout, newID)
			wantInvalid(t, err, tt.want)
		}
		//lint:ignore SA1012 a nil context is the bad input under test
		_, err := rendezvous.Share(nil, rendezvous.Job{Size: 1, Addr: "a:1"}, defaultTimeout, newID)
		wantInvalid(t, err, "nil context.Context")
	})
	t.Run("no deadline: the default's", func(t *testing.T) {
		start := time.Now()
		_, err := rendezvous.Share(context.Background(), rendezvous.Job{Rank: 1, Size: 2, Addr: freeAddr(t)}, 300*time.Millisecond, newID)
		wantFailed(t, err, "cannot reach rank 0", context.DeadlineExceeded)
		if d := time.Since(start); d > 300*time.Millisecond+time.Second {
			t.Errorf("gave up after %v, given 300ms", d)
		}
	})
}

// envRank makes the test binary one rank of TestProcesses.
const envRank = "GOCUDA_TEST_RENDEZVOUS"

// TestProcesses: three processes, started as a launcher starts them
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), meet over loopback and get
// one id; then a job whose rank 2 is killed before it connects: rank 0
// says which rank is missing when its time is up, rank 1 has the id.
func TestProcesses(t *testing.T) {
	if os.Getenv(envRank) != "" {
		processRank(t)
		return
	}
	deadline, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type proc struct {
		cmd *exec.Cmd
		out *strings.Builder
	}
	start := func(addr string, rank int, env ...string) proc {
		host, port, _ := net.SplitHostPort(addr)
		cmd := exec.CommandContext(deadline, os.Args[0], "-test.run=^TestProcesses$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), envRank+"=1", "RANK="+strconv.Itoa(rank), "WORLD_SIZE=3",
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
		r0 := start(addr, 0, envRank+"_TIMEOUT=2s")
		r1 := start(addr, 1)
		r2 := start(addr, 2, envRank+"_SLEEP=1h")
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

// processRank is one process of TestProcesses.
func processRank(t *testing.T) {
	if d, err := time.ParseDuration(os.Getenv(envRank + "_SLEEP")); err == nil {
		time.Sleep(d)
	}
	timeout := 20 * time.Second
	if d, err := time.ParseDuration(os.Getenv(envRank + "_TIMEOUT")); err == nil {
		timeout = d
	}
	j, err := rendezvous.FromEnv(os.Getenv, 29500)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	id, err := rendezvous.Share(ctx, j, defaultTimeout, newID)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("id %x\n", id)
}

// dialUntil connects to addr, again while nothing listens there yet.
func dialUntil(t *testing.T, ctx context.Context, addr string) net.Conn {
	t.Helper()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn
		}
		if ctx.Err() != nil {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
		runtime.Gosched()
	}
}

// rawHello says hello to rank 0 at addr as rank rank of a job of size
// ranks, as a rank's Share does, and returns the reason it was refused
// ("" for an id).
func rawHello(t *testing.T, ctx context.Context, addr string, rank, size uint32) string {
	t.Helper()
	conn := dialUntil(t, ctx, addr)
	defer conn.Close()
	msg := binary.BigEndian.AppendUint32([]byte("gocuda-nccl-rendezvous 1\n"), rank)
	msg = binary.BigEndian.AppendUint32(msg, size)
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	reply, err := io.ReadAll(conn)
	if err != nil || len(reply) == 0 {
		t.Fatalf("rank 0's answer: %q, %v", reply, err)
	}
	if reply[0] == 0 {
		return ""
	}
	return string(reply[2:])
}

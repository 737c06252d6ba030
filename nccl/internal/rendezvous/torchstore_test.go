package rendezvous_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocuda/cuda/nccl/internal/rendezvous"
)

// fakeStore is a store as torchrun's agent serves it (PyTorch's TCPStore,
// 2.4 and later), for the tests: it answers VALIDATE, PING, SET, GET, ADD,
// CHECK and WAIT, and, as the real one, drops a connection whose first
// query is not a validation with the magic number.
type fakeStore struct {
	ln   net.Listener
	mu   sync.Mutex
	cond *sync.Cond
	kv   map[string][]byte
	done bool
	wg   sync.WaitGroup
}

// newFakeStore starts a fakeStore on a loopback port; it stops when t ends.
func newFakeStore(t testing.TB) *fakeStore {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeStore{ln: ln, kv: map[string][]byte{}}
	s.cond = sync.NewCond(&s.mu)
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		s.done = true
		s.cond.Broadcast()
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *fakeStore) addr() string { return s.ln.Addr().String() }

// envTorchStore names the address of a store PyTorch serves
// (torch.distributed.TCPStore), which TestTorchStore then uses in place of
// its fakeStore: scripts/gpu-torchrun.sh starts one on the GPU machine.
const envTorchStore = "GOCUDA_TEST_TORCHSTORE"

// testStore returns the address of a store for one test: PyTorch's, when
// envTorchStore names one, else a fakeStore's.
func testStore(t testing.TB) string {
	t.Helper()
	if addr := os.Getenv(envTorchStore); addr != "" {
		return addr
	}
	return newFakeStore(t).addr()
}

// has reports whether every key is set; s.mu is held.
func (s *fakeStore) has(keys []string) bool {
	for _, k := range keys {
		if _, ok := s.kv[k]; !ok {
			return false
		}
	}
	return true
}

func (s *fakeStore) serve(c net.Conn) {
	defer c.Close()
	u64 := func() (uint64, error) {
		var b [8]byte
		_, err := io.ReadFull(c, b[:])
		return binary.LittleEndian.Uint64(b[:]), err
	}
	str := func() (string, error) {
		n, err := u64()
		if err != nil || n > 1<<20 {
			return "", errors.New("bad string")
		}
		b := make([]byte, n)
		_, err = io.ReadFull(c, b)
		return string(b), err
	}
	keys := func() ([]string, error) {
		n, err := u64()
		if err != nil || n > 1<<16 {
			return nil, errors.New("bad count")
		}
		ks := make([]string, n)
		for i := range ks {
			if ks[i], err = str(); err != nil {
				return nil, err
			}
		}
		return ks, nil
	}
	var typ [1]byte
	for first := true; ; first = false {
		if _, err := io.ReadFull(c, typ[:]); err != nil {
			return
		}
		if first != (typ[0] == 0) {
			return // validation first, and only first
		}
		switch typ[0] {
		case 0, 13: // VALIDATE, PING
			var v [4]byte
			if _, err := io.ReadFull(c, v[:]); err != nil {
				return
			}
			if typ[0] == 0 && binary.LittleEndian.Uint32(v[:]) != 0x3C85F7CE {
				return
			}
			if typ[0] == 13 {
				c.Write(v[:])
			}
		case 1: // SET
			k, err := str()
			if err != nil {
				return
			}
			v, err := str()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.kv[k] = []byte(v)
			s.cond.Broadcast()
			s.mu.Unlock()
		case 3: // GET
			k, err := str()
			if err != nil {
				return
			}
			s.mu.Lock()
			v, ok := s.kv[k]
			s.mu.Unlock()
			if !ok {
				return // the real store fails the query
			}
			c.Write(append(binary.LittleEndian.AppendUint64(nil, uint64(len(v))), v...))
		case 4: // ADD
			k, err := str()
			if err != nil {
				return
			}
			d, err := u64()
			if err != nil {
				return
			}
			s.mu.Lock()
			var n int64
			if v, ok := s.kv[k]; ok {
				n = int64(binary.LittleEndian.Uint64(v)) // this fake keeps numbers as 8 bytes
			}
			n += int64(d)
			s.kv[k] = binary.LittleEndian.AppendUint64(nil, uint64(n))
			s.cond.Broadcast()
			s.mu.Unlock()
			c.Write(binary.LittleEndian.AppendUint64(nil, uint64(n)))
		case 5, 6: // CHECK, WAIT
			ks, err := keys()
			if err != nil {
				return
			}
			s.mu.Lock()
			if typ[0] == 5 {
				ready := s.has(ks)
				s.mu.Unlock()
				if ready {
					c.Write([]byte{0})
				} else {
					c.Write([]byte{1})
				}
				continue
			}
			for !s.has(ks) && !s.done {
				s.cond.Wait()
			}
			done := s.done
			s.mu.Unlock()
			if done {
				return
			}
			if _, err := c.Write([]byte{0}); err != nil {
				return
			}
		default:
			return
		}
	}
}

// TestTorchStore: ranks started by torchrun meet in its agent's store, not
// on a port of their own; each way a rendezvous can fail there ends as it
// does without the store: an error in words, of ranks that could not
// meet, within the time given.
func TestTorchStore(t *testing.T) {
	// Each test's attempts are its own, so that the tests can share
	// PyTorch's store.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	launch := func(addr string, size int, attempt string) rendezvous.Job {
		return rendezvous.Job{Size: size, Addr: addr, TorchStore: true, Launcher: "torchrun", Attempt: run + "/" + attempt}
	}
	deadline := func(t *testing.T, d time.Duration) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		t.Cleanup(cancel)
		return ctx
	}
	t.Run("all meet, twice", func(t *testing.T) {
		s := testStore(t)
		l := launch(s, 4, "meet")
		ids, errs := shareJob(deadline(t, 20*time.Second), l, 3, 2, 1, 0)
		sameIDs(t, ids, errs)
		// A second communicator of the same job gets an id of its own.
		again, errs := shareJob(deadline(t, 20*time.Second), l, 0, 1, 2, 3)
		sameIDs(t, again, errs)
		if again[0] == ids[0] {
			t.Fatal("the second rendezvous gave the first one's id")
		}
	})
	t.Run("a restarted attempt never reads the attempt before", func(t *testing.T) {
		s := testStore(t)
		first, errs := shareJob(deadline(t, 20*time.Second), launch(s, 2, "restart/0"), 0, 1)
		sameIDs(t, first, errs)
		// torchrun restarts the workers; the new rank 1 comes first.
		second, errs := shareJob(deadline(t, 20*time.Second), launch(s, 2, "restart/1"), 1, 0)
		sameIDs(t, second, errs)
		if second[1] == first[0] {
			t.Fatal("the restarted rank 1 read the id of the attempt before")
		}
	})
	t.Run("a rank never comes", func(t *testing.T) {
		s := testStore(t)
		start := time.Now()
		_, errs := shareJob(deadline(t, time.Second), launch(s, 3, "never"), 0, 1)
		if errs[1] != nil {
			t.Fatalf("rank 1: %v", errs[1])
		}
		wantFailed(t, errs[0], "ranks 2 did not come", context.DeadlineExceeded)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("rank 0 gave up after %v, given 1s", d)
		}
	})
	t.Run("rank 0 never comes", func(t *testing.T) {
		s := testStore(t)
		_, errs := shareJob(deadline(t, 500*time.Millisecond), launch(s, 2, "rank0"), 1)
		wantFailed(t, errs[1], "rank 0 did not put the id in torchrun's store", context.DeadlineExceeded)
	})
	t.Run("a rank told another size", func(t *testing.T) {
		s := testStore(t)
		ctx := deadline(t, time.Second)
		var errs [2]error
		var wg sync.WaitGroup
		wg.Go(func() { _, errs[0] = rendezvous.Share(ctx, launch(s, 2, "size"), defaultTimeout, newID) })
		l := launch(s, 3, "size")
		l.Rank = 1
		wg.Go(func() { _, errs[1] = rendezvous.Share(ctx, l, defaultTimeout, newID) })
		wg.Wait()
		wantFailed(t, errs[1], "rank 1 was told the job has 3 ranks; rank 0 was told 2", nil)
		wantFailed(t, errs[0], "ranks 1 did not come", context.DeadlineExceeded)
	})
	t.Run("a rank comes twice", func(t *testing.T) {
		s := testStore(t)
		ctx := deadline(t, 10*time.Second)
		l := launch(s, 2, "twice")
		if _, errs := shareJob(ctx, l, 0, 1); errors.Join(errs...) != nil {
			t.Fatal(errors.Join(errs...))
		}
		// Another process says it is rank 1 of the same rendezvous (its
		// first): the store's count says it came twice.
		// (Another address of the store, so that this process counts it
		// as that address's first rendezvous, as the other process would.)
		l = launch("localhost:"+portOf(s), 2, "twice")
		l.Rank = 1
		_, err := rendezvous.Share(ctx, l, defaultTimeout, newID)
		wantFailed(t, err, "rank 1 came twice", nil)
	})
	t.Run("cancelled", func(t *testing.T) {
		s := testStore(t)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		_, errs := shareJob(ctx, launch(s, 2, "cancel"), 0)
		wantFailed(t, errs[0], "did not come", context.Canceled)
		if d := time.Since(start); d > time.Second {
			t.Errorf("returned %v after the cancel", d-200*time.Millisecond)
		}
	})
	// Servers that are not torchrun's store: one that reads the greeting
	// and closes, as a store of an older PyTorch or another server does,
	// and one that answers the ping with another number.
	for _, tt := range []struct {
		name   string
		answer []byte
		want   string
		took   time.Duration // the most the error may take
	}{
		// Tried again until the time given is up: a store whose queue
		// of connections is full closes them too.
		{"closes", nil, "did not answer within the time given", 2 * time.Second},
		// Not tried again.
		{"answers wrong", []byte{1, 2, 3, 4}, "came back as 67305985", 500 * time.Millisecond},
	} {
		t.Run("not torchrun's store, "+tt.name, func(t *testing.T) {
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
					c.Write(tt.answer)
					c.Close()
				}
			}()
			l := rendezvous.Job{Rank: 1, Size: 2, Addr: ln.Addr().String(), TorchStore: true}
			start := time.Now()
			_, err = rendezvous.Share(deadline(t, time.Second), l, defaultTimeout, newID)
			wantFailed(t, err, "not a store of PyTorch 2.4 or later", nil)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v; want it to say %q", err, tt.want)
			}
			if d := time.Since(start); d > tt.took {
				t.Errorf("took %v, given 1s; want at most %v", d, tt.took)
			}
		})
	}
}

func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

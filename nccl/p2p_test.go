package nccl_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nccl"
)

// newRank makes rank r of a communicator of n ranks on ctx.
type newRank func(ctx *cuda.Context, id nccl.UniqueID, n, r int) (*nccl.Comm, error)

// rankKinds are the two kinds of communicator: made blocking (NewComm),
// and made without blocking (NewCommContext), on which NCCL may leave any
// call in progress, and gocuda waits for it.
var rankKinds = []struct {
	name string
	make newRank
}{
	{"blocking", nccl.NewComm},
	{"non-blocking", func(ctx *cuda.Context, id nccl.UniqueID, n, r int) (*nccl.Comm, error) {
		return nccl.NewCommContext(context.Background(), ctx, id, n, r)
	}},
}

// ranks runs fn for each rank of a communicator over the given contexts,
// each on a goroutine with a stream of its own, and fails the test with
// the ranks' errors: once for each kind of communicator, as subtests.
func ranks(t *testing.T, ctxs []*cuda.Context, fn func(c *nccl.Comm, s *cuda.Stream) error) {
	t.Helper()
	for _, k := range rankKinds {
		t.Run(k.name, func(t *testing.T) { ranksOf(t, ctxs, k.make, fn) })
	}
}

// ranksOf is ranks for communicators made by mk.
func ranksOf(t *testing.T, ctxs []*cuda.Context, mk newRank, fn func(c *nccl.Comm, s *cuda.Stream) error) {
	t.Helper()
	id := must(nccl.NewUniqueID())(t)
	errs := make([]error, len(ctxs))
	var wg sync.WaitGroup
	for r, ctx := range ctxs {
		wg.Go(func() {
			errs[r] = func() error {
				c, err := mk(ctx, id, len(ctxs), r)
				if err != nil {
					return err
				}
				defer c.Close()
				s, err := ctx.NewStream()
				if err != nil {
					return err
				}
				defer s.Close()
				if err := fn(c, s); err != nil {
					return fmt.Errorf("rank %d: %w", r, err)
				}
				return s.Synchronize()
			}()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// TestSendRecv: rank 0 sends to rank 1, which receives, outside a group
// (the send waits for the receive); then both send and receive at once in
// a group, each to the other.
func TestSendRecv(t *testing.T) {
	requireNCCL(t)
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return
	}
	const n = 1000
	want := numbers[float64](n)
	got := make([][]float64, 2)
	ranks(t, ctxs, func(c *nccl.Comm, s *cuda.Stream) error {
		r := c.Rank()
		b, err := cuda.FromHost(c.Context(), want)
		if err != nil {
			return err
		}
		defer b.Free()
		in, err := cuda.Zeroed[float64](c.Context(), n)
		if err != nil {
			return err
		}
		defer in.Free()
		if r == 0 {
			err = nccl.Send(c, b, 1, s)
		} else {
			err = nccl.Recv(c, in, 0, s)
		}
		if err != nil {
			return err
		}
		// Each to the other, in a group: both sends come first.
		mine, err := cuda.FromHost(c.Context(), []float64{float64(r + 1), float64(10 * (r + 1))})
		if err != nil {
			return err
		}
		defer mine.Free()
		theirs, err := cuda.Zeroed[float64](c.Context(), 2)
		if err != nil {
			return err
		}
		defer theirs.Free()
		if err := nccl.Group(func() error {
			return errors.Join(nccl.Send(c, mine, 1-r, s), nccl.Recv(c, theirs, 1-r, s))
		}); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		swapped := make([]float64, 2)
		if err := theirs.CopyToHost(swapped); err != nil {
			return err
		}
		if other := float64(2 - r); swapped[0] != other || swapped[1] != 10*other {
			return fmt.Errorf("exchanged %v, want [%v %v]", swapped, other, 10*other)
		}
		if r == 1 {
			got[1] = make([]float64, n)
			return in.CopyToHost(got[1])
		}
		return nil
	})
	equal(t, "received", got[1], want)
}

// TestAllToAll: each of two ranks sends block j to rank j: rank r ends
// with block r of every rank, in rank order.
func TestAllToAll(t *testing.T) {
	requireNCCL(t)
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return
	}
	const n = 3 // per block
	ranks(t, ctxs, func(c *nccl.Comm, s *cuda.Stream) error {
		r := c.Rank()
		send := make([]int32, 2*n)
		for i := range send {
			send[i] = int32(100*r + i) // rank r's block j is 100r+jn ... 100r+jn+n-1
		}
		sb, err := cuda.FromHost(c.Context(), send)
		if err != nil {
			return err
		}
		defer sb.Free()
		rb, err := cuda.Zeroed[int32](c.Context(), 2*n)
		if err != nil {
			return err
		}
		defer rb.Free()
		if err := nccl.AllToAll(c, rb, sb, s); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		got := make([]int32, 2*n)
		if err := rb.CopyToHost(got); err != nil {
			return err
		}
		// Block j of what rank r receives is block r of rank j's.
		for j := range 2 {
			for i := range n {
				if want := int32(100*j + r*n + i); got[j*n+i] != want {
					return fmt.Errorf("element %d: %d, want %d", j*n+i, got[j*n+i], want)
				}
			}
		}
		return nil
	})
}

// TestP2PErrors: bad peers, nil and mismatched buffers, zero and nil
// communicators are refused in words before NCCL sees them.
func TestP2PErrors(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	defer c.Close()
	b := must(cuda.Alloc[float32](ctx, 4))(t)
	defer b.Free()
	odd := must(cuda.Alloc[float32](ctx, 3))(t)
	defer odd.Free()
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"send to a peer out of range", nccl.Send(c, b, 1, s), "peer 1 out of range [0, 1)"},
		{"receive from a negative peer", nccl.Recv(c, b, -1, s), "peer -1 out of range"},
		{"nil buffer", nccl.Send[float32](c, nil, 0, s), "src is nil"},
		{"nil stream", nccl.Recv(c, b, 0, nil), "nil *cuda.Stream"},
		{"nil communicator", nccl.Send(nil, b, 0, s), "nil *Comm"},
		{"zero communicator", nccl.Recv(&nccl.Comm{}, b, 0, s), "a zero Comm"},
		{"all-to-all of other lengths", nccl.AllToAll(c, b, odd, s), "dst has 4 elements, src 3"},
		{"all-to-all in place", nccl.AllToAll(c, b, b, s), "out of place"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, cuda.ErrInvalidValue) || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("error %v: want ErrInvalidValue saying %q", tt.err, tt.want)
			}
		})
	}
	// A rank sends to itself inside a group, as an all-to-all of one rank does.
	in := must(cuda.FromHost(ctx, []float32{1, 2, 3, 4}))(t)
	defer in.Free()
	if err := nccl.AllToAll(c, b, in, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	equal(t, "all-to-all of one rank", cudatest.Download(t, b), []float32{1, 2, 3, 4})
}

// TestSendWaitsForRecv: outside a group, a send is not done before its
// peer receives, as with NCCL (the fake holds it too, so that a program
// whose ranks both send first hangs here as there, not only on a GPU).
func TestSendWaitsForRecv(t *testing.T) {
	requireNCCL(t)
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return
	}
	sent := make(chan bool, 1) // rank 0's stream was still busy after its send
	// Blocking communicators only: a non-blocking one's send may stay in
	// progress until the peer comes, which this rank 1 does not before
	// it hears from rank 0.
	ranksOf(t, ctxs, nccl.NewComm, func(c *nccl.Comm, s *cuda.Stream) error {
		b, err := cuda.Zeroed[int64](c.Context(), 16)
		if err != nil {
			return err
		}
		defer b.Free()
		if c.Rank() == 0 {
			if err := nccl.Send(c, b, 1, s); err != nil {
				return err
			}
			time.Sleep(50 * time.Millisecond)
			done, err := s.Query()
			sent <- !done
			return err
		}
		if busy := <-sent; !busy {
			return errors.New("rank 0's send was done before rank 1 received")
		}
		return nccl.Recv(c, b, 0, s)
	})
}

// TestSplit: two ranks split into one communicator with their order
// reversed by key, which all-reduces; then into one of rank 0 alone, rank
// 1 taking NoColor.
func TestSplit(t *testing.T) {
	requireNCCL(t)
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return
	}
	ranks(t, ctxs, func(c *nccl.Comm, s *cuda.Stream) error {
		r := c.Rank()
		swapped, err := c.Split(0, 1-r)
		if err != nil {
			return err
		}
		defer swapped.Close()
		if swapped.Rank() != 1-r || swapped.Size() != 2 {
			return fmt.Errorf("split with key %d: rank %d of %d, want %d of 2", 1-r, swapped.Rank(), swapped.Size(), 1-r)
		}
		b, err := cuda.FromHost(c.Context(), []int32{int32(r + 1)})
		if err != nil {
			return err
		}
		defer b.Free()
		if err := nccl.AllReduce(swapped, b, b, nccl.Sum, s); err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		sum := make([]int32, 1)
		if err := b.CopyToHost(sum); err != nil {
			return err
		}
		if sum[0] != 3 {
			return fmt.Errorf("all-reduce on the split communicator: %d, want 3", sum[0])
		}
		color := 7
		if r == 1 {
			color = nccl.NoColor
		}
		alone, err := c.Split(color, 0)
		switch {
		case err != nil:
			return err
		case r == 1 && alone != nil:
			return fmt.Errorf("NoColor gave a communicator: %v", alone)
		case r == 0 && (alone == nil || alone.Size() != 1 || alone.Rank() != 0):
			return fmt.Errorf("rank 0 alone: %v", alone)
		}
		if alone != nil {
			return alone.Close()
		}
		return nil
	})
	c := must(nccl.NewComm(cudatest.Context(t), must(nccl.NewUniqueID())(t), 1, 0))(t)
	defer c.Close()
	for _, bad := range []struct{ color, key int }{{-2, 0}, {1 << 40, 0}, {0, 1 << 40}} {
		if _, err := c.Split(bad.color, bad.key); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Split(%d, %d) = %v, want ErrInvalidValue", bad.color, bad.key, err)
		}
	}
	if _, err := new(nccl.Comm).Split(0, 0); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("a zero Comm: %v", err)
	}
	// A communicator of one rank splits into one of one (on a GPU, NCCL's
	// own split), or into none.
	one := must(c.Split(3, 0))(t)
	if one.Rank() != 0 || one.Size() != 1 {
		t.Errorf("split of one rank: %v", one)
	}
	if err := one.Close(); err != nil {
		t.Fatal(err)
	}
	if none, err := c.Split(nccl.NoColor, 0); none != nil || err != nil {
		t.Errorf("NoColor: %v, %v", none, err)
	}
}

package nccl_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nccl"
)

// TestRegister: a registered buffer works in collectives and cannot be
// freed until its registration is closed; closing the communicator closes
// its registrations.
func TestRegister(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	want := numbers[float32](4096)
	buf := must(cuda.FromHost(ctx, want))(t)
	out := must(cuda.Alloc[float32](ctx, len(want)))(t)
	defer out.Free()
	r := must(c.Register(buf))(t)
	if err := buf.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Free of a registered buffer: %v; want ErrInvalidValue", err)
	}
	if err := nccl.AllReduce(c, out, buf, nccl.Sum, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	equal(t, "AllReduce of a registered buffer", cudatest.Download(t, out), want)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := buf.Free(); err != nil {
		t.Errorf("Free after Close: %v", err)
	}
	if _, err := c.Register(buf); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Register of a freed buffer: %v; want ErrClosed", err)
	}
	empty := must(cuda.Alloc[float32](ctx, 0))(t)
	if _, err := c.Register(empty); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Register of an empty buffer: %v; want ErrInvalidValue", err)
	}
	// Closing the communicator deregisters what is left.
	b2 := must(cuda.Alloc[float32](ctx, 64))(t)
	r2 := must(c.Register(b2))(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r2.Close(); err != nil {
		t.Errorf("Close of a registration of a closed communicator: %v", err)
	}
	if err := b2.Free(); err != nil {
		t.Errorf("Free once the communicator is closed: %v", err)
	}
	if err := new(nccl.Registration).Close(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Close of a zero Registration: %v; want ErrInvalidValue", err)
	}
}

// TestAlloc: NCCL's own memory is a device buffer like any other, and is
// freed once nothing uses it.
func TestAlloc(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	defer c.Close()
	const n = 1 << 18
	a := must(nccl.Alloc(ctx, 4*n))(t)
	buf := must(cuda.ViewAs[int32](a.Buffer()))(t)
	want := numbers[int32](n)
	if err := buf.CopyFromHost(want); err != nil {
		t.Fatal(err)
	}
	r := must(c.Register(a.Buffer()))(t)
	if err := nccl.AllReduce(c, buf, buf, nccl.Sum, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	equal(t, "AllReduce in place in NCCL's memory", cudatest.Download(t, buf), want)
	if err := a.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Free of registered memory: %v; want ErrInvalidValue", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if err := a.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	for _, bytes := range []int{0, -1} {
		if _, err := nccl.Alloc(ctx, bytes); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Alloc(%d): %v; want ErrInvalidValue", bytes, err)
		}
	}
}

// TestWait: Wait returns once the stream's work is done on a sound
// communicator; when another rank aborts, the waiting rank's Wait reports
// a remote error and aborts its own, ending the collective stuck on it;
// when the context ends first, Wait aborts within a second.
func TestWait(t *testing.T) {
	requireNCCL(t)
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return
	}
	s := cudatest.Stream(t, ctxs[0])
	buf := must(cuda.Zeroed[float32](ctxs[0], 1024))(t)
	defer buf.Free()
	t.Run("remote error", func(t *testing.T) {
		comms := must(nccl.NewComms(ctxs))(t)
		defer comms[0].Close()
		if err := comms[0].Err(); err != nil {
			t.Fatalf("Err of a sound communicator: %v", err)
		}
		if err := comms[0].Wait(context.Background(), cudatest.Stream(t, ctxs[1])); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Wait on a stream of the other rank's context: %v; want ErrInvalidValue", err)
		}
		// Rank 1 never joins the all-reduce: rank 0's waits for it.
		if err := nccl.AllReduce(comms[0], buf, buf, nccl.Sum, s); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(50 * time.Millisecond)
			comms[1].Abort()
		}()
		start := time.Now()
		err := comms[0].Wait(context.Background(), s)
		if !errors.Is(err, nccl.ResultRemoteError) {
			t.Fatalf("Wait after the other rank aborted: %v; want ResultRemoteError", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Wait took %v", d)
		}
		if err := s.Synchronize(); err != nil {
			t.Errorf("the stream after the abort: %v", err)
		}
	})
	t.Run("context ends", func(t *testing.T) {
		comms := must(nccl.NewComms(ctxs))(t)
		defer comms[1].Close()
		if err := nccl.AllReduce(comms[0], buf, buf, nccl.Sum, s); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := comms[0].Wait(cctx, s)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait past the deadline: %v; want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d > time.Second+100*time.Millisecond {
			t.Errorf("Wait returned %v after it began, more than a second past the deadline", d)
		}
		if err := comms[0].Err(); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("Err of the aborted rank: %v; want ErrClosed", err)
		}
		if err := s.Synchronize(); err != nil {
			t.Errorf("the stream after the abort: %v", err)
		}
	})
}

// TestAbortInProgress: on non-blocking communicators, an all-reduce the
// other rank never joins stays in progress, and the call waits; Abort from
// another goroutine makes it give up with ErrClosed instead of waiting for
// it, and returns at once.
func TestAbortInProgress(t *testing.T) {
	requireNCCL(t)
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return
	}
	id := must(nccl.NewUniqueID())(t)
	comms := make([]*nccl.Comm, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() { comms[r], errs[r] = nccl.NewCommContext(context.Background(), ctxs[r], id, 2, r) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	defer comms[1].Close()
	s := cudatest.Stream(t, ctxs[0])
	b := must(cuda.Zeroed[float32](ctxs[0], 256))(t)
	defer b.Free()
	done := make(chan error, 1)
	go func() { done <- nccl.AllReduce(comms[0], b, b, nccl.Sum, s) }()
	select {
	case err := <-done:
		// NCCL may queue it without the other rank: nothing to give up.
		if err != nil {
			t.Fatalf("AllReduce: %v", err)
		}
		t.Log("the all-reduce was queued without the other rank")
		done <- nil
	case <-time.After(100 * time.Millisecond):
	}
	start := time.Now()
	if err := comms[0].Abort(); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Abort took %v", d)
	}
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("the all-reduce in progress after Abort: %v; want an error wrapping ErrClosed", err)
		}
		t.Logf("the all-reduce: %v", err)
	case <-time.After(2 * time.Second):
		t.Fatal("the all-reduce in progress did not return after Abort")
	}
	if err := s.Synchronize(); err != nil {
		t.Errorf("the stream after the abort: %v", err)
	}
}

// TestFailedReleaseRetried: a Free, Registration.Close or Abort that NCCL
// refuses leaves the object whole: the memory allocated and its buffer
// usable, the buffer registered, the registration held by the
// communicator; a second call releases it.
func TestFailedReleaseRetried(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	t.Run("Allocation.Free", func(t *testing.T) {
		a := must(nccl.Alloc(ctx, 64))(t)
		live := f.Live("device")
		f.Fail("ncclMemFree", 1, int(nccl.ResultInternalError))
		err := a.Free()
		var ne *nccl.Error
		if !errors.Is(err, nccl.ResultInternalError) || !errors.As(err, &ne) || ne.Op != "Allocation.Free" {
			t.Fatalf("Free with ncclMemFree failing: %v, want ncclInternalError of Allocation.Free", err)
		}
		if f.Live("device") != live {
			t.Errorf("the fake holds %d allocations, want %d", f.Live("device"), live)
		}
		if err := a.Buffer().CopyFromHost(make([]byte, 64)); err != nil {
			t.Errorf("the buffer after the failed Free: %v", err)
		}
		if strings.Contains(a.String(), "closed") {
			t.Errorf("after the failed Free: %v", a)
		}
		if err := a.Free(); err != nil {
			t.Fatalf("second Free: %v", err)
		}
		if f.Live("device") != live-1 || !strings.Contains(a.String(), "closed") {
			t.Errorf("after the second Free, %v: the fake holds %d allocations, want %d", a, f.Live("device"), live-1)
		}
		if err := a.Buffer().CopyFromHost(make([]byte, 64)); !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("the buffer after Free: %v, want ErrClosed", err)
		}
	})
	t.Run("Registration.Close", func(t *testing.T) {
		c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
		defer c.Close()
		b := must(cuda.Alloc[float32](ctx, 64))(t)
		defer b.Free()
		r := must(c.Register(b))(t)
		f.Fail("ncclCommDeregister", 1, int(nccl.ResultInternalError))
		if err := r.Close(); !errors.Is(err, nccl.ResultInternalError) {
			t.Fatalf("Close with ncclCommDeregister failing: %v", err)
		}
		if err := b.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Free of the buffer still registered: %v, want ErrInvalidValue", err)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if f.Live("ncclreg") != 0 {
			t.Errorf("the fake holds %d registrations", f.Live("ncclreg"))
		}
	})
	// An abort drops the registrations with the communicator, once NCCL
	// has: not before, when it refuses.
	t.Run("Comm.Abort", func(t *testing.T) {
		c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
		b := must(cuda.FromHost(ctx, []float32{1, 2}))(t)
		defer b.Free()
		r := must(c.Register(b))(t)
		f.Fail("ncclCommAbort", 1, int(nccl.ResultInternalError))
		if err := c.Abort(); !errors.Is(err, nccl.ResultInternalError) {
			t.Fatalf("Abort with ncclCommAbort failing: %v", err)
		}
		if err := b.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Free of a buffer the communicator still registers: %v, want ErrInvalidValue", err)
		}
		if strings.Contains(r.String(), "closed") {
			t.Errorf("after the failed Abort: %v", r)
		}
		if err := nccl.AllReduce(c, b, b, nccl.Sum, s); err != nil {
			t.Errorf("AllReduce after the failed Abort: %v", err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if err := c.Abort(); err != nil {
			t.Fatalf("second Abort: %v", err)
		}
		if !strings.Contains(r.String(), "closed") {
			t.Errorf("after the Abort: %v", r)
		}
	})
}

// TestReleaseAfterContextClose: a registration and a communicator whose
// context was closed first are still released (NCCL makes a context
// current itself), not refused for ever.
func TestReleaseAfterContextClose(t *testing.T) {
	requireNCCL(t)
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	b := must(cuda.Alloc[float32](ctx, 64))(t)
	r := must(c.Register(b))(t)
	r2 := must(c.Register(b))(t) // left for c's Close
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Registration.Close after the context's: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Comm.Close after the context's: %v", err)
	}
	if !strings.Contains(r2.String(), "closed") {
		t.Errorf("a registration after its communicator's Close: %v", r2)
	}
}

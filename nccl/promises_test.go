package nccl_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nccl"
)

// TestPromiseUniqueIDText: an id makes the round trip through its text,
// and text that is no id, or a nil *UniqueID to decode into, is an error
// wrapping cuda.ErrInvalidValue, never a panic.
func TestPromiseUniqueIDText(t *testing.T) {
	requireNCCL(t)
	id := must(nccl.NewUniqueID())(t)
	text := must(id.MarshalText())(t)
	var back nccl.UniqueID
	if err := back.UnmarshalText(text); err != nil || back != id {
		t.Fatalf("round trip: %v, same id: %v", err, back == id)
	}
	valid := strings.Repeat("ab", 128)
	for _, tt := range []struct {
		name string
		into *nccl.UniqueID
		text string
		says string
	}{
		{"nil id, valid text", nil, valid, "nil *UniqueID"},
		{"nil id, no text", nil, "", "nil *UniqueID"},
		{"odd digit", new(nccl.UniqueID), valid[:255] + "g", "want 256 hex digits"},
		{"spaces", new(nccl.UniqueID), " " + valid[1:], "want 256 hex digits"},
		{"one digit short", new(nccl.UniqueID), valid[:255], "got 255"},
		{"twice as long", new(nccl.UniqueID), valid + valid, "got 512"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}()
				err = tt.into.UnmarshalText([]byte(tt.text))
			}()
			cudatest.WantErr(t, "UnmarshalText", err, cuda.ErrInvalidValue, tt.says)
			if tt.into != nil && *tt.into != (nccl.UniqueID{}) {
				t.Errorf("a failed UnmarshalText changed the id")
			}
		})
	}
}

// TestPromiseEmptyOnClosed: a collective, send or receive of no elements
// holds what one with work holds: on a closed communicator, a closed
// stream or a freed buffer it returns cuda.ErrClosed saying which, and
// queues nothing.
func TestPromiseEmptyOnClosed(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	defer c.Close()
	closedComm := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	if err := closedComm.Close(); err != nil {
		t.Fatal(err)
	}
	closedStream := must(ctx.NewStream())(t)
	if err := closedStream.Close(); err != nil {
		t.Fatal(err)
	}
	empty := func() *cuda.DeviceBuffer[float32] {
		b := must(cuda.Alloc[float32](ctx, 0))(t)
		t.Cleanup(func() { b.Free() })
		return b
	}
	dst, src := empty(), empty()
	freed := empty()
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	type call func(c *nccl.Comm, dst, src *cuda.DeviceBuffer[float32], s *cuda.Stream) error
	calls := map[string]call{
		"AllReduce": func(c *nccl.Comm, dst, src *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return nccl.AllReduce(c, dst, src, nccl.Sum, s)
		},
		"Broadcast": func(c *nccl.Comm, dst, src *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return nccl.Broadcast(c, dst, src, 0, s)
		},
		"Reduce": func(c *nccl.Comm, dst, src *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return nccl.Reduce(c, dst, src, nccl.Max, 0, s)
		},
		"AllGather": func(c *nccl.Comm, dst, src *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return nccl.AllGather(c, dst, src, s)
		},
		"ReduceScatter": func(c *nccl.Comm, dst, src *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return nccl.ReduceScatter(c, dst, src, nccl.Avg, s)
		},
		"AllToAll": func(c *nccl.Comm, dst, src *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return nccl.AllToAll(c, dst, src, s)
		},
		"Send": func(c *nccl.Comm, _, src *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return nccl.Send(c, src, 0, s)
		},
		"Recv": func(c *nccl.Comm, dst, _ *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
			return nccl.Recv(c, dst, 0, s)
		},
	}
	for name, fn := range calls {
		for _, tt := range []struct {
			what     string
			c        *nccl.Comm
			dst, src *cuda.DeviceBuffer[float32]
			s        *cuda.Stream
			says     string
		}{
			{"closed communicator", closedComm, dst, src, s, "the communicator is closed"},
			{"closed stream", c, dst, src, closedStream, "the stream is closed"},
			{"freed dst", c, freed, src, s, "dst is freed"},
			{"freed src", c, dst, freed, s, "src is freed"},
		} {
			if name == "Send" && tt.what == "freed dst" || name == "Recv" && tt.what == "freed src" {
				continue // the call has no such buffer
			}
			t.Run(name+"/"+tt.what, func(t *testing.T) {
				err := fn(tt.c, tt.dst, tt.src, tt.s)
				cudatest.WantErr(t, name, err, cuda.ErrClosed, tt.says)
			})
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// TestPromiseStreams: a zero cuda.Stream is called one, not a stream of
// another context, and Comm.Wait's errors are Comm.Wait's, of the call
// made, also where the stream's Query failed.
func TestPromiseStreams(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	defer c.Close()
	buf := must(cuda.Alloc[int32](ctx, 4))(t)
	defer buf.Free()
	other := must(cuda.Alloc[int32](ctx, 4))(t)
	defer other.Free()
	closedStream := must(ctx.NewStream())(t)
	if err := closedStream.Close(); err != nil {
		t.Fatal(err)
	}
	zero := new(cuda.Stream)
	inval := cuda.ErrInvalidValue
	checkArgErrors(t, []argError{
		{"AllReduce", nccl.AllReduce(c, buf, buf, nccl.Sum, zero), inval, "a zero cuda.Stream"},
		{"Broadcast", nccl.Broadcast(c, buf, buf, 0, zero), inval, "a zero cuda.Stream"},
		{"AllToAll", nccl.AllToAll(c, buf, other, zero), inval, "a zero cuda.Stream"},
		{"Send", nccl.Send(c, buf, 0, zero), inval, "a zero cuda.Stream"},
		{"Comm.Wait", c.Wait(context.Background(), zero), inval, "a zero cuda.Stream"},
		{"Comm.Wait", c.Wait(context.Background(), closedStream), cuda.ErrClosed, "the stream is closed"},
	})
}

// TestPromiseRankBounds: a number of ranks out of range says the range,
// also where it is too many rather than too few.
func TestPromiseRankBounds(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	id := must(nccl.NewUniqueID())(t)
	for _, tt := range []struct {
		nranks, rank int
		says         string
	}{
		{0, 0, "0 ranks: want at least 1"},
		{-1, 0, "-1 ranks: want at least 1"},
		{1<<30 + 1, 0, "at most 1073741824"},
		{1 << 31, 0, "at most 1073741824"},
		{1, 1, "rank 1 out of range [0, 1)"},
		{2, -1, "rank -1 out of range [0, 2)"},
	} {
		_, err := nccl.NewComm(ctx, id, tt.nranks, tt.rank)
		cudatest.WantErr(t, "NewComm", err, cuda.ErrInvalidValue, tt.says)
		_, err = nccl.NewCommContext(context.Background(), ctx, id, tt.nranks, tt.rank)
		cudatest.WantErr(t, "NewCommContext", err, cuda.ErrInvalidValue, tt.says)
	}
}

// TestPromiseZeroValues: every exported type's zero value returns
// cuda.ErrInvalidValue or works, and says what it is.
func TestPromiseZeroValues(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	buf := must(cuda.Alloc[float32](ctx, 4))(t)
	defer buf.Free()
	zc, za, zr := new(nccl.Comm), new(nccl.Allocation), new(nccl.Registration)
	inval := cuda.ErrInvalidValue
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"Comm.Close", zc.Close()},
		{"Comm.Abort", zc.Abort()},
		{"Comm.Err", zc.Err()},
		{"Comm.Wait", zc.Wait(context.Background(), s)},
		{"Comm.Split", errOf(zc.Split(0, 0))},
		{"Comm.Register", errOf(zc.Register(buf))},
		{"AllReduce", nccl.AllReduce(zc, buf, buf, nccl.Sum, s)},
		{"AllGather", nccl.AllGather(zc, buf, buf, s)},
		{"ReduceScatter", nccl.ReduceScatter(zc, buf, buf, nccl.Sum, s)},
		{"AllToAll", nccl.AllToAll(zc, buf, buf, s)},
		{"Recv", nccl.Recv(zc, buf, 0, s)},
		{"Allocation.Free", za.Free()},
		{"Registration.Close", zr.Close()},
		{"ShareUniqueID", errOf(nccl.ShareUniqueID(context.Background(), nccl.Launch{}))},
	} {
		t.Run(tt.name, func(t *testing.T) { cudatest.WantErr(t, tt.name, tt.err, inval, "") })
	}
	if za.Buffer() != nil || zc.Rank() != 0 || zc.Size() != 0 {
		t.Errorf("zero values: Allocation.Buffer %v, Comm rank %d of %d", za.Buffer(), zc.Rank(), zc.Size())
	}
	for _, str := range []string{zc.String(), za.String(), zr.String(), nccl.UniqueID{}.String(), nccl.Op(0).String(), nccl.Op(99).String()} {
		if str == "" {
			t.Error("a zero value's String is empty")
		}
	}
}

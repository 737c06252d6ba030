package nccl_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/track"
	"github.com/gocuda/cuda/nccl"
)

func TestMain(m *testing.M) {
	// Keep NVLink multicast off: see CONTRIBUTING.md.
	os.Setenv("NCCL_NVLS_ENABLE", "0")
	// A GPU without NCCL: these tests (and the example) run against the
	// fake driver, which answers NCCL's calls too, except where the GPU
	// machine's scripts require the real thing.
	if os.Getenv(nccl.EnvLibrary) == "" && os.Getenv(cudatest.EnvRequireGPU) != "1" && !cudatest.Loadable("libnccl.so.2") {
		os.Setenv(cudatest.EnvDriver, "fake")
	}
	cudatest.Main(m)
}

func TestUniqueIDText(t *testing.T) {
	var id nccl.UniqueID
	for i := range id {
		id[i] = byte(i * 7)
	}
	text, err := id.MarshalText()
	if err != nil || len(text) != 256 {
		t.Fatalf("MarshalText = %d bytes, %v", len(text), err)
	}
	var back nccl.UniqueID
	if err := back.UnmarshalText(text); err != nil || back != id {
		t.Fatalf("UnmarshalText = %v; equal: %v", err, back == id)
	}
	for _, bad := range []string{"", "zz", strings.Repeat("ab", 127), strings.Repeat("ab", 129), strings.Repeat("g", 256)} {
		if err := back.UnmarshalText([]byte(bad)); !errors.Is(err, cuda.ErrInvalidValue) || back != id {
			t.Errorf("UnmarshalText(%d bytes) = %v (id changed: %v)", len(bad), err, back != id)
		}
	}
}

// TestOneRank runs every collective on a communicator of one rank, made
// through a unique id: on any machine with one device.
func TestOneRank(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	id := must(nccl.NewUniqueID())(t)
	c := must(nccl.NewComm(ctx, id, 1, 0))(t)
	defer c.Close()
	if c.Rank() != 0 || c.Size() != 1 || c.Context() != ctx {
		t.Fatalf("rank %d of %d, context %p", c.Rank(), c.Size(), c.Context())
	}
	t.Run("float32", func(t *testing.T) { oneRank[float32](t, c, s) })
	t.Run("float64", func(t *testing.T) { oneRank[float64](t, c, s) })
	t.Run("int32", func(t *testing.T) { oneRank[int32](t, c, s) })
	t.Run("uint8", func(t *testing.T) { oneRank[uint8](t, c, s) })
	t.Run("int64", func(t *testing.T) { oneRank[int64](t, c, s) })
	t.Run("celsius", func(t *testing.T) { oneRank[celsius](t, c, s) })
}

// celsius is a type defined on float32, which Element admits.
type celsius float32

// oneRank runs each collective from src into dst, each filled first with
// 0xff bytes: on one rank, every collective copies src into dst, and a
// call that took its buffers the other way round would leave dst as it
// was and overwrite src.
func oneRank[T nccl.Element](t *testing.T, c *nccl.Comm, s *cuda.Stream) {
	const n = 100003
	ctx := c.Context()
	want := numbers[T](n)
	src := must(cuda.FromHost(ctx, want))(t)
	defer src.Free()
	dst := must(cuda.Alloc[T](ctx, n))(t)
	defer dst.Free()
	for name, run := range map[string]func() error{
		"AllReduce":     func() error { return nccl.AllReduce(c, dst, src, nccl.Sum, s) },
		"AllReduceMax":  func() error { return nccl.AllReduce(c, dst, src, nccl.Max, s) },
		"Broadcast":     func() error { return nccl.Broadcast(c, dst, src, 0, s) },
		"Reduce":        func() error { return nccl.Reduce(c, dst, src, nccl.Sum, 0, s) },
		"AllGather":     func() error { return nccl.AllGather(c, dst, src, s) },
		"ReduceScatter": func() error { return nccl.ReduceScatter(c, dst, src, nccl.Min, s) },
		"AllToAll":      func() error { return nccl.AllToAll(c, dst, src, s) },
	} {
		if err := dst.Memset8(0xff); err != nil {
			t.Fatal(err)
		}
		if err := run(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		equal(t, name+": dst", cudatest.Download(t, dst), want)
		equal(t, name+": src", cudatest.Download(t, src), want)
	}
}

// TestCollectives runs every collective across two devices, against the
// same computed on the CPU: one goroutine drives both ranks in a Group.
func TestCollectives(t *testing.T) {
	requireNCCL(t)
	ctxs, comms := twoRanks(t)
	if ctxs == nil {
		return
	}
	streams := []*cuda.Stream{cudatest.Stream(t, ctxs[0]), cudatest.Stream(t, ctxs[1])}
	for i, c := range comms {
		if c.Rank() != i || c.Size() != 2 || c.Context() != ctxs[i] {
			t.Fatalf("comm %d: %v", i, c)
		}
	}
	t.Run("float32", func(t *testing.T) { collectives[float32](t, comms, streams) })
	t.Run("float64", func(t *testing.T) { collectives[float64](t, comms, streams) })
	t.Run("int32", func(t *testing.T) { collectives[int32](t, comms, streams) })
	t.Run("uint64", func(t *testing.T) { collectives[uint64](t, comms, streams) })
	t.Run("int8", func(t *testing.T) { collectives[int8](t, comms, streams) })
}

// collectives runs each collective from src into dst and checks both: the
// ranks' src differ, and AllGather's and ReduceScatter's dst and src differ
// in length, so that a call taking them the other way round fails.
func collectives[T nccl.Element](t *testing.T, comms []*nccl.Comm, streams []*cuda.Stream) {
	const n = 4099 // odd: the reduce-scatter's blocks are n each
	ranks := len(comms)
	in := make([][]T, ranks)
	src := make([]*cuda.DeviceBuffer[T], ranks)
	dst := make([]*cuda.DeviceBuffer[T], ranks)
	for r, c := range comms {
		in[r] = numbers[T](ranks * n)
		src[r] = must(cuda.FromHost(c.Context(), in[r]))(t)
		defer src[r].Free()
		dst[r] = must(cuda.Alloc[T](c.Context(), ranks*n))(t)
		defer dst[r].Free()
	}
	block := func(b *cuda.DeviceBuffer[T], i int) *cuda.DeviceBuffer[T] { return must(b.Slice(i*n, n))(t) }
	fold := func(op func(a, b T) T, off, k int) []T {
		out := append([]T(nil), in[0][off:off+k]...)
		for r := 1; r < ranks; r++ {
			for i := range out {
				out[i] = op(out[i], in[r][off+i])
			}
		}
		return out
	}
	sum := func(a, b T) T { return a + b }
	maxOf := func(a, b T) T { return max(a, b) }
	cases := []struct {
		name string
		run  func(r int) error
		want func(r int) []T // rank r's whole dst
	}{
		{"AllReduceSum", func(r int) error { return nccl.AllReduce(comms[r], dst[r], src[r], nccl.Sum, streams[r]) },
			func(int) []T { return fold(sum, 0, ranks*n) }},
		{"AllReduceMax", func(r int) error { return nccl.AllReduce(comms[r], dst[r], src[r], nccl.Max, streams[r]) },
			func(int) []T { return fold(maxOf, 0, ranks*n) }},
		{"Broadcast", func(r int) error { return nccl.Broadcast(comms[r], dst[r], src[r], 1, streams[r]) },
			func(int) []T { return in[1] }},
		{"Reduce", func(r int) error {
			return nccl.Reduce(comms[r], block(dst[r], 0), block(src[r], 0), nccl.Sum, 0, streams[r])
		}, func(r int) []T {
			if r == 0 {
				return append(fold(sum, 0, n), make([]T, (ranks-1)*n)...)
			}
			return make([]T, ranks*n)
		}},
		{"AllGather", func(r int) error { return nccl.AllGather(comms[r], dst[r], block(src[r], 0), streams[r]) },
			func(int) []T {
				var out []T
				for r := range ranks {
					out = append(out, in[r][:n]...)
				}
				return out
			}},
		{"ReduceScatter", func(r int) error {
			return nccl.ReduceScatter(comms[r], block(dst[r], 0), src[r], nccl.Sum, streams[r])
		},
			func(r int) []T { return append(fold(sum, r*n, n), make([]T, (ranks-1)*n)...) }},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			for r := range ranks {
				if err := dst[r].Memset8(0); err != nil {
					t.Fatal(err)
				}
			}
			err := nccl.Group(func() error {
				for r := range ranks {
					if err := tt.run(r); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for r := range ranks {
				if err := streams[r].Synchronize(); err != nil {
					t.Fatal(err)
				}
				equal(t, fmt.Sprintf("rank %d: dst", r), cudatest.Download(t, dst[r]), tt.want(r))
				equal(t, fmt.Sprintf("rank %d: src", r), cudatest.Download(t, src[r]), in[r])
			}
		})
	}
}

// TestUniqueIDRanks makes a communicator of two ranks through a unique id,
// one goroutine per rank, then all-reduces.
func TestUniqueIDRanks(t *testing.T) {
	requireNCCL(t)
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return
	}
	id := must(nccl.NewUniqueID())(t)
	const n = 1 << 16
	in := [][]float32{numbers[float32](n), numbers[float32](n)}
	out := make([][]float32, 2)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() {
			errs[r] = func() error {
				c, err := nccl.NewComm(ctxs[r], id, 2, r)
				if err != nil {
					return err
				}
				defer c.Close()
				s, err := ctxs[r].NewStream()
				if err != nil {
					return err
				}
				defer s.Close()
				b, err := cuda.FromHost(ctxs[r], in[r])
				if err != nil {
					return err
				}
				defer b.Free()
				if err := nccl.AllReduce(c, b, b, nccl.Sum, s); err != nil { // in place
					return err
				}
				out[r] = make([]float32, n)
				if err := b.CopyToHostAsync(out[r], s); err != nil {
					return err
				}
				return s.Synchronize()
			}()
			if errs[r] != nil {
				t.Logf("rank %d: %v", r, errs[r])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r := range 2 {
		for i := range n {
			if want := in[0][i] + in[1][i]; out[r][i] != want {
				t.Fatalf("rank %d, element %d: %v, want %v", r, i, out[r][i], want)
			}
		}
	}
}

// A communicator is not made on a closed context, whichever rank it is.
func TestNewCommsClosedContext(t *testing.T) {
	requireNCCL(t)
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return
	}
	if err := ctxs[1].Close(); err != nil {
		t.Fatal(err)
	}
	comms, err := nccl.NewComms(ctxs)
	if !errors.Is(err, cuda.ErrClosed) {
		for _, c := range comms {
			c.Close()
		}
		t.Fatalf("NewComms with context 1 closed: %v, want ErrClosed", err)
	}
}

func TestErrors(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	defer c.Close()
	other := must(cuda.NewContext(cudatest.Device(t)))(t)
	defer other.Close()
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"NewComm nil context", errOf(nccl.NewComm(nil, nccl.UniqueID{}, 1, 0)), cuda.ErrInvalidValue},
		{"NewComm no ranks", errOf(nccl.NewComm(ctx, nccl.UniqueID{}, 0, 0)), cuda.ErrInvalidValue},
		{"NewComm rank out of range", errOf(nccl.NewComm(ctx, nccl.UniqueID{}, 2, 2)), cuda.ErrInvalidValue},
		{"NewComms none", errOf(nccl.NewComms(nil)), cuda.ErrInvalidValue},
		{"NewComms nil context", errOf(nccl.NewComms([]*cuda.Context{ctx, nil})), cuda.ErrInvalidValue},
		{"NewComms one device twice", errOf(nccl.NewComms([]*cuda.Context{ctx, other})), cuda.ErrInvalidValue},
		{"Group nil", nccl.Group(nil), cuda.ErrInvalidValue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.want) {
				t.Fatalf("got %v, want %v", tt.err, tt.want)
			}
			t.Log(tt.err)
		})
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	var nilComm *nccl.Comm
	if err := nilComm.Close(); err != nil || nilComm.Abort() != nil {
		t.Errorf("nil Close: %v", err)
	}
	if nilComm.Rank() != 0 || nilComm.Size() != 0 || nilComm.Context() != nil || nilComm.String() == "" {
		t.Error("nil Comm accessors")
	}
}

// TestArgumentErrors: each collective, send and receive refuses what it
// cannot take before NCCL sees it, with an error of the call as made that
// names the parameter at fault as the signature does.
func TestArgumentErrors(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	defer c.Close()
	other := must(cuda.NewContext(cudatest.Device(t)))(t)
	defer other.Close()
	otherStream := must(other.NewStream())(t)
	defer otherStream.Close()
	closedComm := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	closedComm.Close()
	a := must(cuda.Alloc[float32](ctx, 64))(t)
	defer a.Free()
	b := must(cuda.Alloc[float32](ctx, 64))(t)
	defer b.Free()
	short := must(cuda.Alloc[float32](ctx, 63))(t)
	defer short.Free()
	foreign := must(cuda.Alloc[float32](other, 64))(t)
	defer foreign.Free()
	freed := must(cuda.Alloc[float32](ctx, 64))(t)
	freed.Free()
	zero := new(cuda.DeviceBuffer[float32])
	// lo and hi overlap, neither in place of the other.
	lo, hi := must(a.Slice(0, 32))(t), must(a.Slice(16, 32))(t)
	inval, closed := cuda.ErrInvalidValue, cuda.ErrClosed
	checkArgErrors(t, []argError{
		{"Comm.Wait", closedComm.Wait(context.Background(), s), closed, "the communicator is closed"},
		{"Comm.Err", closedComm.Err(), closed, "the communicator is closed"},
		{"Comm.Split", errOf(closedComm.Split(0, 0)), closed, "the communicator is closed"},
		{"Comm.Register", errOf(closedComm.Register(a)), closed, "the communicator is closed"},
		//lint:ignore SA1012 a nil context is the bad input under test
		{"Comm.Wait", c.Wait(nil, s), inval, "nil context.Context"},
		{"Comm.Split", errOf(c.Split(-2, 0)), inval, "color -2"},
		{"Comm.Register", errOf(c.Register(foreign)), inval, "buf belongs to another context than the communicator's rank"},
		{"NewComm", errOf(nccl.NewComm(ctx, nccl.UniqueID{}, 1, 0)), inval, "a zero UniqueID"},
		{"NewCommContext", errOf(nccl.NewCommContext(context.Background(), ctx, nccl.UniqueID{}, 1, 0)), inval, "a zero UniqueID"},
		{"AllReduce", nccl.AllReduce(c, lo, hi, nccl.Sum, s), inval, "dst and src overlap: in place, they are the same buffer"},
		{"Broadcast", nccl.Broadcast(c, hi, lo, 0, s), inval, "dst and src overlap"},
		{"Reduce", nccl.Reduce(c, lo, hi, nccl.Sum, 0, s), inval, "dst and src overlap"},
		{"AllGather", nccl.AllGather(c, lo, hi, s), inval, "src overlaps dst other than as rank 0's block of it (dst.Slice(0, 32))"},
		{"ReduceScatter", nccl.ReduceScatter(c, hi, lo, nccl.Sum, s), inval, "dst overlaps src other than as rank 0's block of it (src.Slice(0, 32))"},
		{"AllReduce", nccl.AllReduce(nil, a, b, nccl.Sum, s), inval, "nil *Comm"},
		{"AllReduce", nccl.AllReduce(&nccl.Comm{}, a, b, nccl.Sum, s), inval, "a zero Comm"},
		{"AllReduce", nccl.AllReduce(closedComm, a, b, nccl.Sum, s), closed, "the communicator is closed"},
		{"AllReduce", nccl.AllReduce(c, nil, b, nccl.Sum, s), inval, "dst is nil"},
		{"AllReduce", nccl.AllReduce(c, a, nil, nccl.Sum, s), inval, "src is nil"},
		{"AllReduce", nccl.AllReduce(c, zero, b, nccl.Sum, s), inval, "dst is a zero DeviceBuffer"},
		{"AllReduce", nccl.AllReduce(c, a, foreign, nccl.Sum, s), inval, "src belongs to another context"},
		{"AllReduce", nccl.AllReduce(c, foreign, a, nccl.Sum, s), inval, "dst belongs to another context"},
		{"AllReduce", nccl.AllReduce(c, a, short, nccl.Sum, s), inval, "dst has 64 elements, src 63: want the same"},
		{"AllReduce", nccl.AllReduce(c, a, b, nccl.Op(9), s), inval, "op 9 is no reduction"},
		{"AllReduce", nccl.AllReduce(c, a, b, nccl.Sum, nil), inval, "nil *cuda.Stream"},
		{"AllReduce", nccl.AllReduce(c, a, b, nccl.Sum, otherStream), inval, "the stream belongs to another context"},
		{"AllReduce", nccl.AllReduce(c, freed, b, nccl.Sum, s), closed, "dst is freed"},
		{"AllReduce", nccl.AllReduce(c, a, freed, nccl.Sum, s), closed, "src is freed"},
		{"Broadcast", nccl.Broadcast(c, a, b, 1, s), inval, "root 1 out of range [0, 1)"},
		{"Broadcast", nccl.Broadcast(c, a, b, -1, s), inval, "root -1 out of range"},
		{"Broadcast", nccl.Broadcast(c, short, b, 0, s), inval, "dst has 63 elements, src 64"},
		{"Broadcast", nccl.Broadcast(c, a, nil, 0, s), inval, "src is nil"},
		{"Broadcast", nccl.Broadcast(c, a, freed, 0, s), closed, "src is freed"},
		{"Reduce", nccl.Reduce(c, a, b, nccl.Sum, 1, s), inval, "root 1 out of range"},
		{"Reduce", nccl.Reduce(c, a, b, nccl.Op(-1), 0, s), inval, "op -1 is no reduction"},
		{"Reduce", nccl.Reduce(c, nil, b, nccl.Sum, 0, s), inval, "dst is nil"},
		{"Reduce", nccl.Reduce(c, a, b, nccl.Sum, 0, nil), inval, "nil *cuda.Stream"},
		{"AllGather", nccl.AllGather(nil, a, b, s), inval, "nil *Comm"},
		{"AllGather", nccl.AllGather(c, a, short, s), inval, "dst has 64 elements, src 63"},
		{"AllGather", nccl.AllGather(c, a, nil, s), inval, "src is nil"},
		{"AllGather", nccl.AllGather(c, freed, b, s), closed, "dst is freed"},
		{"ReduceScatter", nccl.ReduceScatter(nil, a, b, nccl.Sum, s), inval, "nil *Comm"},
		{"ReduceScatter", nccl.ReduceScatter(c, short, a, nccl.Sum, s), inval, "dst has 63 elements, src 64"},
		{"ReduceScatter", nccl.ReduceScatter(c, a, b, nccl.Avg+1, s), inval, "op 5 is no reduction"},
		{"ReduceScatter", nccl.ReduceScatter(c, a, foreign, nccl.Sum, s), inval, "src belongs to another context"},
		{"AllToAll", nccl.AllToAll(nil, a, b, s), inval, "nil *Comm"},
		{"AllToAll", nccl.AllToAll(c, a, short, s), inval, "dst has 64 elements, src 63"},
		{"AllToAll", nccl.AllToAll(c, a, a, s), inval, "dst and src overlap"},
		{"AllToAll", nccl.AllToAll(c, a, b, nil), inval, "nil *cuda.Stream"},
		{"AllToAll", nccl.AllToAll(c, a, freed, s), closed, "src is freed"},
		{"Send", nccl.Send(c, a, 1, s), inval, "peer 1 out of range [0, 1)"},
		{"Send", nccl.Send[float32](c, nil, 0, s), inval, "src is nil"},
		{"Send", nccl.Send(c, freed, 0, s), closed, "src is freed"},
		{"Send", nccl.Send(c, foreign, 0, s), inval, "src belongs to another context"},
		{"Recv", nccl.Recv(c, a, -1, s), inval, "peer -1 out of range"},
		{"Recv", nccl.Recv[float32](c, nil, 0, s), inval, "dst is nil"},
		{"Recv", nccl.Recv(c, zero, 0, s), inval, "dst is a zero DeviceBuffer"},
		{"Recv", nccl.Recv(c, a, 0, otherStream), inval, "the stream belongs to another context"},
	})
	// The lengths that depend on the number of ranks, on two.
	t.Run("two ranks", func(t *testing.T) {
		ctxs, comms := twoRanks(t)
		if ctxs == nil {
			return
		}
		c, s := comms[0], cudatest.Stream(t, ctxs[0])
		two := must(cuda.Alloc[int32](ctxs[0], 2))(t)
		defer two.Free()
		three := must(cuda.Alloc[int32](ctxs[0], 3))(t)
		defer three.Free()
		three2 := must(cuda.Alloc[int32](ctxs[0], 3))(t)
		defer three2.Free()
		four := must(cuda.Alloc[int32](ctxs[0], 4))(t)
		defer four.Free()
		checkArgErrors(t, []argError{
			// Rank 0's block is the first: the second is rank 1's place.
			{"AllGather", nccl.AllGather(c, four, must(four.Slice(2, 2))(t), s), inval, "src overlaps dst other than as rank 0's block of it (dst.Slice(0, 2))"},
			{"ReduceScatter", nccl.ReduceScatter(c, must(four.Slice(1, 2))(t), four, nccl.Sum, s), inval, "dst overlaps src other than as rank 0's block of it (src.Slice(0, 2))"},
			{"AllGather", nccl.AllGather(c, two, two, s), inval, "dst has 2 elements, want 4 (2 ranks × the 2 of src)"},
			{"ReduceScatter", nccl.ReduceScatter(c, two, two, nccl.Sum, s), inval, "src has 2 elements, want 4 (2 ranks × the 2 of dst)"},
			{"AllToAll", nccl.AllToAll(c, three, three2, s), inval, "src has 3 elements: want a block for each of the 2 ranks"},
			{"Broadcast", nccl.Broadcast(c, two, two, 2, s), inval, "root 2 out of range [0, 2)"},
			{"Send", nccl.Send(c, two, 2, s), inval, "peer 2 out of range [0, 2)"},
		})
	})
}

// argError is a call's error, and what it should be: of op, matching
// sentinel, saying says.
type argError struct {
	op       string
	err      error
	sentinel error
	says     string
}

// checkArgErrors fails t for each case whose error is not what it should be.
func checkArgErrors(t *testing.T, cases []argError) {
	t.Helper()
	for _, tt := range cases {
		var op string
		var ne *nccl.Error
		var ce *cuda.Error
		switch {
		case errors.As(tt.err, &ne):
			op = ne.Op
		case errors.As(tt.err, &ce):
			op = ce.Op
		}
		if op != tt.op || !errors.Is(tt.err, tt.sentinel) || !strings.Contains(fmt.Sprint(tt.err), tt.says) {
			t.Errorf("%v: want an error of %s, wrapping %v, saying %q", tt.err, tt.op, tt.sentinel, tt.says)
		}
	}
}

// TestNCCLErrors: NCCL's errors carry its code and text, and a failing fn
// still ends its group.
func TestNCCLErrors(t *testing.T) {
	requireNCCL(t)
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	defer c.Close()
	a := must(cuda.Alloc[int32](ctx, 16))(t)
	defer a.Free()
	f.Fail("ncclAllReduce", 1, int(nccl.ResultInvalidUsage))
	err := nccl.AllReduce(c, a, a, nccl.Sum, s)
	var ne *nccl.Error
	if !errors.As(err, &ne) || ne.Call != "ncclAllReduce" || !errors.Is(err, nccl.ResultInvalidUsage) ||
		!errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "invalid usage") {
		t.Fatalf("injected ncclInvalidUsage: %v", err)
	}
	f.Fail("ncclAllReduce", 1, int(nccl.ResultRemoteError))
	if err := nccl.AllReduce(c, a, a, nccl.Sum, s); !errors.Is(err, nccl.ResultRemoteError) || errors.Is(err, cuda.ErrInvalidValue) {
		t.Fatalf("injected ncclRemoteError: %v", err)
	}
	mine := errors.New("fn failed")
	f.Fail("ncclGroupEnd", 1, int(nccl.ResultInternalError))
	if err := nccl.Group(func() error { return mine }); !errors.Is(err, mine) || !errors.Is(err, nccl.ResultInternalError) {
		t.Fatalf("Group = %v, want fn's error and ncclGroupEnd's", err)
	}
	// The group above ended: a new one starts and ends cleanly.
	if err := nccl.Group(func() error { return nccl.AllReduce(c, a, a, nccl.Sum, s) }); err != nil {
		t.Fatal(err)
	}
	f.Fail("ncclCommInitRankScalable", 1, int(nccl.ResultSystemError))
	if _, err := nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0); !errors.Is(err, nccl.ResultSystemError) {
		t.Fatalf("NewComm with an injected failure: %v", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

func TestNoLibrary(t *testing.T) {
	if os.Getenv(nccl.EnvLibrary) != "/nonexistent/libnccl.so.2" {
		cudatest.RunChild(t, nccl.EnvLibrary+"=/nonexistent/libnccl.so.2")
		return
	}
	_, err := nccl.Version()
	if !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "/nonexistent/libnccl.so.2") {
		t.Fatalf("Version without NCCL: %v", err)
	}
	ctx := cudatest.Context(t)
	for name, err := range map[string]error{
		"Library":     errOf(nccl.Library()),
		"NewUniqueID": errOf(nccl.NewUniqueID()),
		"NewComm":     errOf(nccl.NewComm(ctx, nccl.UniqueID{}, 1, 0)),
		"NewComms":    errOf(nccl.NewComms([]*cuda.Context{ctx})),
		"Group":       nccl.Group(func() error { return nil }),
	} {
		if !errors.Is(err, cuda.ErrNotSupported) {
			t.Errorf("%s without NCCL: %v", name, err)
		}
	}
}

// TestCommForgotten: a communicator nobody closed is destroyed by its
// cleanup once unreachable, and counted as forgotten.
func TestCommForgotten(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	before := track.Take().Forgotten[track.Comm]
	func() { must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t) }()
	if !cudatest.GC(func() bool { return track.Take().Forgotten[track.Comm] > before }) {
		t.Fatal("the cleanup of an unreachable communicator did not run")
	}
}

// TestFailedCloseRetried: a Close or Abort that NCCL refuses leaves the
// communicator owned and usable, its resources held; a second one frees
// them.
func TestFailedCloseRetried(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	buf := must(cuda.FromHost(ctx, []float32{1, 2, 3}))(t)
	defer buf.Free()
	for _, how := range []struct {
		name, call string
		close      func(*nccl.Comm) error
	}{{"Close", "ncclCommDestroy", (*nccl.Comm).Close}, {"Abort", "ncclCommAbort", (*nccl.Comm).Abort}} {
		t.Run(how.name, func(t *testing.T) {
			c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
			live := f.Live("comm")
			f.Fail(how.call, 1, 3) // ncclInternalError
			err := how.close(c)
			if !errors.Is(err, nccl.Result(3)) {
				t.Fatalf("%s with ncclCommDestroy failing: %v, want ncclInternalError", how.name, err)
			}
			if f.Live("comm") != live {
				t.Errorf("the fake holds %d communicators, want %d", f.Live("comm"), live)
			}
			if err := nccl.AllReduce(c, buf, buf, nccl.Sum, s); err != nil {
				t.Errorf("AllReduce after the failed %s: %v", how.name, err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
			if err := how.close(c); err != nil {
				t.Fatalf("second %s: %v", how.name, err)
			}
			if f.Live("comm") != live-1 {
				t.Errorf("the fake holds %d communicators after the second %s, want %d", f.Live("comm"), how.name, live-1)
			}
		})
	}
}

// TestInPlace runs each collective in place, where NCCL's documentation
// places it: AllReduce, Broadcast and Reduce on one buffer, AllGather's src
// at the rank's block of dst, ReduceScatter's dst at the rank's block of
// src. The overlaps that are not in place are refused (TestArgumentErrors).
func TestInPlace(t *testing.T) {
	requireNCCL(t)
	ctxs, comms := twoRanks(t)
	if ctxs == nil {
		return
	}
	streams := []*cuda.Stream{cudatest.Stream(t, ctxs[0]), cudatest.Stream(t, ctxs[1])}
	const n = 1001
	in := [][]int32{numbers[int32](2 * n), numbers[int32](2 * n)}
	buf := make([]*cuda.DeviceBuffer[int32], 2)
	for r := range buf {
		buf[r] = must(cuda.FromHost(ctxs[r], in[r]))(t)
		defer buf[r].Free()
	}
	block := func(r int) *cuda.DeviceBuffer[int32] { return must(buf[r].Slice(r*n, n))(t) }
	sum := make([]int32, 2*n)
	for i := range sum {
		sum[i] = in[0][i] + in[1][i]
	}
	for _, tt := range []struct {
		name string
		run  func(r int) error
		want func(r int) []int32 // rank r's whole buffer
	}{
		{"AllReduce", func(r int) error { return nccl.AllReduce(comms[r], buf[r], buf[r], nccl.Sum, streams[r]) },
			func(int) []int32 { return sum }},
		{"Broadcast", func(r int) error { return nccl.Broadcast(comms[r], buf[r], buf[r], 1, streams[r]) },
			func(int) []int32 { return in[1] }},
		{"Reduce", func(r int) error { return nccl.Reduce(comms[r], buf[r], buf[r], nccl.Sum, 0, streams[r]) },
			func(r int) []int32 { return map[int][]int32{0: sum, 1: in[1]}[r] }},
		{"AllGather", func(r int) error { return nccl.AllGather(comms[r], buf[r], block(r), streams[r]) },
			func(int) []int32 { return append(append([]int32(nil), in[0][:n]...), in[1][n:]...) }},
		{"ReduceScatter", func(r int) error { return nccl.ReduceScatter(comms[r], block(r), buf[r], nccl.Sum, streams[r]) },
			func(r int) []int32 {
				out := append([]int32(nil), in[r]...)
				copy(out[r*n:], sum[r*n:(r+1)*n])
				return out
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for r := range buf {
				if err := buf[r].CopyFromHost(in[r]); err != nil {
					t.Fatal(err)
				}
			}
			err := nccl.Group(func() error { return errors.Join(tt.run(0), tt.run(1)) })
			if err != nil {
				t.Fatal(err)
			}
			for r := range buf {
				if err := streams[r].Synchronize(); err != nil {
					t.Fatal(err)
				}
				equal(t, fmt.Sprintf("rank %d", r), cudatest.Download(t, buf[r]), tt.want(r))
			}
		})
	}
}

// TestEmpty: every collective, send and receive of no elements is done at
// once, as NCCL's are (a collective of count 0 queues nothing; a send and
// receive of 0 still meet), on one rank and on two, on buffers of no
// memory.
func TestEmpty(t *testing.T) {
	requireNCCL(t)
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return
	}
	one := must(nccl.NewComm(ctxs[0], must(nccl.NewUniqueID())(t), 1, 0))(t)
	defer one.Close()
	two := must(nccl.NewComms(ctxs))(t)
	defer func() {
		for _, c := range two {
			c.Close()
		}
	}()
	streams := []*cuda.Stream{cudatest.Stream(t, ctxs[0]), cudatest.Stream(t, ctxs[1])}
	dst, src := make([]*cuda.DeviceBuffer[float64], 2), make([]*cuda.DeviceBuffer[float64], 2)
	for r := range 2 {
		dst[r] = must(cuda.Alloc[float64](ctxs[r], 0))(t)
		defer dst[r].Free()
		src[r] = must(cuda.Alloc[float64](ctxs[r], 0))(t)
		defer src[r].Free()
	}
	for _, tt := range []struct {
		name string
		run  func(c *nccl.Comm, r int) error
	}{
		{"AllReduce", func(c *nccl.Comm, r int) error { return nccl.AllReduce(c, dst[r], src[r], nccl.Avg, streams[r]) }},
		{"Broadcast", func(c *nccl.Comm, r int) error { return nccl.Broadcast(c, dst[r], src[r], 0, streams[r]) }},
		{"Reduce", func(c *nccl.Comm, r int) error { return nccl.Reduce(c, dst[r], src[r], nccl.Max, 0, streams[r]) }},
		{"AllGather", func(c *nccl.Comm, r int) error { return nccl.AllGather(c, dst[r], src[r], streams[r]) }},
		{"ReduceScatter", func(c *nccl.Comm, r int) error { return nccl.ReduceScatter(c, dst[r], src[r], nccl.Sum, streams[r]) }},
		{"AllToAll", func(c *nccl.Comm, r int) error { return nccl.AllToAll(c, dst[r], src[r], streams[r]) }},
		{"SendRecv", func(c *nccl.Comm, r int) error {
			return nccl.Group(func() error {
				return errors.Join(nccl.Send(c, src[r], c.Size()-1-r, streams[r]), nccl.Recv(c, dst[r], c.Size()-1-r, streams[r]))
			})
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(one, 0); err != nil {
				t.Fatalf("one rank: %v", err)
			}
			if err := nccl.Group(func() error { return errors.Join(tt.run(two[0], 0), tt.run(two[1], 1)) }); err != nil {
				t.Fatalf("two ranks: %v", err)
			}
			for _, s := range streams {
				if err := s.Synchronize(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestGroupPanic: a Group whose fn panics still ends NCCL's group of the
// thread before the panic goes on, as one whose fn fails does: otherwise
// every later call on that OS thread would be grouped, queued by no
// ncclGroupEnd. Seen on a non-blocking communicator, whose grouped work
// NCCL holds until the group ends.
func TestGroupPanic(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	c := must(nccl.NewCommContext(context.Background(), ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	defer c.Close()
	src := must(cuda.FromHost(ctx, []int32{1, 2, 3}))(t)
	defer src.Free()
	dst := must(cuda.Alloc[int32](ctx, 3))(t)
	defer dst.Free()
	done := make(chan error)
	go func() {
		// NCCL's group is the thread's: stay on one.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		func() {
			defer func() {
				if recover() == nil {
					t.Error("the panic of fn did not come through Group")
				}
			}()
			nccl.Group(func() error { panic("fn panics") })
		}()
		done <- nccl.Group(func() error { return nccl.AllReduce(c, dst, src, nccl.Sum, s) })
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	equal(t, "dst", cudatest.Download(t, dst), []int32{1, 2, 3})
}

// TestCloseWhileInUse: goroutines queue collectives, register buffers and
// ask for the communicator's error on one rank while another goroutine
// closes it: every call either works or says the communicator is closed
// (cuda.ErrClosed), none hangs, and nothing is left registered (-race).
func TestCloseWhileInUse(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	for _, how := range []struct {
		name  string
		close func(*nccl.Comm) error
	}{{"Close", (*nccl.Comm).Close}, {"Abort", (*nccl.Comm).Abort}} {
		t.Run(how.name, func(t *testing.T) {
			c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
			const workers = 8
			streams := make([]*cuda.Stream, workers)
			bufs := make([]*cuda.DeviceBuffer[float32], workers)
			for i := range workers {
				streams[i] = cudatest.Stream(t, ctx)
				bufs[i] = must(cuda.FromHost(ctx, []float32{1, 2, 3}))(t)
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, workers*50*3)
			for i := range workers {
				wg.Go(func() {
					<-start
					for range 50 {
						errs <- nccl.AllReduce(c, bufs[i], bufs[i], nccl.Sum, streams[i])
						if r, err := c.Register(bufs[i]); err != nil {
							errs <- err
						} else {
							errs <- r.Close()
						}
						errs <- c.Err()
					}
				})
			}
			close(start)
			if err := how.close(c); err != nil {
				t.Errorf("%s: %v", how.name, err)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil && !errors.Is(err, cuda.ErrClosed) {
					t.Errorf("a call while the communicator closed: %v", err)
				}
			}
			for i := range workers {
				if err := streams[i].Synchronize(); err != nil {
					t.Error(err)
				}
				if err := bufs[i].Free(); err != nil {
					t.Errorf("a buffer registered while the communicator closed cannot be freed: %v", err)
				}
			}
		})
	}
}

// TestAfterPeerAbort: once a rank has aborted and NCCL reports the others'
// communicator failed (Err: ResultRemoteError), every call on it returns
// that failure, as NCCL's calls return a communicator's asynchronous
// error, rather than queue work that never runs. (The fake reports the
// failure at once; an NCCL that has not noticed it yet is skipped.)
func TestAfterPeerAbort(t *testing.T) {
	requireNCCL(t)
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return
	}
	comms := must(nccl.NewComms(ctxs))(t)
	defer comms[0].Close()
	if err := comms[1].Abort(); err != nil {
		t.Fatal(err)
	}
	c, s := comms[0], cudatest.Stream(t, ctxs[0])
	a := must(cuda.Alloc[int32](ctxs[0], 4))(t)
	defer a.Free()
	b := must(cuda.Alloc[int32](ctxs[0], 4))(t)
	defer b.Free()
	two := must(a.Slice(0, 2))(t)
	if err := c.Err(); !errors.Is(err, nccl.ResultRemoteError) {
		t.Skipf("NCCL has not noticed the abort: Err = %v", err)
	}
	for name, err := range map[string]error{
		"AllReduce":     nccl.AllReduce(c, a, b, nccl.Sum, s),
		"Broadcast":     nccl.Broadcast(c, a, b, 0, s),
		"Reduce":        nccl.Reduce(c, a, b, nccl.Sum, 0, s),
		"AllGather":     nccl.AllGather(c, a, must(b.Slice(0, 2))(t), s),
		"ReduceScatter": nccl.ReduceScatter(c, two, b, nccl.Sum, s),
		"AllToAll":      nccl.AllToAll(c, a, b, s),
		"Send":          nccl.Send(c, a, 1, s),
		"Recv":          nccl.Recv(c, a, 1, s),
	} {
		if !errors.Is(err, nccl.ResultRemoteError) {
			t.Errorf("%s after the other rank aborted: %v; want ResultRemoteError", name, err)
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

package nccl_test

import (
	"errors"
	"fmt"
	"os"
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
}

func oneRank[T nccl.Number](t *testing.T, c *nccl.Comm, s *cuda.Stream) {
	const n = 100003
	ctx := c.Context()
	want := numbers[T](n)
	send := must(cuda.FromHost(ctx, want))(t)
	defer send.Free()
	recv := must(cuda.Alloc[T](ctx, n))(t)
	defer recv.Free()
	for name, run := range map[string]func() error{
		"AllReduce":     func() error { return nccl.AllReduce(c, send, recv, nccl.Sum, s) },
		"AllReduceMax":  func() error { return nccl.AllReduce(c, send, recv, nccl.Max, s) },
		"Broadcast":     func() error { return nccl.Broadcast(c, send, recv, 0, s) },
		"Reduce":        func() error { return nccl.Reduce(c, send, recv, nccl.Sum, 0, s) },
		"AllGather":     func() error { return nccl.AllGather(c, send, recv, s) },
		"ReduceScatter": func() error { return nccl.ReduceScatter(c, send, recv, nccl.Min, s) },
	} {
		if err := recv.Memset8(0xff); err != nil {
			t.Fatal(err)
		}
		if err := run(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		equal(t, name, download(t, recv), want)
	}
}

// TestCollectives runs every collective across two devices, against the
// same computed on the CPU: one goroutine drives both ranks in a Group.
func TestCollectives(t *testing.T) {
	requireNCCL(t)
	ctxs := cudatest.Contexts(t, 2, "NCCL_NVLS_ENABLE=0")
	if ctxs == nil {
		return
	}
	comms := must(nccl.NewComms(ctxs))(t)
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
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

func collectives[T nccl.Number](t *testing.T, comms []*nccl.Comm, streams []*cuda.Stream) {
	const n = 4099 // odd: the reduce-scatter's blocks are n each
	ranks := len(comms)
	in := make([][]T, ranks)
	send := make([]*cuda.DeviceBuffer[T], ranks)
	recv := make([]*cuda.DeviceBuffer[T], ranks)
	for r, c := range comms {
		in[r] = numbers[T](ranks * n)
		send[r] = must(cuda.FromHost(c.Context(), in[r]))(t)
		defer send[r].Free()
		recv[r] = must(cuda.Alloc[T](c.Context(), ranks*n))(t)
		defer recv[r].Free()
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
		want func(r int) []T // rank r's whole recv
	}{
		{"AllReduceSum", func(r int) error { return nccl.AllReduce(comms[r], send[r], recv[r], nccl.Sum, streams[r]) },
			func(int) []T { return fold(sum, 0, ranks*n) }},
		{"AllReduceMax", func(r int) error { return nccl.AllReduce(comms[r], send[r], recv[r], nccl.Max, streams[r]) },
			func(int) []T { return fold(maxOf, 0, ranks*n) }},
		{"Broadcast", func(r int) error { return nccl.Broadcast(comms[r], send[r], recv[r], 1, streams[r]) },
			func(int) []T { return in[1] }},
		{"Reduce", func(r int) error {
			return nccl.Reduce(comms[r], block(send[r], 0), block(recv[r], 0), nccl.Sum, 0, streams[r])
		}, func(r int) []T {
			if r == 0 {
				return append(fold(sum, 0, n), make([]T, (ranks-1)*n)...)
			}
			return make([]T, ranks*n)
		}},
		{"AllGather", func(r int) error { return nccl.AllGather(comms[r], block(send[r], 0), recv[r], streams[r]) },
			func(int) []T {
				var out []T
				for r := range ranks {
					out = append(out, in[r][:n]...)
				}
				return out
			}},
		{"ReduceScatter", func(r int) error {
			return nccl.ReduceScatter(comms[r], send[r], block(recv[r], 0), nccl.Sum, streams[r])
		},
			func(r int) []T { return append(fold(sum, r*n, n), make([]T, (ranks-1)*n)...) }},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			for r := range ranks {
				if err := recv[r].Memset8(0); err != nil {
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
				equal(t, fmt.Sprintf("rank %d", r), download(t, recv[r]), tt.want(r))
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
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"AllReduce nil comm", nccl.AllReduce(nil, a, b, nccl.Sum, s), cuda.ErrInvalidValue},
		{"AllReduce nil buffer", nccl.AllReduce(c, nil, b, nccl.Sum, s), cuda.ErrInvalidValue},
		{"AllReduce lengths", nccl.AllReduce(c, a, short, nccl.Sum, s), cuda.ErrInvalidValue},
		{"AllReduce op", nccl.AllReduce(c, a, b, nccl.Op(9), s), cuda.ErrInvalidValue},
		{"AllReduce nil stream", nccl.AllReduce(c, a, b, nccl.Sum, nil), cuda.ErrInvalidValue},
		{"AllReduce stream of another context", nccl.AllReduce(c, a, b, nccl.Sum, otherStream), cuda.ErrInvalidValue},
		{"AllReduce buffer of another context", nccl.AllReduce(c, a, foreign, nccl.Sum, s), cuda.ErrInvalidValue},
		{"AllReduce freed buffer", nccl.AllReduce(c, freed, b, nccl.Sum, s), cuda.ErrClosed},
		{"AllReduce closed comm", nccl.AllReduce(closedComm, a, b, nccl.Sum, s), cuda.ErrClosed},
		{"Broadcast root", nccl.Broadcast(c, a, b, 1, s), cuda.ErrInvalidValue},
		{"Broadcast negative root", nccl.Broadcast(c, a, b, -1, s), cuda.ErrInvalidValue},
		{"Broadcast lengths", nccl.Broadcast(c, short, b, 0, s), cuda.ErrInvalidValue},
		{"Reduce root", nccl.Reduce(c, a, b, nccl.Sum, 1, s), cuda.ErrInvalidValue},
		{"Reduce op", nccl.Reduce(c, a, b, nccl.Op(-1), 0, s), cuda.ErrInvalidValue},
		{"AllGather lengths", nccl.AllGather(c, a, short, s), cuda.ErrInvalidValue},
		{"AllGather nil comm", nccl.AllGather(nil, a, b, s), cuda.ErrInvalidValue},
		{"ReduceScatter lengths", nccl.ReduceScatter(c, short, a, nccl.Sum, s), cuda.ErrInvalidValue},
		{"ReduceScatter nil comm", nccl.ReduceScatter(nil, a, b, nccl.Sum, s), cuda.ErrInvalidValue},
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
	f.Fail("ncclAllReduce", 1, int(nccl.InvalidUsage))
	err := nccl.AllReduce(c, a, a, nccl.Sum, s)
	var ne *nccl.Error
	if !errors.As(err, &ne) || ne.Call != "ncclAllReduce" || !errors.Is(err, nccl.InvalidUsage) ||
		!errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "invalid usage") {
		t.Fatalf("injected ncclInvalidUsage: %v", err)
	}
	f.Fail("ncclAllReduce", 1, int(nccl.RemoteError))
	if err := nccl.AllReduce(c, a, a, nccl.Sum, s); !errors.Is(err, nccl.RemoteError) || errors.Is(err, cuda.ErrInvalidValue) {
		t.Fatalf("injected ncclRemoteError: %v", err)
	}
	mine := errors.New("fn failed")
	f.Fail("ncclGroupEnd", 1, int(nccl.InternalError))
	if err := nccl.Group(func() error { return mine }); !errors.Is(err, mine) || !errors.Is(err, nccl.InternalError) {
		t.Fatalf("Group = %v, want fn's error and ncclGroupEnd's", err)
	}
	// The group above ended: a new one starts and ends cleanly.
	if err := nccl.Group(func() error { return nccl.AllReduce(c, a, a, nccl.Sum, s) }); err != nil {
		t.Fatal(err)
	}
	f.Fail("ncclCommInitRankScalable", 1, int(nccl.SystemError))
	if _, err := nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0); !errors.Is(err, nccl.SystemError) {
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

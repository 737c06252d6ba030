package cuda_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/hostcopy"
)

// This file races each closer (StagingBuffer.Close, Registered.Close,
// DeviceBuffer.Free, Stream.Close, Context.Close) against each kind of
// transfer, and checks what the package promises of every such race: each
// call returns nil or ErrClosed (a StagingBuffer closed beside its own
// transfer says it is in use, as it documents), no call panics or
// deadlocks, the data a call that succeeded reports is whole and right,
// no host memory the caller has back changes afterwards (a late DMA), and
// nothing leaks.

// trWatchdog ends the test binary with every goroutine's stack if the
// test is not done within d: a deadlock, which a plain timeout would report
// without the stacks that say where.
func trWatchdog(t *testing.T, d time.Duration) {
	t.Helper()
	name := t.Name()
	w := time.AfterFunc(d, func() {
		buf := make([]byte, 1<<22)
		fmt.Fprintf(os.Stderr, "%s: not done after %v: deadlock\n%s", name, d, buf[:runtime.Stack(buf, true)])
		os.Exit(2)
	})
	t.Cleanup(func() { w.Stop() })
}

// errReaderBroke is the error of a reader or writer that fails on purpose.
var errReaderBroke = errors.New("the reader or writer broke on purpose")

// trAllowed reports whether err is one a call racing a closer may return:
// nil, ErrClosed, the StagingBuffer's "in use" refusal where the staging
// buffer itself is closed beside the call, or the error of a reader or
// writer made to fail.
func trAllowed(err error, sbRace bool) bool {
	switch {
	case err == nil, errors.Is(err, cuda.ErrClosed), errors.Is(err, errReaderBroke):
		return true
	case sbRace && errors.Is(err, cuda.ErrInvalidValue) && strings.Contains(err.Error(), "in use"):
		return true
	}
	return false
}

// trRig is what one round races over: a context of its own, a stream, a
// device buffer holding devData, a staging buffer, and host memory of
// every kind: ordinary, a PinnedBuffer's, a Registered slice.
type trRig struct {
	ctx     *cuda.Context
	s       *cuda.Stream
	dst     *cuda.DeviceBuffer[byte]
	sb      *cuda.StagingBuffer
	pinned  *cuda.PinnedBuffer[byte]
	reg     *cuda.Registered[byte]
	regHost []byte
	devData []byte // what dst holds when the round starts
	src     []byte // what uploads write: other bytes than devData
	// freesStaging says the closer frees the staging buffer's memory,
	// which DownloadInto's slice is: valid only until then.
	freesStaging bool
	// late is host memory that copies queued on a stream being closed
	// may write until the closer returns.
	late [][]byte
}

func newTRRig(t *testing.T, n int, opts cuda.StagingOptions) *trRig {
	t.Helper()
	r := &trRig{ctx: must(cuda.NewContext(cudatest.Device(t)))(t)}
	r.s = must(r.ctx.NewStream())(t)
	r.devData, r.src = random[byte](n), random[byte](n)
	r.dst = must(cuda.FromHost(r.ctx, r.devData))(t)
	r.sb = must(cuda.NewStagingBufferOptions(nil, 0, opts))(t)
	r.pinned = must(cuda.AllocPinned[byte](r.ctx, n))(t)
	r.regHost = make([]byte, n)
	r.reg = must(cuda.Register(r.ctx, r.regHost))(t)
	return r
}

// close closes everything, whatever the race closed already: each close
// then succeeds.
func (r *trRig) close(t *testing.T) {
	t.Helper()
	for what, err := range map[string]error{
		"StagingBuffer.Close": r.sb.Close(),
		"Registered.Close":    r.reg.Close(),
		"PinnedBuffer.Free":   r.pinned.Free(),
		"DeviceBuffer.Free":   r.dst.Free(),
		"Stream.Close":        r.s.Close(),
	} {
		if err != nil {
			t.Errorf("%s after the race: %v", what, err)
		}
	}
	if err := r.ctx.Close(); err != nil {
		t.Errorf("Context.Close after the race: %v", err)
	}
}

// host returns the rig's host memory of a kind, filled with fill.
func (r *trRig) host(kind string, fill []byte) []byte {
	var h []byte
	switch kind {
	case "pinned":
		h = r.pinned.Data()
	case "registered":
		h = r.regHost
	default:
		h = make([]byte, len(fill))
	}
	copy(h, fill)
	return h
}

// deviceHolds fails t unless dst holds want, where it can still be read:
// after a closer closed it, the check is skipped.
func (r *trRig) deviceHolds(t *testing.T, what string, want []byte) {
	t.Helper()
	got := make([]byte, len(want))
	if err := r.dst.CopyToHost(got); err != nil {
		if !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("%s: reading the device buffer back: %v", what, err)
		}
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s succeeded, but the device buffer holds other bytes than it was given (%d of %d differ)", what, differing(got, want), len(want))
	}
}

// stays fails t if host, which the call that wrote it has returned to the
// caller, changes afterwards: a DMA still in flight. The fake's copies run
// 100 µs late.
func stays(t *testing.T, what string, host []byte) {
	t.Helper()
	if host == nil {
		return
	}
	before := bytes.Clone(host)
	time.Sleep(time.Millisecond)
	if !bytes.Equal(before, host) {
		t.Errorf("%s: host memory changed after the call returned it (%d bytes): a DMA was still in flight", what, differing(before, host))
	}
}

func differing(a, b []byte) int {
	n := 0
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n + max(len(a), len(b)) - min(len(a), len(b))
}

// trReader reads at most 64 KiB a call, slowly where slow, and fails
// after failAt bytes where failAt is not negative.
type trReader struct {
	r      io.Reader
	slow   bool
	failAt int
	n      int
}

func (x *trReader) Read(b []byte) (int, error) {
	if x.slow {
		time.Sleep(20 * time.Microsecond)
	}
	if x.failAt >= 0 && x.n >= x.failAt {
		return 0, errReaderBroke
	}
	m, err := x.r.Read(b[:min(len(b), 64<<10)])
	x.n += m
	return m, err
}

// trWriter is trReader's mirror.
type trWriter struct {
	buf    bytes.Buffer
	slow   bool
	failAt int
}

func (x *trWriter) Write(b []byte) (int, error) {
	if x.slow {
		time.Sleep(20 * time.Microsecond)
	}
	if x.failAt >= 0 && x.buf.Len() >= x.failAt {
		return 0, errReaderBroke
	}
	return x.buf.Write(b)
}

// trTransfer is one kind of transfer: run makes it once, checks the data
// of a success (t.Errorf), and returns the call's error and the host
// memory the call wrote and handed back, which must not change afterwards.
type trTransfer struct {
	name string
	n    int
	opts cuda.StagingOptions
	run  func(t *testing.T, r *trRig) ([]byte, error)
}

// pinnedHost says the transfer is given a PinnedBuffer's memory.
func (tr trTransfer) pinnedHost() bool { return strings.HasSuffix(tr.name, "/pinned") }

func trTransfers() []trTransfer {
	direct := cuda.StagingOptions{Pipeline: smallPipeline}
	direct.Pipeline.UploadMinBytes, direct.Pipeline.DownloadMinBytes = math.MaxInt, math.MaxInt
	staged := direct
	staged.AutoStageMaxBytes = math.MaxInt
	piped := cuda.StagingOptions{Pipeline: smallPipeline}
	const small, large = 64 << 10, 1 << 20

	upload := func(kind string) func(t *testing.T, r *trRig) ([]byte, error) {
		return func(t *testing.T, r *trRig) ([]byte, error) {
			src := r.host(kind, r.src)
			err := cuda.Upload(r.sb, r.dst, src, r.s)
			if err == nil {
				r.deviceHolds(t, "Upload", r.src)
			}
			return nil, err
		}
	}
	download := func(kind string) func(t *testing.T, r *trRig) ([]byte, error) {
		return func(t *testing.T, r *trRig) ([]byte, error) {
			host := r.host(kind, make([]byte, len(r.devData)))
			err := cuda.Download(r.sb, host, r.dst, r.s)
			if err == nil && !bytes.Equal(host, r.devData) {
				t.Errorf("Download succeeded with %d of %d bytes wrong", differing(host, r.devData), len(host))
			}
			return host, err
		}
	}
	uploadAsync := func(kind string) func(t *testing.T, r *trRig) ([]byte, error) {
		return func(t *testing.T, r *trRig) ([]byte, error) {
			src := r.host(kind, r.src)
			err := r.dst.CopyFromHostAsync(src, r.s)
			if err == nil {
				if serr := r.s.Synchronize(); serr == nil {
					r.deviceHolds(t, "CopyFromHostAsync", r.src)
				} else if !errors.Is(serr, cuda.ErrClosed) {
					t.Errorf("Synchronize after CopyFromHostAsync: %v", serr)
				}
			}
			return nil, err
		}
	}
	downloadAsync := func(kind string) func(t *testing.T, r *trRig) ([]byte, error) {
		return func(t *testing.T, r *trRig) ([]byte, error) {
			host := r.host(kind, make([]byte, len(r.devData)))
			err := r.dst.CopyToHostAsync(host, r.s)
			if err != nil {
				return nil, err
			}
			// The copy was queued: the data is the caller's once a
			// synchronize succeeded, or the stream was closed (which
			// waited for it). A closed context says nothing of it.
			switch serr := r.s.Synchronize(); {
			case serr == nil:
				if !bytes.Equal(host, r.devData) {
					t.Errorf("CopyToHostAsync and Synchronize succeeded with %d of %d bytes wrong", differing(host, r.devData), len(host))
				}
				return host, nil
			case !errors.Is(serr, cuda.ErrClosed):
				t.Errorf("Synchronize after CopyToHostAsync: %v", serr)
			}
			// Refused: the stream or the context is being closed, and
			// the copy is done once that Close returns (the race's
			// loop checks host then).
			r.late = append(r.late, host)
			return nil, nil
		}
	}
	readFrom := func(given, seq, slow bool, failAt int) func(t *testing.T, r *trRig) ([]byte, error) {
		return func(t *testing.T, r *trRig) ([]byte, error) {
			var c cuda.IOConfig
			if given {
				c = cuda.IOConfig{Staging: r.sb, Stream: r.s}
			}
			var src io.Reader = bytes.NewReader(r.src)
			if seq || slow || failAt >= 0 {
				src = &trReader{r: src, slow: slow, failAt: failAt}
			}
			n, err := cuda.ReadFrom(r.dst, src, c)
			if err == nil {
				if n != int64(len(r.src)) {
					t.Errorf("ReadFrom succeeded with %d of %d bytes", n, len(r.src))
				}
				r.deviceHolds(t, "ReadFrom", r.src)
			}
			return nil, err
		}
	}
	writeTo := func(given, slow bool, failAt int) func(t *testing.T, r *trRig) ([]byte, error) {
		return func(t *testing.T, r *trRig) ([]byte, error) {
			var c cuda.IOConfig
			if given {
				c = cuda.IOConfig{Staging: r.sb, Stream: r.s}
			}
			w := &trWriter{slow: slow, failAt: failAt}
			n, err := cuda.WriteTo(r.dst, w, c)
			if err == nil && (n != int64(len(r.devData)) || !bytes.Equal(w.buf.Bytes(), r.devData)) {
				t.Errorf("WriteTo succeeded with %d bytes, %d of %d wrong", n, differing(w.buf.Bytes(), r.devData), len(r.devData))
			}
			return nil, err
		}
	}
	return []trTransfer{
		{"Upload/direct", small, direct, upload("ordinary")},
		{"Upload/staged", small, staged, upload("ordinary")},
		{"Upload/pipelined", large, piped, upload("ordinary")},
		{"Upload/pinned", small, direct, upload("pinned")},
		{"Upload/registered", large, piped, upload("registered")},
		{"Download/direct", small, direct, download("ordinary")},
		{"Download/staged", small, staged, download("ordinary")},
		{"Download/pipelined", large, piped, download("ordinary")},
		{"Download/pinned", small, direct, download("pinned")},
		{"Download/registered", large, piped, download("registered")},
		{"UploadWith", small, direct, func(t *testing.T, r *trRig) ([]byte, error) {
			err := cuda.UploadWith(r.sb, r.dst, len(r.src), r.s, func(p []byte) { copy(p, r.src) })
			if err == nil {
				r.deviceHolds(t, "UploadWith", r.src)
			}
			return nil, err
		}},
		{"DownloadInto", small, direct, func(t *testing.T, r *trRig) ([]byte, error) {
			got, err := cuda.DownloadInto(r.sb, r.dst, len(r.devData), r.s)
			if r.freesStaging {
				return nil, err // got may be freed under the test's reads
			}
			if err == nil && !bytes.Equal(got, r.devData) {
				t.Errorf("DownloadInto succeeded with %d of %d bytes wrong", differing(got, r.devData), len(got))
			}
			return got, err
		}},
		{"CopyFromHostAsync/ordinary", small, direct, uploadAsync("ordinary")},
		{"CopyFromHostAsync/pinned", small, direct, uploadAsync("pinned")},
		{"CopyFromHostAsync/registered", small, direct, uploadAsync("registered")},
		{"CopyToHostAsync/ordinary", small, direct, downloadAsync("ordinary")},
		{"CopyToHostAsync/pinned", small, direct, downloadAsync("pinned")},
		{"CopyToHostAsync/registered", small, direct, downloadAsync("registered")},
		{"ReadFrom/at offsets", large, direct, readFrom(false, false, false, -1)},
		{"ReadFrom/given/sequential", large, direct, readFrom(true, true, false, -1)},
		{"ReadFrom/given/slow", large, direct, readFrom(true, true, true, -1)},
		{"ReadFrom/slow failing", large, direct, readFrom(false, true, true, 512<<10)},
		{"WriteTo", large, direct, writeTo(false, false, -1)},
		{"WriteTo/given/slow", large, direct, writeTo(true, true, -1)},
		{"WriteTo/slow failing", large, direct, writeTo(false, true, 512<<10)},
	}
}

// trClosers are what the races close beside the transfer. A PinnedBuffer
// whose memory a call is given is the caller's to keep until the call
// returns: freeing it beside the call is the caller's use after free, not
// a race gocuda can win. The staging buffer's own pinned memory is freed
// beside transfers by StagingBuffer.Close (refused while one runs) and by
// Context.Close.
var trClosers = []struct {
	name  string
	close func(r *trRig) error
}{
	{"StagingBuffer.Close", func(r *trRig) error { return r.sb.Close() }},
	{"Registered.Close", func(r *trRig) error { return r.reg.Close() }},
	{"DeviceBuffer.Free", func(r *trRig) error { return r.dst.Free() }},
	{"Stream.Close", func(r *trRig) error { return r.s.Close() }},
	{"Context.Close", func(r *trRig) error { return r.ctx.Close() }},
}

// spinFor keeps the goroutine busy for about d, yielding: a sleep that
// short oversleeps by far more.
func spinFor(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		runtime.Gosched()
	}
}

// TestTransferRacesClose: each closer, closed beside each kind of
// transfer at a random moment of it, a few rounds each.
func TestTransferRacesClose(t *testing.T) {
	trWatchdog(t, 2*time.Minute)
	cudatest.CheckLeaks(t)
	rounds := 5
	if testing.Short() {
		rounds = 2
	}
	for _, tr := range trTransfers() {
		for _, cl := range trClosers {
			if tr.pinnedHost() && cl.name == "Context.Close" {
				// The context's close frees the PinnedBuffer's memory
				// the caller still writes and reads: the caller's use
				// after free.
				continue
			}
			t.Run(tr.name+"/"+cl.name, func(t *testing.T) {
				sbRace := cl.name == "StagingBuffer.Close"
				rng := rand.New(rand.NewPCG(uint64(len(tr.name)), uint64(len(cl.name))))
				for round := range rounds {
					r := newTRRig(t, tr.n, tr.opts)
					r.freesStaging = sbRace || cl.name == "Context.Close"
					delay := time.Duration(rng.IntN(400)) * time.Microsecond
					var wg sync.WaitGroup
					start := make(chan struct{})
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						spinFor(delay)
						if err := cl.close(r); !trAllowed(err, sbRace) {
							t.Errorf("round %d: %s beside %s: %v", round, cl.name, tr.name, err)
						}
					}()
					close(start)
					for range 3 {
						host, err := tr.run(t, r)
						if !trAllowed(err, sbRace) {
							t.Errorf("round %d: %s beside %s: %v; want nil or ErrClosed", round, tr.name, cl.name, err)
						}
						stays(t, tr.name, host)
						if err != nil {
							break
						}
					}
					wg.Wait()
					for _, host := range r.late {
						stays(t, tr.name+" once "+cl.name+" returned", host)
					}
					r.close(t)
				}
			})
		}
	}
}

// TestCopyFromRegisteredRacesUnregister: a copy to the device from a
// Registered slice whose registration is closed beside it is ordered
// before the work queued after it, as every copy is: where the
// registration went between the copy's look at the memory and the
// driver's copy, the driver took the memory as ordinary, staged it, and
// may still be moving it when the call returns (CopyFromHost's
// postcondition for ordinary memory), so the work queued next, a memset
// on a stream here, must wait for it. The stream is kept busy, so that
// the Upload's drain of it, between its look and its copy, lets the
// close in.
func TestCopyFromRegisteredRacesUnregister(t *testing.T) {
	trWatchdog(t, 2*time.Minute)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	const n = 4 << 20 // a copy long enough that a memset beside it shows
	dst := must(cuda.Alloc[byte](ctx, n))(t)
	defer dst.Free()
	busy := must(cuda.Alloc[byte](ctx, 1<<20))(t)
	defer busy.Free()
	sb := must(cuda.NewStagingBufferOptions(nil, 0, cuda.StagingOptions{}))(t)
	defer sb.Close()
	host := random[byte](n)
	want := bytes.Repeat([]byte{0xee}, n)
	rounds := 40 // Upload failed within 2 rounds before the fix
	if testing.Short() {
		rounds = 10
	}
	for _, call := range []struct {
		name string
		copy func() error
	}{
		{"Upload", func() error { return cuda.Upload(sb, dst, host, s) }},
		{"CopyFromHost", func() error { return dst.CopyFromHost(host) }},
	} {
		t.Run(call.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			for round := range rounds {
				reg := must(cuda.Register(ctx, host))(t)
				// Work on s, and on dst through s, that the copy's
				// settle or drain waits for.
				if err := busy.Memset8Async(1, s); err != nil {
					t.Fatal(err)
				}
				if err := dst.Memset8Async(2, s); err != nil {
					t.Fatal(err)
				}
				closed := make(chan error, 1)
				delay := time.Duration(rng.IntN(300)) * time.Microsecond
				go func() {
					spinFor(delay)
					closed <- reg.Close()
				}()
				err := call.copy()
				if cerr := <-closed; cerr != nil {
					t.Fatalf("Registered.Close beside %s: %v", call.name, cerr)
				}
				if err != nil {
					t.Fatalf("round %d: %s beside Registered.Close: %v", round, call.name, err)
				}
				if err := dst.Memset8Async(0xee, s); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, n)
				if err := dst.CopyToHost(got); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					d := differing(got, want)
					t.Fatalf("round %d: after %s from a slice unregistered beside it, a memset queued next was overwritten by the copy (%d of %d bytes): the copy was not ordered before it", round, call.name, d, n)
				}
			}
		})
	}
}

// TestStagingMemoryOfClosingContext: a StagingBuffer's pinned memory is
// portable, so a transfer in one context may go through memory allocated in
// another; closing that other context beside the transfer, which frees the
// memory (on its device's last release), waits for the transfer, whose
// data arrives whole, and leaves no DMA or copy of it in freed memory. Two
// devices, so that the close of the first releases its primary context.
func TestStagingMemoryOfClosingContext(t *testing.T) {
	ctxs := cudatest.Contexts(t, 2)
	if ctxs == nil {
		return // ran in a child with two fake devices
	}
	trWatchdog(t, 2*time.Minute)
	// Device 0's primary context is retained by the round's context
	// alone, so that its close frees what was allocated in it.
	if err := ctxs[0].Close(); err != nil {
		t.Fatal(err)
	}
	const n = 1 << 20
	old := hostcopy.SetDelay(20 * time.Microsecond) // the copy workers slow: the close comes mid-transfer
	defer hostcopy.SetDelay(old)
	for _, tt := range []struct {
		name     string
		transfer func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], s *cuda.Stream, src []byte) ([]byte, error)
	}{
		{"Upload", func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], s *cuda.Stream, src []byte) ([]byte, error) {
			if err := cuda.Upload(sb, b, src, s); err != nil {
				return nil, err
			}
			return b.ToHost()
		}},
		{"Download", func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], s *cuda.Stream, src []byte) ([]byte, error) {
			got := make([]byte, len(src))
			return got, cuda.Download(sb, got, b, s)
		}},
		{"ReadFrom", func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], s *cuda.Stream, src []byte) ([]byte, error) {
			r := &trReader{r: bytes.NewReader(src), slow: true, failAt: -1}
			if _, err := cuda.ReadFrom(b, r, cuda.IOConfig{Staging: sb, Stream: s}); err != nil {
				return nil, err
			}
			return b.ToHost()
		}},
		{"WriteTo", func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], s *cuda.Stream, src []byte) ([]byte, error) {
			w := &trWriter{slow: true, failAt: -1}
			_, err := cuda.WriteTo(b, w, cuda.IOConfig{Staging: sb, Stream: s})
			return w.buf.Bytes(), err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for round := range 6 {
				a := must(cuda.NewContext(must(cuda.GetDevice(0))(t)))(t) // the memory's, closed beside the transfer
				b := ctxs[1]
				sb := must(cuda.NewStagingBufferOptions(a, 4<<20, cuda.StagingOptions{Pipeline: smallPipeline}))(t)
				s := must(b.NewStream())(t)
				src := random[byte](n)
				buf := must(cuda.FromHost(b, src))(t)
				closed := make(chan error, 1)
				go func() {
					spinFor(time.Duration(round*100) * time.Microsecond)
					closed <- a.Close()
				}()
				got, err := tt.transfer(sb, buf, s, src)
				if cerr := <-closed; cerr != nil {
					t.Errorf("Context.Close of the staging memory's context: %v", cerr)
				}
				if err != nil {
					t.Errorf("round %d: %s in another context beside the close: %v", round, tt.name, err)
				} else if !bytes.Equal(got, src) {
					t.Errorf("round %d: %s beside the close of its staging memory's context: %d of %d bytes wrong", round, tt.name, differing(got, src), n)
				}
				stays(t, tt.name, got)
				for what, err := range map[string]error{"StagingBuffer.Close": sb.Close(), "Free": buf.Free(), "Stream.Close": s.Close()} {
					if err != nil {
						t.Errorf("%s: %v", what, err)
					}
				}
			}
		})
	}
}

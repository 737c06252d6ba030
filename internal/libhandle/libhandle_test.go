package libhandle_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/libhandle"
	"github.com/gocuda/cuda/internal/track"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

// libError is the test library's error type, as a package's Error.
type libError struct {
	op, detail string
	err        error
}

func (e *libError) Error() string { return "lib: " + e.op + ": " + e.detail }
func (e *libError) Unwrap() error { return e.err }

type errs struct{}

func (errs) Errorf(op string, sentinel error, format string, args ...any) error {
	return &libError{op: op, detail: fmt.Sprintf(format, args...), err: sentinel}
}

// handle is a library's Handle as the packages write theirs: the shared
// base and the library's objects, here a count of destroys, the next ones
// failing while failDestroy is above zero.
type handle struct {
	base        libhandle.Base[errs]
	destroys    atomic.Int32
	failDestroy atomic.Int32
	calls       int // guarded by the turn
}

var errDestroy = errors.New("the library refused to destroy its handle")

func (h *handle) destroy(op string) error {
	h.destroys.Add(1)
	if h.failDestroy.Add(-1) >= 0 {
		return errDestroy
	}
	return nil
}

// newHandle makes a handle on s with slots work buffers, closed when the
// test ends.
func newHandle(t *testing.T, s *cuda.Stream, slots int) *handle {
	t.Helper()
	h := &handle{}
	raw, err := libhandle.Make("New", s, func(uintptr) error { return nil }, h.destroy)
	if err != nil {
		t.Fatal(err)
	}
	h.base.Arm(libhandle.Spec{Stream: s, RawStream: raw, Kind: track.BLASHandle,
		Cleanup:  runtime.AddCleanup(h, func(int) {}, 0),
		Work:     make([]*cuda.DeviceBuffer[byte], slots),
		WorkName: "a work buffer"})
	t.Cleanup(func() { h.base.Close("Handle.Close", h.destroy) })
	return h
}

// wantErr checks that err is the library's error, matching sentinel and
// saying words.
func wantErr(t *testing.T, what string, err, sentinel error, words string) {
	t.Helper()
	var le *libError
	if !errors.Is(err, sentinel) || !strings.Contains(fmt.Sprint(err), words) || !errors.As(err, &le) {
		t.Errorf("%s: %v (%T), want the library's error matching %v and saying %q", what, err, err, sentinel, words)
	}
}

// TestZero: a zero Base and a nil one refuse every call with the
// package's error, and describe themselves without the driver.
func TestZero(t *testing.T) {
	var h handle
	noop := func(*libhandle.Call[errs]) error { return nil }
	for _, c := range []struct {
		name string
		b    *libhandle.Base[errs]
		want string
	}{
		{"zero", &h.base, "a zero Handle: make one with New"},
		{"nil", nil, "nil *Handle"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantErr(t, "Valid", c.b.Valid("Op"), cuda.ErrInvalidValue, c.want)
			wantErr(t, "Hold", c.b.Hold("Op"), cuda.ErrInvalidValue, c.want)
			wantErr(t, "Do", c.b.Do("Op", nil, noop), cuda.ErrInvalidValue, c.want)
			wantErr(t, "Close", c.b.Close("Op", h.destroy), cuda.ErrInvalidValue, c.want)
			wantErr(t, "CloseWith", c.b.CloseWith("Op", func() (bool, error) { return true, nil }), cuda.ErrInvalidValue, c.want)
			if c.b.WorkBytes() != 0 || c.b.Stream() != nil {
				t.Errorf("WorkBytes %d, Stream %v, want 0 and nil", c.b.WorkBytes(), c.b.Stream())
			}
		})
	}
	if got := h.base.String("lib.Handle"); got != "lib.Handle{zero}" {
		t.Errorf("String = %q", got)
	}
	if got := (*libhandle.Base[errs])(nil).String("lib.Handle"); got != "lib.Handle(nil)" {
		t.Errorf("nil: String = %q", got)
	}
	if h.base.Context() != nil || h.destroys.Load() != 0 {
		t.Errorf("zero: Context %v, %d destroys", h.base.Context(), h.destroys.Load())
	}
}

// TestMake: a create that fails is followed by destroy, and its error
// returned; one that succeeds gives the stream's CUstream.
func TestMake(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	var destroys int
	destroy := func(string) error { destroys++; return nil }
	failed := errors.New("create failed")
	if _, err := libhandle.Make("New", s, func(uintptr) error { return failed }, destroy); !errors.Is(err, failed) || destroys != 1 {
		t.Errorf("Make with create failing: %v and %d destroys, want the error and 1", err, destroys)
	}
	var seen uintptr
	raw, err := libhandle.Make("New", s, func(stream uintptr) error { seen = stream; return nil }, destroy)
	if err != nil || raw == 0 || raw != seen || destroys != 1 {
		t.Errorf("Make: %#x, %v (create saw %#x, %d destroys)", raw, err, seen, destroys)
	}
	if _, err := libhandle.Make("New", s, func(uintptr) error { return nil }, destroy, closedBuffer(t, ctx)); !errors.Is(err, cuda.ErrClosed) || !strings.Contains(err.Error(), "New") {
		t.Errorf("Make with a closed buffer: %v, want ErrClosed named New", err)
	}
}

func closedBuffer(t *testing.T, ctx *cuda.Context) *cuda.DeviceBuffer[byte] {
	t.Helper()
	b, err := cuda.Alloc[byte](ctx, 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConcurrentCalls: many goroutines calling one handle take turns (no
// two calls inside at once, the state they share counted exactly, as
// -race checks), growing the work buffers, beside String and WorkBytes.
func TestConcurrentCalls(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	h := newHandle(t, s, 2)
	const goroutines, calls = 16, 40
	var inside atomic.Bool
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				err := h.base.Do("Call", nil, func(k *libhandle.Call[errs]) error {
					if !inside.CompareAndSwap(false, true) {
						return errors.New("two calls inside at once")
					}
					defer inside.Store(false)
					if k.Stream != h.base.RawStream() || k.Capturing {
						return fmt.Errorf("call given stream %#x, capturing %v", k.Stream, k.Capturing)
					}
					h.calls++
					slot, n := i%2, uintptr(1+(g*calls+i)%7)<<19 // up to 3.5 MiB
					p, err := k.Work(slot, n)
					if err != nil {
						return err
					}
					if b := h.base.Buffer(slot); p == 0 || p != uintptr(b.Ptr()) || uintptr(b.Len()) < n {
						return fmt.Errorf("Work(%d, %d) = %#x, buffer %v", slot, n, p, b)
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				if !strings.Contains(h.base.String("lib.Handle"), "stream") || h.base.WorkBytes() < 0 {
					t.Error("String or WorkBytes")
				}
			}
		}()
	}
	wg.Wait()
	h.base.Lock()
	n := h.calls
	h.base.Unlock()
	if n != goroutines*calls {
		t.Errorf("%d calls counted, want %d", n, goroutines*calls)
	}
	// The largest size asked, rounded to whole MiB: 3.5 MiB → 4 MiB.
	if got := h.base.WorkBytes(); got > 2*(4<<20) || got < 4<<20 {
		t.Errorf("WorkBytes = %d", got)
	}
	if err := h.base.Close("Handle.Close", h.destroy); err != nil || h.destroys.Load() != 1 {
		t.Fatalf("Close: %v, %d destroys", err, h.destroys.Load())
	}
	if h.base.WorkBytes() != 0 {
		t.Errorf("WorkBytes after Close = %d", h.base.WorkBytes())
	}
}

// TestCloseDuringUse: Close waits for the call in flight before it
// destroys, and refuses a later one at once (holds never wait).
func TestCloseDuringUse(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	h := newHandle(t, s, 1)
	entered, release, closed := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var callDone atomic.Bool
	go func() {
		err := h.base.Do("Call", nil, func(*libhandle.Call[errs]) error {
			close(entered)
			<-release
			callDone.Store(true)
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}()
	<-entered
	go func() {
		closed <- h.base.Close("Handle.Close", func(op string) error {
			if !callDone.Load() {
				t.Error("Close destroyed the library's handle during a call")
			}
			return h.destroy(op)
		})
	}()
	select {
	case err := <-closed:
		t.Fatalf("Close returned during a call: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	// Close is waiting: a new call is refused, not queued behind it.
	wantErr(t, "a call while Close waits", h.base.Do("Call", nil, func(*libhandle.Call[errs]) error { return nil }), cuda.ErrClosed, "the handle is closed")
	close(release)
	if err := <-closed; err != nil || h.destroys.Load() != 1 {
		t.Fatalf("Close: %v, %d destroys", err, h.destroys.Load())
	}
	if err := h.base.Close("Handle.Close", h.destroy); err != nil || h.destroys.Load() != 1 {
		t.Errorf("second Close: %v, %d destroys, want nil and 1", err, h.destroys.Load())
	}
	if got := h.base.String("lib.Handle"); !strings.HasSuffix(got, ", closed}") {
		t.Errorf("String after Close = %q", got)
	}
}

// TestCloseUnderLoad: goroutines calling in a loop while Close runs: no
// call is inside once Close returned, and each ends refused.
func TestCloseUnderLoad(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	h := newHandle(t, s, 1)
	var running atomic.Int32
	var started sync.WaitGroup
	errc := make(chan error, 8)
	for range 8 {
		started.Add(1)
		go func() {
			first := true
			for {
				err := h.base.Do("Call", nil, func(k *libhandle.Call[errs]) error {
					running.Add(1)
					defer running.Add(-1)
					_, err := k.Work(0, 4096)
					time.Sleep(50 * time.Microsecond)
					return err
				})
				if first {
					started.Done()
					first = false
				}
				if err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	started.Wait()
	if err := h.base.Close("Handle.Close", h.destroy); err != nil {
		t.Fatal(err)
	}
	if n := running.Load(); n != 0 {
		t.Errorf("%d calls inside after Close returned", n)
	}
	for range 8 {
		wantErr(t, "a call during Close", <-errc, cuda.ErrClosed, "the handle is closed")
	}
}

// TestCloseRetry: a Close that fails may be tried again. Where the library
// refused to destroy its handle, the handle stays usable; where the work
// buffer's free failed after the destroy, calls are refused until a Close
// finishes, which does not destroy again.
func TestCloseRetry(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	use := func(h *handle, n uintptr) error {
		return h.base.Do("Call", nil, func(k *libhandle.Call[errs]) error {
			_, err := k.Work(0, n)
			return err
		})
	}
	t.Run("destroy", func(t *testing.T) {
		s := cudatest.Stream(t, ctx)
		h := newHandle(t, s, 1)
		if err := use(h, 1<<20); err != nil {
			t.Fatal(err)
		}
		h.failDestroy.Store(1)
		if err := h.base.Close("Handle.Close", h.destroy); !errors.Is(err, errDestroy) {
			t.Fatalf("Close with destroy failing: %v", err)
		}
		if err := use(h, 1<<20); err != nil || h.base.WorkBytes() != 1<<20 {
			t.Errorf("a call after the failed Close: %v (work %d B), want the handle whole", err, h.base.WorkBytes())
		}
		if err := h.base.Close("Handle.Close", h.destroy); err != nil || h.destroys.Load() != 2 {
			t.Errorf("second Close: %v, %d destroys, want nil and 2", err, h.destroys.Load())
		}
	})
	t.Run("free", func(t *testing.T) {
		s := cudatest.Stream(t, ctx) // of its own: a stream keeps a size freed twice, with no driver call
		live := f.Live("device")
		h := newHandle(t, s, 1)
		if err := use(h, 1<<20); err != nil {
			t.Fatal(err)
		}
		f.Fail("cuMemFreeAsync", 1, 999)
		err := h.base.Close("Handle.Close", h.destroy)
		if !errors.Is(err, cuda.Result(999)) || !strings.Contains(err.Error(), "Handle.Close") || !strings.Contains(err.Error(), "a work buffer is not freed: call Close again") {
			t.Fatalf("Close with cuMemFreeAsync failing: %v", err)
		}
		wantErr(t, "a call after the failed Close", use(h, 1), cuda.ErrClosed, "its Close failed to free a work buffer: call Close again")
		if got := h.base.String("lib.Handle"); !strings.HasSuffix(got, ", closed (a work buffer is not freed: call Close again)}") {
			t.Errorf("String after the failed Close = %q", got)
		}
		if err := h.base.Close("Handle.Close", h.destroy); err != nil || h.destroys.Load() != 1 {
			t.Fatalf("second Close: %v, %d destroys, want nil and 1", err, h.destroys.Load())
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if f.Live("device") != live {
			t.Errorf("%d device allocations after Close, want %d", f.Live("device"), live)
		}
	})
	t.Run("grow", func(t *testing.T) {
		s := cudatest.Stream(t, ctx)
		// A failed allocation keeps the buffer there was.
		h := newHandle(t, s, 1)
		if err := use(h, 4096); err != nil {
			t.Fatal(err)
		}
		f.Fail("cuMemAllocAsync", 1, 2)
		if err := use(h, 2<<20); !errors.Is(err, cuda.ErrOutOfMemory) || !strings.Contains(err.Error(), "Call") {
			t.Errorf("growing with the driver out of memory: %v, want ErrOutOfMemory named Call", err)
		}
		if h.base.WorkBytes() != 4096 {
			t.Errorf("WorkBytes after a failed growth = %d, want 4096", h.base.WorkBytes())
		}
	})
}

// TestCapture: while the stream captures, a call holds the work buffers
// in the graph and is refused a buffer that must grow.
func TestCapture(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	h := newHandle(t, s, 1)
	if err := h.base.Do("Call", nil, func(k *libhandle.Call[errs]) error {
		_, err := k.Work(0, 4096)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var fits, grows error
	g, err := s.Capture(cuda.CaptureThreadLocal, func() error {
		return h.base.Do("Call", nil, func(k *libhandle.Call[errs]) error {
			if !k.Capturing {
				return errors.New("the call does not know the stream captures")
			}
			_, fits = k.Work(0, 4096)
			_, grows = k.Work(0, 8192)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if fits != nil {
		t.Errorf("a work buffer that fits, while capturing: %v", fits)
	}
	wantErr(t, "a work buffer that must grow, while capturing", grows, cuda.ErrNotSupported, "the stream captures and a work buffer must grow to 8192 bytes")
}

// TestSameContext: an operand of the handle's context passes; one of
// another context, or of none (a zero DeviceBuffer), is refused by its
// name with the library's error.
func TestSameContext(t *testing.T) {
	ctx := cudatest.Context(t)
	h := newHandle(t, cudatest.Stream(t, ctx), 1)
	other := cudatest.Context(t)
	mine, theirs := cudatest.Must(cuda.Alloc[float32](ctx, 4))(t), cudatest.Must(cuda.Alloc[float32](other, 4))(t)
	t.Cleanup(func() { mine.Free(); theirs.Free() })
	if err := h.base.SameContext("Op", libhandle.Arg("x", mine)); err != nil {
		t.Errorf("an operand of the handle's context: %v", err)
	}
	wantErr(t, "another context", h.base.SameContext("Op", libhandle.Arg("x", mine), libhandle.Arg("y", theirs)), cuda.ErrInvalidValue, "y belongs to another context than the handle")
	wantErr(t, "a zero buffer", h.base.SameContext("Op", libhandle.Arg("b", &cuda.DeviceBuffer[float32]{})), cuda.ErrInvalidValue, "b is a zero cuda.DeviceBuffer")
}

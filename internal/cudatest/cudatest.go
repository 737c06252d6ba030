// Package cudatest holds gocuda's test helpers: it picks the driver a test
// binary runs against (the real one when a GPU is usable, the fake
// otherwise), gives tests a context, and fails a test that leaked.
//
// Environment:
//
//	GOCUDA_TEST_DRIVER=real|fake  use only that driver (default: real if usable, else fake)
//	GOCUDA_REQUIRE_GPU=1          no usable GPU is a failure, not a fallback to the fake
package cudatest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/internal/dl"
	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/fakecuda"
	"github.com/gocuda/cuda/internal/track"
	"github.com/gocuda/cuda/nccl"
)

// Environment variables read by Main.
const (
	EnvDriver     = "GOCUDA_TEST_DRIVER"
	EnvRequireGPU = "GOCUDA_REQUIRE_GPU"
	// driverAsIs leaves GOCUDA_LIBCUDA as the environment sets it; used by
	// tests that run themselves with a missing or odd driver.
	driverAsIs = "as-is"
)

var (
	kind string // "real", "fake" or driverAsIs
	fake *fakecuda.Control
)

// Main selects the driver, then runs the tests. Use it from TestMain:
//
//	func TestMain(m *testing.M) { cudatest.Main(m) }
func Main(m *testing.M) { MainSkipFake(m, "") }

// MainSkipFake is Main for a package whose Examples (or tests) matching the
// regular expression onFake need what the fake driver lacks (NVRTC, a
// kernel the fake has no C version of): on the fake they are skipped, as
// go test's -skip would (joined with a -skip given), so that every Example
// keeps its Output comment and runs wherever it can, on a GPU always.
func MainSkipFake(m *testing.M, onFake string) {
	mainSkip(m, onFake, func() bool { return kind == "fake" })
}

// MainSkipWithoutKernels is Main for a package whose Examples (or tests)
// matching the regular expression need generated kernels to run: they are
// skipped where none can (KernelsRun: the fake driver without a C++
// compiler, a machine without NVRTC), as MainSkipFake skips.
func MainSkipWithoutKernels(m *testing.M, needKernels string) {
	mainSkip(m, needKernels, func() bool { return !KernelsRun() })
}

func mainSkip(m *testing.M, pattern string, skipHere func() bool) {
	if err := selectDriver(); err != nil {
		fmt.Fprintln(os.Stderr, "cudatest:", err)
		os.Exit(1)
	}
	useHostCompiler()
	if pattern != "" && skipHere() {
		if !flag.Parsed() {
			flag.Parse() // a -skip on the command line is joined, not replaced
		}
		skip := pattern
		if f := flag.Lookup("test.skip"); f != nil {
			if old := f.Value.String(); old != "" {
				skip = old + "|" + pattern
			}
			if err := flag.Set("test.skip", skip); err != nil {
				fmt.Fprintln(os.Stderr, "cudatest:", err)
				os.Exit(1)
			}
		}
	}
	os.Exit(m.Run())
}

func selectDriver() error {
	want := os.Getenv(EnvDriver)
	requireGPU := os.Getenv(EnvRequireGPU) == "1"
	switch want {
	case driverAsIs:
		kind = driverAsIs
		return nil
	case "", "real":
		lib := os.Getenv(driver.EnvLibrary)
		if lib != "" && want == "" {
			// A process this one started (a child test, a go test -fuzz
			// worker) inherits GOCUDA_LIBCUDA naming the fake: it is the
			// fake, whatever name it has, and not a GPU.
			if c, err := fakecuda.Open(lib); err == nil {
				fake, kind = c, "fake"
				return nil
			}
		}
		n, err := driver.Probe(lib)
		if err == nil && n > 0 {
			kind = "real"
			return nil
		}
		if err == nil {
			err = fmt.Errorf("the driver sees no device")
		}
		if want == "real" || requireGPU {
			return fmt.Errorf("no usable GPU (%v), and %s=%s or %s=1 forbids the fake driver",
				err, EnvDriver, want, EnvRequireGPU)
		}
	case "fake":
	default:
		return fmt.Errorf("%s=%q: want real or fake", EnvDriver, want)
	}
	path, err := fakecuda.Build()
	if err != nil {
		return err
	}
	if fake, err = fakecuda.Open(path); err != nil {
		return err
	}
	kind = "fake"
	// The fake answers NCCL's, cuBLAS's, cuRAND's, cuFFT's, cuSPARSE's, cuSOLVER's and cuDNN's calls too, unless another
	// library is named (a real one cannot work with the fake driver: Fake
	// and Contexts clear the names for their child processes).
	for _, env := range fakeLibraries {
		if os.Getenv(env) == "" {
			if err := os.Setenv(env, path); err != nil {
				return err
			}
		}
	}
	return os.Setenv(driver.EnvLibrary, path)
}

// Contexts returns contexts on devices 0 to n-1, closed when the test ends,
// and fails the test if it leaks. Where the driver sees fewer devices, the
// calling test runs again in a child process against the fake driver with
// n devices (and extra environment), and Contexts returns nil: the caller
// then returns.
func Contexts(t *testing.T, n int, env ...string) []*cuda.Context {
	t.Helper()
	if have, _ := cuda.DeviceCount(); have < n {
		if InChild(t) {
			t.Fatalf("the child sees %d device(s), want %d", have, n)
		}
		RunChild(t, append(fakeEnv(fmt.Sprintf("FAKECUDA_DEVICES=%d", n)), env...)...)
		return nil
	}
	CheckLeaks(t)
	ctxs := make([]*cuda.Context, n)
	for i := range ctxs {
		dev, err := cuda.GetDevice(i)
		if err != nil {
			t.Fatalf("GetDevice(%d): %v", i, err)
		}
		if ctxs[i], err = cuda.NewContext(dev); err != nil {
			t.Fatalf("NewContext(%v): %v", dev, err)
		}
		ctx := ctxs[i]
		t.Cleanup(func() { ctx.Close() })
	}
	return ctxs
}

// Kind returns "real" or "fake": the driver this test binary runs against.
func Kind() string { return kind }

// IsFake reports whether the tests run against the fake driver.
func IsFake() bool { return kind == "fake" }

// Device returns device 0.
func Device(t testing.TB) cuda.Device {
	t.Helper()
	dev, err := cuda.GetDevice(0)
	if err != nil {
		t.Fatalf("GetDevice(0) on the %s driver: %v", kind, err)
	}
	return dev
}

// Context returns a context on device 0, closed when the test ends, and
// fails the test if it leaks any object (see CheckLeaks).
func Context(t testing.TB) *cuda.Context {
	t.Helper()
	CheckLeaks(t)
	ctx, err := cuda.NewContext(Device(t))
	if err != nil {
		t.Fatalf("NewContext: %v", err)
	}
	t.Cleanup(func() {
		if err := ctx.Close(); err != nil {
			t.Errorf("closing the test context: %v", err)
		}
	})
	return ctx
}

// Stream returns a new stream of ctx, closed when the test ends.
func Stream(t testing.TB, ctx *cuda.Context) *cuda.Stream {
	t.Helper()
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatalf("NewStream: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fakeLibraries are the variables naming the libraries the fake answers for.
var fakeLibraries = []string{nccl.EnvLibrary, cublas.EnvLibrary, cublas.EnvLibraryLt, curand.EnvLibrary, cufft.EnvLibrary, cusparse.EnvLibrary, cusolver.EnvLibrary, cudnn.EnvLibrary}

// fakeEnv is the environment of a child process that runs against the fake
// driver, with extra.
func fakeEnv(extra ...string) []string {
	env := []string{EnvDriver + "=fake", EnvRequireGPU + "="}
	for _, v := range fakeLibraries {
		env = append(env, v+"=")
	}
	return append(env, extra...)
}

var fakeKinds = map[track.Kind]string{
	track.Stream: "stream", track.Event: "event", track.DeviceBuffer: "device",
	track.PinnedBuffer: "host", track.Registered: "registered", track.Comm: "comm", track.MemPool: "pool", track.Graph: "graph", track.GraphExec: "graphexec", track.BLASHandle: "blas",
	track.Library: "library", track.RandGenerator: "rand", track.FFTPlan: "fft",
}

// CheckLeaks fails t if, when it ends, more gocuda objects are alive than
// when CheckLeaks was called, or (on the fake driver) more driver resources
// are held. Cleanups registered after it run before its check.
func CheckLeaks(t testing.TB) {
	t.Helper()
	before := track.Take()
	fakeBefore := map[track.Kind]int{}
	if fake != nil {
		for k, name := range fakeKinds {
			fakeBefore[k] = fake.Live(name)
		}
	}
	t.Cleanup(func() {
		after := track.Take()
		for _, k := range track.Kinds() {
			if n := after.Live[k] - before.Live[k]; n > 0 {
				t.Errorf("leak: %d %s(s) still open at the end of the test", n, k)
			}
		}
		if fake != nil {
			for k, name := range fakeKinds {
				if n := fake.Live(name) - fakeBefore[k]; n > 0 {
					t.Errorf("leak: the fake driver still holds %d more %s resource(s) than before the test", n, name)
				}
			}
		}
	})
}

// Fake returns the fake driver's controls, with pending faults reset when
// the test ends. Where the tests run against the real driver, Fake runs the
// calling test again in a child process against the fake, reports its
// result, and returns nil: the caller then returns.
//
//	f := cudatest.Fake(t)
//	if f == nil {
//		return
//	}
func Fake(t *testing.T) *fakecuda.Control {
	t.Helper()
	if fake != nil {
		t.Cleanup(fake.ResetFaults)
		return fake
	}
	RunChild(t, fakeEnv()...)
	return nil
}

// RunChild runs the calling test again in a child process with extra
// environment variables (NAME=value), and fails t unless the child ran it
// and it passed. The child sees ChildEnv(name) set.
func RunChild(t *testing.T, env ...string) {
	t.Helper()
	var parts []string
	for _, p := range strings.Split(t.Name(), "/") {
		parts = append(parts, "^"+regexp.QuoteMeta(p)+"$")
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.v", "-test.count=1")
	cmd.Env = append(append(os.Environ(), childMarker+"="+t.Name()), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("child test run with %v failed (%v):\n%s", env, err, out)
	}
	t.Logf("passed in a child process with %v (%v)", env, time.Since(start).Round(time.Millisecond))
	if testing.Verbose() {
		t.Logf("the child's output:\n%s", out)
	}
}

const childMarker = "GOCUDA_TEST_CHILD"

// InChild reports whether this process is a child RunChild started for t.
func InChild(t *testing.T) bool { return os.Getenv(childMarker) == t.Name() }

// DriverAsIs is the EnvDriver value that makes Main leave the driver library
// as the environment names it.
const DriverAsIs = EnvDriver + "=" + driverAsIs

// GC runs the garbage collector until cond holds or a few seconds pass, so
// that cleanups of unreachable objects run.
func GC(cond func() bool) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		runtime.GC()
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// WantErr fails t unless err wraps sentinel and its text says says: the
// check of the packages' tests of a documented refusal.
func WantErr(t testing.TB, what string, err, sentinel error, says string) {
	t.Helper()
	if !errors.Is(err, sentinel) || !strings.Contains(fmt.Sprint(err), says) {
		t.Errorf("%s: %v; want an error wrapping %v saying %q", what, err, sentinel, says)
	}
}

// Must returns v, or ends the test that calls the returned function with
// err (t.Fatal): buf := Must(cuda.Alloc[float32](ctx, n))(t). Call it on
// the test's goroutine only.
func Must[T any](v T, err error) func(testing.TB) T {
	return func(tb testing.TB) T {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
}

// Upload returns a device buffer of data in ctx, freed when the test
// ends. Call it on the test's goroutine only.
func Upload[T any](t testing.TB, ctx *cuda.Context, data []T) *cuda.DeviceBuffer[T] {
	t.Helper()
	b := Must(cuda.FromHost(ctx, data))(t)
	t.Cleanup(func() { b.Free() })
	return b
}

// Download copies b to a new slice: a synchronous copy, which waits for
// the work queued on b. Call it on the test's goroutine only.
func Download[T any](t testing.TB, b *cuda.DeviceBuffer[T]) []T {
	t.Helper()
	out := make([]T, b.Len())
	if err := b.CopyToHost(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Span is the elements from Off of a block of memory, for FreedAt.
type Span struct{ Off, N int }

// FreedAt returns, of a block of 64 elements allocated in ctx and freed, a
// buffer over f, freed with it, and a live one over l (FromRaw): memory
// the allocator could hand out again at once, which a comparison of
// addresses alone takes for the freed buffer's. The overlap checks' tests
// give both to a call, which must find the freed one closed.
func FreedAt[T any](t testing.TB, ctx *cuda.Context, f, l Span) (freed, live *cuda.DeviceBuffer[T]) {
	t.Helper()
	block := Must(cuda.Alloc[T](ctx, 64))(t)
	freed = Must(block.Slice(f.Off, f.N))(t)
	if err := block.Free(); err != nil {
		t.Fatal(err)
	}
	size := cuda.DevicePtr(unsafe.Sizeof(*new(T)))
	return freed, Must(cuda.FromRaw[T](ctx, block.Ptr()+size*cuda.DevicePtr(l.Off), l.N))(t)
}

// Loadable reports whether any of the library files named loads (each
// closed again): a package's TestMain asks where the package looks first,
// without opening the library for the package, whose first open is kept
// for the process.
func Loadable(paths ...string) bool {
	for _, p := range paths {
		if h, err := dl.Load(p); err == nil {
			dl.Close(h)
			return true
		}
	}
	return false
}

// WarmUp makes three calls of call, then synchronizes s, before a
// benchmark's timed calls, as the C references and the PyTorch scripts do:
// the driver loads a library's kernels at their first launch (lazy
// loading), a cost that a few timed calls would otherwise share.
func WarmUp(b *testing.B, s *cuda.Stream, call func() error) {
	b.Helper()
	for range 3 {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
}

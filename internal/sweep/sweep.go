// Package sweep is the fault sweep's machinery, shared by the test packages
// that hold its rows: the root package's (the driver's families: memory,
// streams, graphs, transfers, staging, modules) and internal/sweep/libs
// (the libraries: cuBLAS, cuRAND, cuFFT, NCCL, NVRTC, safetensors), so that
// the root's tests import nothing above the root.
//
// Run fails each driver or library call each public operation (a Case)
// makes, one at a time, with each of a few codes, and checks what follows:
// no panic and no hang, an error that carries the code, its sentinel and
// the call's name, nothing leaked once the caller frees what it was given,
// and every object involved still working (the Case's after checks that).
// ZeroValues calls every method of the zero value of every exported
// type, and every exported function with zero objects. Both run against
// the fake driver only (internal/fakecuda), which fails calls on demand.
package sweep

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/fakecuda"
	"github.com/gocuda/cuda/internal/track"
)

// Env is what the sweep's operations share: two contexts (of two fake
// devices), a stream of each, the test kernels.
type Env struct {
	Ctx, Ctx1 *cuda.Context
	S, S1     *cuda.Stream
	PTX       []byte
	Fake      *fakecuda.Control
}

// Case is one public operation. Prepare makes what it needs (not swept)
// and returns the operation itself, and after, which gets the operation's
// error, checks that the objects involved still work, and releases
// everything Prepare and the operation made.
type Case struct {
	Name    string
	Covers  []string // the exported functions and methods it sweeps
	MaxNth  int      // sweep at most this many calls of each function (0: all)
	Prepare func(t *testing.T, e *Env) (op func() error, after func(t *testing.T, err error))
}

// Family is how the calls of one library fail: the calls named with
// Prefix fail with each of Codes, and an error of one must carry it
// (Carries) and wrap Sentinels[code] where there is one. The driver's
// family is built in: calls of no Family's prefix fail with out of memory,
// launch failure, invalid value and unknown, carried as cuda.Result.
type Family struct {
	Prefix    string
	Codes     []int
	Carries   func(err error, code int) bool
	Sentinels map[int]error
}

// driverCodes are the results each driver call is made to fail with: out
// of memory, launch failure, invalid value, unknown.
var driverCodes = []int{2, 719, 1, 999}

var driverFamily = Family{
	Codes:     driverCodes,
	Carries:   func(err error, code int) bool { return errors.Is(err, cuda.Result(code)) },
	Sentinels: map[int]error{1: cuda.ErrInvalidValue, 2: cuda.ErrOutOfMemory},
}

// Config is one test package's sweep.
type Config struct {
	Cases    []Case
	Families []Family
	// PTX is the path of the test kernels (the root's testdata/kernels.ptx).
	PTX string
	// ChildEnv is the environment of the child process the sweep reruns
	// itself in on a GPU machine, beside the fake driver and two devices
	// (a library's override variable unset, so that the fake's is used).
	ChildEnv []string
	// Race says the race detector is on: then only the first call of
	// each function is failed, with one code.
	Race bool
	// API is the exported functions and methods the cases must cover,
	// less NoDriver, those that make no call to fail (TestZeroValues
	// checks them on zero values); String methods never call the driver
	// and need no row.
	API, NoDriver []string
}

// Run runs the sweep of cfg as t. On a GPU machine it reruns t in a child
// process against the fake driver.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if !cudatest.IsFake() {
		cudatest.RunChild(t, append([]string{cudatest.EnvDriver + "=fake", cudatest.EnvRequireGPU + "=", "FAKECUDA_DEVICES=2"}, cfg.ChildEnv...)...)
		return
	}
	f := cudatest.Fake(t)
	ctxs := cudatest.Contexts(t, 2) // on a fake of one device: again, with two
	if ctxs == nil {
		return
	}
	ptx, err := os.ReadFile(cfg.PTX)
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{Ctx: ctxs[0], Ctx1: ctxs[1], S: cudatest.Stream(t, ctxs[0]), S1: cudatest.Stream(t, ctxs[1]), PTX: ptx, Fake: f}
	checkCovers(t, cfg)
	// A hang is a failure, with every goroutine's stack.
	watchdog := time.AfterFunc(4*time.Minute, func() {
		buf := make([]byte, 1<<22)
		fmt.Fprintf(os.Stderr, "%s: no progress for 4 minutes: hung\n%s", t.Name(), buf[:runtime.Stack(buf, true)])
		os.Exit(2)
	})
	defer watchdog.Stop()
	operations, points, failures := 0, 0, 0
	for _, c := range cfg.Cases {
		t.Run(c.Name, func(t *testing.T) {
			operations++
			// The operation once without faults: which calls it makes.
			e.settle(t)
			op, after := c.Prepare(t, e)
			f.ResetCounts()
			err := op()
			counts := f.Counts()
			after(t, err)
			if err != nil {
				t.Fatalf("without faults: %v", err)
			}
			names := make([]string, 0, len(counts))
			for name := range counts {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				fam := cfg.family(name)
				codes := fam.Codes
				n := counts[name]
				if c.MaxNth > 0 {
					n = min(n, c.MaxNth)
				}
				if cfg.Race {
					// Under the race detector (which the hammer is for)
					// the first call of each function, with one code.
					n, codes = min(n, 1), codes[len(codes)-1:]
				}
				for nth := 1; nth <= n; nth++ {
					for _, code := range codes {
						watchdog.Reset(4 * time.Minute)
						points++
						if !injectOne(t, f, c, e, fam, name, nth, code) {
							failures++
						}
					}
				}
			}
		})
	}
	t.Logf("fault sweep: %d operations, %d injection points (function, call, code), %d failures", operations, points, failures)
}

// family returns the Family of the call name: the first whose prefix it
// has, else the driver's.
func (cfg Config) family(name string) Family {
	for _, f := range cfg.Families {
		if strings.HasPrefix(name, f.Prefix) {
			return f
		}
	}
	return driverFamily
}

// injectOne runs c with call nth of function name failing with code, and
// reports whether everything after it was as it should be.
func injectOne(t *testing.T, f *fakecuda.Control, c Case, e *Env, fam Family, name string, nth, code int) (ok bool) {
	t.Helper()
	where := fmt.Sprintf("%s, call %d of %s failing with %d", c.Name, nth, name, code)
	before := track.Take()
	fakeBefore := map[string]int{}
	for _, k := range []string{"device", "host", "registered", "stream", "event", "comm", "ncclreg", "graph", "graphexec", "blas", "ipc", "library", "vmm", "rand", "fft"} {
		fakeBefore[k] = f.Live(k)
	}
	failed := t.Failed()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s: panic: %v", where, p)
		}
		f.ResetFaults()
		ok = !t.Failed() || failed
	}()
	e.settle(t)
	op, after := c.Prepare(t, e)
	f.Fail(name, nth, code)
	err := op()
	fired := f.Pending() == 0
	f.ResetFaults()
	switch {
	case fired:
		checkInjected(t, where, err, fam, name, code)
	case name == "cuCtxSetCurrent":
		// Made only where the OS thread the goroutine runs on has
		// another context current: how many depends on the scheduler.
	default:
		t.Errorf("%s: the operation made fewer calls of %s than without faults: it is not the same from run to run", where, name)
	}
	after(t, err)
	now := track.Take()
	for _, k := range track.Kinds() {
		if d := now.Live[k] - before.Live[k]; d != 0 {
			t.Errorf("%s: %+d %s(s) alive afterwards", where, d, k)
		}
	}
	for k, n := range fakeBefore {
		if d := f.Live(k) - n; d != 0 {
			t.Errorf("%s: the fake holds %+d %s resource(s) afterwards", where, d, k)
		}
	}
	return
}

// checkInjected checks the error of an operation whose call name failed
// with code.
func checkInjected(t *testing.T, where string, err error, fam Family, name string, code int) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: the operation succeeded: the failure was lost", where)
		return
	}
	if !fam.Carries(err, code) {
		t.Errorf("%s: error %v does not carry code %d", where, err, code)
	}
	if sentinel := fam.Sentinels[code]; sentinel != nil && !errors.Is(err, sentinel) {
		t.Errorf("%s: error %v does not wrap %v", where, err, sentinel)
	}
	if !strings.Contains(err.Error(), name) {
		t.Errorf("%s: error %q does not name %s", where, err, name)
	}
}

// checkCovers fails t for a name of cfg.API that no case covers and that
// is not in cfg.NoDriver: new API is swept from the day it lands.
func checkCovers(t *testing.T, cfg Config) {
	t.Helper()
	covered := map[string]bool{}
	for _, c := range cfg.Cases {
		for _, name := range c.Covers {
			covered[name] = true
		}
	}
	for _, name := range cfg.NoDriver {
		covered[name] = true
	}
	for _, name := range cfg.API {
		// What an object prints is what gocuda knows of it: no String
		// calls the driver (TestZeroValues and TestStrings check it).
		if !covered[name] && !strings.HasSuffix(name, ".String") {
			t.Errorf("%s is in no row of the fault sweep and not among the functions that make no call (NoDriver)", name)
		}
	}
}

// settle brings the shared contexts to the same state before each run of
// an operation, so that it makes the same calls each time: no work pending
// anywhere (a synchronous copy of an earlier run would otherwise be waited
// for, or not).
func (e *Env) settle(t *testing.T) {
	t.Helper()
	for _, c := range []*cuda.Context{e.Ctx, e.Ctx1} {
		if err := c.Synchronize(); err != nil {
			t.Fatalf("settling: %v", err)
		}
	}
}

// StillWorks checks that ctx and s still move data.
func StillWorks(t *testing.T, where string, ctx *cuda.Context, s *cuda.Stream) {
	t.Helper()
	b, err := cuda.FromHost(ctx, []uint32{1, 2, 3})
	if err != nil {
		t.Errorf("%s: the context no longer allocates: %v", where, err)
		return
	}
	defer b.Free()
	got := make([]uint32, 3)
	if err := b.CopyToHostAsync(got, s); err != nil {
		t.Errorf("%s: the stream no longer queues: %v", where, err)
		return
	}
	if err := s.Synchronize(); err != nil || !slices.Equal(got, []uint32{1, 2, 3}) {
		t.Errorf("%s: the stream no longer moves data: %v %v", where, got, err)
	}
}

// CloseAgain is the after of a case whose operation is a Close (or Free):
// if it failed, the object stays usable and a second one succeeds.
func CloseAgain(use, close func() error) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			return
		}
		if uerr := use(); uerr != nil {
			t.Errorf("after a failed close (%v), the object is unusable: %v", err, uerr)
		}
		if cerr := close(); cerr != nil {
			t.Errorf("closing again after a failed close (%v): %v", err, cerr)
		}
	}
}

// CloseRetried is the after of a case whose operation is the Close of an
// object of several parts (a library's handle and gocuda's memory), which
// a failed Close may have released in part: the error names op, the Close
// the user called; the object is still usable, or (where mayRefuse) it
// refuses use with ErrClosed, handing nothing released to the library;
// and a second Close finishes (the sweep then checks nothing leaked).
func CloseRetried(op string, mayRefuse bool, use, close func() error) func(t *testing.T, err error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), ": "+op+":") {
			t.Errorf("a failed %s: %q names another operation", op, err)
		}
		switch uerr := use(); {
		case uerr == nil:
		case mayRefuse && errors.Is(uerr, cuda.ErrClosed):
		default:
			t.Errorf("after a failed %s (%v), the object is unusable: %v", op, err, uerr)
		}
		if cerr := close(); cerr != nil {
			t.Errorf("closing again after a failed %s (%v): %v", op, err, cerr)
		}
	}
}

// FirstErr runs fns in order and returns the first error.
func FirstErr(fns ...func() error) error {
	for _, fn := range fns {
		if err := fn(); err != nil {
			return err
		}
	}
	return nil
}

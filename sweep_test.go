package cuda_test

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/fakecuda"
	"github.com/gocuda/cuda/internal/track"
	"github.com/gocuda/cuda/nccl"
)

// sweepEnv is what the sweep's operations share: two contexts (of two
// fake devices), a stream of each, the test kernels.
type sweepEnv struct {
	ctx, ctx1 *cuda.Context
	s, s1     *cuda.Stream
	ptx       []byte
	fake      *fakecuda.Control
}

// sweepCase is one public operation. prepare makes what it needs (not
// swept) and returns the operation itself, and after, which gets the
// operation's error, checks that the objects involved still work, and
// releases everything prepare and the operation made.
type sweepCase struct {
	name    string
	covers  []string // the exported functions and methods it sweeps
	maxNth  int      // sweep at most this many calls of each function (0: all)
	prepare func(t *testing.T, e *sweepEnv) (op func() error, after func(t *testing.T, err error))
}

// sweepCodes are the results each call is made to fail with: out of
// memory, launch failure, invalid value, unknown; NCCL's calls fail with
// internal error and invalid argument.
var sweepCodes, ncclSweepCodes, cublasSweepCodes, curandSweepCodes, cufftSweepCodes = []int{2, 719, 1, 999}, []int{3, 4}, []int{3, 7, 13}, []int{102, 201, 999}, []int{2, 5, 6}

// noDriverMethods are exported methods and functions that never call the
// driver: there is nothing to inject into them (TestZeroValues checks them
// on zero values).
var noDriverMethods = []string{
	"Context.Device", "LibraryError.Error", "LibraryError.Unwrap", "Stream.Context", "Stream.Priority", "Stream.Capturing", "MemPool.Context", "CaptureMode.String", "DeviceBuffer.Len", "DeviceBuffer.ByteSize",
	"Allocation.Buffer", "GraphMemory.ByteSize", "GraphMemory.Ptr", "GraphCondition.Handle", "DeviceBuffer.Ptr", "DeviceBuffer.Context", "PinnedBuffer.Data", "PinnedBuffer.Len", "Registered.Len",
	"Function.Name", "Device.Ordinal", "Device.String", "Version.String", "Result.Error", "Result.String",
	"Error.Error", "Error.Unwrap", "Error.Is", "Attribute.String", "FunctionAttribute.String", "Direction.String", "PeerPath.String",
	"StagingBuffer.Capacity", "StagingBuffer.Stats", "StagingBuffer.AutoStageMaxBytes", "StagingBuffer.SetAutoStageMaxBytes", "StagingBuffer.Options",
	"cuda.FromRaw", "cuda.ParseAttribute", "cuda.KnownAttributes", "cuda.JITMaxRegisters", "cuda.JITOptimizationLevel",
	"cuda.JITLineInfo", "cuda.JITDebugInfo", "cuda.DefaultStagingPipeline", "cuda.DefaultStagingOptions", "cuda.DefaultCalibrationSizes", "cuda.CalibrateSizes", "cuda.LaunchConfigFor", "cuda.ViewAs",
	"DeviceBuffer.Slice", "Comm.Rank", "Comm.Size", "Comm.Context", "Comm.String", "Op.String", "UniqueID.MarshalText", "UniqueID.GoString",
	"UniqueID.UnmarshalText", "Error.Unwrap", "nccl.Library", "nvrtc.Library", "nccl.LaunchFromEnv", "Output.LoweredName",
	"cuda.NewFloat16", "cuda.NewBFloat16", "Float16.Float32", "Float16.String", "BFloat16.Float32", "BFloat16.String",
	"cublas.Library", "cublas.NewMatrix", "Matrix.T", "MathMode.String", "Layout.String",
	"Epilogue.String", "Handle.Stream", "Handle.SetMathMode", "Handle.MathMode",
	"safetensors.Parse", "safetensors.Open", "safetensors.Get", "DType.Size", "Tensor.Elements", "Header.Tensor", "File.Tensor", "File.Close",
	"Weights.Bytes", "Weights.Tensor",
	"IPCHandle.MarshalText", "IPCHandle.UnmarshalText", "IPCEventHandle.MarshalText", "IPCEventHandle.UnmarshalText",
	"Context.MemoryStats", "Context.ResetPeakMemory", "MemoryStats.Kind", "MemoryKind.String",
	"ManagedBuffer.Data", "ManagedBuffer.Buffer", "ManagedBuffer.Len", "Location.IsHost", "Location.Device", "Location.String", "ClusterPolicy.String",
	"GrowableBuffer.Len", "GrowableBuffer.Cap", "GrowableBuffer.MaxLen", "GrowableBuffer.Ptr",
	"curand.Library", "Generator.Stream", "Generator.RNG", "RNG.String",
	"cufft.Library", "Plan.Type", "Plan.Shape", "Plan.WorkBytes", "Plan.Stream", "Plans.Len", "Type.String", "Result.String", "Result.Error",
	"Advice.String", "cuda.OnDevice", "cuda.OnHost",
}

// TestFaultSweep fails each driver call each public operation makes, one
// at a time, with each of a few codes, and checks what follows: no panic
// and no hang, an error that carries the code, its sentinel and the call's
// name, nothing leaked once the caller frees what it was given, and every
// object involved still working (a StagingBuffer still moves data and
// counts only what succeeded; a buffer whose copy failed is freed and
// reused; a Close that failed works when called again).
func TestFaultSweep(t *testing.T) {
	if !cudatest.IsFake() {
		cudatest.RunChild(t, cudatest.EnvDriver+"=fake", cudatest.EnvRequireGPU+"=", nccl.EnvLibrary+"=", "FAKECUDA_DEVICES=2")
		return
	}
	f := cudatest.Fake(t)
	ctxs := cudatest.Contexts(t, 2) // on a fake of one device: again, with two
	if ctxs == nil {
		return
	}
	ptx, err := os.ReadFile("testdata/kernels.ptx")
	if err != nil {
		t.Fatal(err)
	}
	e := &sweepEnv{ctx: ctxs[0], ctx1: ctxs[1], s: cudatest.Stream(t, ctxs[0]), s1: cudatest.Stream(t, ctxs[1]), ptx: ptx, fake: f}
	checkSweepCovers(t)
	// A hang is a failure, with every goroutine's stack.
	watchdog := time.AfterFunc(4*time.Minute, func() {
		buf := make([]byte, 1<<22)
		fmt.Fprintf(os.Stderr, "TestFaultSweep: no progress for 4 minutes: hung\n%s", buf[:runtime.Stack(buf, true)])
		os.Exit(2)
	})
	defer watchdog.Stop()
	operations, points, failures := 0, 0, 0
	for _, c := range sweepCases() {
		t.Run(c.name, func(t *testing.T) {
			operations++
			// The operation once without faults: which calls it makes.
			e.settle(t)
			op, after := c.prepare(t, e)
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
				codes := sweepCodes
				switch {
				case strings.HasPrefix(name, "nccl"):
					codes = ncclSweepCodes
				case strings.HasPrefix(name, "cublas"):
					codes = cublasSweepCodes
				case strings.HasPrefix(name, "curand"):
					codes = curandSweepCodes
				case strings.HasPrefix(name, "cufft"):
					codes = cufftSweepCodes
				}
				n := counts[name]
				if c.maxNth > 0 {
					n = min(n, c.maxNth)
				}
				if raceEnabled {
					// Under the race detector (which the hammer is for)
					// the first call of each function, with one code.
					n, codes = min(n, 1), codes[len(codes)-1:]
				}
				for nth := 1; nth <= n; nth++ {
					for _, code := range codes {
						watchdog.Reset(4 * time.Minute)
						points++
						if !injectOne(t, f, c, e, name, nth, code) {
							failures++
						}
					}
				}
			}
		})
	}
	t.Logf("fault sweep: %d operations, %d injection points (function, call, code), %d failures", operations, points, failures)
}

// injectOne runs c with call nth of function failing with code, and
// reports whether everything after it was as it should be.
func injectOne(t *testing.T, f *fakecuda.Control, c sweepCase, e *sweepEnv, name string, nth, code int) (ok bool) {
	t.Helper()
	where := fmt.Sprintf("%s, call %d of %s failing with %d", c.name, nth, name, code)
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
	op, after := c.prepare(t, e)
	f.Fail(name, nth, code)
	err := op()
	fired := f.Pending() == 0
	f.ResetFaults()
	switch {
	case fired:
		checkInjected(t, where, err, name, code)
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
func checkInjected(t *testing.T, where string, err error, name string, code int) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: the operation succeeded: the failure was lost", where)
		return
	}
	matches := errors.Is(err, cuda.Result(code))
	sentinels := map[int]error{1: cuda.ErrInvalidValue, 2: cuda.ErrOutOfMemory}
	switch {
	case strings.HasPrefix(name, "nccl"):
		matches, sentinels = errors.Is(err, nccl.Result(code)), map[int]error{4: cuda.ErrInvalidValue}
	case strings.HasPrefix(name, "cublas"):
		matches, sentinels = errors.Is(err, cublas.Result(code)), map[int]error{3: cuda.ErrOutOfMemory, 7: cuda.ErrInvalidValue}
	case strings.HasPrefix(name, "curand"):
		matches, sentinels = errors.Is(err, curand.Result(code)), map[int]error{102: cuda.ErrOutOfMemory}
	case strings.HasPrefix(name, "cufft"):
		matches, sentinels = errors.Is(err, cufft.Result(code)), map[int]error{2: cuda.ErrOutOfMemory}
	}
	if !matches {
		t.Errorf("%s: error %v does not carry code %d", where, err, code)
	}
	if sentinel := sentinels[code]; sentinel != nil && !errors.Is(err, sentinel) {
		t.Errorf("%s: error %v does not wrap %v", where, err, sentinel)
	}
	if !strings.Contains(err.Error(), name) {
		t.Errorf("%s: error %q does not name %s", where, err, name)
	}
}

// checkSweepCovers fails t for an exported function or method of packages
// cuda, nccl and nvrtc that no sweep case covers and that is not known to
// make no driver call: new API is swept from the day it lands.
func checkSweepCovers(t *testing.T) {
	t.Helper()
	covered := map[string]bool{}
	for _, c := range sweepCases() {
		for _, name := range c.covers {
			covered[name] = true
		}
	}
	for _, name := range noDriverMethods {
		covered[name] = true
	}
	var api []string
	_, funcs := exportedNames(t)
	api = append(api, funcs...)
	for name, zt := range zeroTypes {
		if zt.zero == nil {
			continue
		}
		typ := reflect.TypeOf(zt.zero)
		short := name[strings.IndexByte(name, '.')+1:]
		for i := range typ.NumMethod() {
			api = append(api, short+"."+typ.Method(i).Name)
		}
	}
	for _, name := range api {
		// What an object prints is what gocuda knows of it: no String
		// calls the driver (TestZeroValues and TestStrings check it).
		if !covered[name] && !strings.HasPrefix(name, "nccl.Op") && !strings.HasSuffix(name, ".String") {
			t.Errorf("%s is in no row of the fault sweep (sweepCases) and not in noDriverMethods", name)
		}
	}
}

// settle brings the shared contexts to the same state before each run of
// an operation, so that it makes the same calls each time: no work pending
// anywhere (a synchronous copy of an earlier run would otherwise be waited
// for, or not).
func (e *sweepEnv) settle(t *testing.T) {
	t.Helper()
	for _, c := range []*cuda.Context{e.ctx, e.ctx1} {
		if err := c.Synchronize(); err != nil {
			t.Fatalf("settling: %v", err)
		}
	}
}

// stillWorks checks that ctx and s still move data.
func stillWorks(t *testing.T, where string, ctx *cuda.Context, s *cuda.Stream) {
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

package cuda_test

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/driver"
)

// TestContextBinding makes many calls from many goroutines that yield
// between calls, so they hop between OS threads: every call must still find
// its context current.
func TestContextBinding(t *testing.T) {
	ctx := cudatest.Context(t)
	const goroutines = 64
	calls := 2000
	if testing.Short() {
		calls = 200
	}
	streams := make([]*cuda.Stream, 8)
	for i := range streams {
		streams[i] = cudatest.Stream(t, ctx)
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			s := streams[g%len(streams)]
			for i := range calls {
				var err error
				switch i % 3 {
				case 0:
					_, _, err = ctx.MemInfo()
				case 1:
					_, err = s.Query()
				case 2:
					err = s.Synchronize()
				}
				if err != nil {
					errs <- err
					return
				}
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("call from a goroutine: %v", err)
	}
}

// TestUnboundCallFails shows the driver catches a call made with no context
// current: what gocuda's binding prevents.
func TestUnboundCallFails(t *testing.T) {
	cudatest.Context(t) // a retained context exists, but is not current here
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var saved driver.Context
	driver.CtxGetCurrent(&saved)
	defer driver.CtxSetCurrent(saved)
	if r := driver.CtxSetCurrent(0); !r.OK() {
		t.Fatalf("cuCtxSetCurrent(NULL) = %d", r)
	}
	var free, total uintptr
	if r := driver.MemGetInfo(0, &free, &total); r.Code != driver.ErrorInvalidContext { // 0: bind nothing
		t.Errorf("cuMemGetInfo with no current context = %d, want %d (CUDA_ERROR_INVALID_CONTEXT)", r, driver.ErrorInvalidContext)
	}
}

// TestUnboundCallFailsOnFake runs the same on the fake driver explicitly.
func TestUnboundCallFailsOnFake(t *testing.T) {
	if cudatest.Fake(t) == nil {
		return
	}
	TestUnboundCallFails(t)
}

func TestFaultInjection(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	tests := []struct {
		name     string
		function string
		code     int
		call     func() error
		want     error
	}{
		{"stream create out of memory", "cuStreamCreateWithPriority", 2,
			func() error { s, err := ctx.NewStream(); s.Close(); return err }, cuda.ErrOutOfMemory},
		{"event create unknown error", "cuEventCreate", 999,
			func() error { e, err := ctx.NewEvent(); e.Close(); return err }, cuda.Result(999)},
		{"bind fails", "cuCtxGetCurrent", 201,
			func() error { return ctx.Synchronize() }, cuda.ErrInvalidContext},
		{"device count", "cuDeviceGetCount", 3,
			func() error { _, err := cuda.DeviceCount(); return err }, cuda.Result(3)},
		{"sticky synchronize", "cuCtxSynchronize", 700,
			func() error { return ctx.Synchronize() }, cuda.Result(700)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.Fail(tt.function, 1, tt.code)
			err := tt.call()
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			var ce *cuda.Error
			if !errors.As(err, &ce) || ce.Call == "" {
				t.Errorf("error %v does not name the failing driver call", err)
			}
			t.Log(err)
			// The next call succeeds again.
			if err := tt.call(); err != nil {
				t.Errorf("second call: %v", err)
			}
		})
	}
}

// TestFaultOnNthCall fails the third of several calls.
func TestFaultOnNthCall(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	f.Fail("cuMemGetInfo_v2", 3, 2)
	for i := 1; i <= 4; i++ {
		_, _, err := ctx.MemInfo()
		if (i == 3) != (err != nil) {
			t.Errorf("call %d: %v", i, err)
		}
	}
}

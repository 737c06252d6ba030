package driver

import (
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gocuda/cuda/internal/fakecuda"
)

// The fake driver's subtler behaviour, through the raw calls: where a test
// of package cuda could not tell whether the fake or gocuda is right.

// onFake loads the fake as the process's driver (these tests' own; package
// driver's other tests use no driver) and returns its controls and device
// 0's primary context, current on the calling thread, locked until the
// test ends.
func onFake(t *testing.T) (*fakecuda.Control, Context) {
	t.Helper()
	path, fake := fakeLibrary(t)
	if err := theDriver.open([]string{path}, &syms); err != nil {
		t.Fatal(err)
	}
	if theDriver.path != path {
		t.Skipf("the process's driver is %s, not the fake", theDriver.path)
	}
	runtime.LockOSThread()
	var ctx Context
	if r := DevicePrimaryCtxRetain(&ctx, 0); !r.OK() {
		t.Fatalf("cuDevicePrimaryCtxRetain: %d", r)
	}
	if r := CtxSetCurrent(ctx); !r.OK() {
		t.Fatalf("cuCtxSetCurrent: %d", r)
	}
	t.Cleanup(func() {
		if !t.Failed() { // a failed test may leave a stream stuck: resetting would wait on it
			DevicePrimaryCtxRelease(0)
		}
		runtime.UnlockOSThread()
	})
	return fake, ctx
}

// fakeLibrary builds the fake driver and returns its path and controls.
func fakeLibrary(t *testing.T) (string, *fakecuda.Control) {
	t.Helper()
	path, err := fakecuda.Build()
	if err != nil {
		t.Fatal(err)
	}
	fake, err := fakecuda.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, fake
}

// TestFakeLegacyStreamLate: a synchronous copy from pageable memory returns
// before it lands, as the real driver's may; from page-locked memory it is
// done when it returns.
func TestFakeLegacyStreamLate(t *testing.T) {
	_, ctx := onFake(t)
	var d DevicePtr
	if r := MemAlloc(ctx, &d, 1<<20); !r.OK() {
		t.Fatal(r)
	}
	defer MemFree(ctx, d)
	host := make([]byte, 1<<20)
	// The copy lands after the fake's stream delay (100 µs): a test
	// goroutine descheduled for longer than that between the copy and the
	// query (a loaded CI machine) sees it done, so one copy of a few that
	// is still in flight when queried is the proof.
	late := false
	for range 5 {
		if r := MemcpyHtoD(ctx, d, unsafe.Pointer(&host[0]), uintptr(len(host))); !r.OK() {
			t.Fatal(r)
		}
		late = StreamQuery(ctx, 0).Code == ErrorNotReady
		if r := StreamSynchronize(ctx, 0); !r.OK() {
			t.Fatal(r)
		}
		if late {
			break
		}
	}
	if !late {
		t.Error("legacy stream right after a pageable copy: done every time, want CUDA_ERROR_NOT_READY (the copy lands later)")
	}
	var pinned unsafe.Pointer
	if r := MemHostAlloc(ctx, &pinned, 1<<20, MemHostAllocPortable); !r.OK() {
		t.Fatal(r)
	}
	defer MemFreeHost(ctx, pinned)
	if r := MemcpyHtoD(ctx, d, pinned, 1<<20); !r.OK() {
		t.Fatal(r)
	}
	if r := StreamQuery(ctx, 0); !r.OK() {
		t.Errorf("legacy stream after a copy from page-locked memory: %d, want done", r)
	}
}

// TestFakeRecordAndWaitOnOneStream: a wait queued on a stream while a record
// of the same event is queued there waits for a record before it, never
// for itself.
func TestFakeRecordAndWaitOnOneStream(t *testing.T) {
	_, ctx := onFake(t)
	var s Stream
	var e Event
	// Destroyed only once the stream drained: destroying a stream stuck on
	// a wait would wait for ever too.
	if r := StreamCreateWithPriority(ctx, &s, StreamNonBlocking, 0); !r.OK() {
		t.Fatal(r)
	}
	if r := EventCreate(ctx, &e, EventDisableTiming); !r.OK() {
		t.Fatal(r)
	}
	var wg sync.WaitGroup
	for _, fn := range []func() Status{
		func() Status { return EventRecord(ctx, e, s) },
		func() Status { return StreamWaitEvent(ctx, s, e, 0) },
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			CtxSetCurrent(ctx)
			for range 3000 {
				if r := fn(); !r.OK() {
					t.Errorf("call: %d", r)
					return
				}
			}
		}()
	}
	wg.Wait()
	done := make(chan Status, 1)
	go func() {
		runtime.LockOSThread()
		CtxSetCurrent(ctx)
		done <- StreamSynchronize(ctx, s)
	}()
	select {
	case r := <-done:
		if !r.OK() {
			t.Fatal(r)
		}
		StreamDestroy(ctx, s)
		EventDestroy(ctx, e)
	case <-time.After(10 * time.Second):
		t.Fatal("the stream waits on an event record queued after the wait")
	}
}

// TestFakeContextResetFreesPinned: page-locked memory allocated in a
// context goes with it, as on the real driver.
func TestFakeContextResetFreesPinned(t *testing.T) {
	fake, ctx := onFake(t)
	before := fake.Live("host")
	var c2 Context
	if r := DevicePrimaryCtxRetain(&c2, 0); !r.OK() || c2 != ctx {
		t.Fatalf("second retain: %d", r)
	}
	var p unsafe.Pointer
	if r := MemHostAlloc(ctx, &p, 4096, MemHostAllocPortable); !r.OK() {
		t.Fatal(r)
	}
	// Release both retains: the context resets. Retain again for the
	// test's cleanup.
	DevicePrimaryCtxRelease(0)
	DevicePrimaryCtxRelease(0)
	if n := fake.Live("host"); n != before {
		t.Errorf("%d page-locked allocations after the context's reset, want %d", n, before)
	}
	if r := DevicePrimaryCtxRetain(&c2, 0); !r.OK() {
		t.Fatal(r)
	}
	CtxSetCurrent(c2)
}

// TestFakeGlobalsAreDeclarations: the fake's PTX loader takes .global
// declarations for globals, not instructions such as ld.global.
func TestFakeGlobalsAreDeclarations(t *testing.T) {
	fake, ctx := onFake(t)
	ptx := []byte(".version 8.0\n.target sm_90\n.address_size 64\n" +
		".visible .global .align 4 .u32 table[4];\n" +
		".visible .entry empty()\n{\n\t.reg .b64 rd<3>;\n\t.reg .f32 f<2>;\n" +
		"\tcvta.to.global.u64 rd2, rd1;\n\tld.global.f32 f1, [rd2];\n\tst.global.f32 [rd2], f1;\n\tret;\n}\n\x00")
	before := fake.Live("device")
	var m Module
	if r := ModuleLoadDataEx(ctx, &m, unsafe.Pointer(&ptx[0]), 0, nil, nil); !r.OK() {
		t.Fatal(r)
	}
	if n := fake.Live("device") - before; n != 1 {
		t.Errorf("loading PTX with one global and three global-memory instructions made %d device allocations, want 1", n)
	}
	if r := ModuleUnload(ctx, m); !r.OK() {
		t.Fatal(r)
	}
	if n := fake.Live("device"); n != before {
		t.Errorf("%d device allocations after unloading, want %d", n, before)
	}
}

package nccl

import (
	"runtime"
	"testing"

	"github.com/gocuda/cuda/internal/fakecuda"
)

// TestCalls: before the library is opened every function is missing, the
// ones returning a string too; opened (the fake driver answers NCCL's
// calls), they reach it, the strings come back, and a device address comes
// back through MemAlloc's *uintptr.
func TestCalls(t *testing.T) {
	var v int32
	if r := GetVersion(&v); r != Missing {
		t.Fatalf("GetVersion before the library is opened = %v, want Missing", r)
	}
	if s, ok := GetErrorString(InvalidArgument); ok || s != "" {
		t.Fatalf("GetErrorString before the library is opened = %q, %v, want \"\", false", s, ok)
	}
	for _, tt := range []struct {
		r    Result
		want string
	}{{Success, "ncclSuccess"}, {RemoteError, "ncclRemoteError"}, {Timeout, "ncclTimeout"}, {Result(9), "ncclResult(9)"}, {Missing, "ncclResult(missing function)"}} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("Result(%d).String() = %q, want %q", int32(tt.r), got, tt.want)
		}
	}
	lib, err := fakecuda.Lazy("NCCL", Table)
	if err != nil {
		t.Skip("no C compiler for the fake driver:", err)
	}
	if err := lib.Open(); err != nil {
		t.Fatal(err)
	}
	if r := GetVersion(&v); r != Success || v != 22803 {
		t.Errorf("GetVersion = %v, version %d: want success and the fake's 22803", r, v)
	}
	if s, ok := GetErrorString(InvalidArgument); !ok || s != "invalid argument" {
		t.Errorf("GetErrorString(InvalidArgument) = %q, %v, want \"invalid argument\", true", s, ok)
	}
	// The fake keeps the last error per thread, as NCCL does.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var n int32
	if r := CommCount(0, &n); r != InvalidArgument {
		t.Errorf("CommCount of no communicator = %v, want %v", r, InvalidArgument)
	}
	if s, ok := GetLastError(0); !ok || s != "bad argument" {
		t.Errorf("GetLastError = %q, %v, want the fake's \"bad argument\", true", s, ok)
	}
	// No context is current: the fake refuses before it writes ptr.
	ptr := uintptr(1)
	if r := MemAlloc(&ptr, 256); r != InvalidUsage || ptr != 1 {
		t.Errorf("MemAlloc with no context = %v, ptr %#x, want %v and ptr untouched", r, ptr, InvalidUsage)
	}
	var id UniqueID
	if r := GetUniqueId(&id); r != Success || id == (UniqueID{}) {
		t.Errorf("GetUniqueId = %v, id %x: want success and an id", r, id[:8])
	}
}

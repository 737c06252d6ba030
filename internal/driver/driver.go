// Package driver is gocuda's raw layer over the CUDA driver API: one Go
// function per C function, generated from prototypes.txt, calling into
// libcuda opened at run time. It knows nothing of contexts on threads, Go
// types or errors; package cuda builds those on top.
//
// Only this package talks to purego.
package driver

//go:generate go run ./gen -in prototypes.txt -backend syms -out zsyms.go
//go:generate go run ./gen -in prototypes.txt -backend purego -out zcalls_purego.go
//go:generate go run ./gen -in prototypes.txt -backend cgo -out zcalls_cgo.go

import (
	"sync"
	"unsafe"
)

// Result is a CUresult.
type Result int32

// Results the layers above test for by value.
const (
	Success                          Result = 0
	ErrorInvalidValue                Result = 1
	ErrorOutOfMemory                 Result = 2
	ErrorNotInitialized              Result = 3
	ErrorNoDevice                    Result = 100
	ErrorInvalidDevice               Result = 101
	ErrorInvalidContext              Result = 201
	ErrorNotReady                    Result = 600
	ErrorNotSupported                Result = 801
	ErrorInvalidImage                Result = 200
	ErrorInvalidPTX                  Result = 218
	ErrorNotFound                    Result = 500
	ErrorPeerAccessUnsupported       Result = 217
	ErrorPeerAccessAlreadyEnabled    Result = 704
	ErrorPeerAccessNotEnabled        Result = 705
	ErrorHostMemoryAlreadyRegistered Result = 712

	// ResultMissingSymbol is not a driver code: the loaded library lacks the
	// function called, or no library is loaded.
	ResultMissingSymbol Result = -1
)

// Bits the cgo shim adds to a result when binding the context before the
// call failed, rather than the call itself.
const (
	bindGetFailed Result = 0x40000000
	bindSetFailed Result = 0x20000000
)

// BindFailure reports whether r says that binding the context failed
// before a call (cgo backend), and if so which driver function failed and
// with what code.
func BindFailure(r Result) (call string, code Result, failed bool) {
	switch {
	case r > 0 && r&bindGetFailed != 0:
		return "cuCtxGetCurrent", r &^ bindGetFailed, true
	case r > 0 && r&bindSetFailed != 0:
		return "cuCtxSetCurrent", r &^ bindSetFailed, true
	}
	return "", r, false
}

// Handle types, as the driver defines them.
type (
	Device            int32   // CUdevice
	DeviceAttribute   int32   // CUdevice_attribute
	Context           uintptr // CUcontext
	Stream            uintptr // CUstream
	Event             uintptr // CUevent
	DevicePtr         uint64  // CUdeviceptr
	Module            uintptr // CUmodule
	Function          uintptr // CUfunction
	JITOption         int32   // CUjit_option
	FunctionAttribute int32   // CUfunction_attribute
)

// Flags used by the layers above.
const (
	StreamNonBlocking       = 0x1 // CU_STREAM_NON_BLOCKING
	EventDefault            = 0x0 // CU_EVENT_DEFAULT
	EventBlockingSync       = 0x1 // CU_EVENT_BLOCKING_SYNC
	EventDisableTiming      = 0x2 // CU_EVENT_DISABLE_TIMING
	MemHostAllocPortable    = 0x1 // CU_MEMHOSTALLOC_PORTABLE
	MemHostRegisterPortable = 0x1 // CU_MEMHOSTREGISTER_PORTABLE
)

// syms holds the resolved address of each function in symNames; zero where
// the library lacks it. Written once, by Open.
var syms [symCount]uintptr

// call holds one call's arguments and out-parameters (its fields are the
// backend's: backend_purego.go, backend_cgo.go). It lives on the heap and is
// reused, so that a caller's out variable never has to escape.
var calls = sync.Pool{New: func() any { return new(call) }}

func getCall() *call { return calls.Get().(*call) }

func putCall(c *call) {
	*c = call{}
	calls.Put(c)
}

// GoString copies a NUL-terminated C string.
func GoString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// ErrorName returns the driver's name for r ("CUDA_ERROR_OUT_OF_MEMORY") and
// its description, or empty strings where the driver does not know r.
func ErrorName(r Result) (name, text string) {
	var p *byte
	if GetErrorName(r, &p) == Success {
		name = GoString(p)
	}
	p = nil
	if GetErrorString(r, &p) == Success {
		text = GoString(p)
	}
	return name, text
}

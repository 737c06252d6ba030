//go:build cgo && !gocuda_purego

package driver

// call holds slots for out-parameters: cgo passes the arguments itself, but
// the address of a caller's out variable passed to C would move it to the
// heap.
type call struct {
	out [4]uint64
}

// Bits the shim adds to a result when binding the context before the call
// failed, rather than the call itself.
const (
	bindGetFailed = 0x40000000
	bindSetFailed = 0x20000000
)

// shimStatus is the Status of the shim's result r for a call of f: a
// failure to bind the context first is the binding call's, for f.
func shimStatus(r int32, f Func) Status {
	switch {
	case r > 0 && r&bindGetFailed != 0:
		return Status{Code: Result(r &^ bindGetFailed), Func: FuncCtxGetCurrent, For: f}
	case r > 0 && r&bindSetFailed != 0:
		return Status{Code: Result(r &^ bindSetFailed), Func: FuncCtxSetCurrent, For: f}
	}
	return Status{Code: Result(r), Func: f}
}

// ByValueSupported reports whether this build can pass a structure by
// value to the driver (the IPC calls): C does it on every platform.
const ByValueSupported = true

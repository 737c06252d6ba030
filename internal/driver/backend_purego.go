//go:build !cgo || gocuda_purego

package driver

import "unsafe"

// call holds the argument list purego's SyscallN takes, and slots for
// out-parameters. SyscallN is marked go:uintptrescapes: a variadic argument
// list written at the call would be allocated on the heap on every call,
// and so would every out variable whose address it got.
type call struct {
	args [16]uintptr
	out  [4]uint64
}

// escape moves what p points to onto the heap, where it does not move, as
// passing it to SyscallN directly would: the driver gets its address as a
// plain number, which the garbage collector does not update. Callers keep
// p alive across the call with runtime.KeepAlive.
func escape(p unsafe.Pointer) {
	if escapeSink.never {
		escapeSink.p = p
	}
}

var escapeSink struct {
	never bool
	p     unsafe.Pointer
}

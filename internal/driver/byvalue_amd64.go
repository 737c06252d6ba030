//go:build !cgo || gocuda_purego

package driver

import "unsafe"

// byValue64 rearranges a call's arguments for a 64-byte structure passed
// by value at index i, as the System V AMD64 ABI passes it: the structure
// is of class MEMORY, so it goes on the stack, in order, and the other
// arguments take the registers as if it were not there. SyscallN passes
// its first six arguments in registers and the rest on the stack: the
// others, padded to six, then the structure's eight words.
func byValue64(args []uintptr, i int, h *[64]byte) []uintptr {
	out := make([]uintptr, 0, 14)
	out = append(out, args[:i]...)
	out = append(out, args[i+1:]...)
	if len(out) > 6 {
		panic("driver: byValue64: more than six other arguments") // no prototype has them
	}
	out = out[:6]
	for w := range 8 {
		out = append(out, *(*uintptr)(unsafe.Pointer(&h[8*w])))
	}
	return out
}

// ByValueSupported reports whether this build can pass a structure by
// value to the driver (the IPC calls).
const ByValueSupported = true

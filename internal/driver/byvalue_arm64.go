//go:build !cgo || gocuda_purego

package driver

import "unsafe"

// byValue64 rearranges a call's arguments for a 64-byte structure passed
// by value at index i, as the AArch64 procedure call standard passes it: a
// composite larger than 16 bytes is passed as a pointer to a copy, in its
// argument's place. The caller's array serves as the copy (the driver does
// not write it); the generated call keeps it alive.
func byValue64(args []uintptr, i int, h *[64]byte) []uintptr {
	out := append([]uintptr(nil), args...)
	out[i] = uintptr(unsafe.Pointer(h))
	return out
}

// ByValueSupported reports whether this build can pass a structure by
// value to the driver (the IPC calls).
const ByValueSupported = true

//go:build !race

package hostcopy

import "unsafe"

// haveStreamCopy: SSE2, which streamCopy needs, is part of every amd64 CPU.
// (Race builds copy with copy, which the race detector sees.)
const haveStreamCopy = true

// streamCopy copies n bytes, a multiple of 64, from src to dst (16-byte
// aligned) with non-temporal stores, and fences them.
//
//go:noescape
func streamCopy(dst, src unsafe.Pointer, n uintptr)

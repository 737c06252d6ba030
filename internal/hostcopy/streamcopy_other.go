//go:build !amd64 || race

package hostcopy

import "unsafe"

// haveStreamCopy: streaming stores are written for amd64 only (and race
// builds copy with copy, which the race detector sees).
const haveStreamCopy = false

func streamCopy(dst, src unsafe.Pointer, n uintptr) { panic("unreachable") }

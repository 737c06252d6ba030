package hostcopy

import "unsafe"

// streamCopyMin is the least part streamed. Chosen, not measured apart:
// the pipeline's parts are 32 KiB or more, and a copy of a few KiB is over
// before the lines it leaves in the caches matter.
const streamCopyMin = 16 << 10

// pipeCopy copies src into dst (of equal length) as the staging pipeline
// does: with streaming (non-temporal) stores if asked, where the platform
// has them and the part is large enough, else with copy. Streaming stores
// write to memory without reading the destination's cache lines first and
// without leaving them dirty in the CPU's caches; the caller chooses when
// that pays (package cuda's streams).
func pipeCopy(dst, src []byte, streaming bool) {
	n := len(src)
	if !streaming || !haveStreamCopy || n < streamCopyMin {
		copy(dst, src)
		return
	}
	// Streaming stores want a 16-byte aligned destination: the bytes
	// before it, and the tail short of a 64-byte block, go by copy.
	head := int(-uintptr(unsafe.Pointer(unsafe.SliceData(dst))) & 15)
	body := (n - head) &^ 63
	copy(dst[:head], src[:head])
	streamCopy(unsafe.Pointer(&dst[head]), unsafe.Pointer(&src[head]), uintptr(body))
	copy(dst[head+body:], src[head+body:])
}

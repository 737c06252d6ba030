package cuda

import "unsafe"

// streamBelow is, by direction, the transfer size below which the staging
// pipeline's copies between host memory and pinned memory use streaming
// (non-temporal) stores: they write to memory without reading the
// destination's cache lines first and without leaving them dirty in the
// CPU's caches. Uploading, the DMA engine then reads the pinned memory
// straight from memory instead of fetching lines from the caches: uploads
// ran faster with them below 128 MiB, where the copy itself limits, and
// tied or lost from there. Downloading, the destination is the program's
// memory: streaming won below 4 MiB and lost from 16 MiB
// (BenchmarkPipelineStreaming; the figures are in docs/performance.md). A
// variable for the benchmarks.
var streamBelow = [2]int{HostToDevice: 128 << 20, DeviceToHost: 4 << 20}

// streams reports whether a transfer of n bytes in direction d copies with
// streaming stores.
func streams(d Direction, n int) bool { return n < streamBelow[d&1] }

// streamCopyMin is the least part streamed. Chosen, not measured apart:
// the pipeline's parts are 32 KiB or more, and a copy of a few KiB is over
// before the lines it leaves in the caches matter.
const streamCopyMin = 16 << 10

// pipeCopy copies src into dst (of equal length) as the staging pipeline
// does: with streaming stores if asked, where the platform has them and
// the part is large enough, else with copy.
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

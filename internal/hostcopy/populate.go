package hostcopy

import (
	"sync/atomic"
	"unsafe"
)

// A Job can give memory its pages instead of copying into it: Populate.
// A slice made just before a download (out := make([]T, n)) has no pages
// until something writes it, and the copy into it then takes a page fault,
// and the zeroing of a page, every 4 KiB. The faults, taken by the copying
// goroutines as they meet them, set the speed of such a download, not the
// link (package cuda's fresh-slice figures, docs/performance.md). Populated
// ahead, by every worker at once while the DMA engine runs, they are gone
// from the copy.

// Populate puts on the board the population of dst's pages, for the
// pool's workers to do, and returns at once; Await waits for it, doing
// parts itself meanwhile. The parts are the cells of a grid of part bytes
// (a power of two) over the address space that dst overlaps, so that no
// two of them share a huge page of that size: a huge page faulted in by
// two goroutines at once is zeroed by both. Populating changes no byte of
// dst. Call it only once j's last copy was awaited.
func (j *Job) Populate(dst []byte, part int) {
	pool.once.Do(start)
	if len(dst) == 0 {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(dst)))
	first, last := p/uintptr(part), (p+uintptr(len(dst))-1)/uintptr(part)
	if pool.n == 0 || first == last {
		populate(dst)
		return
	}
	j.size = part
	j.post(dst, nil, int(last-first)+1, false)
}

// populatePart populates part of j's grid (Populate).
func (j *Job) populatePart(part int) {
	lo, hi := cell(uintptr(unsafe.Pointer(unsafe.SliceData(j.dst))), len(j.dst), j.size, part)
	populate(j.dst[lo:hi])
}

// cell returns the bytes of n at address p that cell part of the grid of
// size bytes (a power of two) over their addresses holds.
func cell(p uintptr, n, size, part int) (lo, hi int) {
	start := (p/uintptr(size) + uintptr(part)) * uintptr(size)
	if start > p {
		lo = int(start - p)
	}
	return lo, min(int(start+uintptr(size)-p), n)
}

// pageBytes is the smallest page: where populate touches when the kernel
// cannot populate for it.
const pageBytes = 4 << 10

// touch writes every page of b without changing it: an atomic add of zero
// to a word of each, which faults the page in as a write would (a read
// would map the shared zero page and leave the write's fault for later).
func touch(b []byte) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	for off := int(-p & 3); off+4 <= len(b); {
		atomic.AddUint32((*uint32)(unsafe.Pointer(&b[off])), 0)
		off = int((p+uintptr(off)+pageBytes)&^(pageBytes-1) - p) // the next page's first word
	}
}

package hostcopy

import (
	"sync/atomic"
	"syscall"
	"unsafe"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): fault the pages
// of a range in, writable, as writes would, without writing them.
const madvPopulateWrite = 23

// populateFails is set once the kernel refused madvPopulateWrite (one
// older than 5.14 answers EINVAL): touch from then on.
var populateFails atomic.Bool

// populate gives b's pages their memory, as the first write to each would,
// without changing b: the kernel does it for the whole range in one call
// (no fault taken per page), or else each page is touched.
func populate(b []byte) {
	if len(b) == 0 {
		return
	}
	if !populateFails.Load() {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		lo := p &^ (pageBytes - 1)
		_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, lo, p+uintptr(len(b))-lo, madvPopulateWrite)
		if errno == 0 {
			return
		}
		if errno == syscall.EINVAL {
			populateFails.Store(true)
		}
	}
	touch(b)
}

package cuda

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// hugeAdviceMinBytes is the smallest download whose destination is
// advised to take huge pages: two of them, so that at least one lies
// whole inside most slices.
const hugeAdviceMinBytes = 4 << 20

// hugePageBytes is the size of a transparent huge page, read once; 0
// where the kernel has none, or never gives them.
var hugePageBytes = sync.OnceValue(func() uintptr {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		return 0
	}
	size, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(size)), 10, 64)
	if err != nil || n == 0 || n&(n-1) != 0 {
		return 0
	}
	return uintptr(n)
})

// adviseHugePages asks the kernel to back the huge-page-aligned part of
// b with transparent huge pages (madvise MADV_HUGEPAGE) where it has not
// given b pages yet. A slice made just before a Download, out :=
// make([]T, n), has no pages until something writes it: the transfer
// then takes a page fault, and the zeroing of a page, every 4 KiB, and
// that, not the link, set its speed (a few GB/s against the link's 50;
// issue 49). With the advice a fault brings in a huge page (2 MiB on
// x86-64), 512 times fewer of them; on this project's CPU-only machine a
// parallel copy into a fresh 256 MiB slice went from 0.5 to 4.3 GB/s,
// against 25 into one already touched. Where the kernel keeps huge pages
// for madvised memory only (the GPU machines' mode), nothing else asks for
// them. Pages b already has are left as they are. The advice is a hint:
// its error is ignored, and it changes no data.
func adviseHugePages(b []byte) {
	huge := hugePageBytes()
	if huge == 0 || len(b) < hugeAdviceMinBytes || !adviseHuge {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (p + huge - 1) &^ (huge - 1)
	hi := (p + uintptr(len(b))) &^ (huge - 1)
	if hi <= lo {
		return
	}
	syscall.Madvise(b[lo-p:hi-p], syscall.MADV_HUGEPAGE)
}

// pageBytes is the kernel's page size: mincore's unit.
var pageBytes = uintptr(syscall.Getpagesize())

// pagesMissing reports whether a page of b has no memory yet (mincore: a
// slice made and not yet written), with vec as mincore's vector, which it
// returns, grown where it was too short for b.
func pagesMissing(b []byte, vec []byte) (bool, []byte) {
	if len(b) == 0 {
		return false, vec
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := p &^ (pageBytes - 1)
	n := int((p + uintptr(len(b)) - lo + pageBytes - 1) / pageBytes)
	if cap(vec) < n {
		vec = make([]byte, n)
	}
	v := vec[:n]
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, lo, p+uintptr(len(b))-lo, uintptr(unsafe.Pointer(&v[0])))
	if errno != 0 {
		return false, vec // unknown: the copy faults them in as before
	}
	for _, r := range v {
		if r&1 == 0 {
			return true, vec
		}
	}
	return false, vec
}

// populatePart is the part of a download's destination one copy worker
// populates ahead of the copy (pipeline's fill jobs): a huge page where b
// was advised to take them (adviseHugePages), so that no two workers
// fault in, and zero, the same one; else 256 KiB.
func populatePart(b []byte) int {
	if huge := hugePageBytes(); huge != 0 && len(b) >= hugeAdviceMinBytes && adviseHuge {
		return int(huge)
	}
	return 256 << 10
}

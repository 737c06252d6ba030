package cuda

// A download's destination is often a slice made just before it, out :=
// make([]T, n): the commonest way to read a result. Its pages have no
// memory until something writes them, so the copy out of the pinned slots
// takes a page fault, and the kernel's zeroing of a page, every 4 KiB, as
// it meets them, and that sets the transfer's speed, not the link's
// (issue 49: 7.5 GB/s at 16 MiB on an H100, against 53 into a slice
// already written). Two things take the faults out of the copy, on Linux
// (freshpages_linux.go; elsewhere neither is done):
//
//   - adviseHugePages asks for transparent huge pages over the slice, so a
//     fault brings in 2 MiB, not 4 KiB;
//   - the pipeline populates each chunk's pages on the copy workers, all at
//     once, while the chunk's DMA runs, before its copy out (pipeline's
//     fill jobs; hostcopy's Populate), where mincore says a page of the
//     chunk has no memory yet.

// freshMinBytes is the least download whose destination is checked for
// pages without memory: below it the whole transfer takes tens of
// microseconds, and a slice that small is seldom fresh from the system
// (the Go runtime hands out small objects from spans it holds).
const freshMinBytes = 1 << 20

// adviseHuge and populateFresh turn the two off, for the research
// benchmark that compares (BenchmarkFreshSlices).
var adviseHuge, populateFresh = true, true

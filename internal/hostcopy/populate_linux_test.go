package hostcopy

import (
	"fmt"
	"syscall"
	"testing"
	"unsafe"
)

// The cells of Populate's grid cover the slice once, in order, each within
// one aligned block of the grid's size.
func TestCell(t *testing.T) {
	for _, tt := range []struct {
		p         uintptr
		n, size   int
		wantCells int
	}{
		{0x200000, 4 << 20, 2 << 20, 2},
		{0x200000 + 4096, 4 << 20, 2 << 20, 3},
		{0x1fffff, 2, 2 << 20, 2},
		{0x10000, 1, 1 << 16, 1},
		{0x12345, 1<<20 + 7, 1 << 18, 5},
	} {
		t.Run(fmt.Sprintf("%#x+%d/%d", tt.p, tt.n, tt.size), func(t *testing.T) {
			next := 0
			for part := range tt.wantCells {
				lo, hi := cell(tt.p, tt.n, tt.size, part)
				if lo != next || hi <= lo || hi > tt.n {
					t.Fatalf("cell %d is [%d, %d); want it to start at %d and end by %d", part, lo, hi, next, tt.n)
				}
				if (tt.p+uintptr(lo))/uintptr(tt.size) != (tt.p+uintptr(hi)-1)/uintptr(tt.size) {
					t.Fatalf("cell %d, [%d, %d), spans two blocks of %d", part, lo, hi, tt.size)
				}
				next = hi
			}
			if next != tt.n {
				t.Fatalf("the cells end at %d of %d", next, tt.n)
			}
		})
	}
}

// Populate gives every page of its slice memory and changes no byte, by
// the kernel's madvise and by touching, in one part or many.
func TestPopulate(t *testing.T) {
	const page = pageBytes
	for _, kernel := range []bool{true, false} {
		for _, tt := range []struct {
			name          string
			skew, n, part int
		}{
			{"one page", 0, page, 64 << 10},
			{"odd", 5, 3*page + 7, 64 << 10},
			{"many parts", 123, 1<<20 + 4567, 64 << 10},
			{"huge parts", 0, 6 << 20, 2 << 20},
		} {
			t.Run(fmt.Sprintf("kernel=%v/%s", kernel, tt.name), func(t *testing.T) {
				defer populateFails.Store(populateFails.Swap(!kernel))
				m, err := syscall.Mmap(-1, 0, tt.skew+tt.n+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
				if err != nil {
					t.Fatal("mmap:", err)
				}
				defer syscall.Munmap(m)
				b := m[tt.skew : tt.skew+tt.n]
				for i := 0; i < len(b); i += 3 * page { // every third page written before
					b[i] = byte(i/page + 1)
				}
				var j Job
				j.Populate(b, tt.part)
				j.Await()
				if missing := missingPages(t, b); missing != 0 {
					t.Fatalf("%d pages still without memory", missing)
				}
				for i := range b {
					want := byte(0)
					if i%(3*page) == 0 {
						want = byte(i/page + 1)
					}
					if b[i] != want {
						t.Fatalf("byte %d is %d after Populate, want %d", i, b[i], want)
					}
				}
			})
		}
	}
}

// missingPages returns how many pages of b have no memory (mincore).
func missingPages(t *testing.T, b []byte) int {
	t.Helper()
	p := uintptr(unsafe.Pointer(&b[0]))
	lo := p &^ (pageBytes - 1)
	vec := make([]byte, (p+uintptr(len(b))-lo+pageBytes-1)/pageBytes)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, lo, p+uintptr(len(b))-lo, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal("mincore:", errno)
	}
	missing := 0
	for _, v := range vec {
		if v&1 == 0 {
			missing++
		}
	}
	return missing
}

package cuda

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// TestAdviseHugePages: a download's destination of 4 MiB or more is
// advised to take huge pages over its aligned part (the kernel marks that
// range hg in /proc/self/smaps) and keeps its data; smaller, empty and
// odd slices are left alone.
func TestAdviseHugePages(t *testing.T) {
	huge := hugePageBytes()
	if huge == 0 {
		t.Skip("no transparent huge pages on this kernel")
	}
	for _, tt := range []struct {
		name    string
		n, skew int  // bytes, and how far past a huge page's start b begins
		advised bool // whether a huge page of b is to be advised
	}{
		{"empty", 0, 0, false},
		{"1 KiB", 1 << 10, 0, false},
		{"below the threshold", hugeAdviceMinBytes - 1, 0, false},
		{"aligned", 8 << 20, 0, true},
		{"skewed", 8<<20 + 12345, 4096 + 7, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A mapping of its own, so that its pages and flags are this
			// test's: the Go heap's neighbours would blur them.
			m, err := syscall.Mmap(-1, 0, int(huge)+tt.n+tt.skew+int(huge), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
			if err != nil {
				t.Fatal("mmap:", err)
			}
			defer syscall.Munmap(m)
			base := (uintptr(unsafe.Pointer(&m[0])) + huge - 1) &^ (huge - 1)
			start := int(base-uintptr(unsafe.Pointer(&m[0]))) + tt.skew
			b := m[start : start+tt.n]
			for i := range b {
				b[i] = byte(i * 7)
			}
			adviseHugePages(b)
			for i := range b {
				if b[i] != byte(i*7) {
					t.Fatalf("byte %d changed to %d", i, b[i])
				}
			}
			if tt.n == 0 {
				return
			}
			lo := (uintptr(unsafe.Pointer(&b[0])) + huge - 1) &^ (huge - 1)
			flags, err := vmFlags(lo)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(" "+flags+" ", " hg "); got != tt.advised {
				t.Errorf("the mapping at %#x has flags %q: hg (huge pages advised) %v, want %v", lo, flags, got, tt.advised)
			}
		})
	}
}

// vmFlags returns the VmFlags line of the mapping holding addr, from
// /proc/self/smaps.
func vmFlags(addr uintptr) (string, error) {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") { // a mapping: lo-hi perms ...
			var lo, hi uintptr
			n, _ := fmt.Sscanf(fields[0], "%x-%x", &lo, &hi)
			in = n == 2 && lo <= addr && addr < hi
			continue
		}
		if in && fields[0] == "VmFlags:" {
			return strings.Join(fields[1:], " "), nil
		}
	}
	return "", fmt.Errorf("no mapping holds %#x in /proc/self/smaps", addr)
}

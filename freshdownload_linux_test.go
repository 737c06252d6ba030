package cuda_test

import (
	"syscall"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// A download into memory whose pages have none yet (a mapping never
// written, as a slice made just before the transfer is) leaves the right
// bytes in every page, each page with its memory, whether the pages are
// populated ahead of the copies (sizes from 1 MiB), advised to be huge
// (from 4 MiB) or neither, in one chunk or more chunks than slots.
func TestDownloadFresh(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	var sb cuda.StagingBuffer
	defer sb.Close()
	for _, tt := range []struct {
		name    string
		n, skew int
	}{
		{"below the check", 1<<20 - 1, 0},
		{"1 MiB", 1<<20 + 3, 5},
		{"huge pages advised", 6<<20 + 4097, 4096},
		{"more chunks than slots", 40<<20 + 1, 12345},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := random[byte](tt.n)
			dev := must(cuda.Alloc[byte](ctx, tt.n))(t)
			defer dev.Free()
			must(0, dev.CopyFromHost(want))(t)
			m, err := syscall.Mmap(-1, 0, tt.skew+tt.n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
			if err != nil {
				t.Fatal("mmap:", err)
			}
			defer syscall.Munmap(m)
			got := m[tt.skew:]
			if !cuda.PagesMissing(got) {
				t.Fatal("a mapping never written has all its pages")
			}
			must(0, cuda.Download(&sb, got, dev, s))(t)
			if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("byte %d is %d, want %d", i, got[i], want[i])
			}
			if cuda.PagesMissing(got) {
				t.Error("pages of the destination still have no memory after the download")
			}
		})
	}
}

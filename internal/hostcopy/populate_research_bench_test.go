//go:build gocuda_research && linux

package hostcopy_test

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gocuda/cuda/internal/hostcopy"
)

// BenchmarkPopulate populates memory the process never touched (a new
// mapping each time, 256 MiB), as a fresh download's destination is:
// Populate's parallel parts (the copy workers held spinning, or parked as
// after a pause), beside one goroutine populating the whole and one
// copying into it, with huge pages advised or not. What the kernel's
// zeroing of fresh pages costs, and how far it spreads over the workers:
// the ceiling of a download into a slice made just before it.
func BenchmarkPopulate(b *testing.B) {
	const n = 256 << 20
	src := randomBytes(n)
	for _, huge := range []bool{false, true} {
		for _, way := range []string{"parts-held", "parts-parked", "one-populate", "one-copy"} {
			b.Run(fmt.Sprintf("huge=%v/%s", huge, way), func(b *testing.B) {
				part := 256 << 10
				if huge {
					part = 2 << 20
				}
				var took []time.Duration
				for range 5 {
					m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
					if err != nil {
						b.Fatal(err)
					}
					if huge {
						syscall.Madvise(m, 14) // MADV_HUGEPAGE
					}
					if way == "parts-held" && hostcopy.Hold() {
						time.Sleep(time.Millisecond) // the workers up and spinning
						defer hostcopy.Release()
					}
					if way == "parts-parked" {
						time.Sleep(5 * time.Millisecond) // past the workers' spin
					}
					start := time.Now()
					var j hostcopy.Job
					switch way {
					case "one-populate":
						j.Populate(m, n)
					case "one-copy":
						copy(m, src)
					default:
						j.Populate(m, part)
					}
					j.Await()
					took = append(took, time.Since(start))
					if way == "parts-held" {
						hostcopy.Release()
					}
					syscall.Munmap(m)
				}
				slices.Sort(took)
				b.ReportMetric(float64(n)/took[len(took)/2].Seconds()/1e9, "median-GB/s")
			})
		}
	}
}

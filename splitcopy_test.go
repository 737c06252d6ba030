package cuda_test

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// pageAligned returns pages pages of zeroed Go memory starting on a page
// boundary, so that registrations of whole pages of it never share a page
// (the driver locks whole pages).
func pageAligned(pages int) []byte {
	size := os.Getpagesize()
	raw := make([]byte, (pages+1)*size)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&raw[0])) % uintptr(size)); r != 0 {
		off = size - r
	}
	return raw[off : off+pages*size : off+pages*size]
}

// directStaging returns a StagingBuffer that neither stages nor pipelines
// a slice: Upload and Download hand every slice to the driver.
func directStaging(t *testing.T, ctx *cuda.Context) *cuda.StagingBuffer {
	t.Helper()
	p := cuda.DefaultStagingPipeline()
	p.UploadMinBytes, p.DownloadMinBytes = math.MaxInt, math.MaxInt
	sb := must(cuda.NewStagingBufferOptions(ctx, 1<<16, cuda.StagingOptions{Pipeline: p}))(t)
	t.Cleanup(func() { sb.Close() })
	return sb
}

// splitCopy is one way of moving host memory to or from a device buffer of
// the same length, and the driver function the fake counts for it.
type splitCopy struct {
	name, driverCall string
	up               bool
	run              func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error
}

var splitCopies = []splitCopy{
	{"CopyFromHost", "cuMemcpyHtoD_v2", true, func(_ *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, _ *cuda.Stream) error {
		return b.CopyFromHost(host)
	}},
	{"CopyToHost", "cuMemcpyDtoH_v2", false, func(_ *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, _ *cuda.Stream) error {
		return b.CopyToHost(host)
	}},
	{"CopyFromHostAsync", "cuMemcpyHtoDAsync_v2", true, func(_ *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error {
		return errors.Join(b.CopyFromHostAsync(host, s), s.Synchronize())
	}},
	{"CopyToHostAsync", "cuMemcpyDtoHAsync_v2", false, func(_ *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error {
		return errors.Join(b.CopyToHostAsync(host, s), s.Synchronize())
	}},
	// With nothing staged or pipelined (directStaging), Upload and
	// Download hand the slice to the driver as the plain copies do.
	{"Upload", "cuMemcpyHtoD_v2", true, func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error {
		return cuda.Upload(sb, b, host, s)
	}},
	{"Download", "cuMemcpyDtoH_v2", false, func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error {
		return cuda.Download(sb, host, b, s)
	}},
}

// TestCopySplitAtLocked: a copy over host memory registered in several
// pieces, or over registered and ordinary memory, works and moves the
// right bytes. The driver refuses a host range that is page-locked only in
// part or spans several registrations (on the H100, CopyToHost over four
// adjacent registrations answered CUDA_ERROR_INVALID_VALUE:
// BenchmarkRegisterFresh), so gocuda splits the copy at their edges; on
// the fake, each piece is one driver call, and a copy wholly inside one
// registration or wholly outside all stays one.
func TestCopySplitAtLocked(t *testing.T) {
	f := cudatest.Fake(t) // nil on a GPU: the data checks run there too
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	sb := directStaging(t, ctx)
	const pages = 16
	type span struct{ from, to int } // pages [from, to)
	for _, tc := range []struct {
		name       string
		registered []span
		copied     span
		pieces     int
	}{
		{"two adjacent halves", []span{{0, 8}, {8, 16}}, span{0, 16}, 2},
		{"four adjacent quarters", []span{{0, 4}, {4, 8}, {8, 12}, {12, 16}}, span{0, 16}, 4},
		{"registered head, ordinary tail", []span{{0, 12}}, span{0, 16}, 2},
		{"ordinary head, registered tail", []span{{4, 16}}, span{0, 16}, 2},
		{"registered middle", []span{{4, 12}}, span{0, 16}, 3},
		{"across a gap", []span{{0, 4}, {12, 16}}, span{2, 14}, 3},
		{"one registration", []span{{0, 16}}, span{0, 16}, 1},
		{"inside one registration", []span{{0, 16}}, span{2, 10}, 1},
		{"ordinary up to a registration", []span{{8, 16}}, span{0, 8}, 1},
		{"nothing registered", nil, span{0, 16}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := pageAligned(pages)
			page := len(mem) / pages
			for _, r := range tc.registered {
				reg := must(cuda.Register(ctx, mem[r.from*page:r.to*page]))(t)
				defer reg.Close()
			}
			host := mem[tc.copied.from*page : tc.copied.to*page]
			b := must(cuda.Alloc[byte](ctx, len(host)))(t)
			defer b.Free()
			for _, c := range splitCopies {
				t.Run(c.name, func(t *testing.T) {
					want := random[byte](len(host))
					if c.up {
						copy(host, want)
					} else {
						if err := b.CopyFromHost(want); err != nil {
							t.Fatal(err)
						}
						clear(host)
					}
					if f != nil {
						f.ResetCounts()
					}
					if err := c.run(sb, b, host, s); err != nil {
						t.Fatal(err)
					}
					if f != nil {
						if n := f.Counts()[c.driverCall]; n != tc.pieces {
							t.Errorf("%d calls of %s; want %d", n, c.driverCall, tc.pieces)
						}
					}
					got := host
					if c.up {
						got = cudatest.Download(t, b)
					}
					if !equal(got, want) {
						t.Error("the bytes copied differ")
					}
				})
			}
		})
	}
}

// TestCopySplitEmpty: copies of no elements at a registration's edge call
// no driver copy and succeed.
func TestCopySplitEmpty(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	sb := directStaging(t, ctx)
	mem := pageAligned(2)
	reg := must(cuda.Register(ctx, mem[:len(mem)/2]))(t)
	defer reg.Close()
	empty := mem[len(mem)/2 : len(mem)/2]
	b := must(cuda.Alloc[byte](ctx, 0))(t)
	defer b.Free()
	for _, c := range splitCopies {
		t.Run(c.name, func(t *testing.T) {
			f.ResetCounts()
			if err := c.run(sb, b, empty, s); err != nil {
				t.Fatal(err)
			}
			if n := f.Counts()[c.driverCall]; n != 0 {
				t.Errorf("%d calls of %s; want none", n, c.driverCall)
			}
		})
	}
}

// TestCopyInsideRegisteredAllocs: a copy wholly inside one registration
// allocates nothing: finding that it needs no split takes no memory.
func TestCopyInsideRegisteredAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ctx := cudatest.Context(t)
	mem := pageAligned(4)
	page := len(mem) / 4
	for _, r := range [][2]int{{0, 1}, {1, 3}} { // neighbours, so the ranges list is not trivial
		reg := must(cuda.Register(ctx, mem[r[0]*page:r[1]*page]))(t)
		defer reg.Close()
	}
	host := mem[page : 3*page]
	b := must(cuda.Alloc[byte](ctx, len(host)))(t)
	defer b.Free()
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"CopyFromHost", func() error { return b.CopyFromHost(host) }},
		{"CopyToHost", func() error { return b.CopyToHost(host) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if n := testing.AllocsPerRun(50, func() { err = errors.Join(err, c.run()) }); n != 0 {
				t.Errorf("%v allocations a copy; want none", n)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCopySplitFails: a piece of a split copy that fails ends the copy,
// and its error is the copy's.
func TestCopySplitFails(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	sb := directStaging(t, ctx)
	mem := pageAligned(3)
	page := len(mem) / 3
	reg := must(cuda.Register(ctx, mem[page:2*page]))(t) // three pieces
	defer reg.Close()
	b := must(cuda.Alloc[byte](ctx, len(mem)))(t)
	defer b.Free()
	const unknown = 999 // CUDA_ERROR_UNKNOWN
	for _, c := range splitCopies {
		t.Run(c.name, func(t *testing.T) {
			f.ResetCounts()
			f.Fail(c.driverCall, 2, unknown)
			err := c.run(sb, b, mem, s)
			if err == nil || !strings.Contains(err.Error(), c.driverCall+": CUDA_ERROR_UNKNOWN") {
				t.Errorf("the second piece failing: %v; want %s's CUDA_ERROR_UNKNOWN", err, c.driverCall)
			}
			if n := f.Counts()[c.driverCall]; n != 2 {
				t.Errorf("%d calls of %s; want 2, the third piece not copied", n, c.driverCall)
			}
		})
	}
}

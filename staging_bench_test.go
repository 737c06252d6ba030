package cuda_test

import (
	"slices"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// stagingSizes are the sizes of the staging benchmarks, in bytes; the plain
// copies they are compared with (BenchmarkCopyFromHost, BenchmarkCopyToHost)
// run at the same sizes.
var stagingSizes = []int{4 << 10, 16 << 10, 64 << 10, 150 << 10, 196 << 10, 256 << 10, 1 << 20, 4928307, 16 << 20, 64 << 20, 256 << 20, 1 << 30}

// benchStaging runs move at each size with a fresh staging buffer, warmed
// up before timing, walking through arenas as benchCopies does.
func benchStaging(b *testing.B, sizes []int, host func(*testing.B, *cuda.Context, int) []byte,
	move func(*cuda.StagingBuffer, *cuda.DeviceBuffer[byte], []byte, *cuda.Stream) error) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	size := max(arenaBytes, slices.Max(sizes))
	a := arenas{dev: must(cuda.Alloc[byte](ctx, size))(b), host: host(b, ctx, size)}
	defer a.dev.Free()
	for _, n := range sizes {
		b.Run(sizeName(n), func(b *testing.B) {
			var sb cuda.StagingBuffer
			defer sb.Close()
			devs, hosts := a.slots(b, n)
			loopTransfers(b, &sb, devs, hosts, s, move)
			b.ReportMetric(float64(sb.Stats().Allocations), "pinned-allocs")
		})
	}
}

// loopTransfers times move through sb, slot after slot, after one
// untimed transfer that pins what the path needs.
func loopTransfers(b *testing.B, sb *cuda.StagingBuffer, devs []*cuda.DeviceBuffer[byte], hosts [][]byte, s *cuda.Stream,
	move func(*cuda.StagingBuffer, *cuda.DeviceBuffer[byte], []byte, *cuda.Stream) error) {
	b.Helper()
	if err := move(sb, devs[0], hosts[0], s); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(hosts[0])))
	i := 1
	for b.Loop() {
		if err := move(sb, devs[i%len(devs)], hosts[i%len(devs)], s); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func upload(sb *cuda.StagingBuffer, d *cuda.DeviceBuffer[byte], h []byte, s *cuda.Stream) error {
	return cuda.Upload(sb, d, h, s)
}

func download(sb *cuda.StagingBuffer, d *cuda.DeviceBuffer[byte], h []byte, s *cuda.Stream) error {
	return cuda.Download(sb, h, d, s)
}

// uploadWith fills nothing: the data is taken as produced in place, which
// is the point of UploadWith. It measures the transfer alone.
func uploadWith(sb *cuda.StagingBuffer, d *cuda.DeviceBuffer[byte], h []byte, s *cuda.Stream) error {
	return cuda.UploadWith(sb, d, len(h), s, func([]byte) {})
}

func downloadInto(sb *cuda.StagingBuffer, d *cuda.DeviceBuffer[byte], h []byte, s *cuda.Stream) error {
	_, err := cuda.DownloadInto(sb, d, len(h), s)
	return err
}

// randomArenas returns device memory and random host memory of size bytes,
// the device memory freed when b ends.
func randomArenas(b *testing.B, ctx *cuda.Context, size int) arenas {
	a := arenas{dev: must(cuda.Alloc[byte](ctx, size))(b), host: random[byte](size)}
	b.Cleanup(func() { a.dev.Free() })
	return a
}

// pipelineFrom returns the default pipeline taking transfers from min
// bytes both ways.
func pipelineFrom(min int) cuda.StagingPipeline {
	p := cuda.DefaultStagingPipeline()
	p.UploadMinBytes, p.DownloadMinBytes = min, min
	return p
}

func BenchmarkUpload(b *testing.B)       { benchStaging(b, stagingSizes, pageable, upload) }
func BenchmarkDownload(b *testing.B)     { benchStaging(b, stagingSizes, pageable, download) }
func BenchmarkUploadWith(b *testing.B)   { benchStaging(b, stagingSizes[:10], pageable, uploadWith) }
func BenchmarkDownloadInto(b *testing.B) { benchStaging(b, stagingSizes[:10], pageable, downloadInto) }

// BenchmarkStagingPaired alternates, transfer by transfer, Upload (or
// Download) through a StagingBuffer with its default thresholds and the
// plain CopyFromHost (or CopyToHost), each on its own cold slot, taking
// turns going first, and reports how many times faster the staging buffer
// was: the pageable path's rate wanders between runs, and pairing cancels
// that out of the ratio the never-slower promise is about.
func BenchmarkStagingPaired(b *testing.B) {
	benchPaired(b, stagingSizes, cuda.StagingOptions{})
}

// BenchmarkStagingPairedPipelined is BenchmarkStagingPaired at mid sizes
// with the pipeline forced: whether it beats the plain copy there
// transfer by transfer, which is what the pipeline thresholds promise.
func BenchmarkStagingPairedPipelined(b *testing.B) {
	benchPaired(b, []int{256 << 10, 512 << 10, 1 << 20, 2 << 20}, cuda.StagingOptions{Pipeline: pipelineFrom(1)})
}

// benchPaired runs the paired benchmark at sizes, each staging buffer built
// with opts.
func benchPaired(b *testing.B, sizes []int, opts cuda.StagingOptions) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	a := randomArenas(b, ctx, max(arenaBytes, slices.Max(sizes)))
	for _, dir := range []struct {
		name  string
		plain func(*cuda.DeviceBuffer[byte], []byte) error
		move  func(*cuda.StagingBuffer, *cuda.DeviceBuffer[byte], []byte, *cuda.Stream) error
	}{{"up", up, upload}, {"down", down, download}} {
		for _, n := range sizes {
			b.Run(dir.name+"/"+sizeName(n), func(b *testing.B) {
				sb := must(cuda.NewStagingBufferOptions(nil, 0, opts))(b)
				defer sb.Close()
				devs, hosts := a.slots(b, n)
				if err := dir.move(sb, devs[0], hosts[0], s); err != nil { // pin what it needs
					b.Fatal(err)
				}
				plain := func(k int) time.Duration {
					t := time.Now()
					if err := dir.plain(devs[k], hosts[k]); err != nil {
						b.Fatal(err)
					}
					return time.Since(t)
				}
				var staging, direct time.Duration
				for i := 0; b.Loop(); i++ {
					j, k := pairSlots(i, len(devs))
					if i%2 == 1 {
						direct += plain(k)
					}
					t := time.Now()
					if err := dir.move(sb, devs[j], hosts[j], s); err != nil {
						b.Fatal(err)
					}
					staging += time.Since(t)
					if i%2 == 0 {
						direct += plain(k)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/staging.Seconds()/1e9, "staging-GB/s")
				b.ReportMetric(float64(n)*float64(b.N)/direct.Seconds()/1e9, "plain-GB/s")
				b.ReportMetric(float64(direct)/float64(staging), "speedup")
			})
		}
	}
}

// Upload and Download of a Registered slice go straight to the DMA engine.
func BenchmarkUploadRegistered(b *testing.B) {
	benchStaging(b, stagingSizes[9:11], registered, upload)
}

func BenchmarkDownloadRegistered(b *testing.B) {
	benchStaging(b, stagingSizes[9:11], registered, download)
}

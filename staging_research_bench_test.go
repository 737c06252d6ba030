//go:build gocuda_research

package cuda_test

// The research benchmarks of the staging pipeline: the measurements behind
// its constants and defaults, which docs/performance.md quotes and
// scripts/gpu-perf.sh runs (its test binaries are built with this tag,
// scripts/gpu-build.sh). Run them with -tags gocuda_research. The copy
// engine's own are in internal/hostcopy.

import (
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/hostcopy"
)

// directions are the two ways the staging benchmarks move data.
var directions = []struct {
	name string
	move func(*cuda.StagingBuffer, *cuda.DeviceBuffer[byte], []byte, *cuda.Stream) error
}{{"up", upload}, {"down", download}}

// pipelinedBuffer returns a staging buffer that stages nothing whole and
// pipelines by p, closed when b ends.
func pipelinedBuffer(b *testing.B, p cuda.StagingPipeline) *cuda.StagingBuffer {
	b.Helper()
	sb := must(cuda.NewStagingBufferOptions(nil, 0, cuda.StagingOptions{Pipeline: p}))(b)
	b.Cleanup(func() { sb.Close() })
	return sb
}

// BenchmarkStagingRoutesLoop moves mid sizes back to back, as an input
// pipeline does, by each route forced (staged whole, pipelined, handed to
// the driver): in a loop the copy workers stay warm between transfers,
// which single transfers (gocuda calibrate) do not see.
func BenchmarkStagingRoutesLoop(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	a := randomArenas(b, ctx, arenaBytes)
	off, on := pipelineFrom(math.MaxInt), pipelineFrom(1)
	routes := []struct {
		name     string
		stageMax int
		pipe     cuda.StagingPipeline
	}{{"staged", math.MaxInt, off}, {"pipelined", 0, on}, {"direct", 0, off}}
	for _, dir := range directions {
		for _, n := range []int{64 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20} {
			for _, r := range routes {
				b.Run(dir.name+"/"+sizeName(n)+"/"+r.name, func(b *testing.B) {
					sb := must(cuda.NewStagingBufferOptions(nil, 0, cuda.StagingOptions{AutoStageMaxBytes: r.stageMax, Pipeline: r.pipe}))(b)
					defer sb.Close()
					devs, hosts := a.slots(b, n)
					loopTransfers(b, sb, devs, hosts, s, dir.move)
				})
			}
		}
	}
}

// BenchmarkPipelineSplit sweeps, at mid sizes, back to back, both ways,
// the least number of chunks a pipelined transfer is cut into and the
// least part a copy worker is given: the measurement behind pipeSplit and
// hostcopy's minPart.
func BenchmarkPipelineSplit(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	a := randomArenas(b, ctx, arenaBytes)
	for _, dir := range directions {
		for _, n := range []int{256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20, 16 << 20} {
			for _, split := range []int{1, 2, 3, 4} {
				for _, part := range []int{64 << 10, 128 << 10, 256 << 10} {
					b.Run(fmt.Sprintf("%s/%s/split=%d/part=%s", dir.name, sizeName(n), split, sizeName(part)), func(b *testing.B) {
						defer cuda.SetPipeSplit(cuda.SetPipeSplit(split))
						defer hostcopy.SetMinPart(hostcopy.SetMinPart(part))
						devs, hosts := a.slots(b, n)
						loopTransfers(b, pipelinedBuffer(b, pipelineFrom(1)), devs, hosts, s, dir.move)
					})
				}
			}
		}
	}
}

// BenchmarkPipelineTrace times the steps of pipelined transfers, back to
// back, both ways, with streaming stores and without: when the stream was
// drained and the workers held, when the first and last chunks were copied
// between host and pinned memory, when their DMA was queued or seen done,
// and when the transfer ended, in microseconds from the transfer's call,
// averaged.
func BenchmarkPipelineTrace(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	a := randomArenas(b, ctx, arenaBytes)
	for _, dir := range directions {
		for _, n := range []int{1 << 20, 4 << 20, 16 << 20, 256 << 20} {
			for _, streaming := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/%s/streaming=%v", dir.name, sizeName(n), streaming), func(b *testing.B) {
					defer cuda.SetCopyStreaming(streaming)()
					devs, hosts := a.slots(b, n)
					traceTransfers(b, devs, hosts, s, dir.move)
				})
			}
		}
	}
}

// traceTransfers runs loopTransfers through the pipeline, every transfer
// pipelined, and reports when its steps happened, in microseconds from
// each transfer's start, averaged: chunk 0's copy, DMA queued and DMA seen
// done, and the last of each; and the time the transfer's goroutine spent
// waiting for copies to finish (copywait) and for DMA (dmawait, the
// stream's synchronize at the end included; before blocking on a DMA it
// copies any part still queued), which says which of the two held the
// transfer.
func traceTransfers(b *testing.B, devs []*cuda.DeviceBuffer[byte], hosts [][]byte, s *cuda.Stream,
	move func(*cuda.StagingBuffer, *cuda.DeviceBuffer[byte], []byte, *cuda.Stream) error) {
	b.Helper()
	sb := pipelinedBuffer(b, pipelineFrom(1))
	// Untraced: the first transfer pins the memory (milliseconds), which
	// would shift every step's average.
	if err := move(sb, devs[0], hosts[0], s); err != nil {
		b.Fatal(err)
	}
	sums, cur := map[string]time.Duration{}, map[string]time.Duration{}
	chunks := 0
	var last time.Duration // the step before, in this transfer
	cuda.TracePipeline(func(step string, chunk int, since time.Duration) {
		if chunk == 0 {
			sums[step+"0"] += since
		}
		switch step {
		case "copied":
			sums["copywait"] += since - last
		case "landed", "done":
			sums["dmawait"] += since - last
		}
		last = since
		cur[step] = since // the latest of each step in this transfer
		if step == "done" {
			last = 0
			for k, v := range cur {
				sums[k] += v
			}
			clear(cur)
			chunks = chunk + 1
		}
	})
	defer cuda.TracePipeline(nil)
	loopTransfers(b, sb, devs, hosts, s, move)
	ops := float64(b.N + 1) // loopTransfers' untimed first transfer is traced too
	for _, step := range []string{"held", "copied0", "queued0", "landed0", "copied", "queued", "landed", "done", "copywait", "dmawait"} {
		b.ReportMetric(float64(sums[step].Microseconds())/ops, step+"-us")
	}
	b.ReportMetric(float64(chunks), "chunks")
}

// BenchmarkPipelineTimeline logs, chunk by chunk, when one pipelined
// transfer's steps happened (the fourth of four back to back, each from
// its own slot of a 1 GiB arena), in microseconds from its call: the
// copy seen done, the DMA queued, and the DMA seen done (uploading, the
// landing logged at chunk i is chunk i-slots', whose slot chunk i takes),
// on one line. From the landings, the DMA engine's speed through the
// transfer.
func BenchmarkPipelineTimeline(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	a := randomArenas(b, ctx, 1<<30)
	for _, dir := range directions {
		for _, n := range []int{16 << 20, 64 << 20, 256 << 20, 1 << 30} {
			for _, streaming := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/%s/streaming=%v", dir.name, sizeName(n), streaming), func(b *testing.B) {
					defer cuda.SetCopyStreaming(streaming)()
					sb := pipelinedBuffer(b, pipelineFrom(1))
					devs, hosts := a.slots(b, n)
					for i := range 3 {
						if err := dir.move(sb, devs[i%len(devs)], hosts[i%len(devs)], s); err != nil {
							b.Fatal(err)
						}
					}
					type steps struct{ copied, queued, landed time.Duration }
					var chunks []steps
					at := func(i int) *steps {
						for len(chunks) <= i {
							chunks = append(chunks, steps{})
						}
						return &chunks[i]
					}
					cuda.TracePipeline(func(step string, chunk int, since time.Duration) {
						switch step {
						case "copied":
							at(chunk).copied = since
						case "queued":
							at(chunk).queued = since
						case "landed":
							at(chunk).landed = since
						}
					})
					defer cuda.TracePipeline(nil)
					b.SetBytes(int64(n))
					b.ResetTimer()
					for range b.N {
						chunks = chunks[:0]
						if err := dir.move(sb, devs[3%len(devs)], hosts[3%len(devs)], s); err != nil {
							b.Fatal(err)
						}
					}
					// One line: a benchmark's log is cut at ten.
					var log strings.Builder
					for i, c := range chunks {
						fmt.Fprintf(&log, "; %d %d %d %d", i, c.copied.Microseconds(), c.queued.Microseconds(), c.landed.Microseconds())
					}
					b.Logf("chunk copied queued landed (us)%s", log.String())
				})
			}
		}
	}
}

// BenchmarkDMAAfterCopy times the DMA of pinned memory to the device
// alone, after the pinned memory was written as the pipeline writes its
// slots (its copy workers, with streaming stores or without), after that
// and another copy as large through the workers (which moves the first's
// lines out of the cores' own caches), or not written at all: whether the
// DMA engine reads memory the CPUs have just written slower.
func BenchmarkDMAAfterCopy(b *testing.B) {
	ctx := cudatest.Context(b)
	for _, n := range []int{4 << 20, 32 << 20} {
		p := must(cuda.AllocPinned[byte](ctx, n))(b)
		defer p.Free()
		d := must(cuda.Alloc[byte](ctx, n))(b)
		defer d.Free()
		src, other, otherDst := random[byte](n), random[byte](n), make([]byte, n)
		workers := cuda.DefaultStagingPipeline().Workers
		var j hostcopy.Job // the pipeline's copy
		for _, c := range []struct {
			name  string
			write func()
		}{
			{"unwritten", func() {}},
			{"copied", func() { j.Copy(p.Data(), src, workers, false) }},
			{"streamed", func() { j.Copy(p.Data(), src, workers, true) }},
			{"copied+other", func() {
				j.Copy(p.Data(), src, workers, false)
				j.Copy(otherDst, other, workers, false)
			}},
		} {
			b.Run(fmt.Sprintf("%s/%s", sizeName(n), c.name), func(b *testing.B) {
				b.SetBytes(int64(n))
				for range b.N {
					b.StopTimer()
					c.write()
					b.StartTimer()
					if err := d.CopyFromHost(p.Data()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPipelineTail runs pipelined transfers of 128 KiB-4.7 MiB back to
// back, with the steps of each timed (traceTransfers), downloads with their
// slots rotating through the pinned memory (the default) and at one place
// (rotateDownloads), beside the pinned path alone with the copy workers
// blocked and spinning (spinning workers did not slow the DMA engine).
func BenchmarkPipelineTail(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	a := randomArenas(b, ctx, arenaBytes)
	for _, dir := range directions {
		pinnedMove := uploadWith
		if dir.name == "down" {
			pinnedMove = downloadInto
		}
		for _, n := range []int{150 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20, 4928307} {
			devs, hosts := a.slots(b, n)
			b.Run(fmt.Sprintf("%s/%s/direct", dir.name, sizeName(n)), func(b *testing.B) {
				loopTransfers(b, pipelinedBuffer(b, pipelineFrom(math.MaxInt)), devs, hosts, s, dir.move)
			})
			for _, spin := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/%s/pinned/spinning=%v", dir.name, sizeName(n), spin), func(b *testing.B) {
					if spin {
						defer holdCopyWorkers()()
					}
					loopTransfers(b, pipelinedBuffer(b, pipelineFrom(1)), devs, hosts, s, pinnedMove)
				})
			}
			for _, rotate := range []bool{true, false} {
				b.Run(fmt.Sprintf("%s/%s/pipelined/rotate=%v", dir.name, sizeName(n), rotate), func(b *testing.B) {
					defer cuda.SetRotateDownloads(rotate)()
					traceTransfers(b, devs, hosts, s, dir.move)
				})
			}
		}
	}
}

// BenchmarkPipelineShape sweeps the pipeline's chunk size and workers at a
// middle and a large size, both ways: the measurement behind
// DefaultStagingPipeline.
func BenchmarkPipelineShape(b *testing.B) {
	for _, n := range []int{16 << 20, 256 << 20} {
		b.Run(sizeName(n), func(b *testing.B) {
			ctx := cudatest.Context(b)
			s := cudatest.Stream(b, ctx)
			dev := must(cuda.Alloc[byte](ctx, n))(b)
			defer dev.Free()
			h := random[byte](n)
			for _, chunk := range []int{1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20} {
				for _, workers := range []int{4, 8, 16} {
					for _, dir := range []string{"up", "down"} {
						b.Run(fmt.Sprintf("%s/chunk=%s/workers=%d", dir, sizeName(chunk), workers), func(b *testing.B) {
							sb := pipelinedBuffer(b, cuda.StagingPipeline{UploadMinBytes: 1, DownloadMinBytes: 1, ChunkBytes: chunk, Slots: 3, Workers: workers})
							move := upload
							if dir == "down" {
								move = download
							}
							if err := move(sb, dev, h, s); err != nil {
								b.Fatal(err)
							}
							b.SetBytes(int64(n))
							for b.Loop() {
								if err := move(sb, dev, h, s); err != nil {
									b.Fatal(err)
								}
							}
						})
					}
				}
			}
		})
	}
}

// BenchmarkCopyPool compares, at a middle and a large size, both ways, on
// memory the caches do not hold, the pipeline with its copy workers held
// spinning for the whole transfer and left to block between chunks, split
// over 8 and 16 goroutines.
func BenchmarkCopyPool(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	a := arenas{dev: must(cuda.Alloc[byte](ctx, 1<<30))(b), host: random[byte](1 << 30)}
	defer a.dev.Free()
	for _, n := range []int{16 << 20, 256 << 20} {
		devs, hosts := a.slots(b, n)
		for _, hold := range []bool{false, true} {
			for _, workers := range []int{8, 16} {
				for _, dir := range []string{"up", "down"} {
					b.Run(fmt.Sprintf("%s/hold=%v/workers=%d/%s", sizeName(n), hold, workers, dir), func(b *testing.B) {
						defer hostcopy.SetHold(hostcopy.SetHold(hold))
						p := cuda.DefaultStagingPipeline()
						p.UploadMinBytes, p.DownloadMinBytes, p.Workers = 1, 1, min(workers, p.Workers)
						sb := pipelinedBuffer(b, p)
						move := upload
						if dir == "down" {
							move = download
						}
						loopTransfers(b, sb, devs, hosts, s, move)
					})
				}
			}
		}
	}
}

// BenchmarkPipelineSlots runs Upload and Download of ordinary slices, back
// to back, through pipelines of slots of several sizes and counts, side by
// side at mid and large sizes, where the copy workers share the host's
// memory with the DMA engine: the measurement behind the default 8 slots
// of 4 MiB (before: 3 of 16 MiB).
func BenchmarkPipelineSlots(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	a := randomArenas(b, ctx, 1<<30)
	shapes := []struct{ chunk, slots int }{{16 << 20, 3}, {4 << 20, 8}, {8 << 20, 6}, {8 << 20, 8}}
	for _, dir := range directions {
		for _, n := range []int{16 << 20, 64 << 20, 256 << 20, 1 << 30} {
			for _, sh := range shapes {
				b.Run(fmt.Sprintf("%s/%s/chunk=%s/slots=%d", dir.name, sizeName(n), sizeName(sh.chunk), sh.slots), func(b *testing.B) {
					p := pipelineFrom(512 << 10)
					p.ChunkBytes, p.Slots = sh.chunk, sh.slots
					sb := pipelinedBuffer(b, p)
					devs, hosts := a.slots(b, n)
					loopTransfers(b, sb, devs, hosts, s, dir.move)
				})
			}
		}
	}
}

// BenchmarkPipelineStreaming runs Upload and Download of ordinary slices,
// back to back, with the staging pipeline's copies made with streaming
// stores and without, side by side at each size: the measurement behind
// streamBelow. At each size the routes are the default ones, and at
// 256 KiB and 1 MiB the pipeline is forced too.
func BenchmarkPipelineStreaming(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	a := randomArenas(b, ctx, arenaBytes)
	for _, dir := range directions {
		for _, n := range []int{64 << 10, 256 << 10, 1 << 20, 4928307, 16 << 20, 32 << 20, 64 << 20, 128 << 20, 256 << 20} {
			routes := []string{"default"}
			if n == 256<<10 || n == 1<<20 {
				routes = append(routes, "pipelined")
			}
			for _, route := range routes {
				for _, streaming := range []bool{false, true} {
					b.Run(fmt.Sprintf("%s/%s/%s/streaming=%v", dir.name, sizeName(n), route, streaming), func(b *testing.B) {
						defer cuda.SetCopyStreaming(streaming)()
						sb := new(cuda.StagingBuffer)
						defer sb.Close()
						if route == "pipelined" {
							sb = pipelinedBuffer(b, pipelineFrom(1))
						}
						devs, hosts := a.slots(b, n)
						loopTransfers(b, sb, devs, hosts, s, dir.move)
					})
				}
			}
		}
	}
}

// BenchmarkPipelineGrain runs Upload and Download of ordinary slices of
// mid sizes, back to back, through the pipeline cut at several grains (the
// least chunk, the least number of chunks, the least part a copy worker is
// given), beside the driver's own path: whether finer chunks let the DMA
// engine start sooner. Its trace sub-benchmarks time the steps as
// BenchmarkPipelineTrace does.
func BenchmarkPipelineGrain(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	a := randomArenas(b, ctx, arenaBytes)
	grains := []struct{ chunk, split, part int }{
		{512 << 10, 4, 64 << 10}, {512 << 10, 4, 32 << 10}, {512 << 10, 4, 16 << 10},
		{256 << 10, 4, 16 << 10}, {256 << 10, 4, 64 << 10}, {128 << 10, 8, 32 << 10},
	}
	for _, dir := range directions {
		for _, n := range []int{128 << 10, 192 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20, 4928307, 16 << 20, 64 << 20, 256 << 20} {
			devs, hosts := a.slots(b, n)
			b.Run(fmt.Sprintf("%s/%s/direct", dir.name, sizeName(n)), func(b *testing.B) {
				loopTransfers(b, pipelinedBuffer(b, pipelineFrom(math.MaxInt)), devs, hosts, s, dir.move)
			})
			for gi, g := range grains {
				if gi > 0 && n > 16<<20 {
					break
				}
				name := fmt.Sprintf("%s/%s/chunk=%s/split=%d/part=%s", dir.name, sizeName(n), sizeName(g.chunk), g.split, sizeName(g.part))
				b.Run(name, func(b *testing.B) {
					defer cuda.SetPipeGrain(g.chunk, g.split, g.part)()
					loopTransfers(b, pipelinedBuffer(b, pipelineFrom(1)), devs, hosts, s, dir.move)
				})
				if n == 256<<10 || n == 1<<20 || n == 4928307 {
					b.Run(name+"/trace", func(b *testing.B) {
						defer cuda.SetPipeGrain(g.chunk, g.split, g.part)()
						traceTransfers(b, devs, hosts, s, dir.move)
					})
				}
			}
		}
	}
}

// BenchmarkPipelineLarge runs Upload and Download of ordinary slices of
// 256 MiB and 1 GiB, back to back, with and without streaming stores and
// with fewer copy workers than the default: at these sizes the copy
// workers and the DMA engine share the host's memory, and fewer writers, or
// stores that skip the caches, may leave more of it to the link. It
// reports the median transfer's speed and the slowest's besides the mean:
// one transfer held up a millisecond or more shows in them.
func BenchmarkPipelineLarge(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	a := randomArenas(b, ctx, 1<<30)
	for _, dir := range directions {
		for _, n := range []int{256 << 20, 1 << 30} {
			devs, hosts := a.slots(b, n)
			for _, streaming := range []bool{false, true} {
				for _, workers := range []int{8, 12, 16} {
					b.Run(fmt.Sprintf("%s/%s/streaming=%v/workers=%d", dir.name, sizeName(n), streaming, workers), func(b *testing.B) {
						defer cuda.SetCopyStreaming(streaming)()
						p := cuda.DefaultStagingPipeline()
						p.Workers = workers
						var took []time.Duration
						loopTransfers(b, pipelinedBuffer(b, p), devs, hosts, s, timed(dir.move, &took))
						reportSpread(b, n, took[1:]) // the first, untimed, pinned the memory
					})
				}
			}
		}
	}
}

// timed returns move, appending the time each call took to took.
func timed(move func(*cuda.StagingBuffer, *cuda.DeviceBuffer[byte], []byte, *cuda.Stream) error,
	took *[]time.Duration) func(*cuda.StagingBuffer, *cuda.DeviceBuffer[byte], []byte, *cuda.Stream) error {
	return func(sb *cuda.StagingBuffer, d *cuda.DeviceBuffer[byte], h []byte, s *cuda.Stream) error {
		start := time.Now()
		err := move(sb, d, h, s)
		*took = append(*took, time.Since(start))
		return err
	}
}

// reportSpread reports the median and the slowest of transfers of n bytes
// that took took, in GB/s.
func reportSpread(b *testing.B, n int, took []time.Duration) {
	b.Helper()
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	gbs := func(d time.Duration) float64 { return float64(n) / d.Seconds() / 1e9 }
	b.ReportMetric(gbs(took[len(took)/2]), "median-GB/s")
	b.ReportMetric(gbs(took[len(took)-1]), "slowest-GB/s")
}

// BenchmarkFreshSlices moves data to and from slices made just before each
// transfer (pages the process never touched, as out := make([]T, n) gives
// them, after debug.FreeOSMemory; an upload's filled first, as a user
// fills what to send), beside the same slice reused back to back, and
// reused after the same pause (paused: the copy workers parked, as they
// are after the fresh slice is made), with the download's two measures for
// fresh pages on or off (freshpages.go: huge pages advised, pages
// populated ahead of the copies) and the workers parked in the kernel
// (futex) or on channels. Seven timed transfers each; the median and the
// slowest.
func BenchmarkFreshSlices(b *testing.B) {
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	modes := []struct {
		name                     string
		fresh, paused, futex     bool
		advise, populate, upward bool // upward: run uploads too
	}{
		{"reused", false, false, false, true, true, true},
		{"reused-paused", false, true, false, true, true, true},
		{"reused-paused-futex", false, true, true, true, true, true},
		{"fresh", true, true, false, true, true, true},
		{"fresh-futex", true, true, true, true, true, true},
		{"fresh-noadvise", true, true, false, false, true, false},
		{"fresh-nopopulate", true, true, false, true, false, false},
		{"fresh-neither", true, true, false, false, false, false},
	}
	for _, dir := range directions {
		for _, n := range []int{4 << 20, 16 << 20, 64 << 20, 256 << 20} {
			dev := must(cuda.Alloc[byte](ctx, n))(b)
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(i*131 + 1)
			}
			if err := dev.CopyFromHost(src); err != nil {
				b.Fatal(err)
			}
			for _, m := range modes {
				if dir.name == "up" && !m.upward {
					continue // the measures are a download's
				}
				b.Run(fmt.Sprintf("%s/%s/%s", dir.name, sizeName(n), m.name), func(b *testing.B) {
					defer cuda.SetFreshPages(m.advise, m.populate)()
					defer hostcopy.SetFutexParking(hostcopy.SetFutexParking(m.futex))
					sb := pipelinedBuffer(b, cuda.DefaultStagingPipeline())
					if err := dir.move(sb, dev, src, s); err != nil { // pins the memory, wakes the workers
						b.Fatal(err)
					}
					var took []time.Duration
					for range 7 {
						host := src
						if m.paused {
							debug.FreeOSMemory()
						}
						if m.fresh {
							host = make([]byte, n)
							if dir.name == "up" {
								copy(host, src)
							}
						}
						start := time.Now()
						if err := dir.move(sb, dev, host, s); err != nil {
							b.Fatal(err)
						}
						took = append(took, time.Since(start))
						if dir.name == "down" && host[n-1] != src[n-1] {
							b.Fatalf("byte %d is %d after the download, want %d", n-1, host[n-1], src[n-1])
						}
					}
					reportSpread(b, n, took)
				})
			}
			if err := dev.Free(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

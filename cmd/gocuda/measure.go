package main

import (
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/bench/report/results"
)

// maxSlots bounds how many slices of the arenas the smallest transfers walk
// through: they measure latency, and should not measure page walks.
const maxSlots = 4096

// measureAll times every path at every size and direction of cfg. Host and
// device memory are arenas of at least 256 MiB that each transfer walks
// through, a slice at a time, so that no cache holds what a transfer moves.
// Each path runs its transfers back to back, as an application would, and
// the context is synchronized between paths: a synchronous copy from
// pageable memory may return before its last bytes land, and taking turns
// would charge that to whichever path came next.
func measureAll(ctx *cuda.Context, cfg benchConfig, progress func(done, total int)) ([]results.Result, error) {
	arena := max(slices.Max(cfg.sizes), 256<<20)
	free, _, err := ctx.MemInfo()
	if err != nil {
		return nil, err
	}
	if need := uint64(arena) + 64<<20; need > free {
		return nil, fmt.Errorf("the largest size, %s, needs %s of device memory; %s is free",
			results.FormatSize(slices.Max(cfg.sizes)), results.FormatSize(int(need)), results.FormatSize(int(free)))
	}
	s, err := ctx.NewStream()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	dev, err := cuda.Alloc[byte](ctx, arena)
	if err != nil {
		return nil, err
	}
	defer dev.Free()
	pinned, err := cuda.AllocPinned[byte](ctx, arena)
	if err != nil {
		return nil, err
	}
	defer pinned.Free()
	host := make([]byte, arena)
	for i := range host {
		host[i] = byte(i*31 + 7)
	}
	copy(pinned.Data(), host)
	var sb cuda.StagingBuffer
	defer sb.Close()
	var fresh []byte // the fresh path's slice of the transfer at hand

	var out []results.Result
	total, done := len(cfg.sizes)*len(cfg.directions)*len(results.GocudaPaths()), 0
	for _, d := range cfg.directions {
		for _, n := range cfg.sizes {
			slots := min(arena/n, maxSlots)
			devAt := func(i int) (*cuda.DeviceBuffer[byte], error) { return dev.Slice(i%slots*n, n) }
			at := func(mem []byte, i int) []byte { off := i % slots * n; return mem[off : off+n] }
			up := d == cuda.HostToDevice
			ops := map[string]func(i int) error{
				results.Copy: func(i int) error {
					b, err := devAt(i)
					if err != nil {
						return err
					}
					if up {
						return b.CopyFromHost(at(host, i))
					}
					return b.CopyToHost(at(host, i))
				},
				results.Pinned: func(i int) error {
					b, err := devAt(i)
					if err != nil {
						return err
					}
					if up {
						return b.CopyFromHost(at(pinned.Data(), i))
					}
					return b.CopyToHost(at(pinned.Data(), i))
				},
				results.InPlace: func(i int) error {
					b, err := devAt(i)
					if err != nil {
						return err
					}
					if up {
						return cuda.UploadWith(&sb, b, n, s, func([]byte) {})
					}
					_, err = cuda.DownloadInto(&sb, b, n, s)
					return err
				},
				results.Staging: func(i int) error {
					b, err := devAt(i)
					if err != nil {
						return err
					}
					if up {
						return cuda.Upload(&sb, b, at(host, i), s)
					}
					return cuda.Download(&sb, at(host, i), b, s)
				},
				results.Fresh: func(i int) error {
					b, err := devAt(i)
					if err != nil {
						return err
					}
					if up {
						return cuda.Upload(&sb, b, fresh, s)
					}
					return cuda.Download(&sb, fresh, b, s)
				},
			}
			// prepare makes the fresh path's slice, untimed: pages the
			// process has never touched (the runtime's freed memory goes
			// back to the system first, so that make does not reuse pages
			// it would zero, and so touch, itself). An upload's slice is
			// filled first, as a user fills the data to send.
			prepare := map[string]func(i int){
				results.Fresh: func(i int) {
					fresh = nil
					debug.FreeOSMemory()
					fresh = make([]byte, n)
					if up {
						copy(fresh, at(host, i))
					}
				},
			}
			for _, p := range results.GocudaPaths() {
				r, err := measurePath(prepare[p], ops[p], cfg.reps, n)
				if err == nil {
					err = ctx.Synchronize()
				}
				if err != nil {
					return nil, fmt.Errorf("%s %s %s: %w", p, dirName(d), results.FormatSize(n), err)
				}
				r.Direction, r.Path = dirName(d), p
				if p == results.Staging {
					before := sb.Stats()
					if err := ops[p](0); err != nil {
						return nil, err
					}
					r.Route = route(before, sb.Stats())
				}
				out = append(out, r)
				done++
				progress(done, total)
			}
		}
	}
	return out, nil
}

// measurePath warms op up, then times reps calls of it, each moving n
// bytes, and returns the median, quartiles and least of their rates.
// prepare, where not nil, runs untimed before each call.
func measurePath(prepare func(i int), op func(i int) error, reps, n int) (results.Result, error) {
	if prepare == nil {
		prepare = func(int) {}
	}
	for i := range 2 {
		prepare(i)
		if err := op(i); err != nil {
			return results.Result{}, err
		}
	}
	rates := make([]float64, reps)
	for i := range reps {
		prepare(i + 2)
		start := time.Now()
		if err := op(i + 2); err != nil {
			return results.Result{}, err
		}
		rates[i] = float64(n) / time.Since(start).Seconds() / 1e9
	}
	slices.Sort(rates)
	q := func(f float64) float64 { return rates[int(f*float64(reps-1)+0.5)] }
	return results.Result{Bytes: n, Median: q(0.5), P25: q(0.25), P75: q(0.75), Min: rates[0], Reps: reps}, nil
}

// route names the path a staging transfer took, from the counters before
// and after it.
func route(before, after cuda.StagingStats) string {
	switch {
	case after.Staged > before.Staged:
		return "staged"
	case after.Pipelined > before.Pipelined:
		return "pipelined"
	default:
		return "direct"
	}
}

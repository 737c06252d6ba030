package cuda

import (
	"errors"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/hostcopy"
)

// This file is the machinery under Upload and Download: choosing a route,
// getting the pinned memory it needs, and the pipeline itself (package
// internal/hostcopy holds the goroutines that copy for it).

type route int

const (
	routeDirect route = iota
	routeStaged
	routePipelined
)

// route chooses the path for a transfer of n bytes of host memory, locked
// if page-locked, in direction d, staged up to stageMax bytes.
func (p StagingPipeline) route(n int, locked bool, stageMax int, d Direction) route {
	switch {
	case locked:
		return routeDirect
	case n <= stageMax:
		return routeStaged
	case n >= p.minBytes(d):
		return routePipelined
	}
	return routeDirect
}

// minBytes is the size from which transfers in direction d are pipelined.
func (p StagingPipeline) minBytes(d Direction) int {
	if d == HostToDevice {
		return p.UploadMinBytes
	}
	return p.DownloadMinBytes
}

// transfer moves host to or from the device memory at ptr of mem, on s,
// by the route the options and the threshold choose, and counts it once it
// succeeded.
func (sb *StagingBuffer) transfer(op string, d Direction, mem *allocation, ptr driver.DevicePtr, host []byte, s *Stream) error {
	trace(stepStart, 0)
	p := sb.opts.pipeline()
	locked := pageLocked(host)
	r := p.route(len(host), locked, sb.stageMaxBytes(d), d)
	if r == routePipelined && len(host) < p.WarmBelowBytes && !hostcopy.Awake() {
		r = routeDirect
	}
	pinned, slot, err := sb.prepare(op, r, d, p, mem.ctx, s, len(host))
	if err != nil {
		return err
	}
	if err := enterWith(op, &mem.life, "the device buffer", &s.life, "the stream"); err != nil {
		return err
	}
	defer leaveWith(&mem.life, &s.life)
	s.uses(mem)
	up := d == HostToDevice
	switch {
	case r == routeStaged && up:
		sb.copies[0].Copy(pinned, host, p.Workers, streams(d, len(host)))
		err = upload(op, ptr, pinned, false, s)
	case r == routeStaged:
		if err = download(op, pinned, ptr, s); err == nil {
			sb.copies[0].Copy(host, pinned, p.Workers, streams(d, len(host)))
		}
	case r == routePipelined:
		if err = sb.pipeline(op, up, ptr, host, pinned, slot, p, s); err != nil {
			sb.settle(op, s, sb.events)
		}
	case up:
		err = upload(op, ptr, host, !locked, s)
	default:
		err = download(op, host, ptr, s)
	}
	if err != nil {
		return err
	}
	sb.count(r, d, len(host))
	return nil
}

// prepare gets what a transfer on route r of n bytes in direction d needs
// before the buffer and stream are held (allocating binds the context
// itself): the pinned memory to use and, for the pipeline, the size of its
// slots (slotsFor) and their events.
func (sb *StagingBuffer) prepare(op string, r route, d Direction, p StagingPipeline, ctx *Context, s *Stream, n int) (pinned []byte, slot int, err error) {
	switch r {
	case routeStaged:
		pinned, err = sb.staging(op, ctx, n)
		return pinned, 0, err
	case routePipelined:
		count, slot := p.slotsFor(n, sb.held(), d == HostToDevice)
		if pinned, err = sb.staging(op, ctx, count*slot); err != nil {
			return nil, 0, err
		}
		if sb.evCtx != s.ctx {
			if err := sb.closeEvents(); err != nil {
				return nil, 0, err
			}
			sb.evCtx = s.ctx
		}
		for len(sb.events) < max(p.Slots, pipeSplit) {
			e, err := s.ctx.NewEvent(EventDisableTiming)
			if err != nil {
				return nil, 0, err
			}
			sb.events = append(sb.events, e)
		}
		return pinned, slot, nil
	}
	return nil, 0, nil
}

// slotsFor returns how a pipelined transfer of n bytes cuts its pinned
// memory: count slots of size bytes. Unless memory held covers n, that is
// Slots of ChunkBytes, whatever the transfer, so that mixed sizes settle on
// one allocation. Memory held that covers n, but is less than Slots of
// ChunkBytes, is used as it is, so that a reservation keeps page-locking
// out of every transfer it covers: in slots no smaller than the chunk the
// transfer takes from slots of ChunkBytes, where it has room for two (a
// buffer holding 1 MiB moves 1 MiB in two chunks of 512 KiB, not eight of
// 128 KiB, which ran slower both ways: docs/performance.md). A transfer of
// one such chunk takes
// one slot; one of more, two slots at least, so that one is filled while
// the other's DMA runs. No slot is larger than ChunkBytes.
func (p StagingPipeline) slotsFor(n, held int, up bool) (count, size int) {
	if n > held || held >= p.Slots*p.ChunkBytes {
		return p.Slots, p.ChunkBytes
	}
	want := cut(n, p.ChunkBytes, false, up).size
	if n <= want {
		return 1, min(held, p.ChunkBytes)
	}
	count = max(2, min(p.Slots, held/want))
	return count, min(held/count/StagingGranularity*StagingGranularity, p.ChunkBytes)
}

// held returns the usable pinned memory held, in bytes.
func (sb *StagingBuffer) held() int {
	if !sb.usable() {
		return 0
	}
	return sb.mem.Len()
}

// upload copies host to the device at d after the work queued on s. The
// synchronous copy is the driver's fastest for ordinary memory and as fast
// as any for pinned memory; it is not itself on s, so the work on s is
// waited for first. pageable says host is ordinary memory (see copyHtoD).
func upload(op string, d driver.DevicePtr, host []byte, pageable bool, s *Stream) error {
	if err := s.drain(op); err != nil {
		return err
	}
	return copyHtoD(op, s.ctx, d, host, pageable)
}

// download copies from the device at d into host after the work queued on
// s; a synchronous copy to host memory returns only once it is done.
func download(op string, host []byte, d driver.DevicePtr, s *Stream) error {
	if err := s.drain(op); err != nil {
		return err
	}
	return check(op, driver.MemcpyDtoH(s.ctx.handle, hostPtr(host), d, uintptr(len(host))))
}

// pipeSplit is the least number of chunks a pipelined transfer is cut
// into, so that even a transfer a few chunks long overlaps copying and DMA.
var pipeSplit = 4

// pipeTrace, set by a benchmark, is told each step of a pipelined
// transfer as it happens, with its chunk: the trace in docs/performance.md.
var pipeTrace func(step pipeStep, chunk int)

type pipeStep int

const (
	stepStart  pipeStep = iota // the transfer called
	stepHeld                   // the stream drained, the workers held
	stepCopied                 // chunk's copy between host and pinned memory done
	stepLanded                 // chunk's DMA done (waited for)
	stepQueued                 // chunk's DMA queued
	stepDone                   // the stream synchronized
)

func trace(step pipeStep, chunk int) {
	if pipeTrace != nil {
		pipeTrace(step, chunk)
	}
}

// minPipeChunk is the least chunk a transfer is cut into: below it the
// DMA engine's cost per copy outweighs the overlap (docs/performance.md).
var minPipeChunk = 512 << 10

// chunking is how a pipelined transfer of n bytes is cut: in pipeSplit
// chunks of size bytes or more, at least minPipeChunk and at most a slot.
// A transfer of chunks of a whole slot ramps, where ramps says the slots
// are of ChunkBytes (as StagingPipeline.ChunkBytes documents): an upload
// starts with chunks of an eighth, an eighth, a quarter and a half of one,
// so that the DMA engine starts once an eighth is copied instead of a whole
// slot; a download ends so, mirrored, so that the last copy out is short.
type chunking struct {
	n, size, count int
	ramp, up       bool
}

// rotateDownloads says whether a download's slots start where the last
// download's ended, within the pinned memory, wrapping to its start, instead
// of always at its start. On the H200 machine the DMA engine wrote memory
// the copies out had just read at about half its speed (as we read it, the
// reads leave the slots in the CPUs' caches, which its writes must clear),
// and back-to-back downloads ran up to 1.55x faster rotating
// (docs/performance.md). A download whose slots take more than half the
// pinned memory (from 16 MiB with the defaults) starts at its start each
// time. Uploads fill the slots with streaming stores, which leave nothing
// cached, and tied rotating. A variable for the benchmark.
var rotateDownloads = true

func cut(n, slotBytes int, ramps, up bool) chunking {
	q := (n + pipeSplit - 1) / pipeSplit
	q = (q + StagingGranularity - 1) / StagingGranularity * StagingGranularity
	c := chunking{n: n, size: min(max(q, minPipeChunk), slotBytes), up: up}
	if c.ramp = ramps && c.size == slotBytes && n >= 2*slotBytes && slotBytes >= 8*StagingGranularity; c.ramp {
		c.count = 4 + (n-1)/c.size // the ramp makes one chunk's worth
	} else {
		c.count = (n + c.size - 1) / c.size
	}
	return c
}

// bounds returns the byte range of chunk i.
func (c chunking) bounds(i int) (lo, hi int) {
	if !c.ramp {
		return i * c.size, min((i+1)*c.size, c.n)
	}
	if c.up {
		return c.edge(i), c.edge(i + 1)
	}
	return c.n - c.edge(c.count-i), c.n - c.edge(c.count-1-i)
}

// edge returns where an upload's chunk j starts (j = count: its end).
func (c chunking) edge(j int) int {
	switch {
	case j == 0:
		return 0
	case j <= 4:
		return min(c.size>>(4-j), c.n)
	}
	return min((j-3)*c.size, c.n)
}

// maxPipeSlots bounds StagingPipeline.Slots and pipeSplit: the chunks a
// pipeline has in flight at once. The copy engine's board holds copies of
// several such pipelines at once (hostcopy.BoardSlots; TestCopyBoardSlots).
const maxPipeSlots = 16

// The copy engine's bounds, as the pipeline's settings see them:
// StagingPipeline.Workers is at most maxCopyWorkers, and WarmBelowBytes
// defaults to the size from which a copy wakes blocked workers.
const (
	maxCopyWorkers = hostcopy.MaxWorkers
	wakeWorthBytes = hostcopy.WakeWorthBytes
)

// copyJob is the copy of one chunk in flight (StagingBuffer.copies).
type copyJob = hostcopy.Job

// streamBelow is, by direction, the transfer size below which the staging
// pipeline's copies between host memory and pinned memory use streaming
// (non-temporal) stores: they write to memory without reading the
// destination's cache lines first and without leaving them dirty in the
// CPU's caches. Uploading, the DMA engine then reads the pinned memory
// straight from memory instead of fetching lines from the caches: uploads
// ran faster with them below 128 MiB, where the copy itself limits, and
// tied or lost from there. Downloading, the destination is the program's
// memory: streaming won below 4 MiB and lost from 16 MiB
// (BenchmarkPipelineStreaming; the figures are in docs/performance.md). A
// variable for the benchmarks.
var streamBelow = [2]int{HostToDevice: 128 << 20, DeviceToHost: 4 << 20}

// streams reports whether a transfer of n bytes in direction d copies with
// streaming stores.
func streams(d Direction, n int) bool { return n < streamBelow[d&1] }

// pipeline moves host to or from the device at d in chunks through pinned
// memory cut in slots of slotBytes: while the DMA engine moves one chunk,
// the copy workers copy others, every chunk in flight at once, each split
// between several workers. Called with s's context bound. When it fails,
// DMA it queued may still be running (the caller settles it: settle); no
// copy between host and the pinned memory is.
func (sb *StagingBuffer) pipeline(op string, up bool, d driver.DevicePtr, host, pinned []byte, slotBytes int, p StagingPipeline, s *Stream) (err error) {
	// Wait for the work already queued on s before holding the copy
	// workers, which spin until the transfer ends: that work may take
	// seconds. What synchronous copies left on the legacy stream is the
	// tail of a copy, waited for once the first chunks are copying
	// (uploading) or before the first DMA (downloading).
	if err := s.drain(op); err != nil {
		return err
	}
	if hostcopy.Hold() {
		defer hostcopy.Release()
	}
	trace(stepHeld, 0)
	c := cut(len(host), slotBytes, slotBytes == p.ChunkBytes, up)
	nchunks := c.count
	streaming := streams(HostToDevice, len(host))
	if !up {
		streaming = streams(DeviceToHost, len(host))
	}
	// Chunks in flight: as many as the pinned memory holds, so that a
	// transfer of a few chunks has them all copying at once. (slotsFor
	// leaves room for two, or the transfer is one chunk.)
	k := min(nchunks, len(pinned)/c.size)
	jobs := sb.copies[:k]
	defer func() {
		// On every way out: the copies read or write host, which is
		// the caller's again once this returns.
		for i := range jobs {
			jobs[i].Await()
		}
	}()
	base := 0
	if !up && rotateDownloads {
		if sb.rot+k*c.size > len(pinned) {
			sb.rot = 0
		}
		base, sb.rot = sb.rot, sb.rot+k*c.size
	}
	slot := func(i int) []byte {
		lo, hi := c.bounds(i)
		off := base + i%k*c.size
		return pinned[off : off+hi-lo]
	}
	part := func(i int) []byte {
		lo, hi := c.bounds(i)
		return host[lo:hi]
	}
	dev := func(i int) driver.DevicePtr {
		lo, _ := c.bounds(i)
		return d + driver.DevicePtr(lo)
	}
	event := func(i int) *Event { return sb.events[i%k] }
	// await waits for chunk i's DMA, copying meanwhile the parts left to
	// claim of next, the copy this goroutine waits for after it (or nil),
	// and no others: once the DMA is done, this goroutine has chunks to
	// hand the DMA engine. (Copying whatever was queued until no part was
	// left, an upload's first wait copied most of the chunks filled at its
	// start while the DMA engine, done with the first two, stood idle, a
	// fixed cost of every transfer that held large uploads back:
	// BenchmarkPipelineTimeline shows it.)
	await := func(i int, next *copyJob) error {
		if next != nil {
			next.CopyUnclaimed()
		}
		err := check(op, driver.EventSynchronize(s.ctx.handle, event(i).handle))
		trace(stepLanded, i)
		return err
	}
	dma := func(i int) error {
		sl := slot(i)
		s.queued.Add(1)
		var st driver.Status
		if up {
			st = driver.MemcpyHtoDAsync(s.ctx.handle, dev(i), hostPtr(sl), uintptr(len(sl)), s.handle)
		} else {
			st = driver.MemcpyDtoHAsync(s.ctx.handle, hostPtr(sl), dev(i), uintptr(len(sl)), s.handle)
		}
		if err := check(op, st); err != nil {
			return err
		}
		s.queued.Add(1)
		err := check(op, driver.EventRecord(s.ctx.handle, event(i).handle, s.handle))
		trace(stepQueued, i)
		return err
	}
	if up {
		// Chunk i+k-1 goes into the slot chunk i-1 left, once its DMA is
		// done: by then chunk i's DMA is queued behind it.
		fill := func(i int) error {
			if i >= k {
				// Called once chunk i-k+1's DMA is queued: chunk
				// i-k+2's copy is awaited next.
				if err := await(i, &jobs[(i-k+2)%k]); err != nil {
					return err
				}
			}
			jobs[i%k].Start(slot(i), part(i), p.Workers, streaming)
			return nil
		}
		for i := range k {
			if err := fill(i); err != nil {
				return err
			}
		}
		if err := s.ctx.settleLegacy(op); err != nil {
			return err
		}
		for i := range nchunks {
			jobs[i%k].Await()
			trace(stepCopied, i)
			if err := dma(i); err != nil {
				return err
			}
			if next := i - 1 + k; i > 0 && next < nchunks {
				if err := fill(next); err != nil {
					return err
				}
			}
		}
		err = s.synchronize(op)
		trace(stepDone, nchunks-1)
		return err
	}
	if err := s.ctx.settleLegacy(op); err != nil {
		return err
	}
	for i := range k {
		if err := dma(i); err != nil {
			return err
		}
	}
	for i := range nchunks {
		var next *copyJob // the copy awaited after this DMA
		if i > 0 {
			next = &jobs[(i-1)%k]
		}
		if err := await(i, next); err != nil {
			return err
		}
		jobs[i%k].Start(part(i), slot(i), p.Workers, streaming)
		// Chunk i-1+k goes into the slot chunk i-1 was copied out of.
		if next := i - 1 + k; i > 0 && next < nchunks {
			jobs[(i-1)%k].Await()
			trace(stepCopied, i-1)
			if err := dma(next); err != nil {
				return err
			}
		}
	}
	for i := range jobs {
		jobs[i].Await()
	}
	trace(stepCopied, nchunks-1)
	err = s.synchronize(op) // all done: this only records it
	trace(stepDone, nchunks-1)
	return err
}

// settle waits, after a pipeline failed or at its end, until no copy it
// queued on s still reads or writes the pinned memory: the stream's
// synchronize, or else each of events (recorded after each slot's latest
// copy). Where no wait succeeds, that is unknown: the memory is set aside
// (retired), never handed out again, and released by Close once its
// context's work is done. It returns the synchronize's error.
func (sb *StagingBuffer) settle(op string, s *Stream, events []*Event) error {
	err := s.synchronize(op)
	if err == nil {
		return nil
	}
	// The stream's synchronize failed; each slot's event was recorded
	// after its latest chunk's copy.
	waited := true
	for _, e := range events {
		if !driver.EventSynchronize(s.ctx.handle, e.handle).OK() {
			waited = false
		}
	}
	if !waited {
		sb.retired = append(sb.retired, retiredMem{sb.mem, s.ctx})
		sb.setMem(nil)
	}
	return err
}

// retiredMem is pinned memory that copies on a stream of ctx may still use.
type retiredMem struct {
	mem *PinnedBuffer[byte]
	ctx *Context
}

// freeRetired frees the retired memory whose context has finished its
// work (or is closed), keeping the rest.
func (sb *StagingBuffer) freeRetired() (err error) {
	sb.retired, err = releaseEach(sb.retired, func(r retiredMem) error {
		err := r.ctx.Synchronize()
		if err == nil || errors.Is(err, ErrClosed) {
			err = r.mem.Free()
		}
		return err
	})
	return err
}

// releaseEach releases each of items, and returns those whose release
// failed (kept for another try) and the failures.
func releaseEach[T any](items []T, release func(T) error) ([]T, error) {
	var errs []error
	kept := items[:0]
	for _, it := range items {
		if err := release(it); err != nil {
			errs = append(errs, err)
			kept = append(kept, it)
		}
	}
	clear(items[len(kept):])
	if len(kept) == 0 {
		kept = nil
	}
	return kept, errors.Join(errs...)
}

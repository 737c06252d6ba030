package cuda

import (
	"errors"
	"math"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/hostcopy"
	"github.com/gocuda/cuda/internal/lifetime"
)

// This file is the machinery under the StagingBuffer's face (staging.go,
// which checks the arguments and chooses the route): one call at a time,
// carrying a transfer out on its route, the pinned memory's life, the
// pipeline's events, the counters, the staged and direct copies, and the
// pipeline itself (package internal/hostcopy holds the goroutines that copy
// for it).

// acquire marks sb in use by one call, until done.
func (sb *StagingBuffer) acquire(op string) error {
	if sb == nil {
		return errorf(op, ErrInvalidValue, "nil *StagingBuffer")
	}
	if !sb.busy.CompareAndSwap(false, true) {
		return errorf(op, ErrInvalidValue, "the staging buffer is in use by another call: a StagingBuffer is for one goroutine at a time")
	}
	return nil
}

func (sb *StagingBuffer) done() {
	if sb.memCtx != nil {
		sb.memCtx.life.Release()
		sb.memCtx = nil
	}
	sb.busy.Store(false)
}

// transfer is one transfer as the machinery carries it out: what moves
// between host memory and the device memory at dev, which way, on s, with
// the pipeline's shape, and, once prepare has them, the pinned memory it
// goes through and the size of the pipeline's slots in it.
type transfer struct {
	op        string
	dir       Direction
	dev       driver.DevicePtr
	host      []byte
	pinned    []byte // staged and pipelined routes
	slotBytes int    // pipelined route
	shape     StagingPipeline
	s         *Stream
	fresh     bool // a download whose host pages may lack memory (freshpages.go)
}

// move carries t out by route r (host is page-locked if locked), holding
// mem, the device memory's allocation, and counts it once it succeeded.
func (sb *StagingBuffer) move(r route, locked bool, mem *allocation, t transfer) error {
	op, s, p := t.op, t.s, t.shape
	pinned, slot, err := sb.prepare(r, t, mem.ctx)
	if err != nil {
		return err
	}
	t.pinned, t.slotBytes = pinned, slot
	if err := enterWith(op, &mem.life, "the device buffer", &s.life, "the stream"); err != nil {
		return err
	}
	defer leaveWith(&mem.life, &s.life)
	if err := s.use(op, mem); err != nil {
		return err
	}
	up := t.dir == HostToDevice
	switch {
	case r == routeStaged && up:
		sb.copies[0].Copy(pinned, t.host, p.Workers, streams(t.dir, len(t.host)))
		err = upload(op, t.dev, pinned, false, s)
	case r == routeStaged:
		if err = download(op, pinned, t.dev, s); err == nil {
			sb.copies[0].Copy(t.host, pinned, p.Workers, streams(t.dir, len(t.host)))
		}
	case r == routePipelined:
		if err = sb.pipeline(t); err != nil {
			sb.settle(op, s, sb.events)
		}
	case up:
		err = upload(op, t.dev, t.host, !locked, s)
	default:
		err = download(op, t.host, t.dev, s)
	}
	if err != nil {
		return err
	}
	sb.count(r, t.dir, len(t.host))
	return nil
}

// prepare gets what t needs on route r before the buffer and stream are
// held (allocating binds the context itself): the pinned memory to use,
// allocated in ctx and, for the pipeline, the size of its slots (slotsFor)
// and their events.
func (sb *StagingBuffer) prepare(r route, t transfer, ctx *Context) (pinned []byte, slot int, err error) {
	op, s, p, n := t.op, t.s, t.shape, len(t.host)
	switch r {
	case routeStaged:
		pinned, err = sb.staging(op, ctx, n)
		return pinned, 0, err
	case routePipelined:
		count, slot := p.slotsFor(n, sb.held(), t.dir)
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
func (p StagingPipeline) slotsFor(n, held int, d Direction) (count, size int) {
	if n > held || held >= p.Slots*p.ChunkBytes {
		return p.Slots, p.ChunkBytes
	}
	want := cut(n, p.ChunkBytes, false, d).size
	if n <= want {
		return 1, min(held, p.ChunkBytes)
	}
	count = max(2, min(p.Slots, held/want))
	return count, min(held/count/StagingGranularity*StagingGranularity, p.ChunkBytes)
}

// The pinned memory's life: got (staging) and grown (reserve) as
// transfers need it, set aside (retired: see settle) where a failed
// transfer's copies may still use it, freed by ShrinkToFit and Close.

// staging returns n bytes of pinned memory, growing it in ctx if needed,
// with the memory's context held until done (holdMem).
func (sb *StagingBuffer) staging(op string, ctx *Context, n int) ([]byte, error) {
	if !sb.holdMem() || sb.mem.Len() < n {
		if err := sb.reserve(op, ctx, n); err != nil {
			return nil, err
		}
		if !sb.holdMem() { // its context closed since the allocation
			return nil, closed(op, "the context")
		}
	}
	return sb.mem.Data()[:n], nil
}

// holdMem holds the context the pinned memory was allocated in, until
// done, and reports whether the memory is usable (see usable). The memory
// is portable: a transfer in another context may go through it, and the
// close of its own context frees it (at the device's last release), so
// that close must wait for the transfer, as for any call in the context.
// Checked and not held, the memory was freed under the transfer's copies
// and DMA (TestStagingMemoryOfClosingContext). Holds never wait, so where
// this one comes among the call's holds does not matter (see life); as
// with the call's own context, a callback of the call (UploadWith's fill,
// ReadFrom's reader) must not close this context.
func (sb *StagingBuffer) holdMem() bool {
	if sb.mem == nil {
		return false
	}
	if c := sb.mem.ctx; c != sb.memCtx {
		if c.life.Hold() != lifetime.Held {
			return false // closed or closing: the memory goes with it
		}
		if sb.memCtx != nil {
			sb.memCtx.life.Release()
		}
		sb.memCtx = c
	}
	return sb.mem.Data() != nil
}

func (sb *StagingBuffer) reserve(op string, ctx *Context, bytes int) error {
	if bytes <= 0 {
		return errorf(op, ErrInvalidValue, "%d bytes; want a positive size", bytes)
	}
	if bytes > math.MaxInt-(StagingGranularity-1) {
		return errorf(op, ErrInvalidValue, "%d bytes overflow when rounded up to %d", bytes, StagingGranularity)
	}
	if sb.usable() && sb.mem.Len() >= bytes {
		return nil
	}
	// A context that cannot allocate is refused before the memory held
	// is discarded.
	if ctx == nil {
		return errorf(op, ErrInvalidValue, "nil *Context")
	}
	if err := ctx.hold(op); err != nil {
		return err
	}
	ctx.life.Release()
	if err := sb.freeMem(); err != nil {
		return err
	}
	rounded := (bytes + StagingGranularity - 1) / StagingGranularity * StagingGranularity
	mem, err := AllocPinned[byte](ctx, rounded)
	if err != nil {
		return err
	}
	sb.setMem(mem)
	sb.mu.Lock()
	sb.stats.Allocations++
	sb.mu.Unlock()
	return nil
}

// setMem makes mem the pinned memory held (nil: none), and Capacity say so.
func (sb *StagingBuffer) setMem(mem *PinnedBuffer[byte]) {
	sb.mem = mem
	sb.mu.Lock()
	sb.capacity = mem.Len()
	sb.mu.Unlock()
}

// freeMem frees the pinned memory held, if any.
func (sb *StagingBuffer) freeMem() error {
	if sb.mem == nil {
		return nil
	}
	if err := sb.mem.Free(); err != nil {
		return err
	}
	sb.setMem(nil)
	return nil
}

// usable reports whether the pinned memory held can be used: it is gone
// when the context it was allocated in was closed, and going while it
// closes (holdMem can no longer hold it then: reserve must replace it).
func (sb *StagingBuffer) usable() bool {
	return sb.mem != nil && sb.mem.ctx.life.Status() == lifetime.Held && sb.mem.Data() != nil
}

// held returns the usable pinned memory held, in bytes.
func (sb *StagingBuffer) held() int {
	if !sb.usable() {
		return 0
	}
	return sb.mem.Len()
}

// asElems views pinned bytes as n elements of T, checking alignment.
func asElems[T any](op string, b []byte, n int) ([]T, error) {
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%alignOf[T]() != 0 {
		return nil, errorf(op, ErrInvalidValue, "pinned memory at %p is not aligned for %T", p, *new(T))
	}
	return unsafe.Slice((*T)(p), n), nil
}

// closeEvents closes the pipeline's events, keeping those whose Close
// failed.
func (sb *StagingBuffer) closeEvents() (err error) {
	sb.events, err = releaseEach(sb.events, (*Event).Close)
	if sb.events == nil {
		sb.evCtx = nil
	}
	return err
}

// count records a transfer that succeeded.
func (sb *StagingBuffer) count(r route, d Direction, bytes int) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	switch r {
	case routeStaged:
		sb.stats.Staged++
	case routePipelined:
		sb.stats.Pipelined++
	default:
		sb.stats.Direct++
	}
	if d == HostToDevice {
		sb.stats.BytesUp += int64(bytes)
	} else {
		sb.stats.BytesDown += int64(bytes)
	}
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
	return check(op, memcpyDtoH(s.ctx, host, d))
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
// A transfer of chunks of a whole slot ramps, where fullSlots says the
// slots are of ChunkBytes (as StagingPipeline.ChunkBytes documents): an
// upload starts with chunks of an eighth, an eighth, a quarter and a half
// of one, so that the DMA engine starts once an eighth is copied instead of
// a whole slot; a download ends so, mirrored, so that the last copy out is
// short.
type chunking struct {
	n, size, count int
	ramp           bool
	dir            Direction
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

func cut(n, slotBytes int, fullSlots bool, d Direction) chunking {
	q := (n + pipeSplit - 1) / pipeSplit
	q = (q + StagingGranularity - 1) / StagingGranularity * StagingGranularity
	c := chunking{n: n, size: min(max(q, minPipeChunk), slotBytes), dir: d}
	if c.ramp = fullSlots && c.size == slotBytes && n >= 2*slotBytes && slotBytes >= 8*StagingGranularity; c.ramp {
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
	if c.dir == HostToDevice {
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

// pipeline moves t.host to or from the device at t.dev in chunks through
// t.pinned, cut in slots of t.slotBytes: while the DMA engine moves one
// chunk, the copy workers copy others, every chunk in flight at once, each
// split between several workers. Called with t.s's context bound. When it
// fails, DMA it queued may still be running (the caller settles it:
// settle); no copy between host and the pinned memory is.
func (sb *StagingBuffer) pipeline(t transfer) (err error) {
	op, s, up := t.op, t.s, t.dir == HostToDevice
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
	c := cut(len(t.host), t.slotBytes, t.slotBytes == t.shape.ChunkBytes, t.dir)
	nchunks := c.count
	streaming := streams(t.dir, len(t.host))
	// Chunks in flight: as many as the pinned memory holds, so that a
	// transfer of a few chunks has them all copying at once. (slotsFor
	// leaves room for two, or the transfer is one chunk.)
	k := min(nchunks, len(t.pinned)/c.size)
	jobs, fills := sb.copies[:k], sb.fills[:k]
	defer func() {
		// On every way out: the copies read or write host, which is
		// the caller's again once this returns.
		for i := range jobs {
			jobs[i].Await()
			fills[i].Await()
		}
	}()
	base := 0
	if !up && rotateDownloads {
		if sb.rot+k*c.size > len(t.pinned) {
			sb.rot = 0
		}
		base, sb.rot = sb.rot, sb.rot+k*c.size
	}
	slot := func(i int) []byte {
		lo, hi := c.bounds(i)
		off := base + i%k*c.size
		return t.pinned[off : off+hi-lo]
	}
	part := func(i int) []byte {
		lo, hi := c.bounds(i)
		return t.host[lo:hi]
	}
	dev := func(i int) driver.DevicePtr {
		lo, _ := c.bounds(i)
		return t.dev + driver.DevicePtr(lo)
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
	await := func(i int, next *hostcopy.Job) error {
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
			jobs[i%k].Start(slot(i), part(i), t.shape.Workers, streaming)
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
	// fill populates chunk i's host pages, where some lack memory, on
	// the copy workers while its DMA runs; its copy out awaits that.
	fill := func(i int) {
		if !t.fresh {
			return
		}
		var missing bool
		if missing, sb.pageVec = pagesMissing(part(i), sb.pageVec); missing {
			fills[i%k].Populate(part(i), populatePart(t.host))
		}
	}
	for i := range k {
		if err := dma(i); err != nil {
			return err
		}
	}
	for i := range k {
		fill(i)
	}
	for i := range nchunks {
		var next *hostcopy.Job // the copy awaited after this DMA
		if i > 0 {
			next = &jobs[(i-1)%k]
		}
		if err := await(i, next); err != nil {
			return err
		}
		fills[i%k].Await()
		jobs[i%k].Start(part(i), slot(i), t.shape.Workers, streaming)
		// Chunk i-1+k goes into the slot chunk i-1 was copied out of.
		if next := i - 1 + k; i > 0 && next < nchunks {
			jobs[(i-1)%k].Await()
			trace(stepCopied, i-1)
			if err := dma(next); err != nil {
				return err
			}
			fill(next)
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

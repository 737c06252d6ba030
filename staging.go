package cuda

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
)

// StagingGranularity is the step in which a StagingBuffer's pinned memory
// grows.
const StagingGranularity = 64 << 10

// Direction is the direction of a transfer.
type Direction int

const (
	HostToDevice Direction = iota // Upload
	DeviceToHost                  // Download
)

func (d Direction) String() string {
	if d == HostToDevice {
		return "host to device"
	}
	return "device to host"
}

// Default thresholds up to which Upload and Download stage ordinary slices
// through pinned memory, from the H200 measurement in docs/performance.md:
// there the driver's own path for ordinary memory was as fast as staging
// for small transfers, both ways, once the memory was not already in the
// CPU's caches. Calibrate measures the machine in hand.
const (
	DefaultUploadStageMaxBytes   = 0
	DefaultDownloadStageMaxBytes = 0
)

// StagingPipeline configures the path Upload and Download take for large
// ordinary slices: the transfer is cut into chunks, and while the DMA engine
// moves one chunk between a pinned slot and the device, Workers goroutines
// copy the next between the slice and another slot.
type StagingPipeline struct {
	// MinBytes is the size from which transfers are pipelined;
	// math.MaxInt turns the pipeline off.
	MinBytes int
	// ChunkBytes is the largest chunk. Transfers use chunks of a quarter
	// of their size (rounded up to StagingGranularity), at most ChunkBytes,
	// so that even a transfer a few chunks long overlaps copying and DMA.
	ChunkBytes int
	// Slots is the number of pinned slots, 2 or more; the pipeline pins
	// Slots×ChunkBytes.
	Slots int
	// Workers is the number of goroutines copying each chunk.
	Workers int
}

// DefaultStagingPipeline returns the pipeline configuration used unless
// SetPipeline says otherwise: 3 slots of 16 MiB (48 MiB pinned) and as many
// workers as GOMAXPROCS, up to 16, from 2 MiB up. Measured on the H200
// machine (BenchmarkPipelineShape, gocuda calibrate): docs/performance.md.
func DefaultStagingPipeline() StagingPipeline {
	return StagingPipeline{
		MinBytes:   2 << 20,
		ChunkBytes: 16 << 20,
		Slots:      3,
		Workers:    min(runtime.GOMAXPROCS(0), maxCopyWorkers),
	}
}

// StagingStats counts what a StagingBuffer did.
type StagingStats struct {
	Allocations int   // pinned allocations made (each growth is one)
	Staged      int   // transfers copied through the pinned memory whole
	Pipelined   int   // transfers copied through the pinned memory in chunks
	Direct      int   // transfers handed to the driver as they were
	BytesUp     int64 // bytes uploaded to the device
	BytesDown   int64 // bytes downloaded from the device
}

// StagingBuffer is reusable page-locked host memory through which transfers
// between ordinary Go memory and the device go faster, and through which a
// caller can produce or consume data in place (UploadWith, DownloadInto).
//
// The zero value is ready to use and pins nothing until its first transfer
// or Reserve; NewStagingBuffer pins memory up front. Memory grows to the
// largest transfer staged and is kept until ShrinkToFit or Close.
//
// Every transfer is ordered after the work already queued on the stream
// given. Downloads return once the data is in host memory; uploads once it
// is on the device or, for ordinary memory taken straight to the driver,
// once the driver holds it and everything gocuda queues afterwards in the
// context is ordered after it, as with CopyFromHost.
//
// A StagingBuffer is not safe for concurrent use, like bytes.Buffer: the
// slice DownloadInto returns is the buffer's own memory, valid only until
// the next call, which no lock could keep meaningful between goroutines.
// Give each goroutine its own.
type StagingBuffer struct {
	mem      *PinnedBuffer[byte]
	stageMax [2]int // by Direction
	stageSet [2]bool
	pipe     StagingPipeline
	pipeSet  bool
	stats    StagingStats
	events   []*Event // one per pipeline slot, in evCtx
	evCtx    *Context
	copyWait atomic.Int32
}

// NewStagingBuffer returns a staging buffer with bytes of pinned memory
// already allocated (rounded up to StagingGranularity), so that the
// millisecond-scale page-locking stays out of the steady-state loop.
func NewStagingBuffer(ctx *Context, bytes int) (*StagingBuffer, error) {
	sb := new(StagingBuffer)
	if err := sb.reserve("NewStagingBuffer", ctx, bytes); err != nil {
		return nil, err
	}
	return sb, nil
}

// Capacity returns the pinned memory held, in bytes: 0 before first use.
func (sb *StagingBuffer) Capacity() int {
	if sb == nil || sb.mem == nil {
		return 0
	}
	return sb.mem.Len()
}

// Stats returns the usage counters.
func (sb *StagingBuffer) Stats() StagingStats {
	if sb == nil {
		return StagingStats{}
	}
	return sb.stats
}

// AutoStageMaxBytes returns the size up to which Upload and Download stage
// ordinary slices through pinned memory: the larger of the two directions'
// thresholds (see StageMaxBytes).
func (sb *StagingBuffer) AutoStageMaxBytes() int {
	return max(sb.StageMaxBytes(HostToDevice), sb.StageMaxBytes(DeviceToHost))
}

// SetAutoStageMaxBytes sets the size up to which Upload and Download stage
// ordinary slices, both ways: 0 never stages, math.MaxInt always does (and
// pins as much memory as the largest transfer). UploadWith and DownloadInto
// always stage: there the pinned memory is the caller's working memory.
func (sb *StagingBuffer) SetAutoStageMaxBytes(bytes int) {
	sb.SetStageMaxBytes(HostToDevice, bytes)
	sb.SetStageMaxBytes(DeviceToHost, bytes)
}

// StageMaxBytes returns the size up to which transfers of ordinary slices
// in direction d are staged. The directions differ: on the H200 machine the
// driver's own pageable path is hard to beat uploading small slices and
// easy to beat downloading them.
func (sb *StagingBuffer) StageMaxBytes(d Direction) int {
	if sb == nil || !sb.stageSet[d&1] {
		return defaults().stageMax[d&1]
	}
	return sb.stageMax[d&1]
}

// SetStageMaxBytes sets the threshold of one direction (see
// SetAutoStageMaxBytes).
func (sb *StagingBuffer) SetStageMaxBytes(d Direction, bytes int) {
	sb.stageMax[d&1], sb.stageSet[d&1] = max(bytes, 0), true
}

// Pipeline returns the configuration of the pipelined path.
func (sb *StagingBuffer) Pipeline() StagingPipeline {
	if sb == nil || !sb.pipeSet {
		return defaults().pipe
	}
	return sb.pipe
}

// SetPipeline configures the pipelined path. It returns ErrInvalidValue,
// and changes nothing, if a field is out of range.
func (sb *StagingBuffer) SetPipeline(p StagingPipeline) error {
	const op = "StagingBuffer.SetPipeline"
	switch {
	case p.MinBytes <= 0:
		return errorf(op, ErrInvalidValue, "MinBytes %d: want a positive size, or math.MaxInt to turn the pipeline off", p.MinBytes)
	case p.ChunkBytes < StagingGranularity || p.ChunkBytes%StagingGranularity != 0:
		return errorf(op, ErrInvalidValue, "ChunkBytes %d: want a multiple of %d", p.ChunkBytes, StagingGranularity)
	case p.Slots < 2 || p.Slots > 16:
		return errorf(op, ErrInvalidValue, "Slots %d: want 2 to 16", p.Slots)
	case p.Workers < 1 || p.Workers > maxCopyWorkers:
		return errorf(op, ErrInvalidValue, "Workers %d: want 1 to %d", p.Workers, maxCopyWorkers)
	case p.ChunkBytes > math.MaxInt/p.Slots:
		return errorf(op, ErrInvalidValue, "%d slots of %d bytes overflow", p.Slots, p.ChunkBytes)
	}
	sb.pipe, sb.pipeSet = p, true
	return nil
}

// Reserve makes sure at least bytes of pinned memory are held, allocating
// in ctx (the memory is portable: every context can use it). It only grows:
// a smaller request does nothing. Growth rounds up to StagingGranularity and
// discards what the memory held.
func (sb *StagingBuffer) Reserve(ctx *Context, bytes int) error {
	return sb.reserve("StagingBuffer.Reserve", ctx, bytes)
}

func (sb *StagingBuffer) reserve(op string, ctx *Context, bytes int) error {
	if sb == nil {
		return errorf(op, ErrInvalidValue, "nil *StagingBuffer")
	}
	if bytes <= 0 {
		return errorf(op, ErrInvalidValue, "%d bytes; want a positive size", bytes)
	}
	if bytes > math.MaxInt-(StagingGranularity-1) {
		return errorf(op, ErrInvalidValue, "%d bytes overflow when rounded up to %d", bytes, StagingGranularity)
	}
	if sb.usable() && sb.mem.Len() >= bytes {
		return nil
	}
	rounded := (bytes + StagingGranularity - 1) / StagingGranularity * StagingGranularity
	mem, err := AllocPinned[byte](ctx, rounded)
	if err != nil {
		return err
	}
	sb.mem.Free()
	sb.mem = mem
	sb.stats.Allocations++
	return nil
}

// usable reports whether the pinned memory held can be used: it is gone
// when the context it was allocated in was closed.
func (sb *StagingBuffer) usable() bool {
	return sb.mem != nil && !sb.mem.ctx.isClosed() && sb.mem.Data() != nil
}

// ShrinkToFit releases the pinned memory; capacity returns to 0 and the
// counters stay. The next transfer pins again.
func (sb *StagingBuffer) ShrinkToFit() error {
	if sb == nil || sb.mem == nil {
		return nil
	}
	err := sb.mem.Free()
	sb.mem = nil
	return err
}

// Close releases everything the staging buffer holds. It may be used again
// afterwards, as a zero StagingBuffer.
func (sb *StagingBuffer) Close() error {
	if sb == nil {
		return nil
	}
	err := sb.ShrinkToFit()
	sb.closeEvents()
	return err
}

func (sb *StagingBuffer) closeEvents() {
	for _, e := range sb.events {
		e.Close()
	}
	sb.events, sb.evCtx = nil, nil
}

// staging returns n bytes of pinned memory, growing it in ctx if needed.
func (sb *StagingBuffer) staging(op string, ctx *Context, n int) ([]byte, error) {
	if !sb.usable() || sb.mem.Len() < n {
		if err := sb.reserve(op, ctx, n); err != nil {
			return nil, err
		}
	}
	return sb.mem.Data()[:n], nil
}

// stagingDefaults are the thresholds a StagingBuffer starts with.
type stagingDefaults struct {
	stageMax [2]int
	pipe     StagingPipeline
}

var defaults = sync.OnceValue(func() stagingDefaults {
	return stagingDefaults{
		stageMax: [2]int{DefaultUploadStageMaxBytes, DefaultDownloadStageMaxBytes},
		pipe:     DefaultStagingPipeline(),
	}
})

// checkTransfer validates a transfer of n elements of T against buf.
func checkTransfer[T any](op string, sb *StagingBuffer, buf *DeviceBuffer[T], n int, s *Stream) error {
	if sb == nil {
		return errorf(op, ErrInvalidValue, "nil *StagingBuffer")
	}
	// T needs no check of its own: only a T fit for device memory makes a
	// DeviceBuffer[T].
	if buf == nil {
		return errorf(op, ErrInvalidValue, "nil *DeviceBuffer")
	}
	if n <= 0 {
		return errorf(op, ErrInvalidValue, "%d elements; a transfer needs at least one", n)
	}
	if n != buf.Len() {
		return errorf(op, ErrInvalidValue, "%d elements requested, the device buffer has %d", n, buf.Len())
	}
	if s == nil {
		return errorf(op, ErrInvalidValue, "nil *Stream")
	}
	return nil
}

// asElems views pinned bytes as n elements of T, checking alignment.
func asElems[T any](op string, b []byte, n int) ([]T, error) {
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%alignOf[T]() != 0 {
		return nil, errorf(op, ErrInvalidValue, "pinned memory at %p is not aligned for %T", p, *new(T))
	}
	return unsafe.Slice((*T)(p), n), nil
}

// UploadWith uploads n elements to dst, letting fill write them straight
// into pinned memory: the bytes fill writes are the bytes the DMA engine
// reads, with no copy between, which makes this the fastest way to the
// device. fill gets exactly n elements and should write all of them: what
// it leaves keeps whatever the previous transfer left there (zeros at
// first). n must equal dst.Len().
func UploadWith[T any](sb *StagingBuffer, dst *DeviceBuffer[T], n int, s *Stream, fill func([]T)) error {
	const op = "UploadWith"
	if err := checkTransfer(op, sb, dst, n, s); err != nil {
		return err
	}
	if fill == nil {
		return errorf(op, ErrInvalidValue, "nil fill function")
	}
	bytes := dst.ByteSize()
	pinned, err := sb.prepare(op, routeStaged, dst.mem.ctx, s, bytes)
	if err != nil {
		return err
	}
	elems, err := asElems[T](op, pinned, n)
	if err != nil {
		return err
	}
	if err := dst.enterWithStream(op, s); err != nil {
		return err
	}
	defer dst.leaveWithStream(s)
	fill(elems)
	if err := upload(op, dst.ptr, pinned, false, s); err != nil {
		return err
	}
	sb.stats.Staged++
	sb.stats.BytesUp += int64(bytes)
	return nil
}

// DownloadInto downloads the n elements of src into pinned memory and
// returns them there, with no copy out: the DMA engine writes the memory the
// caller reads. The slice is the staging buffer's own memory: it is valid
// until the next call on sb, which overwrites or frees it. n must equal
// src.Len().
func DownloadInto[T any](sb *StagingBuffer, src *DeviceBuffer[T], n int, s *Stream) ([]T, error) {
	const op = "DownloadInto"
	if err := checkTransfer(op, sb, src, n, s); err != nil {
		return nil, err
	}
	bytes := src.ByteSize()
	pinned, err := sb.prepare(op, routeStaged, src.mem.ctx, s, bytes)
	if err != nil {
		return nil, err
	}
	elems, err := asElems[T](op, pinned, n)
	if err != nil {
		return nil, err
	}
	if err := src.enterWithStream(op, s); err != nil {
		return nil, err
	}
	defer src.leaveWithStream(s)
	if err := download(op, pinned, src.ptr, s); err != nil {
		return nil, err
	}
	sb.stats.Staged++
	sb.stats.BytesDown += int64(bytes)
	return elems, nil
}

// Upload copies src into dst: a drop-in for dst.CopyFromHost, with its
// postcondition, that is ordered after the work on s and never slower.
// Small slices are copied into pinned memory and moved from there (up to
// AutoStageMaxBytes), large ones are pipelined through pinned slots by
// several goroutines (from Pipeline().MinBytes), the sizes between go to the
// driver as they are, and so does memory that is already page-locked (a
// PinnedBuffer's, or Registered). len(src) must equal dst.Len(). Prefer
// UploadWith where you produce the data: it saves the copy.
func Upload[T any](sb *StagingBuffer, dst *DeviceBuffer[T], src []T, s *Stream) error {
	const op = "Upload"
	if err := checkTransfer(op, sb, dst, len(src), s); err != nil {
		return err
	}
	host := bytesOf(src)
	locked := pageLocked(host)
	r := sb.route(len(host), locked, HostToDevice)
	pinned, err := sb.prepare(op, r, dst.mem.ctx, s, len(host))
	if err != nil {
		return err
	}
	if err := dst.enterWithStream(op, s); err != nil {
		return err
	}
	defer dst.leaveWithStream(s)
	switch r {
	case routeStaged:
		parallelCopy(pinned, host, sb.Pipeline().Workers, &sb.copyWait)
		err = upload(op, dst.ptr, pinned, false, s)
		sb.stats.Staged++
	case routePipelined:
		err = sb.pipeline(op, true, dst.ptr, host, pinned, s)
		sb.stats.Pipelined++
	default:
		err = upload(op, dst.ptr, host, !locked, s)
		sb.stats.Direct++
	}
	runtime.KeepAlive(src)
	if err != nil {
		return err
	}
	sb.stats.BytesUp += int64(len(host))
	return nil
}

// Download copies src into dst, a drop-in for src.CopyToHost that is
// ordered on s (so it sees the results of work queued there) and never
// slower; the mirror of Upload. len(dst) must equal src.Len(). Prefer
// DownloadInto where you can consume the data in place.
func Download[T any](sb *StagingBuffer, dst []T, src *DeviceBuffer[T], s *Stream) error {
	const op = "Download"
	if err := checkTransfer(op, sb, src, len(dst), s); err != nil {
		return err
	}
	host := bytesOf(dst)
	r := sb.route(len(host), pageLocked(host), DeviceToHost)
	pinned, err := sb.prepare(op, r, src.mem.ctx, s, len(host))
	if err != nil {
		return err
	}
	if err := src.enterWithStream(op, s); err != nil {
		return err
	}
	defer src.leaveWithStream(s)
	switch r {
	case routeStaged:
		if err = download(op, pinned, src.ptr, s); err == nil {
			parallelCopy(host, pinned, sb.Pipeline().Workers, &sb.copyWait)
		}
		sb.stats.Staged++
	case routePipelined:
		err = sb.pipeline(op, false, src.ptr, host, pinned, s)
		sb.stats.Pipelined++
	default:
		err = download(op, host, src.ptr, s)
		sb.stats.Direct++
	}
	runtime.KeepAlive(dst)
	if err != nil {
		return err
	}
	sb.stats.BytesDown += int64(len(host))
	return nil
}

type route int

const (
	routeDirect route = iota
	routeStaged
	routePipelined
)

// route chooses the path for a transfer of n bytes of host memory, locked
// if page-locked, in direction d.
func (sb *StagingBuffer) route(n int, locked bool, d Direction) route {
	switch {
	case locked:
		return routeDirect
	case n <= sb.StageMaxBytes(d):
		return routeStaged
	case n >= sb.Pipeline().MinBytes:
		return routePipelined
	}
	return routeDirect
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
	return check(op, "cuMemcpyDtoH_v2", driver.MemcpyDtoH(s.ctx.handle, hostPtr(host), d, uintptr(len(host))))
}

// pipeline moves host to or from the device at d in chunks through pinned
// slots: while the DMA engine moves one chunk, goroutines copy the next.
// Called with s's context bound.
func (sb *StagingBuffer) pipeline(op string, up bool, d driver.DevicePtr, host, pinned []byte, s *Stream) error {
	if err := s.ctx.settleLegacy(op); err != nil {
		return err
	}
	// Wait for the work already queued on s before holding the copy
	// workers, which spin until the transfer ends: that work may take
	// seconds.
	if err := s.drain(op); err != nil {
		return err
	}
	if holdCopyWorkers() {
		defer releaseCopyWorkers()
	}
	p := sb.Pipeline()
	// At least four chunks, so that even a transfer a few chunks long
	// overlaps copying and DMA.
	chunk := min((len(host)/4+StagingGranularity-1)/StagingGranularity*StagingGranularity, p.ChunkBytes)
	nchunks := (len(host) + chunk - 1) / chunk
	slot := func(i int) []byte {
		k := i % p.Slots
		n := min(chunk, len(host)-i*chunk)
		return pinned[k*p.ChunkBytes : k*p.ChunkBytes+n]
	}
	part := func(i int) []byte { return host[i*chunk : min((i+1)*chunk, len(host))] }
	dev := func(i int) driver.DevicePtr { return d + driver.DevicePtr(i*chunk) }
	wait := func(i int) error {
		return check(op, "cuEventSynchronize", driver.EventSynchronize(s.ctx.handle, sb.events[i%p.Slots].handle))
	}
	record := func(i int) error {
		s.queued.Add(1)
		return check(op, "cuEventRecord", driver.EventRecord(s.ctx.handle, sb.events[i%p.Slots].handle, s.handle))
	}
	if up {
		for i := range nchunks {
			if i >= p.Slots {
				if err := wait(i); err != nil { // the slot's previous chunk has left
					return err
				}
			}
			sl := slot(i)
			parallelCopy(sl, part(i), p.Workers, &sb.copyWait)
			if err := check(op, "cuMemcpyHtoDAsync_v2", driver.MemcpyHtoDAsync(s.ctx.handle, dev(i), hostPtr(sl), uintptr(len(sl)), s.handle)); err != nil {
				return err
			}
			if err := record(i); err != nil {
				return err
			}
		}
		return s.synchronize(op)
	}
	queue := func(i int) error {
		sl := slot(i)
		if err := check(op, "cuMemcpyDtoHAsync_v2", driver.MemcpyDtoHAsync(s.ctx.handle, hostPtr(sl), dev(i), uintptr(len(sl)), s.handle)); err != nil {
			return err
		}
		return record(i)
	}
	for i := range min(p.Slots, nchunks) {
		if err := queue(i); err != nil {
			return err
		}
	}
	for i := range nchunks {
		if err := wait(i); err != nil {
			return err
		}
		parallelCopy(part(i), slot(i), p.Workers, &sb.copyWait)
		if next := i + p.Slots; next < nchunks {
			if err := queue(next); err != nil {
				return err
			}
		}
	}
	return s.synchronize(op) // all done: this only records it
}

// prepare gets what a transfer on route r of n bytes needs before any lock
// is taken (allocating binds the context itself): pinned memory, and for
// the pipeline its slots' events. It returns the pinned memory to use.
func (sb *StagingBuffer) prepare(op string, r route, ctx *Context, s *Stream, n int) ([]byte, error) {
	switch r {
	case routeStaged:
		return sb.staging(op, ctx, n)
	case routePipelined:
		p := sb.Pipeline()
		// Room for full-size chunks whatever the transfer, so that mixed
		// sizes settle on one allocation.
		pinned, err := sb.staging(op, ctx, p.Slots*p.ChunkBytes)
		if err != nil {
			return nil, err
		}
		if sb.evCtx != s.ctx {
			sb.closeEvents()
			sb.evCtx = s.ctx
		}
		for len(sb.events) < p.Slots {
			e, err := s.ctx.NewEvent(EventDisableTiming)
			if err != nil {
				return nil, err
			}
			sb.events = append(sb.events, e)
		}
		return pinned, nil
	}
	return nil, nil
}

// bytesOf views a slice of plain data as its bytes.
func bytesOf[T any](s []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(sizeOf[T]()))
}

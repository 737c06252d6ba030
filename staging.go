package cuda

import (
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/hostcopy"
)

// This file is the StagingBuffer's face: its types, options and methods,
// the checks of their arguments, and the route each transfer takes. What
// carries a transfer out (the pinned memory, the events, the counters, the
// staged and direct copies and the pipeline) is in pipeline.go.

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

// StagingPipeline configures the path Upload and Download take for large
// ordinary slices: the transfer is cut into chunks, and while the DMA engine
// moves one chunk between pinned memory and the device, Workers goroutines
// copy others between the slice and pinned memory, every chunk the pinned
// memory has room for at once, each split between the workers.
type StagingPipeline struct {
	// UploadMinBytes and DownloadMinBytes are the sizes from which
	// transfers each way are pipelined; math.MaxInt turns the pipeline
	// off that way. Both are 128 KiB: from there the pipeline beat the
	// driver's own path both ways on the H200 machine, where the copy
	// workers are awake (see WarmBelowBytes; docs/performance.md).
	UploadMinBytes, DownloadMinBytes int
	// ChunkBytes is the largest chunk. Transfers use chunks of a quarter
	// of their size (rounded up to StagingGranularity), at least 512 KiB
	// and at most ChunkBytes, so that even a transfer a few chunks long
	// overlaps copying and DMA; below 512 KiB the DMA engine's cost per
	// copy outweighs the overlap. A transfer of chunks of ChunkBytes
	// starts uploading (or ends downloading) with smaller ones, so that
	// the DMA engine and the workers wait less for each other there.
	ChunkBytes int
	// Slots is the number of pinned slots, 2 or more; the pipeline pins
	// Slots×ChunkBytes.
	Slots int
	// Workers is the number of goroutines copying each chunk.
	Workers int
	// WarmBelowBytes is the size below which a transfer is pipelined only
	// while the copy workers are awake: they spin for a while after each
	// pipelined transfer, so that the next of a loop finds them, but then
	// block, and waking them takes the scheduler tens of microseconds, as
	// long as the whole of a transfer this small. A transfer below it made
	// while all of them are blocked goes to the driver instead, and wakes
	// them for the next. Zero pipelines every transfer from UploadMinBytes
	// or DownloadMinBytes up, awake or not. It is 1 MiB.
	WarmBelowBytes int
}

// DefaultStagingPipeline returns the pipeline configuration used unless
// StagingOptions.Pipeline says otherwise: 8 slots of 4 MiB (32 MiB pinned) and as many
// workers as GOMAXPROCS, up to 16, both ways from 128 KiB up, below 1 MiB
// only while the copy workers are awake. Measured on the H200 machine
// (BenchmarkPipelineShape, BenchmarkPipelineSlots, BenchmarkPipelineGrain,
// gocuda calibrate): docs/performance.md.
func DefaultStagingPipeline() StagingPipeline {
	return StagingPipeline{
		UploadMinBytes:   128 << 10,
		DownloadMinBytes: 128 << 10,
		ChunkBytes:       4 << 20,
		Slots:            8,
		Workers:          min(runtime.GOMAXPROCS(0), hostcopy.MaxWorkers),
		WarmBelowBytes:   hostcopy.WakeWorthBytes,
	}
}

// StagingOptions configure a StagingBuffer. They are given once, to
// NewStagingBufferOptions, which checks them; the zero value of each field
// means its default, so StagingOptions{} builds the buffer
// DefaultStagingOptions() does. Only the threshold of both directions
// changes afterwards (SetAutoStageMaxBytes).
type StagingOptions struct {
	// AutoStageMaxBytes is the size up to which Upload and Download stage
	// ordinary slices, both ways: copy them whole into pinned memory and
	// move them from there. 0, the default, stages none: on the H200
	// machine the driver's own path for ordinary memory was as fast as
	// staging small transfers, both ways, once the memory was not already
	// in the CPU's caches (docs/performance.md). math.MaxInt stages every
	// slice (and pins as much memory as the largest transfer). UploadWith
	// and DownloadInto always stage: there the pinned memory is the
	// caller's working memory.
	AutoStageMaxBytes int
	// UploadStageMaxBytes and DownloadStageMaxBytes, where not 0, take
	// AutoStageMaxBytes's place for uploads and for downloads: the
	// directions differ (on the H200 machine the driver's own path is hard
	// to beat uploading small slices and easy to beat downloading them).
	// To stage one way only, leave AutoStageMaxBytes 0.
	UploadStageMaxBytes, DownloadStageMaxBytes int
	// Pipeline configures the pipelined path; its zero value means
	// DefaultStagingPipeline(). A pipeline that is not zero is taken
	// whole: each of its fields must be in range.
	Pipeline StagingPipeline
}

// DefaultStagingOptions returns the options a StagingBuffer has unless
// told otherwise: no slice staged whole either way, and
// DefaultStagingPipeline.
func DefaultStagingOptions() StagingOptions {
	return StagingOptions{Pipeline: DefaultStagingPipeline()}
}

// check reports the first field of o out of range, as an error wrapping
// ErrInvalidValue.
func (o StagingOptions) check(op string) error {
	for _, f := range []struct {
		name  string
		bytes int
		want  string
	}{
		{"AutoStageMaxBytes", o.AutoStageMaxBytes, "0 to stage none, or math.MaxInt to stage every slice"},
		{"UploadStageMaxBytes", o.UploadStageMaxBytes, "0 for AutoStageMaxBytes's"},
		{"DownloadStageMaxBytes", o.DownloadStageMaxBytes, "0 for AutoStageMaxBytes's"},
	} {
		if f.bytes < 0 {
			return errorf(op, ErrInvalidValue, "StagingOptions.%s %d: want a size, %s", f.name, f.bytes, f.want)
		}
	}
	if o.Pipeline == (StagingPipeline{}) {
		return nil // the default
	}
	p := o.Pipeline
	switch {
	case p.UploadMinBytes <= 0:
		return errorf(op, ErrInvalidValue, "StagingOptions.Pipeline.UploadMinBytes %d: want a positive size, or math.MaxInt to turn the pipeline off", p.UploadMinBytes)
	case p.DownloadMinBytes <= 0:
		return errorf(op, ErrInvalidValue, "StagingOptions.Pipeline.DownloadMinBytes %d: want a positive size, or math.MaxInt to turn the pipeline off", p.DownloadMinBytes)
	case p.ChunkBytes < StagingGranularity || p.ChunkBytes%StagingGranularity != 0:
		return errorf(op, ErrInvalidValue, "StagingOptions.Pipeline.ChunkBytes %d: want a positive multiple of %d", p.ChunkBytes, StagingGranularity)
	case p.Slots < 2 || p.Slots > maxPipeSlots:
		return errorf(op, ErrInvalidValue, "StagingOptions.Pipeline.Slots %d: want 2 to %d", p.Slots, maxPipeSlots)
	case p.Workers < 1 || p.Workers > hostcopy.MaxWorkers:
		return errorf(op, ErrInvalidValue, "StagingOptions.Pipeline.Workers %d: want 1 to %d", p.Workers, hostcopy.MaxWorkers)
	case p.WarmBelowBytes < 0:
		return errorf(op, ErrInvalidValue, "StagingOptions.Pipeline.WarmBelowBytes %d: want a size, or 0 to pipeline awake or not", p.WarmBelowBytes)
	case p.ChunkBytes > math.MaxInt/p.Slots:
		return errorf(op, ErrInvalidValue, "StagingOptions.Pipeline: %d slots of %d bytes overflow", p.Slots, p.ChunkBytes)
	}
	return nil
}

// pipeline returns the pipeline o configures: a zero one is the default.
func (o StagingOptions) pipeline() StagingPipeline {
	if o.Pipeline == (StagingPipeline{}) {
		return defaultPipeline()
	}
	return o.Pipeline
}

// stageMax returns the size up to which o stages transfers in direction d.
func (o StagingOptions) stageMax(d Direction) int {
	n := o.UploadStageMaxBytes
	if d != HostToDevice {
		n = o.DownloadStageMaxBytes
	}
	if n == 0 {
		return o.AutoStageMaxBytes
	}
	return n
}

// defaultPipeline is the pipeline of a StagingBuffer given none, built
// once.
var defaultPipeline = sync.OnceValue(DefaultStagingPipeline)

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
// The zero value is ready to use, with the default options, and pins
// nothing until its first transfer or Reserve; NewStagingBuffer pins memory
// up front, and NewStagingBufferOptions takes options too. Memory grows to the
// largest transfer staged and is kept until ShrinkToFit or Close. After
// NewStagingBuffer(ctx, n) or Reserve(ctx, n), no transfer of at most n
// bytes page-locks memory again, by any route: the pipeline then works in
// slots cut from the memory held.
//
// Every transfer is ordered after the work already queued on the stream
// given. Downloads return once the data is in host memory; uploads once it
// is on the device or, for ordinary memory taken straight to the driver,
// once the driver holds it and everything gocuda queues afterwards in the
// context is ordered after it, as with CopyFromHost. A transfer that fails
// returns only once no copy it queued still reads or writes the pinned
// memory; where that cannot be known (the wait fails too), the memory is
// set aside, never reused, and released by Close.
//
// A StagingBuffer is for one goroutine at a time, like bytes.Buffer: the
// slice DownloadInto returns is the buffer's own memory, valid only until
// the next call, which no lock could keep meaningful between goroutines.
// Give each goroutine its own. A transfer, Reserve, ShrinkToFit or Close
// made while another is under way returns an error wrapping
// ErrInvalidValue; Options, AutoStageMaxBytes, SetAutoStageMaxBytes,
// Capacity and Stats may be called at any time.
type StagingBuffer struct {
	busy atomic.Bool // a transfer, Reserve, ShrinkToFit or Close is under way

	// opts are what the buffer was built with (zero for a zero
	// StagingBuffer: the defaults), set before anyone else has the buffer
	// and never changed: no lock.
	opts StagingOptions
	// stageMax is, by Direction, the size up to which ordinary slices are
	// staged: opts's, until SetAutoStageMaxBytes, from any goroutine.
	stageMax [2]atomic.Int64

	// mu guards the counters, which Stats, Capacity and String reach from
	// any goroutine.
	mu       sync.Mutex
	stats    StagingStats
	capacity int // pinned bytes held

	// Owned by the call that set busy.
	mem     *PinnedBuffer[byte]
	memCtx  *Context     // mem's context, held by the call using mem until done (holdMem)
	retired []retiredMem // memory a failed transfer's copies may still use
	events  []*Event     // one per pipeline slot, in evCtx
	evCtx   *Context
	copies  [maxPipeSlots]hostcopy.Job // the copy of each chunk in flight
	fills   [maxPipeSlots]hostcopy.Job // the population of each fresh chunk's pages (freshpages.go)
	pageVec []byte                     // mincore's vector (pagesMissing)
	rot     int                        // where the next download's slots start (rotateDownloads)
}

// NewStagingBuffer returns a staging buffer with bytes of pinned memory
// already allocated (rounded up to StagingGranularity), so that the
// millisecond-scale page-locking stays out of the steady-state loop. Its
// options are the defaults (DefaultStagingOptions).
func NewStagingBuffer(ctx *Context, bytes int) (*StagingBuffer, error) {
	sb := new(StagingBuffer) // no other call can have it: no acquire
	if err := sb.reserve("NewStagingBuffer", ctx, bytes); err != nil {
		return nil, err
	}
	return sb, nil
}

// NewStagingBufferOptions returns a staging buffer configured by opts, with
// bytes of pinned memory already allocated in ctx, as NewStagingBuffer; 0
// bytes pins nothing until the first transfer or Reserve, and ctx is then
// not used. A field of opts out of range is an error wrapping
// ErrInvalidValue that names it, before anything is allocated.
func NewStagingBufferOptions(ctx *Context, bytes int, opts StagingOptions) (*StagingBuffer, error) {
	const op = "NewStagingBufferOptions"
	if err := opts.check(op); err != nil {
		return nil, err
	}
	sb := newStagingBuffer(opts)
	if bytes == 0 {
		return sb, nil
	}
	if err := sb.reserve(op, ctx, bytes); err != nil {
		return nil, err
	}
	return sb, nil
}

// newStagingBuffer returns a staging buffer of opts, which are valid,
// holding no memory.
func newStagingBuffer(opts StagingOptions) *StagingBuffer {
	sb := &StagingBuffer{opts: opts}
	for _, d := range []Direction{HostToDevice, DeviceToHost} {
		sb.stageMax[d].Store(int64(opts.stageMax(d)))
	}
	return sb
}

// Options returns the options sb was built with, its pipeline filled in
// where they left it zero: DefaultStagingOptions for a zero or nil
// StagingBuffer, or one from NewStagingBuffer. SetAutoStageMaxBytes does
// not change them; AutoStageMaxBytes reports the threshold in force.
func (sb *StagingBuffer) Options() StagingOptions {
	var o StagingOptions
	if sb != nil {
		o = sb.opts
	}
	o.Pipeline = o.pipeline()
	return o
}

// Capacity returns the pinned memory held, in bytes: 0 before first use.
// While a transfer is under way it reports the memory held before it.
func (sb *StagingBuffer) Capacity() int {
	if sb == nil {
		return 0
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.capacity
}

// Stats returns the usage counters. Each counts transfers that succeeded.
func (sb *StagingBuffer) Stats() StagingStats {
	if sb == nil {
		return StagingStats{}
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.stats
}

// AutoStageMaxBytes returns the size up to which Upload and Download stage
// ordinary slices through pinned memory: the larger of the two directions'
// thresholds (see StagingOptions).
func (sb *StagingBuffer) AutoStageMaxBytes() int {
	if sb == nil {
		return 0
	}
	return max(sb.stageMaxBytes(HostToDevice), sb.stageMaxBytes(DeviceToHost))
}

// SetAutoStageMaxBytes sets the size up to which Upload and Download stage
// ordinary slices, both ways, in place of the options' thresholds
// (StagingOptions.AutoStageMaxBytes): 0 never stages, math.MaxInt always
// does (and pins as much memory as the largest transfer); a negative size
// is 0. UploadWith and DownloadInto always stage: there the pinned memory
// is the caller's working memory. It may be called from any goroutine; a
// transfer under way keeps the threshold it began with. On a nil
// StagingBuffer it does nothing.
func (sb *StagingBuffer) SetAutoStageMaxBytes(bytes int) {
	if sb == nil {
		return
	}
	for d := range sb.stageMax {
		sb.stageMax[d].Store(int64(max(bytes, 0)))
	}
}

// stageMaxBytes returns the size up to which transfers of ordinary slices
// in direction d are staged.
func (sb *StagingBuffer) stageMaxBytes(d Direction) int {
	return int(sb.stageMax[d&1].Load())
}

// Reserve makes sure at least bytes of pinned memory are held, allocating
// in ctx (the memory is portable: every context can use it). It only grows:
// a smaller request does nothing. Growth rounds up to StagingGranularity and
// discards what the memory held: the old memory is freed first, and if the
// new allocation then fails the buffer holds none.
func (sb *StagingBuffer) Reserve(ctx *Context, bytes int) error {
	const op = "StagingBuffer.Reserve"
	if err := sb.acquire(op); err != nil {
		return err
	}
	defer sb.done()
	return sb.reserve(op, ctx, bytes)
}

// ShrinkToFit releases the pinned memory; capacity returns to 0 and the
// counters stay. The next transfer pins again.
func (sb *StagingBuffer) ShrinkToFit() error {
	const op = "StagingBuffer.ShrinkToFit"
	if sb == nil {
		return nil
	}
	if err := sb.acquire(op); err != nil {
		return err
	}
	defer sb.done()
	return sb.freeMem()
}

// Close releases everything the staging buffer holds. It may be used again
// afterwards, as a zero StagingBuffer. If a release fails, what was not
// released is kept and Close may be called again.
func (sb *StagingBuffer) Close() error {
	const op = "StagingBuffer.Close"
	if sb == nil {
		return nil
	}
	if err := sb.acquire(op); err != nil {
		return err
	}
	defer sb.done()
	return errors.Join(sb.freeMem(), sb.freeRetired(), sb.closeEvents())
}

// checkTransfer validates a transfer of n elements of T against buf.
func checkTransfer[T any](op string, buf *DeviceBuffer[T], n int, s *Stream) error {
	// T needs no check of its own: only a T fit for device memory makes a
	// DeviceBuffer[T].
	if err := buf.valid(op); err != nil {
		return err
	}
	if n < 0 {
		return errorf(op, ErrInvalidValue, "negative count %d elements", n)
	}
	if n != buf.Len() {
		return errorf(op, ErrInvalidValue, "%d elements requested, the device buffer has %d", n, buf.Len())
	}
	if err := s.valid(op); err != nil {
		return err
	}
	if s.ctx != buf.mem.ctx {
		return errorf(op, ErrInvalidValue, "the stream belongs to another context than the buffer")
	}
	// A freed buffer or a closed stream is ErrClosed before any memory is
	// pinned for the transfer, and for a transfer of nothing too.
	held, err := holdAll(op, []heldLife{{&buf.mem.life, "the device buffer"}, {&s.life, "the stream"}})
	if err != nil {
		return err
	}
	releaseAll(held)
	// So is one of a closed context, which a transfer of nothing never
	// binds.
	if err := buf.mem.ctx.open(op); err != nil {
		return err
	}
	return s.capturing(op, "a staging buffer's transfer waits for its copies, which a capture does not run; transfer outside the capture")
}

// UploadWith uploads n elements to dst, letting fill write them straight
// into pinned memory: the bytes fill writes are the bytes the DMA engine
// reads, with no copy between, which makes this the fastest way to the
// device. fill gets exactly n elements and should write all of them: what
// it leaves keeps whatever the previous transfer left there (zeros at
// first). n must equal dst.Len(); for n of zero fill is not called.
func UploadWith[T any](sb *StagingBuffer, dst *DeviceBuffer[T], n int, s *Stream, fill func([]T)) error {
	const op = "UploadWith"
	if err := sb.acquire(op); err != nil {
		return err
	}
	defer sb.done()
	if err := checkTransfer(op, dst, n, s); err != nil {
		return err
	}
	if fill == nil {
		return errorf(op, ErrInvalidValue, "nil fill function")
	}
	if n == 0 {
		return nil // nothing to fill or move
	}
	bytes := dst.ByteSize()
	pinned, err := sb.staging(op, dst.mem.ctx, bytes)
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
	sb.count(routeStaged, HostToDevice, bytes)
	return nil
}

// DownloadInto downloads the n elements of src into pinned memory and
// returns them there, with no copy out: the DMA engine writes the memory the
// caller reads. The slice is the staging buffer's own memory: it is valid
// until the next call on sb, which overwrites or frees it. n must equal
// src.Len().
func DownloadInto[T any](sb *StagingBuffer, src *DeviceBuffer[T], n int, s *Stream) ([]T, error) {
	const op = "DownloadInto"
	if err := sb.acquire(op); err != nil {
		return nil, err
	}
	defer sb.done()
	if err := checkTransfer(op, src, n, s); err != nil {
		return nil, err
	}
	if n == 0 {
		return []T{}, nil
	}
	bytes := src.ByteSize()
	pinned, err := sb.staging(op, src.mem.ctx, bytes)
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
	sb.count(routeStaged, DeviceToHost, bytes)
	return elems, nil
}

// Upload copies src into dst: a drop-in for dst.CopyFromHost, with its
// postcondition, that is ordered after the work on s and never slower.
// Large slices are pipelined through pinned slots by several goroutines
// (from the options' Pipeline.UploadMinBytes); smaller ones go to the
// driver as they are, as does memory that is already page-locked (a
// PinnedBuffer's, or Registered), unless the options or
// SetAutoStageMaxBytes ask for small slices to be copied into pinned memory
// and moved from there (by default none are).
// len(src) must equal dst.Len(); an empty src moves nothing. Prefer
// UploadWith where you produce the data: it saves the copy.
func Upload[T any](sb *StagingBuffer, dst *DeviceBuffer[T], src []T, s *Stream) error {
	const op = "Upload"
	if err := sb.acquire(op); err != nil {
		return err
	}
	defer sb.done()
	if err := checkTransfer(op, dst, len(src), s); err != nil || len(src) == 0 {
		return err
	}
	err := sb.transfer(op, HostToDevice, dst.mem, dst.ptr, bytesOf(src), s)
	runtime.KeepAlive(src)
	return err
}

// Download copies src into dst, a drop-in for src.CopyToHost that is
// ordered on s (so it sees the results of work queued there) and never
// slower; the mirror of Upload. len(dst) must equal src.Len(). Prefer
// DownloadInto where you can consume the data in place.
func Download[T any](sb *StagingBuffer, dst []T, src *DeviceBuffer[T], s *Stream) error {
	const op = "Download"
	if err := sb.acquire(op); err != nil {
		return err
	}
	defer sb.done()
	if err := checkTransfer(op, src, len(dst), s); err != nil || len(dst) == 0 {
		return err
	}
	err := sb.transfer(op, DeviceToHost, src.mem, src.ptr, bytesOf(dst), s)
	runtime.KeepAlive(dst)
	return err
}

// The route: which path a transfer takes, chosen here; move (pipeline.go)
// carries it out.

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
	// Memory taken as page-locked (no staging, and an upload then
	// ordered after nothing) stays so until the transfer returns.
	owner := holdLocked(host)
	defer releaseLocked(owner)
	locked := owner != nil
	fresh := d == DeviceToHost && !locked && len(host) >= freshMinBytes && populateFresh
	if d == DeviceToHost && !locked {
		adviseHugePages(host) // pages the download may be first to touch
	}
	r := p.route(len(host), locked, sb.stageMaxBytes(d), d)
	if r == routePipelined && len(host) < p.WarmBelowBytes && !hostcopy.Awake() {
		r = routeDirect
	}
	return sb.move(r, locked, mem, transfer{op: op, dir: d, dev: ptr, host: host, shape: p, s: s, fresh: fresh})
}

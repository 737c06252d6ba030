package cuda

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/lifetime"
)

// IOConfig says how ReadFrom and WriteTo move data between a reader or
// writer and device memory. The zero IOConfig works: the context's staging
// buffer and a stream made for the call.
type IOConfig struct {
	// Staging lends its pinned memory: the bytes are read into it (or
	// written from it) and move by DMA from there, with no other copy.
	// nil: the staging buffer the buffer's context keeps for these calls,
	// whose memory (up to 64 MiB) stays page-locked between them, since
	// page-locking costs milliseconds, until Context.Close frees it; a call
	// made while another has it uses one of its own, closed after it. Give
	// one to choose when its memory is freed, or to keep the context's for
	// calls beside it.
	Staging *StagingBuffer
	// Stream is where the DMAs are queued, after the work already there.
	// nil: one is made for the call. Either way the call returns once its
	// DMAs are done.
	Stream *Stream
	// Progress, if not nil, is called on the calling goroutine after each
	// chunk, with the bytes moved so far. A panic of Progress stops the
	// transfer and goes on once no read, write or DMA is in flight.
	Progress func(done int64)
}

// ioShape is a pipeline's shape: slots chunks of up to chunk bytes in
// flight, each read (or written) while the DMA engine moves the others.
type ioShape struct{ slots, chunk int }

// The shapes, variables for the benchmarks that chose them. Readers at
// offsets are read by one goroutine per slot, and want many large slots to
// keep the reads going (BenchmarkReadFromShape chose 16 × 4 MiB). A reader
// read in order, or a writer, is one goroutine's work: four slots of 1 MiB
// keep the DMA engine ahead of it, in memory the CPU's caches still hold,
// where 16 × 4 MiB did not (BenchmarkReadFromStream).
var (
	ioAtOffsets  = ioShape{slots: 16, chunk: 4 << 20}
	ioSequential = ioShape{slots: 4, chunk: 1 << 20}
)

// parts is how the pipeline cuts n bytes: chunks of size, the last
// shorter, slots of them at a time.
func (sh ioShape) parts(n int) (size, chunks, slots int) {
	size = min(sh.chunk, max(n/sh.slots, StagingGranularity))
	size = (size + StagingGranularity - 1) / StagingGranularity * StagingGranularity
	chunks = (n + size - 1) / size
	return size, chunks, min(chunks, sh.slots)
}

// ReadFrom reads exactly dst.ByteSize() bytes from r into dst, through the
// pinned memory of c's staging buffer: each chunk is read straight into a
// pinned slot and moved by DMA while the next ones are read. Where r is an
// io.ReaderAt and an io.Seeker (an *os.File, an *io.SectionReader),
// several goroutines read different chunks at once from r's offset, and r's
// offset moves past the bytes read, as a sequential read would leave it.
//
// It returns the bytes read and, once it returns, no DMA it queued is in
// flight: on success dst holds the data. A source shorter than dst is an
// error wrapping io.ErrUnexpectedEOF that says how many bytes came; an
// error of r comes back wrapped, with the offset it happened at; a panic of
// r's (which may run on another goroutine) is raised again on the calling
// goroutine once no read or DMA is in flight. A reader that breaks the
// io.Reader contract is an error too: a count outside the buffer it was
// given (ErrInvalidValue), or nothing read a hundred times in a row
// (io.ErrNoProgress). Bytes past dst's size are left unread.
func ReadFrom[T any](dst *DeviceBuffer[T], r io.Reader, c IOConfig) (int64, error) {
	const op = "ReadFrom"
	if err := dst.valid(op); err != nil {
		return 0, err
	}
	if r == nil {
		return 0, errorf(op, ErrInvalidValue, "nil reader")
	}
	var n int64
	err := withIO(op, dst.mem.ctx, c, func(sb *StagingBuffer, s *Stream) error {
		if err := dst.enterIO(op, s, c); err != nil {
			return err
		}
		defer dst.leaveWithStream(s)
		var err error
		n, err = readPipeline(op, sb, s, dst.ptr, dst.ByteSize(), r, c.Progress)
		return err
	})
	return n, err
}

// WriteTo writes the src.ByteSize() bytes of src to w, through the pinned
// memory of c's staging buffer: each chunk moves by DMA into a pinned slot
// and is written from there while the next ones move. It returns the bytes
// written; an error of w comes back wrapped, with the offset it happened
// at, and no DMA in flight; a count outside the buffer given to Write is
// ErrInvalidValue. w is called on a goroutine of its own, one Write at a
// time, in order; its panic is raised again on the calling goroutine.
func WriteTo[T any](src *DeviceBuffer[T], w io.Writer, c IOConfig) (int64, error) {
	const op = "WriteTo"
	if err := src.valid(op); err != nil {
		return 0, err
	}
	if w == nil {
		return 0, errorf(op, ErrInvalidValue, "nil writer")
	}
	var n int64
	err := withIO(op, src.mem.ctx, c, func(sb *StagingBuffer, s *Stream) error {
		if err := src.enterIO(op, s, c); err != nil {
			return err
		}
		defer src.leaveWithStream(s)
		var err error
		n, err = writePipeline(op, sb, s, src.ptr, src.ByteSize(), w, c.Progress)
		return err
	})
	return n, err
}

// enterIO enters b with s for ReadFrom or WriteTo. A call on a stream of
// its own (c.Stream nil) is synchronous: it first waits for the work queued
// on b (streamusers.go).
func (b *DeviceBuffer[T]) enterIO(op string, s *Stream, c IOConfig) error {
	if err := b.enterWithStream(op, s); err != nil {
		return err
	}
	if c.Stream == nil {
		if err := b.mem.settle(op); err != nil {
			b.leaveWithStream(s)
			return err
		}
	}
	return nil
}

// ReadFrom implements io.ReaderFrom: it reads exactly b.ByteSize() bytes
// from r into b, as the function ReadFrom does with a zero IOConfig (the
// context's staging buffer and a stream for the call).
func (b *DeviceBuffer[T]) ReadFrom(r io.Reader) (int64, error) { return ReadFrom(b, r, IOConfig{}) }

// WriteTo implements io.WriterTo: it writes b's bytes to w, as the function
// WriteTo does with a zero IOConfig.
func (b *DeviceBuffer[T]) WriteTo(w io.Writer) (int64, error) { return WriteTo(b, w, IOConfig{}) }

// withIO runs move with c's staging buffer and stream, with sb held for
// the call; where c leaves them nil, with the context's staging buffer and
// a stream made (and then closed) for the call.
func withIO(op string, ctx *Context, c IOConfig, move func(*StagingBuffer, *Stream) error) (err error) {
	sb, s := c.Staging, c.Stream
	if s != nil {
		if err := s.valid(op); err != nil { // a zero Stream
			return err
		}
	}
	if sb == nil {
		if sb, err = ctx.takeIO(op); err != nil {
			return err
		}
		defer func() {
			if gerr := ctx.giveIO(sb); err == nil {
				err = gerr
			}
		}()
	}
	if s == nil {
		if s, err = ctx.NewStream(); err != nil {
			return err
		}
		defer lifetime.CloseTemp(&err, s.Close)
	}
	if err := sb.acquire(op); err != nil {
		return err
	}
	defer sb.done()
	if s.ctx != ctx {
		return errorf(op, ErrInvalidValue, "the stream belongs to another context than the buffer")
	}
	if err := s.capturing(op, "its DMAs are waited for as they run, which a capture does not do; move the data outside the capture"); err != nil {
		return err
	}
	return move(sb, s)
}

// ioPlan is a pipeline's cut of n bytes into chunks of size, slots of
// them in flight, each slot of pinned memory with its event.
type ioPlan struct {
	size, chunks, slots, n int
	pinned                 []byte
	evs                    []*Event
}

func (p *ioPlan) bounds(i int) (lo, hi int) { return i * p.size, min((i+1)*p.size, p.n) }

// slot returns chunk i's part of the pinned memory.
func (p *ioPlan) slot(i int) []byte {
	lo, hi := p.bounds(i)
	return p.pinned[i%p.slots*p.size:][:hi-lo]
}

// queued records chunk i's event on s, after its DMA.
func (p *ioPlan) queued(op string, s *Stream, i int) error {
	return check(op, driver.EventRecord(s.ctx.handle, p.evs[i%p.slots].handle, s.handle))
}

// awaitDMA waits until chunk i's DMA is done.
func (p *ioPlan) awaitDMA(op string, s *Stream, i int) error {
	return check(op, driver.EventSynchronize(s.ctx.handle, p.evs[i%p.slots].handle))
}

// runIO runs move over a plan for n bytes of shape sh in sb's pinned memory, on s,
// called with the buffer and s held and the context bound. On every way
// out the DMAs queued are done before the pinned memory is the staging
// buffer's again (or, where that cannot be known, the memory is retired:
// see settle).
func runIO(op string, sb *StagingBuffer, s *Stream, n int, sh ioShape, move func(*ioPlan) (int64, error)) (done int64, err error) {
	size, chunks, slots := sh.parts(n)
	if chunks == 0 {
		return 0, nil
	}
	pinned, err := sb.staging(op, s.ctx, slots*size)
	if err != nil {
		return 0, err
	}
	p := &ioPlan{size: size, chunks: chunks, slots: slots, n: n, pinned: pinned}
	closeEvents := func() error {
		var errs []error
		for _, e := range p.evs {
			errs = append(errs, e.Close())
		}
		return errors.Join(errs...)
	}
	defer lifetime.CloseTemp(&err, closeEvents)
	for range slots {
		e, err := s.ctx.NewEvent(EventDisableTiming)
		if err != nil {
			return 0, err
		}
		p.evs = append(p.evs, e)
	}
	if err := s.ctx.settleLegacy(op); err != nil {
		return 0, err
	}
	defer func() {
		if serr := sb.settle(op, s, p.evs); err == nil {
			err = serr
		}
	}()
	return move(p)
}

// readPipeline moves n bytes from r to the device at d on s.
func readPipeline(op string, sb *StagingBuffer, s *Stream, d driver.DevicePtr, n int, r io.Reader, progress func(int64)) (int64, error) {
	at, base := readsAt(r)
	if at == nil {
		return runIO(op, sb, s, n, ioSequential, func(p *ioPlan) (int64, error) {
			return p.inOrder(progress, func(i int) (int, error) {
				lo, hi := p.bounds(i)
				got, err := readFull(r, p.slot(i))
				if err != nil {
					return got, readError(op, err, int64(lo)+int64(got), n)
				}
				// Chunk i+1 goes into the slot chunk i+1-slots left, once
				// its DMA is done: chunk i's is queued behind it.
				return got, s.ctx.doHeld(op, func() error {
					if err := p.dma(op, s, i, driver.MemcpyHtoDAsync(s.ctx.handle, d+driver.DevicePtr(lo), hostPtr(p.slot(i)), uintptr(hi-lo), s.handle)); err != nil {
						return err
					}
					if reuse := i + 1 - p.slots; reuse >= 0 && i+1 < p.chunks {
						return p.awaitDMA(op, s, reuse)
					}
					return nil
				})
			})
		})
	}
	return runIO(op, sb, s, n, ioAtOffsets, func(p *ioPlan) (read int64, err error) {
		f := newChunkReads(p.slots, func(i int, buf []byte) (int, error) {
			lo, _ := p.bounds(i)
			m, err := at.ReadAt(buf, base+int64(lo))
			if m < 0 || m > len(buf) {
				return 0, badCount("ReadAt", m, len(buf))
			}
			if m == len(buf) {
				err = nil // ReadAt may report io.EOF with the last byte
			} else if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return m, err
		})
		defer func() {
			f.stop()
			// Leave r where a sequential read would have.
			if _, serr := r.(io.Seeker).Seek(base+read, io.SeekStart); serr != nil && err == nil {
				err = &Error{Op: op, Err: serr, Detail: "moving the source's offset past the bytes read"}
			}
		}()
		for i := range p.slots {
			f.start(i, p.slot(i))
		}
		for i := range p.chunks {
			lo, hi := p.bounds(i)
			got, ferr := f.wait(i)
			read += int64(got)
			if ferr != nil {
				return read, readError(op, ferr, int64(lo)+int64(got), n)
			}
			if err := p.dma(op, s, i, driver.MemcpyHtoDAsync(s.ctx.handle, d+driver.DevicePtr(lo), hostPtr(p.slot(i)), uintptr(hi-lo), s.handle)); err != nil {
				return read, err
			}
			if progress != nil {
				progress(int64(hi))
			}
			// Chunk i-1+slots goes into the slot chunk i-1 left, once its
			// DMA is done: chunk i's is queued behind it meanwhile.
			if next := i - 1 + p.slots; i >= 1 && next < p.chunks {
				if err := p.awaitDMA(op, s, i-1); err != nil {
					return read, err
				}
				f.start(next, p.slot(next))
			}
		}
		return read, nil
	})
}

// maxEmptyReads is how many reads in a row may return no byte and no
// error before readFull gives up on the reader, as bufio does.
const maxEmptyReads = 100

// readFull is io.ReadFull for a reader that may misbehave: a count outside
// the buffer is an error, not a panic, and a reader that keeps returning
// nothing is io.ErrNoProgress, not a hang.
func readFull(r io.Reader, buf []byte) (int, error) {
	n, empty := 0, 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		if m < 0 || m > len(buf)-n {
			return n, badCount("Read", m, len(buf)-n)
		}
		n += m
		switch {
		case n == len(buf):
			return n, nil // the data is here; an error with it can wait
		case err != nil:
			if err == io.EOF && n > 0 {
				err = io.ErrUnexpectedEOF
			}
			return n, err
		case m == 0:
			if empty++; empty >= maxEmptyReads {
				return n, io.ErrNoProgress
			}
		default:
			empty = 0
		}
	}
	return n, nil
}

// badCount is the error for a Read, ReadAt or Write that reported a count
// of bytes outside the buffer it was given.
func badCount(call string, m, size int) error {
	return fmt.Errorf("%w: %s reported %d bytes for a buffer of %d", ErrInvalidValue, call, m, size)
}

// readError is the error for a read of the source that stopped at byte at
// of n: the source too short, or its own error.
func readError(op string, err error, at int64, n int) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Op: op, Err: io.ErrUnexpectedEOF, Detail: fmt.Sprintf("the source ended after %d of the %d bytes the buffer holds", at, n)}
	}
	return &Error{Op: op, Err: err, Detail: fmt.Sprintf("reading the source at byte %d of %d", at, n)}
}

// result is the outcome of a chunk's read or write.
type result struct {
	n        int
	err      error
	panicked any // the reader's or writer's panic, raised again by get
}

// get returns the result, or raises again on the caller's goroutine the
// panic of the Read or Write that made it, as a call made there would have:
// the caller's deferred calls then wait for the other reads or writes and
// the DMAs as on every way out.
func (r result) get() (int, error) {
	if r.panicked != nil {
		panic(r.panicked)
	}
	return r.n, r.err
}

// guard runs a Read or Write, catching its panic into the result.
func guard(call func() (int, error)) (res result) {
	defer func() {
		if p := recover(); p != nil {
			res = result{panicked: p}
		}
	}()
	n, err := call()
	return result{n: n, err: err}
}

// readsAt returns r as an io.ReaderAt, with its offset now, where it can be
// read at offsets: it is an io.ReaderAt and an io.Seeker whose offset can
// be told. Else it returns nil.
func readsAt(r io.Reader) (io.ReaderAt, int64) {
	at, ok := r.(io.ReaderAt)
	sk, ok2 := r.(io.Seeker)
	if !ok || !ok2 {
		return nil, 0
	}
	base, err := sk.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, 0
	}
	return at, base
}

// inOrder moves the plan's chunks in order on a goroutine of its own,
// step(i) moving chunk i (its read or write and the DMA calls beside it,
// made with Context.doHeld), while the calling goroutine waits: it holds the
// context current on a locked thread (purego), and waking it at every
// chunk, or blocking it in a pipe's read or write every 64 KiB, cost a
// pipe a fifth of its speed. It returns the bytes moved, once the
// goroutine has stopped: after the last chunk, or after the first step
// that failed, with that step's error; a step's panic is raised again on
// the calling goroutine. progress, if not nil, is called there after each
// chunk with the bytes moved so far.
func (p *ioPlan) inOrder(progress func(int64), step func(i int) (int, error)) (int64, error) {
	var (
		moved int64
		res   result
		done  = make(chan struct{})
		quit  = make(chan struct{}) // the caller left (progress panicked): stop
		ticks chan int64
	)
	if progress != nil {
		ticks = make(chan int64, 1)
	}
	go func() {
		defer close(done)
		if ticks != nil {
			defer close(ticks)
		}
		for i := range p.chunks {
			select {
			case <-quit:
				return
			default:
			}
			if res = guard(func() (int, error) { return step(i) }); res.panicked != nil {
				return
			}
			moved += int64(res.n)
			if res.err != nil {
				return
			}
			if ticks != nil {
				select {
				case ticks <- moved:
				case <-quit:
					return
				}
			}
		}
	}()
	defer func() {
		close(quit)
		<-done // the goroutine reads or writes the pinned memory
	}()
	if ticks != nil {
		for m := range ticks {
			progress(m)
		}
	}
	<-done
	_, err := res.get()
	return moved, err
}

// dma checks the status of chunk i's DMA, just queued on s, and records
// the chunk's event after it.
func (p *ioPlan) dma(op string, s *Stream, i int, st driver.Status) error {
	s.queued.Add(2)
	if err := check(op, st); err != nil {
		return err
	}
	return p.queued(op, s, i)
}

// chunkReads makes a pipeline's reads at offsets off the pipeline's
// goroutine, each chunk's on a goroutine of its own, and hands back each
// chunk's result.
type chunkReads struct {
	read func(i int, buf []byte) (int, error)
	done []chan result // chunk i's result, in done[i%len(done)]
	wg   sync.WaitGroup
}

// newChunkReads returns chunkReads for a pipeline of slots slots.
func newChunkReads(slots int, read func(i int, buf []byte) (int, error)) *chunkReads {
	c := &chunkReads{read: read, done: make([]chan result, slots)}
	for i := range c.done {
		c.done[i] = make(chan result, 1)
	}
	return c
}

// start reads chunk i into buf.
func (c *chunkReads) start(i int, buf []byte) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.done[i%len(c.done)] <- guard(func() (int, error) { return c.read(i, buf) })
	}()
}

// wait returns the result of chunk i's read (see result.get).
func (c *chunkReads) wait(i int) (int, error) { return (<-c.done[i%len(c.done)]).get() }

// stop waits for every read in flight: they write the pinned memory.
func (c *chunkReads) stop() { c.wg.Wait() }

// writePipeline moves n bytes from the device at d to w, on s: the DMAs
// of the first chunks are queued here, and each chunk is then written
// once its DMA is done, its slot then taking the DMA of a later chunk.
func writePipeline(op string, sb *StagingBuffer, s *Stream, d driver.DevicePtr, n int, w io.Writer, progress func(int64)) (int64, error) {
	return runIO(op, sb, s, n, ioSequential, func(p *ioPlan) (int64, error) {
		dma := func(i int) error {
			lo, hi := p.bounds(i)
			return p.dma(op, s, i, driver.MemcpyDtoHAsync(s.ctx.handle, hostPtr(p.slot(i)), d+driver.DevicePtr(lo), uintptr(hi-lo), s.handle))
		}
		for i := range p.slots {
			if err := dma(i); err != nil {
				return 0, err
			}
		}
		return p.inOrder(progress, func(i int) (int, error) {
			if err := s.ctx.doHeld(op, func() error { return p.awaitDMA(op, s, i) }); err != nil {
				return 0, err
			}
			lo, _ := p.bounds(i)
			m, err := w.Write(p.slot(i))
			if m < 0 || m > len(p.slot(i)) {
				m, err = 0, badCount("Write", m, len(p.slot(i)))
			} else if err == nil && m < len(p.slot(i)) {
				err = io.ErrShortWrite
			}
			if err != nil {
				return m, &Error{Op: op, Err: err, Detail: fmt.Sprintf("writing byte %d of %d", lo+m, n)}
			}
			if next := i + p.slots; next < p.chunks {
				return m, s.ctx.doHeld(op, func() error { return dma(next) })
			}
			return m, nil
		})
	})
}

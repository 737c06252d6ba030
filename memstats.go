package cuda

import (
	"fmt"
	"sync/atomic"
)

// MemoryKind is a kind of memory a context's MemoryStats count apart.
type MemoryKind int

const (
	// MemoryDevice is device memory from Alloc, Zeroed and FromHost
	// (cuMemAlloc), and the memory mapped into GrowableBuffers.
	MemoryDevice MemoryKind = iota
	// MemoryStreamOrdered is device memory from AllocAsync: the device's
	// default pool.
	MemoryStreamOrdered
	// MemoryPool is device memory from AllocFromPool: pools of the
	// program's own (Context.NewMemPool).
	MemoryPool
	// MemoryPinned is page-locked host memory from AllocPinned, the
	// staging buffers' included.
	MemoryPinned
	// MemoryManaged is managed memory from AllocManaged.
	MemoryManaged
	memoryKinds
)

func (k MemoryKind) String() string {
	switch k {
	case MemoryDevice:
		return "device"
	case MemoryStreamOrdered:
		return "stream-ordered"
	case MemoryPool:
		return "pool"
	case MemoryPinned:
		return "pinned"
	case MemoryManaged:
		return "managed"
	}
	return fmt.Sprintf("MemoryKind(%d)", int(k))
}

// MemoryCount is what a context's buffers of one kind hold.
type MemoryCount struct {
	Bytes     int64 // in buffers allocated and not yet freed
	PeakBytes int64 // the most Bytes has been since the context was made, or since ResetPeakMemory
	Buffers   int64 // buffers allocated and not yet freed
	// Allocations counts the buffers allocated since the context was
	// made, freed or not.
	Allocations int64
}

// MemoryStats is what a context's buffers hold, by kind (as PyTorch's
// torch.cuda.memory_stats): the bytes gocuda handed out and not yet taken
// back, not what the driver or a pool reserves around them. Memory a
// stream keeps for its next allocation of a size (see AllocAsync) counts
// once it is in a buffer again. Views, slices, FromRaw buffers, IPC
// mappings and empty buffers count nothing.
type MemoryStats struct {
	Device, StreamOrdered, Pool, Pinned, Managed MemoryCount
}

// Kind returns the count of one kind; the zero MemoryCount for an unknown
// one.
func (s MemoryStats) Kind(k MemoryKind) MemoryCount {
	switch k {
	case MemoryDevice:
		return s.Device
	case MemoryStreamOrdered:
		return s.StreamOrdered
	case MemoryPool:
		return s.Pool
	case MemoryPinned:
		return s.Pinned
	case MemoryManaged:
		return s.Managed
	}
	return MemoryCount{}
}

// memCounter counts one kind of memory of a context; every field is
// updated on its own (a reader may see an allocation in Bytes before
// Buffers), and peak is raised by compare-and-swap, so that counting costs
// an allocation or a free two atomic adds and no lock. The buffers alive
// are the allocations less the frees.
type memCounter struct {
	bytes, peak, allocs, frees atomic.Int64
}

func (c *memCounter) add(n uintptr) {
	c.allocs.Add(1)
	c.raise(c.bytes.Add(int64(n)))
}

// raise makes the peak at least b.
func (c *memCounter) raise(b int64) {
	for p := c.peak.Load(); b > p && !c.peak.CompareAndSwap(p, b); p = c.peak.Load() {
	}
}

// grow changes the bytes of a buffer counted already, by delta (a
// GrowableBuffer's).
func (c *memCounter) grow(delta int64) { c.raise(c.bytes.Add(delta)) }

// sub takes back a buffer of n bytes; nil (memory not counted) is a no-op.
func (c *memCounter) sub(n uintptr) {
	if c == nil {
		return
	}
	c.bytes.Add(-int64(n))
	c.frees.Add(1)
}

func (c *memCounter) count() MemoryCount {
	// The frees first: every free follows its allocation, so that the
	// difference is never negative.
	frees := c.frees.Load()
	allocs := c.allocs.Load()
	return MemoryCount{Bytes: c.bytes.Load(), PeakBytes: c.peak.Load(), Buffers: allocs - frees, Allocations: allocs}
}

// counter returns the context's counter of kind k.
func (c *Context) counter(k MemoryKind) *memCounter { return &c.mem[k] }

// MemoryStats returns what the context's buffers hold, by kind. It makes
// no driver call: gocuda counts as it allocates and frees.
func (c *Context) MemoryStats() (MemoryStats, error) {
	const op = "Context.MemoryStats"
	if c == nil {
		return MemoryStats{}, errorf(op, ErrInvalidValue, "nil *Context")
	}
	if err := c.hold(op); err != nil {
		return MemoryStats{}, err
	}
	defer c.life.Release()
	return MemoryStats{
		Device:        c.mem[MemoryDevice].count(),
		StreamOrdered: c.mem[MemoryStreamOrdered].count(),
		Pool:          c.mem[MemoryPool].count(),
		Pinned:        c.mem[MemoryPinned].count(),
		Managed:       c.mem[MemoryManaged].count(),
	}, nil
}

// ResetPeakMemory makes each kind's PeakBytes its Bytes now, to find the
// peak of a stretch of work.
func (c *Context) ResetPeakMemory() error {
	const op = "Context.ResetPeakMemory"
	if c == nil {
		return errorf(op, ErrInvalidValue, "nil *Context")
	}
	if err := c.hold(op); err != nil {
		return err
	}
	defer c.life.Release()
	for k := range c.mem {
		m := &c.mem[k]
		m.peak.Store(m.bytes.Load())
		m.raise(m.bytes.Load()) // an allocation that raced the store
	}
	return nil
}

package cuda

import (
	"math"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/track"
)

// MemPool is a pool of device memory that stream-ordered allocations come
// from (AllocFromPool; AllocAsync takes from the device's default pool).
// Memory freed in stream order goes back to the pool and is handed out
// again (or is first kept by the stream it was freed on, for that stream's
// next allocation of its size: see AllocAsync); the pool keeps up to its
// release threshold of unused memory across synchronizations and gives the
// rest back to the device at each one.
//
// A pool made by NewMemPool is closed with Close, or with its context,
// once the buffers allocated from it are freed: the driver was seen to
// crash freeing memory of a destroyed pool. The zero MemPool is not usable:
// its methods return ErrInvalidValue.
type MemPool struct {
	life
	handle      driver.MemPool
	dev         Device
	owned       bool         // made by NewMemPool; false for the device's default pool
	outstanding atomic.Int64 // buffers allocated from the pool and not yet freed
}

// MemPoolStats are a pool's figures in bytes: memory reserved from the
// device (in use or kept for reuse) and memory in use by allocations, now
// and at their high-water marks since the pool was made or
// ResetHighWater.
type MemPoolStats struct {
	Reserved, ReservedHigh uint64
	Used, UsedHigh         uint64
}

// NewMemPool makes a pool of the context's device memory, with a release
// threshold of 0 (every unused byte goes back to the device at the next
// synchronization; SetReleaseThreshold keeps some).
func (c *Context) NewMemPool() (*MemPool, error) {
	const op = "Context.NewMemPool"
	if err := c.bind(op); err != nil {
		return nil, err
	}
	defer c.unbind()
	props := driver.MemPoolProps{
		AllocType: driver.MemAllocationTypePinned,
		LocType:   driver.MemLocationTypeDevice,
		LocID:     int32(c.dev.ordinal),
	}
	p := &MemPool{dev: c.dev, owned: true}
	if err := check(op, driver.MemPoolCreate(c.handle, &p.handle, unsafe.Pointer(&props))); err != nil {
		return nil, err
	}
	h := p.handle
	p.arm(c, track.MemPool, runtime.AddCleanup(p, func(ctx *Context) {
		forgotten(ctx, track.MemPool, func() { driver.MemPoolDestroy(ctx.handle, h) })
	}, c))
	return p, nil
}

// DefaultMemPool returns the device's default pool, the one AllocAsync
// takes from. Its Close only makes this MemPool unusable: the pool is the
// device's.
func (c *Context) DefaultMemPool() (*MemPool, error) {
	const op = "Context.DefaultMemPool"
	if err := c.bind(op); err != nil {
		return nil, err
	}
	defer c.unbind()
	p := &MemPool{dev: c.dev}
	if err := check(op, driver.DeviceGetDefaultMemPool(c.handle, &p.handle, c.dev.handle)); err != nil {
		return nil, err
	}
	p.arm(c, track.MemPool, runtime.AddCleanup(p, func(ctx *Context) { track.Forgotten(track.MemPool) }, c))
	return p, nil
}

func (p *MemPool) valid(op string) error {
	if p == nil || p.ctx == nil {
		return errorf(op, ErrInvalidValue, "nil or zero *MemPool: make one with Context.NewMemPool or DefaultMemPool")
	}
	return p.life.valid(op, "the memory pool")
}

func (p *MemPool) enter(op string) error {
	if err := p.valid(op); err != nil {
		return err
	}
	return p.life.enter(op, "the memory pool")
}

// Context returns the context the pool was opened in.
func (p *MemPool) Context() *Context {
	if p == nil {
		return nil
	}
	return p.ctx
}

// AllocFromPool allocates a device buffer of n elements, uninitialized, from
// pool in stream order on s: AllocAsync with a pool of your choice. s must
// belong to the pool's context.
func AllocFromPool[T any](pool *MemPool, s *Stream, n int) (*DeviceBuffer[T], error) {
	const op = "AllocFromPool"
	if err := pool.valid(op); err != nil {
		return nil, err
	}
	if err := s.valid(op); err != nil {
		return nil, err
	}
	if s.ctx != pool.ctx {
		return nil, errorf(op, ErrInvalidValue, "the stream belongs to another context than the memory pool")
	}
	if err := pool.hold(op, "the memory pool"); err != nil {
		return nil, err
	}
	defer pool.release()
	return allocOrdered[T](op, s, pool, n, func(ptr *driver.DevicePtr, bytes uintptr) driver.Status {
		return driver.MemAllocFromPoolAsync(s.ctx.handle, ptr, bytes, pool.handle, s.handle)
	})
}

// SetReleaseThreshold sets how many bytes of unused memory the pool keeps
// across synchronizations instead of giving them back to the device:
// math.MaxUint64 keeps everything, 0 (the default) nothing.
func (p *MemPool) SetReleaseThreshold(bytes uint64) error {
	return p.setAttr("MemPool.SetReleaseThreshold", driver.MemPoolAttrReleaseThresh, bytes)
}

// ReleaseThreshold returns the bytes of unused memory the pool keeps.
func (p *MemPool) ReleaseThreshold() (uint64, error) {
	return p.attr("MemPool.ReleaseThreshold", driver.MemPoolAttrReleaseThresh)
}

// TrimTo gives unused memory back to the device until the pool reserves at
// most keep bytes, or has no unused memory left; memory in use stays.
func (p *MemPool) TrimTo(keep uint64) error {
	const op = "MemPool.TrimTo"
	if err := p.enter(op); err != nil {
		return err
	}
	defer p.leave()
	return check(op, driver.MemPoolTrimTo(p.ctx.handle, p.handle, uintptr(min(keep, math.MaxInt))))
}

// Stats returns the pool's figures.
func (p *MemPool) Stats() (MemPoolStats, error) {
	const op = "MemPool.Stats"
	var st MemPoolStats
	for _, a := range []struct {
		attr driver.MemPoolAttribute
		v    *uint64
	}{
		{driver.MemPoolAttrReservedMemCur, &st.Reserved}, {driver.MemPoolAttrReservedMemHi, &st.ReservedHigh},
		{driver.MemPoolAttrUsedMemCur, &st.Used}, {driver.MemPoolAttrUsedMemHi, &st.UsedHigh},
	} {
		v, err := p.attr(op, a.attr)
		if err != nil {
			return MemPoolStats{}, err
		}
		*a.v = v
	}
	return st, nil
}

// ResetHighWater restarts both high-water marks at the current figures.
func (p *MemPool) ResetHighWater() error {
	const op = "MemPool.ResetHighWater"
	if err := p.setAttr(op, driver.MemPoolAttrReservedMemHi, 0); err != nil {
		return err
	}
	return p.setAttr(op, driver.MemPoolAttrUsedMemHi, 0)
}

// SetAccess lets kernels and copies in peer's context (another device's)
// read and write memory allocated from the pool, or, with readWrite false,
// takes that access away. Peer access between the two devices must be
// possible (Device.CanAccessPeer).
func (p *MemPool) SetAccess(peer *Context, readWrite bool) error {
	const op = "MemPool.SetAccess"
	if err := p.valid(op); err != nil {
		return err
	}
	if peer == nil || !peer.dev.ok {
		return errorf(op, ErrInvalidValue, "nil or zero peer context")
	}
	if peer.dev.ordinal == p.dev.ordinal {
		return errorf(op, ErrInvalidValue, "the peer context is of the pool's own device %d, which always has access", p.dev.ordinal)
	}
	if err := p.enter(op); err != nil {
		return err
	}
	defer p.leave()
	desc := driver.MemAccessDesc{LocType: driver.MemLocationTypeDevice, LocID: int32(peer.dev.ordinal), Flags: driver.MemAccessProtNone}
	if readWrite {
		desc.Flags = driver.MemAccessProtReadWrite
	}
	return check(op, driver.MemPoolSetAccess(p.ctx.handle, p.handle, unsafe.Pointer(&desc), 1))
}

// Close destroys a pool made by NewMemPool, once the work queued in its
// context is done (stream-ordered frees among it). While buffers allocated
// from the pool are still open it returns ErrInvalidValue and the pool
// stays open: free them first. On the default pool it only makes this
// MemPool unusable. Closing twice, or a nil MemPool, does nothing; if the
// driver refuses, the pool stays open and Close may be called again.
func (p *MemPool) Close() error {
	const op = "MemPool.Close"
	if p == nil || p.ctx == nil {
		return nil
	}
	return p.close(op, "the memory pool", func() error {
		if !p.owned {
			return nil
		}
		// Buffers freed but kept by their streams for reuse count until
		// their memory goes back to the pool.
		if _, err := p.ctx.flushAll(op); err != nil {
			return err
		}
		if n := p.outstanding.Load(); n > 0 {
			return errorf(op, ErrInvalidValue, "%d buffer(s) allocated from the pool are still open: free them first", n)
		}
		if err := check(op, driver.CtxSynchronize(p.ctx.handle)); err != nil {
			return err
		}
		return check(op, driver.MemPoolDestroy(p.ctx.handle, p.handle))
	}, nil)
}

// uncount tells p, if not nil, that a buffer it counted in outstanding
// is gone.
func (p *MemPool) uncount() {
	if p != nil {
		p.outstanding.Add(-1)
	}
}

func (p *MemPool) setAttr(op string, attr driver.MemPoolAttribute, v uint64) error {
	if err := p.enter(op); err != nil {
		return err
	}
	defer p.leave()
	return check(op, driver.MemPoolSetAttribute(p.ctx.handle, p.handle, attr, unsafe.Pointer(&v)))
}

func (p *MemPool) attr(op string, attr driver.MemPoolAttribute) (uint64, error) {
	if err := p.enter(op); err != nil {
		return 0, err
	}
	defer p.leave()
	var v uint64
	err := check(op, driver.MemPoolGetAttribute(p.ctx.handle, p.handle, attr, unsafe.Pointer(&v)))
	return v, err
}

package cuda

import (
	"errors"
	"slices"
	"sync"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/lifetime"
)

// blockCache keeps the memory of stream-ordered buffers freed on one
// stream for the stream's next stream-ordered allocation of the same size
// and pool, so that allocating and freeing inside a loop costs no driver
// call: the memory is reused at a later point of the same stream, which is
// what the driver's pool would do with it too.
//
// Only sizes that repeat are kept: the first free of a size since the
// stream was last flushed goes to the driver (cuMemFreeAsync), the next
// ones to the cache, so that a one-off free holds nothing back. The cache
// is flushed (each block freed on the stream with cuMemFreeAsync) where the
// driver's pool would give unused memory back to the device: a synchronize
// of the stream or its context, and also when the stream is closed or
// begins a capture (one it joins stops the cache and keeps its blocks
// until the capture ends), when its context is closed, when a pool of the
// context is closed, and when a stream-ordered allocation finds the device
// out of memory. While the stream captures, the cache neither takes nor
// gives blocks: the capture's allocations and frees are the graph's.
//
// Locks: mu and the context's cacheMu are leaves, neither held while the
// other is taken (flushAll lists the caches under cacheMu, then takes each
// cache's mu in turn).
type blockCache struct {
	ctx    *Context
	handle driver.Stream

	mu        sync.Mutex
	blocks    []cachedBlock // newest last
	repeats   []uintptr     // the sizes freed on the stream since its last flush
	capturing bool          // the stream captures: neither take nor put
	gone      bool          // the stream is destroyed
}

// cachedBlock is the memory of a freed stream-ordered buffer.
type cachedBlock struct {
	base driver.DevicePtr
	size uintptr
	pool *MemPool // nil: the device's current pool (AllocAsync); a pool still counts the block
}

const (
	cacheBlocks  = 16 // blocks kept per stream
	cacheRepeats = 16 // sizes remembered per stream
)

func newBlockCache(ctx *Context, h driver.Stream) *blockCache {
	c := &blockCache{ctx: ctx, handle: h}
	ctx.cacheMu.Lock()
	if ctx.caches == nil {
		ctx.caches = map[*blockCache]struct{}{}
	}
	ctx.caches[c] = struct{}{}
	ctx.cacheMu.Unlock()
	return c
}

// take returns the memory of a freed buffer of size bytes from pool, if
// the cache has one.
func (c *blockCache) take(pool *MemPool, size uintptr) (driver.DevicePtr, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.capturing || c.gone {
		return 0, false
	}
	for i := len(c.blocks) - 1; i >= 0; i-- {
		if b := c.blocks[i]; b.size == size && b.pool == pool {
			c.blocks = slices.Delete(c.blocks, i, i+1)
			return b.base, true
		}
	}
	return 0, false
}

// put keeps b, reporting whether it did; if not, the caller frees it.
func (c *blockCache) put(b cachedBlock) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.capturing || c.gone || len(c.blocks) >= cacheBlocks {
		return false
	}
	if !slices.Contains(c.repeats, b.size) {
		if len(c.repeats) < cacheRepeats {
			c.repeats = append(c.repeats, b.size)
		}
		return false
	}
	c.blocks = append(c.blocks, b)
	return true
}

// flush frees the blocks on the stream. Called with the context bound.
func (c *blockCache) flush(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.flushLocked(op)
	return err
}

// flushLocked is flush with mu held; it returns how many blocks it freed.
func (c *blockCache) flushLocked(op string) (int, error) {
	c.repeats = c.repeats[:0]
	if len(c.blocks) == 0 {
		return 0, nil
	}
	// The blocks' last users may include synchronous calls whose work is
	// still on the legacy stream: the frees come after it, as Free's do.
	if err := c.ctx.settleLegacy(op); err != nil {
		return 0, err
	}
	n := 0
	for len(c.blocks) > 0 {
		b := c.blocks[len(c.blocks)-1]
		if err := check(op, driver.MemFreeAsync(c.ctx.handle, b.base, c.handle)); err != nil {
			return n, err // the rest stay, for the next flush
		}
		c.blocks = c.blocks[:len(c.blocks)-1]
		n++
		b.pool.uncount()
	}
	return n, nil
}

// pause flushes the cache and stops it, for a capture its stream begins;
// resume restarts it.
func (c *blockCache) pause(op string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.flushLocked(op); err != nil {
		return err
	}
	c.capturing = true
	return nil
}

// stop stops the cache and keeps its blocks, unused, for a capture its
// stream joins; resume restarts it. The blocks cannot be freed then: the
// capture has begun, and freeing memory outside it is one of the calls it
// forbids (the driver refuses cuMemFreeAsync, and ends the capture).
func (c *blockCache) stop() {
	c.mu.Lock()
	c.capturing = true
	c.mu.Unlock()
}

func (c *blockCache) resume() {
	c.mu.Lock()
	c.capturing = false
	c.mu.Unlock()
}

// release forgets the cache once its stream is destroyed. freed tells
// whether the blocks' memory went with the stream's context; otherwise
// release frees it, waiting for the context's work first (cuMemFree does
// not), with the context bound.
func (c *blockCache) release(freed bool) {
	c.mu.Lock()
	c.gone = true
	blocks := c.blocks
	c.blocks = nil
	c.mu.Unlock()
	if len(blocks) > 0 && !freed {
		driver.CtxSynchronize(c.ctx.handle)
	}
	for _, b := range blocks {
		if !freed {
			driver.MemFree(c.ctx.handle, b.base)
		}
		b.pool.uncount()
	}
	c.ctx.cacheMu.Lock()
	delete(c.ctx.caches, c)
	c.ctx.cacheMu.Unlock()
}

// flushAll flushes the cache of every stream of c, returning how many
// blocks it freed and the first error. Called with c bound.
func (c *Context) flushAll(op string) (int, error) {
	var first error
	freed := 0
	for _, bc := range c.blockCaches() {
		bc.mu.Lock()
		var err error
		if !bc.gone && !bc.capturing {
			var n int
			n, err = bc.flushLocked(op)
			freed += n
		}
		bc.mu.Unlock()
		if first == nil {
			first = err
		}
	}
	return freed, first
}

// blockCaches lists the caches of c's streams.
func (c *Context) blockCaches() []*blockCache {
	c.cacheMu.Lock()
	defer c.cacheMu.Unlock()
	caches := make([]*blockCache, 0, len(c.caches))
	for bc := range c.caches {
		caches = append(caches, bc)
	}
	return caches
}

// flushCaches is flushAll before c closes, so that no block stays held in
// a primary context that another Context still retains. It binds c only
// when a stream keeps memory: a closed or zero context keeps none (Close
// reports it), and a Close with nothing to flush binds nothing.
func (c *Context) flushCaches(op string) error {
	if c.life.Status() != lifetime.Held || !slices.ContainsFunc(c.blockCaches(), (*blockCache).keeps) {
		return nil
	}
	if err := c.bind(op); err != nil {
		if errors.Is(err, ErrClosed) { // closed meanwhile
			return nil
		}
		return err
	}
	defer c.unbind()
	_, err := c.flushAll(op)
	return err
}

// keeps reports whether the cache holds memory.
func (c *blockCache) keeps() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.blocks) > 0
}

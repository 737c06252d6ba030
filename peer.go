package cuda

import (
	"sync"

	"github.com/gocuda/cuda/internal/driver"
)

// CanAccessPeer reports whether d can read and write peer's memory directly
// (over NVLink or PCIe peer-to-peer), once peer access is enabled.
func (d Device) CanAccessPeer(peer Device) (bool, error) {
	if err := d.valid("Device.CanAccessPeer"); err != nil {
		return false, err
	}
	if err := peer.valid("Device.CanAccessPeer"); err != nil {
		return false, err
	}
	var can int32
	if err := check("Device.CanAccessPeer", driver.DeviceCanAccessPeer(&can, d.handle, peer.handle)); err != nil {
		return false, err
	}
	return can != 0, nil
}

// EnablePeerAccess lets work in c use memory of peer's context directly.
// Enabling it twice is not an error. Devices that cannot access each other
// (Device.CanAccessPeer) get ErrNotSupported; CopyPeer still works between
// them, through host memory.
func (c *Context) EnablePeerAccess(peer *Context) error {
	const op = "Context.EnablePeerAccess"
	if err := samePeerCheck(op, c, peer); err != nil {
		return err
	}
	if err := c.bind(op); err != nil {
		return err
	}
	defer c.unbind()
	switch r := driver.CtxEnablePeerAccess(c.handle, peer.handle, 0); r.Code {
	case driver.Success, driver.ErrorPeerAccessAlreadyEnabled:
		peerAccess.Store([2]driver.Context{c.handle, peer.handle}, true)
		return nil
	case driver.ErrorPeerAccessUnsupported:
		err := check(op, r).(*Error)
		err.Err = ErrNotSupported
		return err
	default:
		return check(op, r)
	}
}

// DisablePeerAccess undoes EnablePeerAccess. Disabling access that is not
// enabled is not an error.
func (c *Context) DisablePeerAccess(peer *Context) error {
	const op = "Context.DisablePeerAccess"
	if err := samePeerCheck(op, c, peer); err != nil {
		return err
	}
	if err := c.bind(op); err != nil {
		return err
	}
	defer c.unbind()
	r := driver.CtxDisablePeerAccess(c.handle, peer.handle)
	if r.Code == driver.Success || r.Code == driver.ErrorPeerAccessNotEnabled {
		peerAccess.Delete([2]driver.Context{c.handle, peer.handle})
		return nil
	}
	return check(op, r)
}

// peerAccess records which driver contexts have peer access to which:
// the driver does not say.
var peerAccess sync.Map // [2]driver.Context{from, to} -> true

func (c *Context) peerEnabled(peer *Context) bool {
	_, ok := peerAccess.Load([2]driver.Context{c.handle, peer.handle})
	return ok
}

// samePeerCheck checks the contexts of a peer access call: both open (a
// zero one's device reads as device 0, so this comes first), of two
// devices.
func samePeerCheck(op string, c, peer *Context) error {
	if c == nil || peer == nil {
		return errorf(op, ErrInvalidValue, "nil *Context")
	}
	if err := holdErr(op, "the context", c.life.Status()); err != nil {
		return err
	}
	if err := peer.checkOpen(op); err != nil {
		return err
	}
	if c.dev.ordinal == peer.dev.ordinal {
		return errorf(op, ErrInvalidValue, "both contexts are of device %d: a device needs no peer access to itself", c.dev.ordinal)
	}
	return nil
}

// checkOpen reports ErrClosed for a closed context, ErrInvalidValue for a
// zero one.
func (c *Context) checkOpen(op string) error {
	return holdErr(op, "the peer context", c.life.Status())
}

// PeerPath says how CopyPeer moved data.
type PeerPath int

const (
	// PeerDirect: device to device, over NVLink or PCIe peer-to-peer.
	PeerDirect PeerPath = iota
	// PeerStaged: through host memory, where the devices cannot reach each
	// other or peer access was not enabled.
	PeerStaged
)

func (p PeerPath) String() string {
	if p == PeerDirect {
		return "direct"
	}
	return "staged through the host"
}

// CopyPeer copies src, in one context, into dst, in another (of another
// device), and returns once the copy is done, and which way it went: direct
// where dst's context has peer access to src's, else staged through host
// memory by the driver. The two have the same length and may not overlap.
// It returns, with an error too, only once the copy is done or can no
// longer run: either buffer may be freed then.
func CopyPeer[T any](dst, src *DeviceBuffer[T]) (PeerPath, error) {
	return copyPeer("CopyPeer", dst, src, nil)
}

// CopyPeerAsync queues CopyPeer on s, a stream of dst's context. Free
// neither buffer before s is synchronized: freeing waits for the work of
// the buffer's own context only, and the copy runs in dst's.
func CopyPeerAsync[T any](dst, src *DeviceBuffer[T], s *Stream) (PeerPath, error) {
	if s == nil {
		return 0, errorf("CopyPeerAsync", ErrInvalidValue, "nil stream")
	}
	return copyPeer("CopyPeerAsync", dst, src, s)
}

func copyPeer[T any](op string, dst, src *DeviceBuffer[T], s *Stream) (PeerPath, error) {
	if err := dst.valid(op); err != nil {
		return 0, err
	}
	if err := src.valid(op); err != nil {
		return 0, err
	}
	if err := dst.lengthsMatch(op, "src", src.n); err != nil {
		return 0, err
	}
	dctx, sctx := dst.mem.ctx, src.mem.ctx
	if s != nil && s.ctx != dctx {
		return 0, errorf(op, ErrInvalidValue, "the stream belongs to another context than the destination")
	}
	held := []heldLife{{&dst.mem.life, "the destination buffer"}, {&src.mem.life, "the source buffer"}}
	if s != nil {
		held = append(held, heldLife{&s.life, "the stream"})
	}
	held, err := holdAll(op, held)
	if err != nil {
		return 0, err
	}
	defer releaseAll(held)
	// Compared by address: contexts of one device share its addresses,
	// and with unified addressing no two devices' memory overlaps.
	if err := checkOverlap(op, dst.ptr, src.ptr, uintptr(dst.ByteSize())); err != nil {
		return 0, err
	}
	if s != nil {
		if err := s.use(op, dst.mem, src.mem); err != nil {
			return 0, err
		}
	}
	// Work gocuda's synchronous calls left on the source context's legacy
	// stream (a memset filling src, say) is not ordered before a copy in
	// dst's context: wait for it first.
	if sctx != dctx && sctx.legacyPending() {
		if err := sctx.bind(op); err != nil {
			return 0, err
		}
		err := sctx.settleLegacy(op)
		sctx.unbind()
		if err != nil {
			return 0, err
		}
	}
	if s == nil && dst.n > 0 {
		// A synchronous copy sees the work queued on either buffer
		// (streamusers.go); src's streams are of its own context.
		if err := sctx.bind(op); err != nil {
			return 0, err
		}
		err := src.mem.settle(op)
		sctx.unbind()
		if err != nil {
			return 0, err
		}
	}
	if err := dctx.bind(op); err != nil {
		return 0, err
	}
	defer dctx.unbind()
	if s == nil && dst.n > 0 {
		if err := dst.mem.settle(op); err != nil {
			return 0, err
		}
	}
	path := PeerDirect // two contexts of one device: a copy on the device
	if dctx.dev.ordinal != sctx.dev.ordinal && !dctx.peerEnabled(sctx) {
		path = PeerStaged
	}
	if dst.n == 0 {
		return path, nil
	}
	n := uintptr(dst.ByteSize())
	if s == nil {
		// cuMemcpyPeer, like any device-to-device copy, may return before
		// the copy is done; freeing src would then not wait for it (only
		// for src's own context). Wait, as CopyPeer promises.
		if err := check(op, driver.MemcpyPeer(dctx.handle, dst.ptr, dctx.handle, src.ptr, sctx.handle, n)); err != nil {
			return path, err
		}
		dctx.legacyQueue()
		if err := dctx.settleLegacy(op); err != nil {
			// The copy may still be running, and src's Free would not
			// wait for it (it is dst's context's work): wait for that
			// whole context before returning the error. A context whose
			// waits fail for good (a fault) runs no more work.
			driver.CtxSynchronize(dctx.handle)
			return path, err
		}
		return path, nil
	}
	if err := s.willQueue(op); err != nil {
		return 0, err
	}
	return path, check(op, driver.MemcpyPeerAsync(dctx.handle, dst.ptr, dctx.handle, src.ptr, sctx.handle, n, s.handle))
}

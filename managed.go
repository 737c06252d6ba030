package cuda

import (
	"fmt"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/lifetime"
)

// Attach says which streams may use a managed buffer at first
// (cuMemAllocManaged's flags).
type Attach int

const (
	// AttachGlobal makes the memory usable by every stream and device.
	AttachGlobal Attach = 1
	// AttachHost makes it the host's: on a device without concurrent
	// managed access, kernels may use it only once attached to a stream
	// (not offered yet).
	AttachHost Attach = 2
)

// ManagedBuffer is managed (unified) memory: one allocation that the host
// reads and writes as an ordinary []T (Data) and the device as a device
// buffer (Buffer: copies, kernel launches, package compute and cuBLAS take
// it), its pages moving on demand between them.
// Prefetch moves them ahead of use; Advise tells the driver how they are
// used.
//
// The rule the driver leaves to the program: on a device without
// concurrent managed access (Device.Attribute(AttrConcurrentManagedAccess)
// is 0, as on Windows and older GPUs), the host must not touch Data while
// a kernel that could use the memory may run: synchronize first. gocuda
// cannot see the host's reads and writes, so it cannot check this; on such
// a device it refuses what it can see, a Prefetch to a device. On the
// H200, and on Linux with any GPU since Pascal, host and device may use
// the memory at once (races between them are the program's, as between
// goroutines).
//
// Device work on the memory (kernels, copies: even CopyFromDevice, which
// the driver may finish after it returns) is done for the host once the
// stream or context is synchronized: read Data after that.
//
// Free releases the memory; Data is nil afterwards, and after the
// context is closed.
type ManagedBuffer[T any] struct {
	buf  *DeviceBuffer[T] // owns the allocation
	data []T
}

// Buffer returns the memory as a device buffer, for copies and kernels
// (nil for a nil or zero ManagedBuffer). Freeing it frees the managed
// buffer.
func (b *ManagedBuffer[T]) Buffer() *DeviceBuffer[T] {
	if b == nil {
		return nil
	}
	return b.buf
}

// Len returns the number of elements.
func (b *ManagedBuffer[T]) Len() int { return b.Buffer().Len() }

// Free releases the memory. Freeing twice, or a nil or zero buffer, does
// nothing; if the driver refuses, the buffer stays usable and Free may be
// called again.
func (b *ManagedBuffer[T]) Free() error { return b.Buffer().Free() }

// AllocManaged allocates managed memory for n elements, zeroed, in ctx,
// attached as attach says. ErrNotSupported on a device without managed
// memory. n may be zero: the buffer holds no memory.
func AllocManaged[T any](ctx *Context, n int, attach Attach) (*ManagedBuffer[T], error) {
	const op = "AllocManaged"
	if attach != AttachGlobal && attach != AttachHost {
		return nil, errorf(op, ErrInvalidValue, "attach %d: want AttachGlobal or AttachHost", int(attach))
	}
	bytes, err := elemBytes[T](op, "managed buffer", n, 0)
	if err != nil || bytes == 0 {
		b, err := empty[T](op, ctx, err)
		if err != nil {
			return nil, err
		}
		return &ManagedBuffer[T]{buf: b, data: []T{}}, nil
	}
	if err := ctx.bind(op); err != nil {
		return nil, err
	}
	defer ctx.unbind()
	if ok, err := ctx.dev.Attribute(AttrManagedMemory); err != nil {
		return nil, err
	} else if ok == 0 {
		return nil, errorf(op, ErrNotSupported, "%v has no managed memory", ctx.dev)
	}
	m, err := allocateFreed(op, ctx, bytes, MemoryManaged, func(p *driver.DevicePtr) driver.Status {
		return driver.MemAllocManaged(ctx.handle, p, bytes, uint32(attach))
	})
	if err != nil {
		return nil, err
	}
	// Managed memory has one address for the host and the devices: the
	// device pointer's bits are the host's pointer (read through memory, as
	// the driver's out-parameter is, since a uintptr may not become one).
	data := unsafe.Slice((*T)(*(*unsafe.Pointer)(unsafe.Pointer(&m.base))), n)
	clear(data)
	return &ManagedBuffer[T]{buf: &DeviceBuffer[T]{mem: m, ptr: m.base, n: n, frees: true}, data: data}, nil
}

// Data returns the memory as a slice for the host, or nil after Free or
// once the context is closed. Mind the rule in the type's docs. The slice
// does not keep the buffer alive: a buffer the program no longer refers
// to may be collected and its memory freed, so keep the buffer (and Free
// it) past the slice's last use.
func (b *ManagedBuffer[T]) Data() []T {
	if b == nil || b.buf == nil || b.buf.mem == nil || b.buf.mem.status() != lifetime.Held || b.buf.mem.ctx.isClosed() {
		return nil
	}
	return b.data
}

// Location is where managed memory is moved to or advised for: a device,
// or the host. The zero Location is none.
type Location struct {
	kind int8 // 0 none, 1 a device, 2 the host (CUmemLocationType)
	dev  Device
}

// OnDevice is device d's memory.
func OnDevice(d Device) Location { return Location{kind: 1, dev: d} }

// OnHost is the host's memory.
func OnHost() Location { return Location{kind: 2} }

// IsHost reports whether l is the host.
func (l Location) IsHost() bool { return l.kind == 2 }

// Device returns l's device, and whether l is one.
func (l Location) Device() (Device, bool) {
	return l.dev, l.kind == 1
}

func (l Location) String() string {
	switch l.kind {
	case 1:
		return l.dev.String()
	case 2:
		return "host"
	}
	return "none"
}

// word is l as the driver takes a CUmemLocation by value.
func (l Location) word() uint64 {
	return uint64(uint32(l.kind)) | uint64(uint32(int32(l.dev.ordinal)))<<32
}

// Prefetch queues on s the move of the buffer's pages to l, ahead of their
// use there; work queued on s after it finds them moved. Moving to a
// device needs concurrent managed access on it, and on s's device
// (ErrNotSupported in words otherwise).
func (b *ManagedBuffer[T]) Prefetch(l Location, s *Stream) error {
	const op = "ManagedBuffer.Prefetch"
	m, bytes, err := b.managed(op)
	if err != nil {
		return err
	}
	if l.kind == 0 {
		return errorf(op, ErrInvalidValue, "no location: use OnDevice or OnHost")
	}
	if d, ok := l.Device(); ok {
		if err := d.valid(op); err != nil {
			return err
		}
	}
	if err := s.valid(op); err != nil {
		return err
	}
	if s.ctx != m.ctx {
		return errorf(op, ErrInvalidValue, "the stream belongs to another context than the buffer")
	}
	if err := m.holdLive(op, "the managed buffer"); err != nil { // an empty one binds nothing
		return err
	}
	defer m.release()
	if err := s.hold(op, "the stream"); err != nil {
		return err
	}
	defer s.release()
	if bytes == 0 {
		return nil // an empty buffer has no pages to move
	}
	if err := s.ctx.bind(op); err != nil {
		return err
	}
	defer s.ctx.unbind()
	if d, ok := l.Device(); ok {
		for _, dev := range []Device{d, s.ctx.dev} {
			if v, err := dev.Attribute(AttrConcurrentManagedAccess); err != nil {
				return err
			} else if v == 0 {
				return errorf(op, ErrNotSupported, "%v has no concurrent managed access: its kernels reach managed memory where it is", dev)
			}
		}
	}
	if err := s.willQueue(op); err != nil {
		return err
	}
	return check(op, driver.MemPrefetchAsync(s.ctx.handle, m.base, bytes, l.word(), 0, s.handle))
}

// Advice is a hint about how managed memory is used (CUmem_advise).
type Advice int

const (
	// AdviseReadMostly: the memory is mostly read; devices that read it
	// keep copies of its pages (a write drops them).
	AdviseReadMostly Advice = 1
	// AdviseUnsetReadMostly undoes AdviseReadMostly.
	AdviseUnsetReadMostly Advice = 2
	// AdvisePreferredLocation: the pages live at the location, and move
	// away only when they must.
	AdvisePreferredLocation Advice = 3
	// AdviseUnsetPreferredLocation undoes AdvisePreferredLocation.
	AdviseUnsetPreferredLocation Advice = 4
	// AdviseAccessedBy: the location's device maps the pages, reaching
	// them where they are without faults.
	AdviseAccessedBy Advice = 5
	// AdviseUnsetAccessedBy undoes AdviseAccessedBy.
	AdviseUnsetAccessedBy Advice = 6
)

func (a Advice) String() string {
	switch a {
	case AdviseReadMostly:
		return "read mostly"
	case AdviseUnsetReadMostly:
		return "unset read mostly"
	case AdvisePreferredLocation:
		return "preferred location"
	case AdviseUnsetPreferredLocation:
		return "unset preferred location"
	case AdviseAccessedBy:
		return "accessed by"
	case AdviseUnsetAccessedBy:
		return "unset accessed by"
	}
	return fmt.Sprintf("Advice(%d)", int(a))
}

// Advise gives the driver a hint about the whole buffer, for location l
// (read-mostly hints take any location; it is not used).
func (b *ManagedBuffer[T]) Advise(a Advice, l Location) error {
	const op = "ManagedBuffer.Advise"
	m, bytes, err := b.managed(op)
	if err != nil {
		return err
	}
	switch {
	case a < AdviseReadMostly || a > AdviseUnsetAccessedBy:
		return errorf(op, ErrInvalidValue, "unknown advice %d", int(a))
	case l.kind == 0 && a > AdviseUnsetReadMostly:
		return errorf(op, ErrInvalidValue, "advice %v needs a location: use OnDevice or OnHost", a)
	case l.kind == 0:
		l = OnHost()
	case l.kind == 1:
		if err := l.dev.valid(op); err != nil {
			return err
		}
	}
	if err := m.holdLive(op, "the managed buffer"); err != nil { // an empty one binds nothing
		return err
	}
	defer m.release()
	if bytes == 0 {
		return nil // no memory to advise about
	}
	if err := m.ctx.bind(op); err != nil {
		return err
	}
	defer m.ctx.unbind()
	return check(op, driver.MemAdvise(m.ctx.handle, m.base, bytes, int32(a), l.word()))
}

// ManagedAttributes are what the driver says of a managed buffer's range.
type ManagedAttributes struct {
	ReadMostly bool // advised AdviseReadMostly
	// PreferredLocation is the location advised AdvisePreferredLocation:
	// none if there is none.
	PreferredLocation Location
	// LastPrefetch is the last location the buffer was prefetched to:
	// none if it was not.
	LastPrefetch Location
}

// Attributes returns what the driver says of the buffer's memory
// (cuMemRangeGetAttribute).
func (b *ManagedBuffer[T]) Attributes() (ManagedAttributes, error) {
	const op = "ManagedBuffer.Attributes"
	m, bytes, err := b.managed(op)
	if err != nil {
		return ManagedAttributes{}, err
	}
	if err := m.holdLive(op, "the managed buffer"); err != nil { // an empty one binds nothing
		return ManagedAttributes{}, err
	}
	defer m.release()
	if bytes == 0 {
		return ManagedAttributes{}, nil // no memory, nothing advised
	}
	if err := m.ctx.bind(op); err != nil {
		return ManagedAttributes{}, err
	}
	defer m.ctx.unbind()
	var v [3]int32
	for i, attr := range []int32{1, 2, 4} { // READ_MOSTLY, PREFERRED_LOCATION, LAST_PREFETCH_LOCATION
		if err := check(op, driver.MemRangeGetAttribute(m.ctx.handle, unsafe.Pointer(&v[i]), 4, attr, m.base, bytes)); err != nil {
			return ManagedAttributes{}, err
		}
	}
	a := ManagedAttributes{ReadMostly: v[0] != 0}
	for i, l := range []*Location{&a.PreferredLocation, &a.LastPrefetch} {
		if *l, err = deviceLocation(v[i+1]); err != nil {
			return ManagedAttributes{}, err
		}
	}
	return a, nil
}

// deviceLocation reads the driver's location as a device id: -1
// (CU_DEVICE_CPU) the host, -2 (CU_DEVICE_INVALID) none.
func deviceLocation(id int32) (Location, error) {
	switch {
	case id >= 0:
		d, err := GetDevice(int(id))
		return OnDevice(d), err
	case id == -1:
		return OnHost(), nil
	}
	return Location{}, nil
}

// managed returns the buffer's allocation and its bytes, or the error for
// a nil or zero buffer.
func (b *ManagedBuffer[T]) managed(op string) (*allocation, uintptr, error) {
	if b == nil || b.buf == nil {
		return nil, 0, errorf(op, ErrInvalidValue, "nil or zero *ManagedBuffer: make one with AllocManaged")
	}
	if err := b.buf.valid(op); err != nil {
		return nil, 0, err
	}
	return b.buf.mem, uintptr(b.buf.n) * sizeOf[T](), nil
}

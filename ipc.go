package cuda

import (
	"encoding/hex"
	"runtime"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/lifetime"
	"github.com/gocuda/cuda/internal/track"
)

// IPCHandle names a device allocation for other processes on the same
// machine (cuIpcGetMemHandle): one process exports it with
// DeviceBuffer.IPCHandle, hands it over (it marshals to bytes and to text,
// in hex), and another opens it with OpenIPC, or with CuPy's or PyTorch's
// IPC, which use the same form. It stays valid while the exporting
// process keeps the buffer.
type IPCHandle [64]byte

// IPCEventHandle names an event for other processes (cuIpcGetEventHandle):
// Event.IPCHandle exports it, OpenIPCEvent opens it, so that one process's
// streams can wait for another's work.
type IPCEventHandle [64]byte

// MarshalText encodes the handle in hex.
func (h IPCHandle) MarshalText() ([]byte, error) { return hex.AppendEncode(nil, h[:]), nil }

// UnmarshalText decodes a handle MarshalText encoded.
func (h *IPCHandle) UnmarshalText(text []byte) error {
	return unmarshalHandle("IPCHandle.UnmarshalText", (*[64]byte)(h), text)
}

// MarshalText encodes the handle in hex.
func (h IPCEventHandle) MarshalText() ([]byte, error) { return hex.AppendEncode(nil, h[:]), nil }

// UnmarshalText decodes a handle MarshalText encoded.
func (h *IPCEventHandle) UnmarshalText(text []byte) error {
	return unmarshalHandle("IPCEventHandle.UnmarshalText", (*[64]byte)(h), text)
}

func unmarshalHandle(op string, h *[64]byte, text []byte) error {
	if h == nil { // a nil receiver is an error, not a panic, as with every method here
		return errorf(op, ErrInvalidValue, "nil handle to decode into")
	}
	var b [64]byte
	if len(text) != 2*len(b) {
		return errorf(op, ErrInvalidValue, "want %d hex digits, got %d", 2*len(b), len(text))
	}
	if _, err := hex.Decode(b[:], text); err != nil {
		return errorf(op, ErrInvalidValue, "not hex: %v", err)
	}
	*h = b
	return nil
}

// ipcSupported returns the error for a build that cannot make the IPC
// calls (which pass a structure by value).
func ipcSupported(op string) error {
	if !driver.ByValueSupported {
		return errorf(op, ErrNotSupported, "CUDA IPC with the purego backend on %s: build with cgo", runtime.GOARCH)
	}
	return nil
}

// IPCHandle exports b's memory for another process. b must be a whole
// buffer from Alloc, Zeroed or FromHost: not a slice or a view (export the
// buffer they are of, and hand the offset over), not stream-ordered memory
// (the driver exports only pools made for it), not memory gocuda does not
// own. The other process sees what b holds once the work that wrote it has
// finished: synchronize, or hand an event over (Event.IPCHandle).
func (b *DeviceBuffer[T]) IPCHandle() (IPCHandle, error) {
	const op = "DeviceBuffer.IPCHandle"
	var h IPCHandle
	if err := ipcSupported(op); err != nil {
		return h, err
	}
	if err := b.valid(op); err != nil {
		return h, err
	}
	m := b.mem
	switch {
	case m.size == 0:
		return h, errorf(op, ErrInvalidValue, "an empty buffer holds no memory to export")
	case !b.frees:
		return h, errorf(op, ErrInvalidValue, "a slice or view of a buffer: export the buffer it is of, and hand the offset over")
	case !m.allocated || m.ipc:
		return h, errorf(op, ErrInvalidValue, "memory gocuda did not allocate (FromRaw, a global, or another process's) cannot be exported")
	case m.stream != nil:
		return h, errorf(op, ErrInvalidValue, "stream-ordered memory (AllocAsync, AllocFromPool) cannot be exported with a memory handle: use Alloc")
	}
	if err := m.enter(op, "the device buffer"); err != nil {
		return h, err
	}
	defer m.leave()
	p := new([64]byte)
	if err := check(op, driver.IpcGetMemHandle(m.ctx.handle, unsafe.Pointer(p), m.base)); err != nil {
		return h, err
	}
	return IPCHandle(*p), nil
}

// OpenIPC opens, in ctx, the device memory another process exported as h,
// as a buffer of n elements of T, which must fit in the allocation. The
// buffer owns nothing: Free closes the mapping (cuIpcCloseMemHandle), after
// the context's work; the memory stays the other process's. Peer access is
// enabled as needed where the memory is on another device. A handle
// exported by this same process cannot be opened here (the driver refuses).
func OpenIPC[T any](ctx *Context, h IPCHandle, n int) (*DeviceBuffer[T], error) {
	const op = "OpenIPC"
	if err := ipcSupported(op); err != nil {
		return nil, err
	}
	bytes, err := elemBytes[T](op, "buffer", n, 1)
	if err != nil {
		return nil, err
	}
	if err := ctx.bind(op); err != nil {
		return nil, err
	}
	defer ctx.unbind()
	hp := new([64]byte)
	*hp = h
	var base driver.DevicePtr
	if err := check(op, driver.IpcOpenMemHandle(ctx.handle, &base, hp, driver.IpcMemLazyEnablePeerAccess)); err != nil {
		return nil, err
	}
	var start driver.DevicePtr
	var size uintptr
	err = check(op, driver.MemGetAddressRange(ctx.handle, &start, &size, base))
	if err == nil && uintptr(base-start)+bytes > size {
		err = errorf(op, ErrInvalidValue, "%s of %d elements do not fit in the %s the handle names", formatBytes(bytes), n, formatBytes(size-uintptr(base-start)))
	}
	if err != nil {
		lifetime.CloseTemp(&err, func() error { return check(op, driver.IpcCloseMemHandle(ctx.handle, base)) })
		return nil, err
	}
	m := &allocation{base: base, size: bytes, allocated: true, ipc: true}
	m.arm(ctx, track.DeviceBuffer, runtime.AddCleanup(m, func(ctx *Context) {
		forgotten(ctx, track.DeviceBuffer, func() { closeIPC("cleanup", ctx, base) })
	}, ctx))
	return &DeviceBuffer[T]{mem: m, ptr: base, n: n, frees: true}, nil
}

// closeIPC closes an opened mapping once the context's work, which may use
// it, is done. Called with ctx bound.
func closeIPC(op string, ctx *Context, base driver.DevicePtr) error {
	if err := check(op, driver.CtxSynchronize(ctx.handle)); err != nil {
		return err
	}
	return check(op, driver.IpcCloseMemHandle(ctx.handle, base))
}

// IPCHandle exports e for another process, which opens it with
// OpenIPCEvent and waits for it. e must have been made with
// EventInterprocess and EventDisableTiming.
func (e *Event) IPCHandle() (IPCEventHandle, error) {
	const op = "Event.IPCHandle"
	var h IPCEventHandle
	if err := ipcSupported(op); err != nil {
		return h, err
	}
	if err := e.enter(op); err != nil {
		return h, err
	}
	defer e.leave()
	if !e.interprocess {
		return h, errorf(op, ErrInvalidValue, "an event made without EventInterprocess (or opened from another process) cannot be exported")
	}
	p := new([64]byte)
	if err := check(op, driver.IpcGetEventHandle(e.ctx.handle, unsafe.Pointer(p), e.handle)); err != nil {
		return h, err
	}
	return IPCEventHandle(*p), nil
}

// OpenIPCEvent opens, in ctx, the event another process exported as h:
// Stream.WaitEvent and Synchronize on it wait for that process's work, up
// to its latest Record. Close it when done. An event exported by this same
// process cannot be opened here.
func OpenIPCEvent(ctx *Context, h IPCEventHandle) (*Event, error) {
	const op = "OpenIPCEvent"
	if err := ipcSupported(op); err != nil {
		return nil, err
	}
	if err := ctx.bind(op); err != nil {
		return nil, err
	}
	defer ctx.unbind()
	hp := new([64]byte)
	*hp = h
	e := &Event{}
	if err := check(op, driver.IpcOpenEventHandle(ctx.handle, &e.handle, hp)); err != nil {
		return nil, err
	}
	e.recorded.Store(true) // by the other process
	eh := e.handle
	e.arm(ctx, track.Event, runtime.AddCleanup(e, func(ctx *Context) {
		forgotten(ctx, track.Event, func() { driver.EventDestroy(ctx.handle, eh) })
	}, ctx))
	return e, nil
}

package cuda

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/gocuda/cuda/internal/capturegate"
	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/track"
)

// Library is code loaded once for the whole process, not for one context
// (cuLibraryLoadData, CUDA 12.0 and later): PTX, a cubin or a fatbin whose
// kernels run in any context of any device. Library.Module gives the
// library's Module in a context, whose Functions launch, describe
// themselves and are captured as a loaded Module's; PTX is compiled for a
// device the first time one of its contexts asks. Close unloads the library
// from every context.
//
// A Library is safe for concurrent use. The zero Library is not usable:
// get one from LoadLibrary.
type Library struct {
	mu      sync.Mutex
	handle  driver.Library
	params  map[string][]ptxParam // each kernel's parameters, from PTX text
	views   map[*Context]*Module  // the library's module in each context that asked
	closed  bool
	cleanup runtime.Cleanup // unloads a library dropped without Close
}

// LoadLibrary loads PTX text, a cubin or a fatbin for every context of
// the process. A driver older than CUDA 12.0 has no libraries:
// ErrNotSupported, and Context.LoadModule loads the same image into one
// context. When PTX fails to compile, the error carries the compiler's log.
// The driver may read the image only when a kernel or global of it is
// first asked for (its lazy loading, the default since CUDA 12.2): an
// image it cannot load is then that call's error, ErrInvalidValue.
func LoadLibrary(image []byte, opts ...JITOption) (*Library, error) {
	const op = "LoadLibrary"
	image, isBinary, err := checkImage(op, image, opts)
	if err != nil {
		return nil, err
	}
	if err := openDriver(op); err != nil {
		return nil, err
	}
	keys, values, logs := jitOptions(opts)
	l := &Library{views: map[*Context]*Module{}}
	if !isBinary {
		l.params = parsePTXParams(image)
	}
	r := driver.LibraryLoadData(&l.handle, unsafe.Pointer(&image[0]), unsafe.Pointer(&keys[0]), unsafe.Pointer(&values[0]), uint32(len(keys)), nil, nil, 0)
	runtime.KeepAlive(logs)
	if err := check(op, r); err != nil {
		err := loadError(err.(*Error), r, logs)
		if r.Code == driver.ResultMissingSymbol {
			err.Detail = join(err.Detail, "libraries need a CUDA 12.0 driver or later: Context.LoadModule loads the image into one context")
		}
		return nil, err
	}
	track.Add(track.Library)
	l.cleanup = runtime.AddCleanup(l, func(h driver.Library) {
		track.Forgotten(track.Library)
		capturegate.Cleanup(func() { driver.LibraryUnload(h) })
	}, l.handle)
	return l, nil
}

// Module returns the library's module in ctx: the same Module each time,
// until it or the library is closed. Its Functions are the library's
// kernels in ctx; closing it releases nothing of the library, whose Close
// closes it.
func (l *Library) Module(ctx *Context) (*Module, error) {
	const op = "Library.Module"
	if err := l.valid(op); err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, errorf(op, ErrInvalidValue, "nil *Context")
	}
	if err := ctx.hold(op); err != nil {
		return nil, err
	}
	defer ctx.life.Release()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, closed(op, "the library")
	}
	if m := l.views[ctx]; m != nil && !m.life.lt.IsClosed() {
		return m, nil
	}
	// Forget the modules of closed contexts, and closed modules: a
	// library used in context after context keeps none of them.
	for c, m := range l.views {
		if c.isClosed() || m.life.lt.IsClosed() {
			delete(l.views, c)
		}
	}
	m := &Module{lib: l, params: l.params}
	m.life.ctx = ctx
	m.life.lt.ArmUntracked() // the library holds the resource
	l.views[ctx] = m
	return m, nil
}

// Close closes the library's module in every context (waiting for calls
// in flight, as Module.Close does), then unloads the library. Work queued
// on streams that uses its kernels must be synchronized first. If a
// module cannot close (a graph still uses it) or the driver refuses to
// unload, the library stays usable and Close may be called again. Closing
// twice, or a nil Library, is a no-op.
func (l *Library) Close() error {
	if l == nil {
		return nil
	}
	const op = "Library.Close"
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if l.views == nil {
		return errorf(op, ErrInvalidValue, "a zero Library: get one with LoadLibrary")
	}
	for ctx, m := range l.views {
		if err := m.Close(); err != nil {
			return err
		}
		delete(l.views, ctx)
	}
	if err := check(op, driver.LibraryUnload(l.handle)); err != nil {
		return stillOpen(err, "the library")
	}
	l.cleanup.Stop()
	track.Done(track.Library)
	l.closed = true
	return nil
}

func (l *Library) valid(op string) error {
	switch {
	case l == nil:
		return errorf(op, ErrInvalidValue, "nil *Library")
	case l.views == nil && !l.closed:
		return errorf(op, ErrInvalidValue, "a zero Library: get one with LoadLibrary")
	}
	return nil
}

// libraryImageErr makes the failure of a library's first use that the
// driver's lazy load of its image caused ErrInvalidValue, saying so.
func libraryImageErr(err *Error, r driver.Status) {
	if r.Code == driver.ErrorInvalidImage || r.Code == driver.ErrorInvalidPTX {
		err.Err = ErrInvalidValue
		err.Detail = join(err.Detail, "the library's image cannot be loaded (the driver reads it at first use)")
	}
}

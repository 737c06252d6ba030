package cuda

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/track"
)

// Module is code loaded onto a device: PTX (which the driver compiles for
// the device), a cubin or a fatbin. Its kernels are Functions; its global
// variables are device memory (Global). Close unloads it.
type Module struct {
	life
	handle driver.Module
	graphs graphUses             // graphs whose kernels are the module's
	params map[string][]ptxParam // each kernel's parameters, from PTX text
	lib    *Library              // the library this is the module of in its context; nil: loaded by LoadModule

	// globals are the allocation records of the DeviceBuffers Global
	// handed out: they die with the module. globalsMu guards the list
	// (Global is called concurrently, each holding the module).
	globalsMu sync.Mutex
	globals   []*allocation
}

// JITOption tunes the driver's compilation of PTX when a module is loaded.
type JITOption struct {
	key   driver.JITOption
	value uintptr
}

const (
	jitLogBytes            = 16 << 10 // each of the error and information logs
	elfMagic, fatbinMagic0 = "\x7fELF", 0xBA55ED50
)

// JITMaxRegisters caps the registers each thread may use.
func JITMaxRegisters(n int) JITOption { return JITOption{driver.JITMaxRegisters, uintptr(n)} }

// JITOptimizationLevel sets the optimization level, 0 to 4 (the default).
func JITOptimizationLevel(n int) JITOption { return JITOption{driver.JITOptimizationLevel, uintptr(n)} }

// JITLineInfo generates line-number information.
func JITLineInfo() JITOption { return JITOption{driver.JITGenerateLineInfo, 1} }

// JITDebugInfo generates debug information.
func JITDebugInfo() JITOption { return JITOption{driver.JITGenerateDebugInfo, 1} }

// LoadModule loads PTX text, a cubin or a fatbin into the context. PTX is
// compiled for the device by the driver; when that fails, the error carries
// the compiler's log. Each call loads anew: the same image loaded twice gives
// two modules.
func (c *Context) LoadModule(image []byte, opts ...JITOption) (*Module, error) {
	const op = "Context.LoadModule"
	image, isBinary, err := checkImage(op, image, opts)
	if err != nil {
		return nil, err
	}
	keys, values, logs := jitOptions(opts)
	if err := c.bind(op); err != nil {
		return nil, err
	}
	defer c.unbind()
	m := &Module{}
	if !isBinary {
		m.params = parsePTXParams(image)
	}
	r := driver.ModuleLoadDataEx(c.handle, &m.handle, unsafe.Pointer(&image[0]), uint32(len(keys)), unsafe.Pointer(&keys[0]), unsafe.Pointer(&values[0]))
	runtime.KeepAlive(logs)
	if err := check(op, r); err != nil {
		return nil, loadError(err.(*Error), r, logs)
	}
	h := m.handle
	m.arm(c, track.Module, runtime.AddCleanup(m, func(ctx *Context) {
		forgotten(ctx, track.Module, func() { driver.ModuleUnload(ctx.handle, h) })
	}, c))
	return m, nil
}

func (m *Module) enter(op string) error {
	if m == nil {
		return errorf(op, ErrInvalidValue, "nil *Module")
	}
	return m.life.enter(op, "the module")
}

// Function returns the kernel named name (its mangled name, for C++; NVRTC
// can say what a name expression lowers to).
func (m *Module) Function(name string) (*Function, error) {
	const op = "Module.Function"
	if err := m.enter(op); err != nil {
		return nil, err
	}
	defer m.leave()
	f := &Function{mod: m, name: name}
	cname := append([]byte(name), 0)
	var r driver.Status
	if m.lib != nil {
		// The library's kernel, then its function in this context.
		var k driver.Kernel
		if r = driver.LibraryGetKernel(&k, m.lib.handle, &cname[0]); r.OK() {
			r = driver.KernelGetFunction(m.ctx.handle, &f.handle, k)
		}
	} else {
		r = driver.ModuleGetFunction(m.ctx.handle, &f.handle, m.handle, &cname[0])
	}
	if err := check(op, r); err != nil {
		err.(*Error).Detail = "kernel " + name
		if m.lib != nil {
			libraryImageErr(err.(*Error), r)
		}
		return nil, err
	}
	return f, nil
}

// Global returns the module's global variable named name as device memory
// of T, which must divide its size. It owns nothing and is closed with the
// module.
func Global[T any](m *Module, name string) (*DeviceBuffer[T], error) {
	const op = "Global"
	if err := checkElem[T](op, false); err != nil {
		return nil, err
	}
	if err := m.enter(op); err != nil {
		return nil, err
	}
	defer m.leave()
	var ptr driver.DevicePtr
	var size uintptr
	cname := append([]byte(name), 0)
	var r driver.Status
	if m.lib != nil {
		r = driver.LibraryGetGlobal(m.ctx.handle, &ptr, &size, m.lib.handle, &cname[0])
	} else {
		r = driver.ModuleGetGlobal(m.ctx.handle, &ptr, &size, m.handle, &cname[0])
	}
	if err := check(op, r); err != nil {
		err.(*Error).Detail = "global " + name
		if m.lib != nil {
			libraryImageErr(err.(*Error), r)
		}
		return nil, err
	}
	elem := sizeOf[T]()
	if elem == 0 || size%elem != 0 {
		return nil, errorf(op, ErrInvalidValue, "global %s has %d bytes, not a whole number of %T", name, size, *new(T))
	}
	mem := foreign(m.ctx, ptr, size)
	m.globalsMu.Lock()
	m.globals = append(m.globals, mem)
	m.globalsMu.Unlock()
	return &DeviceBuffer[T]{mem: mem, ptr: ptr, n: int(size / elem)}, nil
}

// Close unloads the module; its Functions and globals become unusable. A
// Library's module unloads nothing: Library.Close unloads the library.
// Closing twice, or a nil Module, is a no-op. The globals are closed first
// (waiting for calls in flight, and for the synchronous copies into them to
// land); work queued on streams that uses the module must be synchronized
// first. If the driver then refuses to unload, the module stays usable, its
// globals closed, and Close may be called again.
func (m *Module) Close() error {
	if m == nil {
		return nil
	}
	const op = "Module.Close"
	return m.close(op, "the module", func() error {
		if err := m.graphs.inUse(op, "the module"); err != nil {
			return err
		}
		m.globalsMu.Lock()
		globals := m.globals
		m.globals = nil
		m.globalsMu.Unlock()
		for _, g := range globals {
			g.free(op)
		}
		// A synchronous copy into a global may still be landing.
		if err := m.ctx.settleLegacy(op); err != nil {
			return err
		}
		if m.lib != nil {
			return nil // the library's, unloaded by Library.Close
		}
		return check(op, driver.ModuleUnload(m.ctx.handle, m.handle))
	}, nil)
}

// checkImage checks an image and its JIT options, and returns PTX text
// with the NUL the driver reads it up to.
func checkImage(op string, image []byte, opts []JITOption) (_ []byte, isBinary bool, _ error) {
	if len(image) == 0 {
		return nil, false, errorf(op, ErrInvalidValue, "empty image")
	}
	for _, o := range opts {
		if (o.key == driver.JITOptimizationLevel && o.value > 4) || (o.key == driver.JITMaxRegisters && (o.value == 0 || o.value > 255)) {
			return nil, false, errorf(op, ErrInvalidValue, "JIT option %d = %d out of range", o.key, int(o.value))
		}
	}
	isBinary = bytes.HasPrefix(image, []byte(elfMagic)) ||
		(len(image) >= 4 && *(*uint32)(unsafe.Pointer(&image[0])) == fatbinMagic0)
	if !isBinary && image[len(image)-1] != 0 {
		image = append(image[:len(image):len(image)], 0) // PTX text is read up to its NUL
	}
	return image, isBinary, nil
}

// jitLogs are the compiler's error and information logs, which the driver
// writes while it loads an image.
type jitLogs struct{ errLog, infoLog []byte }

// jitOptions returns the JIT option keys and values for the driver: the
// logs', then opts. The values are addresses or numbers, as the driver
// takes them; the logs are heap memory, which does not move, kept alive
// by the caller until the load returns.
func jitOptions(opts []JITOption) ([]driver.JITOption, []uintptr, *jitLogs) {
	logs := &jitLogs{make([]byte, jitLogBytes), make([]byte, jitLogBytes)}
	keys := []driver.JITOption{driver.JITErrorLogBuffer, driver.JITErrorLogBufferSize, driver.JITInfoLogBuffer, driver.JITInfoLogBufferSize}
	values := []uintptr{uintptr(unsafe.Pointer(&logs.errLog[0])), jitLogBytes, uintptr(unsafe.Pointer(&logs.infoLog[0])), jitLogBytes}
	for _, o := range opts {
		keys, values = append(keys, o.key), append(values, o.value)
	}
	return keys, values, logs
}

// loadError adds the compiler's log to a failed load's error, and makes
// an image the driver refuses ErrInvalidValue.
func loadError(err *Error, r driver.Status, logs *jitLogs) *Error {
	if log := strings.TrimSpace(driver.GoString(&logs.errLog[0])); log != "" {
		err.Detail = "JIT log:\n" + log
	}
	if r.Code == driver.ErrorInvalidImage || r.Code == driver.ErrorInvalidPTX {
		err.Err = ErrInvalidValue
	}
	return err
}

package cuda

import (
	"bytes"
	"encoding/binary"
	"fmt"
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
	fatbinWrapperMagic     = 0x466243B1 // __fatBinC_Wrapper_t, which points to a fatbin
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
// the compiler's log. The driver reads a cubin or fatbin as far as its
// headers say, given no length: one shorter than they say is refused
// first, ErrInvalidValue. Each call loads anew: the same image loaded
// twice gives two modules.
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
// can say what a name expression lowers to). A name the module lacks, or
// one with a NUL byte, is ErrInvalidValue.
func (m *Module) Function(name string) (*Function, error) {
	const op = "Module.Function"
	if err := m.enter(op); err != nil {
		return nil, err
	}
	defer m.leave()
	if err := checkSymbol(op, "kernel", name); err != nil {
		return nil, err
	}
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
		symbolErr(err.(*Error), r, "kernel", name)
		if m.lib != nil {
			libraryImageErr(err.(*Error), r)
		}
		return nil, err
	}
	return f, nil
}

// Global returns the module's global variable named name as device memory
// of T, which must divide its size. It owns nothing and is closed with the
// module. A name the module lacks, or one with a NUL byte, is
// ErrInvalidValue.
func Global[T any](m *Module, name string) (*DeviceBuffer[T], error) {
	const op = "Global"
	if err := checkElem[T](op, false); err != nil {
		return nil, err
	}
	if err := m.enter(op); err != nil {
		return nil, err
	}
	defer m.leave()
	if err := checkSymbol(op, "global", name); err != nil {
		return nil, err
	}
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
		symbolErr(err.(*Error), r, "global", name)
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

// checkSymbol refuses a kernel's or global's name that C would read only
// up to a NUL in it, naming another symbol.
func checkSymbol(op, what, name string) error {
	if name == "" {
		// The driver answers an empty name with CUDA_ERROR_INVALID_VALUE,
		// not NOT_FOUND (an H100, driver 580): said here, in words.
		return errorf(op, ErrInvalidValue, "no %s named \"\": the name is empty", what)
	}
	if i := strings.IndexByte(name, 0); i >= 0 {
		return errorf(op, ErrInvalidValue, "%s name %q has a NUL byte at %d", what, name, i)
	}
	return nil
}

// symbolErr says what a failed lookup of a kernel or global looked for,
// and makes a name the module lacks ErrInvalidValue.
func symbolErr(err *Error, r driver.Status, what, name string) {
	err.Detail = what + " " + name
	if r.Code == driver.ErrorNotFound {
		err.Err = ErrInvalidValue
		err.Detail = fmt.Sprintf("no %s named %q in the module", what, name)
	}
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
	var magic uint32
	if len(image) >= 4 {
		magic = binary.LittleEndian.Uint32(image)
	}
	var why string
	switch {
	case bytes.HasPrefix(image, []byte(elfMagic)):
		isBinary, why = true, checkELF(image)
	case magic == fatbinMagic0:
		isBinary, why = true, checkFatbin(image)
	case magic == fatbinWrapperMagic:
		why = "a fatbin wrapper (__fatBinC_Wrapper_t), which holds the address of its fatbin: pass the fatbin itself"
	}
	if why != "" {
		return nil, false, errorf(op, ErrInvalidValue, "%s", why)
	}
	if !isBinary && image[len(image)-1] != 0 {
		image = append(image[:len(image):len(image)], 0) // PTX text is read up to its NUL
	}
	return image, isBinary, nil
}

// The driver takes a cubin or fatbin with no length: it reads as far as
// the image's headers say. checkELF and checkFatbin return why an image
// is not as long as its headers say ("" when it is), so that the driver
// never reads past it.

// within reports whether size bytes from off lie in n bytes.
func within(off, size, n uint64) bool { return off <= n && size <= n-off }

// checkELF checks a cubin's ELF header, its program and section header
// tables, and each segment and section with bytes in the file.
func checkELF(image []byte) string {
	n := uint64(len(image))
	le := binary.LittleEndian
	if n < 16 {
		return fmt.Sprintf("a cubin (ELF) of %d bytes: truncated within its ELF header", n)
	}
	if image[5] != 1 {
		return "an ELF image that is not little-endian: not a cubin"
	}
	// Where ELF32 and ELF64 keep the fields read: the header's size, the
	// tables' offsets, counts and entries' sizes; an entry's offset and
	// size in the file (section type at 4 in both).
	type layout struct {
		header, phoff, shoff, counts uint64 // counts: phentsize, phnum, shentsize, shnum, 2 bytes each
		word                         uint64 // 4 or 8: an offset's or size's bytes
		phOff, phSize, shOff, shSize uint64
	}
	var l layout
	switch image[4] {
	case 1:
		l = layout{52, 0x1C, 0x20, 0x2A, 4, 0x04, 0x10, 0x10, 0x14}
	case 2:
		l = layout{64, 0x20, 0x28, 0x36, 8, 0x08, 0x20, 0x18, 0x20}
	default:
		return fmt.Sprintf("an ELF image of class %d, neither 32- nor 64-bit: not a cubin", image[4])
	}
	if n < l.header {
		return fmt.Sprintf("a cubin (ELF) of %d bytes: truncated within its %d-byte ELF header", n, l.header)
	}
	word := func(at uint64) uint64 {
		if l.word == 4 {
			return uint64(le.Uint32(image[at:]))
		}
		return le.Uint64(image[at:])
	}
	half := func(at uint64) uint64 { return uint64(le.Uint16(image[at:])) }
	tables := []struct {
		what             string
		off, size, count uint64
		entOff, entSize  uint64
	}{
		{"program header", word(l.phoff), half(l.counts), half(l.counts + 2), l.phOff, l.phSize},
		{"section header", word(l.shoff), half(l.counts + 4), half(l.counts + 6), l.shOff, l.shSize},
	}
	for _, t := range tables {
		if t.count == 0 {
			continue
		}
		if t.size < t.entSize+l.word || !within(t.off, t.size*t.count, n) {
			return fmt.Sprintf("a cubin (ELF) of %d bytes whose %d %s entries of %d bytes at %d do not fit: truncated or malformed", n, t.count, t.what, t.size, t.off)
		}
		for i := range t.count {
			e := t.off + i*t.size
			if t.what == "section header" && le.Uint32(image[e+4:]) == 8 {
				continue // SHT_NOBITS: no bytes in the file
			}
			if off, size := word(e+t.entOff), word(e+t.entSize); !within(off, size, n) {
				return fmt.Sprintf("a cubin (ELF) of %d bytes whose %s %d says %d bytes at %d: truncated", n, t.what, i, size, off)
			}
		}
	}
	return ""
}

// checkFatbin checks a fatbin's header: its own size and the size of what
// follows it.
func checkFatbin(image []byte) string {
	n := uint64(len(image))
	if n < 16 {
		return fmt.Sprintf("a fatbin of %d bytes: truncated within its 16-byte fatbin header", n)
	}
	header, size := uint64(binary.LittleEndian.Uint16(image[6:])), binary.LittleEndian.Uint64(image[8:])
	if header < 16 {
		return fmt.Sprintf("a fatbin whose header says it is %d bytes, less than its 16", header)
	}
	if !within(header, size, n) {
		return fmt.Sprintf("a fatbin of %d bytes whose header says %d bytes follow its %d: truncated", n, size, header)
	}
	return ""
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

package compute

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"weak"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nvrtc"
)

// EnvCache names the environment variable that moves the kernel cache's
// folder, or, set to "off", turns the disk cache off. Unset, the cache is
// the folder gocuda/kernels under os.UserCacheDir().
const EnvCache = "GOCUDA_KERNEL_CACHE"

// cacheFormat is part of every key: a change of how kernels are generated
// or stored changes it, and old entries are simply not found.
const cacheFormat = "gocuda compute kernel cache 1"

// compileFlags are the NVRTC options of every generated kernel.
var compileFlags = []string{"-std=c++17"}

// compiles counts NVRTC compilations, for the tests.
var compiles atomic.Int64

// compiler is NVRTC: its version (part of every key) and its compilation
// of a source to the image loaded. The tests put a stand-in in its place
// on the fake driver, which has no NVRTC (export_test.go).
var compiler = struct {
	version func() (cuda.Version, error)
	compile func(ctx *cuda.Context, source string, opts nvrtc.Options) ([]byte, error)
}{nvrtc.Version, func(ctx *cuda.Context, source string, opts nvrtc.Options) ([]byte, error) {
	out, err := nvrtc.Compile(ctx, source, opts)
	if err != nil {
		return nil, err
	}
	return out.Image, nil
}}

// modules are the modules loaded in each context, by key: a kernel is
// compiled and loaded once per context (and compiled once per machine,
// with the disk cache).
var modules sync.Map // weak.Pointer[cuda.Context] -> *contextModules

type contextModules struct {
	mu    sync.Mutex
	mods  map[string]*moduleEntry
	funcs sync.Map // funcKey -> *cuda.Function: a launch's one lookup
}

// variant is one generated kernel source; its address identifies it in
// the function cache, which so skips hashing the source on every launch.
type variant struct {
	src   string
	width int // the elements a thread of an Elementwise's kernel takes at once
}

type funcKey struct {
	v    *variant
	name string
}

// variants are the sources of the kernels that are not an Elementwise's or
// a Reduction's (Softmax, Transpose), by name.
var variants sync.Map // string -> *variant

// namedVariant returns the variant of that name, made by gen the first
// time.
func namedVariant(name string, gen func() string) *variant {
	if v, ok := variants.Load(name); ok {
		return v.(*variant)
	}
	v, _ := variants.LoadOrStore(name, &variant{src: gen()})
	return v.(*variant)
}

// Release closes the modules of the kernels compiled and loaded in ctx:
// call it before closing a context that used this package, or to give
// their memory back. The kernels stay on disk; a later call in ctx loads
// them again.
func Release(ctx *cuda.Context) error {
	if ctx == nil {
		return errorf("Release", cuda.ErrInvalidValue, "nil *cuda.Context")
	}
	v, ok := modules.LoadAndDelete(weak.Make(ctx))
	if !ok {
		return nil
	}
	cm := v.(*contextModules)
	cm.mu.Lock()
	defer cm.mu.Unlock()
	var errs []error
	for _, e := range cm.mods {
		<-e.ready
		if e.mod != nil {
			errs = append(errs, e.mod.Close())
		}
	}
	return wrap("Release", errors.Join(errs...), "closing the kernels' modules")
}

// function returns kernel name of v, compiled and loaded in ctx.
func function(op string, ctx *cuda.Context, v *variant, name string) (*cuda.Function, error) {
	k := funcKey{v, name}
	if cm, ok := modules.Load(weak.Make(ctx)); ok {
		if f, ok := cm.(*contextModules).funcs.Load(k); ok {
			return f.(*cuda.Function), nil
		}
	}
	mod, cm, err := module(op, ctx, name, v.src)
	if err != nil {
		return nil, err
	}
	f, err := mod.Function(name)
	if err != nil {
		return nil, wrap(op, err, "loading kernel %s", name)
	}
	cm.funcs.Store(k, f)
	return f, nil
}

// moduleEntry is one module, loaded once: callers after the first wait for
// ready.
type moduleEntry struct {
	ready chan struct{}
	mod   *cuda.Module
	err   error
}

// kernelKey returns the cache key of source compiled for ctx's device: a
// hash of the format, the source, the flags, the target and NVRTC's
// version.
func kernelKey(ctx *cuda.Context, source string) (key, arch string, err error) {
	v, err := compiler.version()
	if err != nil {
		return "", "", err
	}
	cc, err := ctx.Device().ComputeCapability()
	if err != nil {
		return "", "", err
	}
	arch = fmt.Sprintf("sm_%d%d", cc.Major, cc.Minor)
	h := sha256.New()
	for _, part := range append([]string{cacheFormat, source, arch, "nvrtc " + v.String()}, compileFlags...) {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil)), arch, nil
}

// module returns source's module in ctx: loaded before, or read from the
// disk cache, or compiled (and written to the disk cache).
func module(op string, ctx *cuda.Context, name, source string) (*cuda.Module, *contextModules, error) {
	key, arch, err := kernelKey(ctx, source)
	if err != nil {
		return nil, nil, wrap(op, err, "compiling kernel %s", name)
	}
	v, _ := modules.LoadOrStore(weak.Make(ctx), &contextModules{mods: map[string]*moduleEntry{}})
	cm := v.(*contextModules)
	cm.mu.Lock()
	e, ok := cm.mods[key]
	if !ok {
		e = &moduleEntry{ready: make(chan struct{})}
		cm.mods[key] = e
	}
	cm.mu.Unlock()
	if ok {
		<-e.ready
		if e.err == nil {
			return e.mod, cm, nil
		}
		return nil, nil, e.err
	}
	e.mod, e.err = loadModule(op, ctx, name, source, key, arch)
	if e.err != nil {
		// Not kept: the next call tries again.
		cm.mu.Lock()
		delete(cm.mods, key)
		cm.mu.Unlock()
	}
	close(e.ready)
	if e.err != nil {
		return nil, nil, e.err
	}
	return e.mod, cm, nil
}

// loadModule loads the cached image of key, or compiles source.
func loadModule(op string, ctx *cuda.Context, name, source, key, arch string) (*cuda.Module, error) {
	dir := cacheDir()
	if image, ok := readEntry(dir, key); ok {
		mod, err := ctx.LoadModule(image)
		if err == nil {
			return mod, nil
		}
		if !refusedImage(err) { // out of memory, a broken context: compiling would not help
			return nil, wrap(op, err, "loading kernel %s", name)
		}
		// An image the driver refuses is as good as damaged: compile.
	}
	compiles.Add(1)
	image, err := compiler.compile(ctx, source, nvrtc.Options{Name: name + ".cu", Arch: arch, Flags: compileFlags})
	if err != nil {
		return nil, wrap(op, err, "compiling kernel %s", name)
	}
	mod, err := ctx.LoadModule(image)
	if err != nil {
		return nil, wrap(op, err, "loading kernel %s", name)
	}
	writeEntry(dir, key, image) // a cache that cannot be written only costs time
	return mod, nil
}

// refusedImage reports whether err is the driver refusing an image as
// such: invalid, not PTX it can read, or for another architecture.
func refusedImage(err error) bool {
	for _, r := range []cuda.Result{200, 209, 218, 222} { // INVALID_IMAGE, NO_BINARY_FOR_GPU, INVALID_PTX, UNSUPPORTED_PTX_VERSION
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

// cacheDir returns the disk cache's folder, or "" when it is off.
func cacheDir() string {
	switch v := os.Getenv(EnvCache); v {
	case "off":
		return ""
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(base, "gocuda", "kernels")
	default:
		return v
	}
}

// An entry on disk is entryMagic, the key (so that a file under another
// name is not taken), the SHA-256 of the image, then the image: a damaged,
// truncated or foreign file fails the check and is compiled anew.
const entryMagic = "gocuda-kernel\x00\x01\n"

func entryPath(dir, key string) string { return filepath.Join(dir, key+".bin") }

// readEntry returns the image cached under key, if a whole, matching entry
// is there.
func readEntry(dir, key string) ([]byte, bool) {
	if dir == "" {
		return nil, false
	}
	data, err := os.ReadFile(entryPath(dir, key))
	if err != nil {
		return nil, false
	}
	rest, ok := bytes.CutPrefix(data, []byte(entryMagic))
	if !ok || len(rest) < len(key)+sha256.Size {
		return nil, false
	}
	if string(rest[:len(key)]) != key {
		return nil, false
	}
	rest = rest[len(key):]
	sum, image := rest[:sha256.Size], rest[sha256.Size:]
	if got := sha256.Sum256(image); !bytes.Equal(got[:], sum) || len(image) == 0 {
		return nil, false
	}
	return image, true
}

// writeEntry writes image under key: to a temporary file in the folder,
// then renamed over the entry, so that a reader (another process too) sees
// the old entry, none, or the whole new one, never a part.
func writeEntry(dir, key string, image []byte) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, key+".*.tmp")
	if err != nil {
		return err
	}
	sum := sha256.Sum256(image)
	data := append(append(append([]byte(entryMagic), key...), sum[:]...), image...)
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), entryPath(dir, key)); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

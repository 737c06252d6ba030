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
	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/kernelhook"
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

// compiler is NVRTC: its version (part of every key), its compilation of
// a source to the image loaded, and the disk cache's folder for its
// images; or, where the tests set internal/kernelhook's compiler (the
// fake driver's, for the host), that one, its images kept out of the disk
// cache unless GOCUDA_KERNEL_CACHE names a folder. The tests put other
// stand-ins in its place too (export_test.go).
var compiler = struct {
	version func() (cuda.Version, error)
	compile func(ctx *cuda.Context, source string, opts nvrtc.Options) ([]byte, error)
	dir     func() string
}{
	func() (cuda.Version, error) {
		if kernelhook.Compile != nil {
			return hookVersion, nil
		}
		return nvrtc.Version()
	},
	func(ctx *cuda.Context, source string, opts nvrtc.Options) ([]byte, error) {
		if c := kernelhook.Compile; c != nil {
			return c(source, opts.Name)
		}
		out, err := nvrtc.Compile(ctx, source, opts)
		if err != nil {
			return nil, err
		}
		return out.Image, nil
	},
	func() string {
		if kernelhook.Compile != nil && os.Getenv(EnvCache) == "" {
			return ""
		}
		return cacheDir()
	},
}

// hookVersion is internal/kernelhook's compiler's "NVRTC version": part
// of every cache key, so that its images are never taken for NVRTC's.
var hookVersion = cuda.Version{Major: 0, Minor: 0, Patch: 2}

// modules are the modules loaded in each context, by key: a kernel is
// compiled and loaded once per context (and compiled once per machine,
// with the disk cache). The first entry of a context registers its
// release with the context's Close (attach.OnClose).
var modules sync.Map // weak.Pointer[cuda.Context] -> *contextModules

type contextModules struct {
	mu       sync.Mutex
	mods     map[string]*moduleEntry
	unclosed []*cuda.Module // modules a release failed to close: the next one tries again
	released bool           // taken out of modules by a release: entries go to the next one
	gone     atomic.Bool    // released, read without mu: a variant's last function (lastFunc) is stale
	funcs    sync.Map       // funcKey -> *cuda.Function: a launch's one lookup
}

// releaseKey is compute's key among a context's releases (attach.OnClose).
type releaseKey struct{}

// variant is one generated kernel source; its address identifies it in
// the function cache, which so skips hashing the source on every launch.
type variant struct {
	src   string
	width int // the elements a thread of an Elementwise's kernel takes at once
	// last is the function of the variant's first name, in the context
	// of the launch that loaded it last: a launch in that context finds
	// it without the lookups of modules and funcs.
	last atomic.Pointer[lastFunc]
}

// lastFunc is a variant's function in a context, while that context's
// modules are not released.
type lastFunc struct {
	ctx  weak.Pointer[cuda.Context]
	cm   *contextModules
	name string
	f    *cuda.Function
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

// Release closes the modules of the kernels compiled and loaded in ctx, to
// give their memory back before ctx is closed: Context.Close releases them
// itself. The kernels stay on disk; a later call in ctx loads them again.
// A module that fails to close stays loaded, and the next Release (or
// Context.Close) tries it again.
func Release(ctx *cuda.Context) error {
	if ctx == nil {
		return errorf("Release", cuda.ErrInvalidValue, "ctx is a nil *cuda.Context")
	}
	return release("Release", ctx)
}

// release is Release, named op in errors: "Context.Close" where the
// context's Close runs it.
func release(op string, ctx *cuda.Context) error {
	v, ok := modules.LoadAndDelete(weak.Make(ctx))
	if !ok {
		return nil
	}
	cm := v.(*contextModules)
	cm.mu.Lock()
	cm.released = true // a call under way puts what it loads into the next entry
	cm.gone.Store(true)
	mods, unclosed := cm.mods, cm.unclosed
	cm.mu.Unlock()
	for _, e := range mods {
		<-e.ready // not under cm.mu, which a failed load takes to forget its entry
		if e.mod != nil {
			unclosed = append(unclosed, e.mod)
		}
	}
	var failed []*cuda.Module
	var errs []error
	for _, m := range unclosed {
		if err := m.Close(); err != nil {
			failed = append(failed, m)
			errs = append(errs, err)
		}
	}
	if len(failed) > 0 {
		if err := keepUnclosed(op, ctx, failed); err != nil {
			errs = append(errs, err)
		}
	}
	return wrap(op, errors.Join(errs...), "closing the kernels' modules")
}

// keepUnclosed keeps modules that failed to close in ctx's entry, for the
// next release to close.
func keepUnclosed(op string, ctx *cuda.Context, mods []*cuda.Module) error {
	return withModules(op, ctx, func(cm *contextModules) {
		cm.unclosed = append(cm.unclosed, mods...)
	})
}

// withModules runs f on ctx's entry of modules, with its lock held: the
// entry there, or a new one, whose release it registers with ctx's Close.
func withModules(op string, ctx *cuda.Context, f func(*contextModules)) error {
	key := weak.Make(ctx)
	for {
		v, loaded := modules.LoadOrStore(key, &contextModules{mods: map[string]*moduleEntry{}})
		cm := v.(*contextModules)
		if !loaded {
			// Registered again after each release (a second registration
			// under the key keeps the first).
			if err := attach.OnClose(ctx, releaseKey{}, func() error { return release("Context.Close", ctx) }); err != nil {
				modules.CompareAndDelete(key, cm)
				return wrap(op, err, "tying the kernels' modules to the context")
			}
		}
		cm.mu.Lock()
		if !cm.released {
			f(cm)
			cm.mu.Unlock()
			return nil
		}
		cm.mu.Unlock() // released meanwhile: the next entry
	}
}

// kernel returns kernel name of v in s's context for a launch of as: the
// function loaded before, or, once none of as is a closed buffer (which a
// compile's error, or NVRTC missing, would otherwise hide), compiled and
// loaded.
func kernel(op string, s *cuda.Stream, v *variant, name string, as []arg) (*cuda.Function, error) {
	ctx := s.Context()
	last := v.last.Load()
	if last != nil && last.name == name && !last.cm.gone.Load() && last.ctx.Value() == ctx {
		return last.f, nil
	}
	if cm, ok := modules.Load(weak.Make(ctx)); ok {
		cm := cm.(*contextModules)
		if f, ok := cm.funcs.Load(funcKey{v, name}); ok {
			// The first name of the variant (a variant of several
			// kernels keeps its first's): no string compared with
			// another's at every launch.
			if last == nil || last.name == name {
				v.last.Store(&lastFunc{ctx: weak.Make(ctx), cm: cm, name: name, f: f.(*cuda.Function)})
			}
			return f.(*cuda.Function), nil
		}
	}
	if err := closedArg(op, as); err != nil {
		return nil, err
	}
	return function(op, s.Context(), v, name)
}

// launchError names op on a launch's error: where a closed argument made
// it fail, the argument, as the caller's call names it.
func launchError(op string, err error, as []arg, name string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, cuda.ErrClosed) {
		if e := closedArg(op, as); e != nil {
			return e
		}
	}
	return wrap(op, err, "launching %s", name)
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
		return nil, nil, compilerError(op, err, name)
	}
	var cm *contextModules
	var e *moduleEntry
	var ok bool
	err = withModules(op, ctx, func(m *contextModules) {
		cm = m
		if e, ok = m.mods[key]; !ok {
			e = &moduleEntry{ready: make(chan struct{})}
			m.mods[key] = e
		}
	})
	if err != nil {
		return nil, nil, err
	}
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

// compilerError names op on an error of making a kernel's key: NVRTC's
// saying it is missing in compute's words (compilerMissing), another as it
// is.
func compilerError(op string, err error, name string) error {
	var ne *nvrtc.Error
	if errors.As(err, &ne) && errors.Is(err, cuda.ErrNotSupported) {
		return &Error{Op: op, Err: compilerMissing{err}}
	}
	return wrap(op, err, "compiling kernel %s", name)
}

// loadModule loads the cached image of key, or compiles source.
func loadModule(op string, ctx *cuda.Context, name, source, key, arch string) (*cuda.Module, error) {
	dir := compiler.dir()
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

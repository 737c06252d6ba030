package driver

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/gocuda/cuda/internal/dl"
)

// EnvLibrary names the environment variable that overrides which driver
// library is opened.
const EnvLibrary = "GOCUDA_LIBCUDA"

// DefaultLibraries are tried in order when EnvLibrary is unset: the
// driver's file names, on the system's search path (on Windows, System32
// holds nvcuda.dll).
var DefaultLibraries = defaultLibraries(runtime.GOOS)

func defaultLibraries(goos string) []string {
	if goos == "windows" {
		return []string{"nvcuda.dll"}
	}
	return []string{"libcuda.so.1", "libcuda.so"}
}

// OpenError says why the driver could not be used.
type OpenError struct {
	Tried  []string // the library files tried, in order
	Loaded string   // the file that was opened, if one was
	Reason string   // the loader's message, or why initialization failed
	Result Result   // cuInit's result when the library loaded; Success otherwise
}

func (e *OpenError) Error() string {
	if e.Loaded == "" {
		return fmt.Sprintf("cannot open the CUDA driver library (tried %s): %s",
			strings.Join(e.Tried, ", "), e.Reason)
	}
	return fmt.Sprintf("%s: %s", e.Loaded, e.Reason)
}

// opener opens the driver for the process. A success, and a library that
// cannot be opened or is no driver, are kept; a cuInit that failed is not:
// the next Open tries again, so a transient failure can be recovered.
type opener struct {
	mu   sync.Mutex
	done atomic.Bool // path and err are final
	path string
	err  error
}

var theDriver opener

// Open loads the driver library and calls cuInit(0). It returns the first
// success, or the first failure to load a library, to every later call;
// after cuInit fails it tries again at the next call.
func Open() error { return theDriver.open(candidates(), &syms) }

func (o *opener) open(paths []string, table *[symCount]uintptr) error {
	if o.done.Load() {
		return o.err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done.Load() {
		return o.err
	}
	path, err := load(paths, table)
	var oe *OpenError
	if err != nil && errors.As(err, &oe) && oe.Result != Success {
		return err // cuInit failed: not kept
	}
	o.path, o.err = path, err
	o.done.Store(true)
	return err
}

// Path returns the library file Open loaded, or "" before a successful Open.
func Path() string {
	if Open() != nil {
		return ""
	}
	return theDriver.path
}

func candidates() []string {
	if p := os.Getenv(EnvLibrary); p != "" {
		return []string{p}
	}
	return DefaultLibraries
}

func load(paths []string, table *[symCount]uintptr) (string, error) {
	var reasons []string
	for _, p := range paths {
		h, err := dl.Load(p)
		if err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		for i, name := range symNames {
			addr, err := dl.Sym(h, name)
			if err != nil {
				addr = 0
			}
			table[i] = addr
		}
		setBinders(table)
		if table[symInit] == 0 {
			*table = [symCount]uintptr{}
			return "", &OpenError{Tried: paths, Loaded: p, Reason: "the library has no cuInit: not a CUDA driver"}
		}
		if s := Init(0); !s.OK() {
			r := s.Code
			name, text := ErrorName(r)
			if name == "" {
				name = fmt.Sprintf("CUresult %d", r)
			}
			return p, &OpenError{Tried: paths, Loaded: p, Result: r, Reason: fmt.Sprintf("cuInit failed: %s (%s)", name, text)}
		}
		return p, nil
	}
	return "", &OpenError{Tried: paths, Reason: strings.Join(reasons, "; ")}
}

// Probe reports how many devices the driver at path (or the default
// libraries, when path is "") sees, without making it the process's driver.
// Test helpers use it to choose between the real driver and the fake.
func Probe(path string) (int, error) {
	paths := DefaultLibraries
	if path != "" {
		paths = []string{path}
	}
	var h uintptr
	var err error
	for _, p := range paths {
		if h, err = dl.Load(p); err == nil {
			break
		}
	}
	if err != nil {
		return 0, err
	}
	initFn, err1 := dl.Sym(h, "cuInit")
	countFn, err2 := dl.Sym(h, "cuDeviceGetCount")
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("not a CUDA driver library")
	}
	if r, _, _ := purego.SyscallN(initFn, 0); Result(int32(r)) != Success {
		return 0, fmt.Errorf("cuInit returned %d", int32(r))
	}
	count := new(int32)
	if r, _, _ := purego.SyscallN(countFn, uintptr(unsafe.Pointer(count))); Result(int32(r)) != Success {
		return 0, fmt.Errorf("cuDeviceGetCount returned %d", int32(r))
	}
	return int(*count), nil
}

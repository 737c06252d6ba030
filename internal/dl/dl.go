// Package dl finds and opens the libraries that gocuda calls through
// purego (the driver, NVRTC, NCCL, NVML, cuBLAS, cuBLASLt, cuRAND, cuFFT),
// and reads their C strings. On Linux (and other Unix systems) one search
// order serves them all:
//
//  1. the override variable (GOCUDA_LIBNVRTC, ...), alone when set;
//  2. each versioned soname, then the bare one, on the loader's path
//     (LD_LIBRARY_PATH, the ld.so cache);
//  3. /usr/local/cuda's library folders;
//  4. the library folders of NVIDIA's Python wheels (nvidia/cu13/lib,
//     nvidia/<library>/lib) in the site-packages of an active virtual
//     environment or conda environment, of the python3 on the PATH, of
//     pyenv's Pythons (PYENV_ROOT, or ~/.pyenv: its python3 on the PATH
//     is a script, which leads nowhere), and of the user's site.
//
// Wheels ship only versioned files (libnvrtc.so.13, not libnvrtc.so), so a
// machine with only the NVIDIA driver and PyTorch installed has every
// library in step 4. Windows has an order of its own (winsearch.go): the
// DLL names on the system's search path, CUDA_PATH's bin folders, the
// PATH's folders, then the wheels' bin folders.
package dl

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"unsafe"
)

// Library says where a library may be and how to install it.
type Library struct {
	Name    string   // for messages: "NVRTC"
	Env     string   // the override variable: "GOCUDA_LIBNVRTC"
	Sonames []string // newest first, the bare name last: "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"
	Wheels  []string // folders under a site-packages' nvidia/: "cu13/lib", "cuda_nvrtc/lib"
	DLLs    []string // the Windows names, newest first: "nvrtc64_130_0.dll", "nvrtc64_120_0.dll"; none where the library has no Windows build
	Install string   // how to get it: "install the CUDA toolkit, or pip install nvidia-cuda-nvrtc"
	Missing error    // the sentinel a NotFoundError matches besides ErrNotFound: cuda.ErrNotSupported
}

// ErrNotFound is what Open returns, wrapped, when no candidate loads.
var ErrNotFound = errors.New("library not found")

// cudaDirs are /usr/local/cuda's library folders.
var cudaDirs = []string{"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib", "/usr/local/cuda/targets/sbsa-linux/lib"}

// Env is what the search reads of the process's environment and files;
// tests replace it. Only Getenv and LookPath are required: an empty GOOS
// is the running system's, a nil Glob filepath.Glob, a nil Exists
// os.Stat's answer.
type Env struct {
	Getenv   func(string) string
	LookPath func(string) (string, error)
	GOOS     string
	Glob     func(pattern string) ([]string, error)
	Exists   func(path string) bool
}

// ProcessEnv is the process's own environment.
func ProcessEnv() Env { return Env{Getenv: os.Getenv, LookPath: exec.LookPath} }

func (env Env) goos() string {
	if env.GOOS == "" {
		return runtime.GOOS
	}
	return env.GOOS
}

func (env Env) glob(pattern string) []string {
	if env.Glob == nil {
		m, _ := filepath.Glob(pattern)
		return m
	}
	m, _ := env.Glob(pattern)
	return m
}

func (env Env) exists(path string) bool {
	if env.Exists == nil {
		_, err := os.Stat(path)
		return err == nil
	}
	return env.Exists(path)
}

// Candidates returns what Open tries for lib, in order.
func (lib Library) Candidates(env Env) []string {
	if p := env.Getenv(lib.Env); p != "" {
		return []string{p}
	}
	if env.goos() == "windows" {
		return lib.windowsCandidates(env)
	}
	out := append([]string(nil), lib.Sonames...)
	for _, dir := range cudaDirs {
		for _, so := range lib.Sonames {
			out = append(out, filepath.Join(dir, so))
		}
	}
	for _, site := range sitePackages(env) {
		for _, w := range lib.Wheels {
			for _, so := range lib.Sonames {
				if p := filepath.Join(site, "nvidia", w, so); env.exists(p) {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// Open loads the first of lib's candidates that loads and returns its
// handle and path. Its error is a *NotFoundError.
func (lib Library) Open(env Env) (h uintptr, path string, err error) {
	tried := lib.Candidates(env)
	var last error
	for _, p := range tried {
		if h, last = Load(p); last == nil {
			return h, p, nil
		}
	}
	e := &NotFoundError{Library: lib.Name, Env: lib.Env, Value: env.Getenv(lib.Env), Tried: tried, Install: lib.Install, GOOS: env.goos(), missing: lib.Missing}
	if last != nil {
		e.Last = last.Error()
	}
	return 0, "", e
}

// NotFoundError says that a library could not be opened, and the one thing
// to do, in a line; Tried lists every path tried, for whoever asks.
type NotFoundError struct {
	Library string   // for messages: "NVRTC"
	Env     string   // the override variable: "GOCUDA_LIBNVRTC"
	Value   string   // the variable's value, when set: then the only path tried
	Tried   []string // every path tried, in order
	Last    string   // the loader's message for the last path tried
	Install string   // how to get the library
	GOOS    string   // the system searched for
	missing error
}

func (e *NotFoundError) Error() string {
	switch {
	case e == nil:
		return "<nil>"
	case e.Value != "":
		return fmt.Sprintf("%s=%s does not load (%s): point it at %s's library, or unset it to search the usual places",
			e.Env, e.Value, e.Last, e.Library)
	case len(e.Tried) == 0:
		return fmt.Sprintf("%s has no build for %s; set %s to a library's path to try one", e.Library, e.GOOS, e.Env)
	}
	return fmt.Sprintf("%s not found: %s, or set %s to its path (%d places searched; errors.As to a *cuda.LibraryError lists them)",
		e.Library, e.Install, e.Env, len(e.Tried))
}

// Cause splits err, an Open or Symbols error, into what a package's Error
// keeps: a *NotFoundError is itself the error to match (its text is the
// message, and errors.As finds it); anything else matches sentinel and is
// the detail.
func Cause(err, sentinel error) (detail string, match error) {
	var nf *NotFoundError
	if errors.As(err, &nf) {
		return "", nf
	}
	return err.Error(), sentinel
}

// Unwrap returns ErrNotFound and the library's Missing sentinel.
func (e *NotFoundError) Unwrap() []error {
	if e == nil || e.missing == nil {
		return []error{ErrNotFound}
	}
	return []error{ErrNotFound, e.missing}
}

// Symbols resolves each name of table in the library h into its entry, and
// returns an error naming those the library lacks (their entries stay 0,
// so that a caller for whom some are optional can go on).
func Symbols(h uintptr, path string, table map[string]*uintptr) error {
	var missing []string
	for name, p := range table {
		addr, err := Sym(h, name)
		if err != nil {
			addr = 0
			missing = append(missing, name)
		}
		*p = addr
	}
	if missing == nil {
		return nil
	}
	sort.Strings(missing)
	return fmt.Errorf("%s lacks %s: not the library, or too old", path, strings.Join(missing, ", "))
}

// sitePackages returns the site-packages folders of an active virtual or
// conda environment, of the python3 on the PATH, of pyenv's Pythons and of
// the user's site, in that order, each once.
func sitePackages(env Env) []string {
	var prefixes []string
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := env.Getenv(v); p != "" {
			prefixes = append(prefixes, p)
		}
	}
	if py, err := env.LookPath("python3"); err == nil {
		// A virtual environment's python3 links to the system's: both
		// prefixes count.
		prefixes = append(prefixes, filepath.Dir(filepath.Dir(py)))
		if real, err := filepath.EvalSymlinks(py); err == nil {
			prefixes = append(prefixes, filepath.Dir(filepath.Dir(real)))
		}
	}
	home := env.Getenv("HOME")
	// pyenv's python3 is a shim, a script that picks a version at run
	// time: each version it installed is a prefix, the selected one first.
	pyenv := env.Getenv("PYENV_ROOT")
	if pyenv == "" && home != "" {
		pyenv = filepath.Join(home, ".pyenv")
	}
	if pyenv != "" {
		if v := env.Getenv("PYENV_VERSION"); v != "" {
			prefixes = append(prefixes, filepath.Join(pyenv, "versions", v))
		}
		versions := env.glob(filepath.Join(pyenv, "versions", "*"))
		sort.Sort(sort.Reverse(sort.StringSlice(versions))) // newest first, near enough
		prefixes = append(prefixes, versions...)
	}
	if home != "" {
		prefixes = append(prefixes, filepath.Join(home, ".local"))
	}
	var patterns []string
	for _, prefix := range prefixes {
		for _, pattern := range []string{"lib/python3*/site-packages", "lib/python3*/dist-packages", "local/lib/python3*/dist-packages", "lib/python3/dist-packages"} {
			patterns = append(patterns, filepath.Join(prefix, pattern))
		}
	}
	return globAll(env, patterns)
}

// globAll returns what the patterns match, in the patterns' order, each
// folder once.
func globAll(env Env, patterns []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, pattern := range patterns {
		for _, m := range env.glob(pattern) {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// String copies the NUL-terminated C string at address p; "" for 0.
func String(p uintptr) string {
	if p == 0 {
		return ""
	}
	var b []byte
	for i := uintptr(0); ; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(nil), p+i)) // C memory, not Go's
		if c == 0 {
			return string(b)
		}
		b = append(b, c)
	}
}

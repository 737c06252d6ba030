// Package nvrtc compiles CUDA C++ to device code at run time with NVIDIA's
// NVRTC library, opened at run time like the driver: nothing is needed to
// build, and libnvrtc only where Compile is called.
//
// The library is looked for as libnvrtc.so.13, .so.12 and libnvrtc.so, on
// the loader's path and in /usr/local/cuda; GOCUDA_LIBNVRTC names another
// file.
package nvrtc

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
)

// EnvLibrary names the environment variable that overrides which NVRTC
// library is opened.
const EnvLibrary = "GOCUDA_LIBNVRTC"

var lib struct {
	once sync.Once
	err  error
	path string
	fn   struct {
		version, create, destroy, compile, ptxSize, ptx, cubinSize, cubin,
		logSize, log, addName, lowered, errString uintptr
	}
}

// library is where NVRTC may be.
var library = dl.Library{
	Name:    "NVRTC",
	Env:     EnvLibrary,
	Sonames: []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"},
	Wheels:  []string{"cu13/lib", "cuda_nvrtc/lib"},
	Install: "install NVIDIA's NVRTC (the CUDA toolkit, or pip install nvidia-cuda-nvrtc)",
}

func open() error {
	lib.once.Do(func() {
		h, path, err := library.Open(dl.ProcessEnv())
		lib.path = path
		if err != nil {
			lib.err = fmt.Errorf("nvrtc: %w: %v", cuda.ErrNotSupported, err)
			return
		}
		f := &lib.fn
		for name, p := range map[string]*uintptr{
			"nvrtcVersion": &f.version, "nvrtcCreateProgram": &f.create, "nvrtcDestroyProgram": &f.destroy,
			"nvrtcCompileProgram": &f.compile, "nvrtcGetPTXSize": &f.ptxSize, "nvrtcGetPTX": &f.ptx,
			"nvrtcGetCUBINSize": &f.cubinSize, "nvrtcGetCUBIN": &f.cubin, "nvrtcGetProgramLogSize": &f.logSize,
			"nvrtcGetProgramLog": &f.log, "nvrtcAddNameExpression": &f.addName, "nvrtcGetLoweredName": &f.lowered,
			"nvrtcGetErrorString": &f.errString,
		} {
			var err error
			if *p, err = purego.Dlsym(h, name); err != nil {
				lib.err = fmt.Errorf("nvrtc: %w: %s lacks %s", cuda.ErrNotSupported, lib.path, name)
				return
			}
		}
	})
	return lib.err
}

// call calls an NVRTC function and turns its nvrtcResult into an error.
// Like purego.SyscallN, it takes pointers converted to uintptr in its
// argument list, and uintptrescapes moves what they point to onto the heap
// (a goroutine's stack can move while C holds the address) and keeps it
// alive for the call.
//
//go:uintptrescapes
func call(what string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	if int32(r) == 0 {
		return nil
	}
	s, _, _ := purego.SyscallN(lib.fn.errString, r)
	return fmt.Errorf("nvrtc: %s: %s (%d)", what, dl.String(s), int32(r))
}

// Version returns the NVRTC version, such as 13.0.
func Version() (cuda.Version, error) {
	if err := open(); err != nil {
		return cuda.Version{}, err
	}
	var major, minor int32
	if err := call("nvrtcVersion", lib.fn.version, uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor))); err != nil {
		return cuda.Version{}, err
	}
	return cuda.Version{Major: int(major), Minor: int(minor)}, nil
}

// Options tune a compilation.
type Options struct {
	// Name is the source's file name in messages; "kernel.cu" if empty.
	Name string
	// Arch is the target, such as "sm_90" (a cubin for that device) or
	// "compute_90" (PTX the driver compiles when loading). Empty: a cubin
	// for the device of the context given to Compile.
	Arch string
	// PTX asks for PTX instead of a cubin for the device.
	PTX bool
	// Flags are further NVRTC options, such as "--use_fast_math", "-lineinfo"
	// or "-std=c++17".
	Flags []string
	// NameExpressions are C++ expressions naming kernels, such as
	// "scale<float>", whose mangled names Output.LoweredName gives.
	NameExpressions []string
}

// Output is what a compilation produced.
type Output struct {
	Image   []byte // a cubin, or PTX text (NUL-terminated): for Context.LoadModule
	PTX     bool   // Image is PTX
	Log     string // the compiler's messages (warnings), if any
	lowered map[string]string
}

// LoweredName returns the mangled name a name expression given in
// Options.NameExpressions lowered to: the name to give Module.Function.
func (o *Output) LoweredName(expr string) (string, error) {
	if o == nil {
		return "", fmt.Errorf("nvrtc: %w: nil *Output", cuda.ErrInvalidValue)
	}
	name, ok := o.lowered[expr]
	if !ok {
		return "", fmt.Errorf("nvrtc: %w: %q was not among the name expressions compiled", cuda.ErrInvalidValue, expr)
	}
	return name, nil
}

// Compile compiles CUDA C++ source. Without Options.Arch it targets the
// device of ctx. A compile error wraps cuda.ErrInvalidValue and carries the
// compiler's log.
func Compile(ctx *cuda.Context, src string, opts Options) (*Output, error) {
	if err := open(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("nvrtc: %w: empty source", cuda.ErrInvalidValue)
	}
	arch := opts.Arch
	if arch == "" {
		if ctx == nil {
			return nil, fmt.Errorf("nvrtc: %w: no context and no Options.Arch to target", cuda.ErrInvalidValue)
		}
		cc, err := ctx.Device().ComputeCapability()
		if err != nil {
			return nil, err
		}
		prefix := "sm_"
		if opts.PTX {
			prefix = "compute_"
		}
		arch = fmt.Sprintf("%s%d%d", prefix, cc.Major, cc.Minor)
	}
	name := opts.Name
	if name == "" {
		name = "kernel.cu"
	}
	csrc, cname := cbytes(src), cbytes(name)
	var prog uintptr
	if err := call("nvrtcCreateProgram", lib.fn.create, uintptr(unsafe.Pointer(&prog)),
		uintptr(unsafe.Pointer(&csrc[0])), uintptr(unsafe.Pointer(&cname[0])), 0, 0, 0); err != nil {
		return nil, err
	}
	defer purego.SyscallN(lib.fn.destroy, uintptr(unsafe.Pointer(&prog)))
	exprs := make([][]byte, len(opts.NameExpressions))
	for i, e := range opts.NameExpressions {
		exprs[i] = cbytes(e)
		if err := call("nvrtcAddNameExpression", lib.fn.addName, prog, uintptr(unsafe.Pointer(&exprs[i][0]))); err != nil {
			return nil, err
		}
	}
	flags := append([]string{"-arch=" + arch}, opts.Flags...)
	cflags := make([][]byte, len(flags))
	ptrs := make([]uintptr, len(flags)) // addresses of heap memory kept alive below
	for i, f := range flags {
		cflags[i] = cbytes(f)
		ptrs[i] = uintptr(unsafe.Pointer(&cflags[i][0]))
	}
	compileErr := call("nvrtcCompileProgram", lib.fn.compile, prog, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])))
	runtime.KeepAlive(cflags)
	runtime.KeepAlive(csrc)
	runtime.KeepAlive(cname)
	log := programLog(prog)
	if compileErr != nil {
		return nil, fmt.Errorf("nvrtc: compiling %s for %s: %w: %v\n%s", name, arch, cuda.ErrInvalidValue, compileErr, log)
	}
	out := &Output{PTX: strings.HasPrefix(arch, "compute_"), Log: log, lowered: map[string]string{}}
	sizeFn, getFn, what := lib.fn.cubinSize, lib.fn.cubin, "nvrtcGetCUBIN"
	if out.PTX {
		sizeFn, getFn, what = lib.fn.ptxSize, lib.fn.ptx, "nvrtcGetPTX"
	}
	var size uintptr
	if err := call(what+"Size", sizeFn, prog, uintptr(unsafe.Pointer(&size))); err != nil {
		return nil, err
	}
	out.Image = make([]byte, size)
	if size > 0 {
		if err := call(what, getFn, prog, uintptr(unsafe.Pointer(&out.Image[0]))); err != nil {
			return nil, err
		}
	}
	for i, e := range opts.NameExpressions {
		var p uintptr
		if err := call("nvrtcGetLoweredName", lib.fn.lowered, prog, uintptr(unsafe.Pointer(&exprs[i][0])), uintptr(unsafe.Pointer(&p))); err != nil {
			return nil, err
		}
		out.lowered[e] = dl.String(p)
	}
	return out, nil
}

func programLog(prog uintptr) string {
	var size uintptr
	if call("nvrtcGetProgramLogSize", lib.fn.logSize, prog, uintptr(unsafe.Pointer(&size))) != nil || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if call("nvrtcGetProgramLog", lib.fn.log, prog, uintptr(unsafe.Pointer(&buf[0]))) != nil {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00\n ")
}

func cbytes(s string) []byte { return append([]byte(s), 0) }

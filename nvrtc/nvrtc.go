// Package nvrtc compiles CUDA C++ to device code at run time with NVIDIA's
// NVRTC library, opened at run time like the driver: nothing is needed to
// build, and libnvrtc only where Compile is called.
//
// The library is looked for as libnvrtc.so.13, .so.12 and libnvrtc.so, on
// the loader's path, in /usr/local/cuda and in the folders of NVIDIA's
// Python wheels (nvidia/cu13, nvidia/cuda_nvrtc); GOCUDA_LIBNVRTC names
// another file.
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
	DLLs:    []string{"nvrtc64_130_0.dll", "nvrtc64_120_0.dll"},
	Wheels:  []string{"cu13/lib", "cuda_nvrtc/lib"},
	Install: "install NVIDIA's NVRTC (the CUDA toolkit, or pip install nvidia-cuda-nvrtc)",
	Missing: cuda.ErrNotSupported,
}

// open opens NVRTC once per process.
func open(op string) error {
	lib.once.Do(func() {
		h, path, err := library.Open(dl.ProcessEnv())
		lib.path = path
		if err != nil {
			lib.err = err
			return
		}
		f := &lib.fn
		lib.err = dl.Symbols(h, path, map[string]*uintptr{
			"nvrtcVersion": &f.version, "nvrtcCreateProgram": &f.create, "nvrtcDestroyProgram": &f.destroy,
			"nvrtcCompileProgram": &f.compile, "nvrtcGetPTXSize": &f.ptxSize, "nvrtcGetPTX": &f.ptx,
			"nvrtcGetCUBINSize": &f.cubinSize, "nvrtcGetCUBIN": &f.cubin, "nvrtcGetProgramLogSize": &f.logSize,
			"nvrtcGetProgramLog": &f.log, "nvrtcAddNameExpression": &f.addName, "nvrtcGetLoweredName": &f.lowered,
			"nvrtcGetErrorString": &f.errString,
		})
	})
	if lib.err != nil {
		detail, match := dl.Cause(lib.err, cuda.ErrNotSupported)
		return &Error{Op: op, Err: match, Detail: detail}
	}
	return nil
}

// call calls an NVRTC function and turns its nvrtcResult into an error.
// Like purego.SyscallN, it takes pointers converted to uintptr in its
// argument list, and uintptrescapes moves what they point to onto the heap
// (a goroutine's stack can move while C holds the address) and keeps it
// alive for the call.
//
//go:uintptrescapes
func call(op, what string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	if int32(r) == 0 {
		return nil
	}
	s, _, _ := purego.SyscallN(lib.fn.errString, r)
	code := Result(int32(r))
	return &Error{Op: op, Call: what, Code: code, Text: dl.String(s), Err: sentinels[code]}
}

// Library returns the path of the NVRTC library opened, opening it if
// needed.
func Library() (string, error) {
	if err := open("Library"); err != nil {
		return "", err
	}
	return lib.path, nil
}

// Version returns the NVRTC version, such as 13.0.
func Version() (cuda.Version, error) {
	const op = "Version"
	if err := open(op); err != nil {
		return cuda.Version{}, err
	}
	var major, minor int32
	if err := call(op, "nvrtcVersion", lib.fn.version, uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor))); err != nil {
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
		return "", errorf("Output.LoweredName", cuda.ErrInvalidValue, "nil *Output")
	}
	name, ok := o.lowered[expr]
	if !ok {
		return "", errorf("Output.LoweredName", cuda.ErrInvalidValue, "%q was not among the name expressions compiled", expr)
	}
	return name, nil
}

// Compile compiles CUDA C++ source. Without Options.Arch it targets the
// device of ctx. A compile error wraps cuda.ErrInvalidValue and carries the
// compiler's log.
func Compile(ctx *cuda.Context, src string, opts Options) (*Output, error) {
	const op = "Compile"
	if err := open(op); err != nil {
		return nil, err
	}
	if strings.TrimSpace(src) == "" {
		return nil, errorf(op, cuda.ErrInvalidValue, "empty source")
	}
	arch := opts.Arch
	if arch == "" {
		if ctx == nil {
			return nil, errorf(op, cuda.ErrInvalidValue, "no context and no Options.Arch to target")
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
	if err := call(op, "nvrtcCreateProgram", lib.fn.create, uintptr(unsafe.Pointer(&prog)),
		uintptr(unsafe.Pointer(&csrc[0])), uintptr(unsafe.Pointer(&cname[0])), 0, 0, 0); err != nil {
		return nil, err
	}
	defer purego.SyscallN(lib.fn.destroy, uintptr(unsafe.Pointer(&prog)))
	exprs := make([][]byte, len(opts.NameExpressions))
	for i, e := range opts.NameExpressions {
		exprs[i] = cbytes(e)
		if err := call(op, "nvrtcAddNameExpression", lib.fn.addName, prog, uintptr(unsafe.Pointer(&exprs[i][0]))); err != nil {
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
	compileErr := call(op, "nvrtcCompileProgram", lib.fn.compile, prog, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])))
	runtime.KeepAlive(cflags)
	runtime.KeepAlive(csrc)
	runtime.KeepAlive(cname)
	log := programLog(prog)
	if compileErr != nil {
		e := compileErr.(*Error)
		e.Err = cuda.ErrInvalidValue
		e.Detail = fmt.Sprintf("compiling %s for %s:\n%s", name, arch, log)
		return nil, e
	}
	out := &Output{PTX: strings.HasPrefix(arch, "compute_"), Log: log, lowered: map[string]string{}}
	sizeFn, getFn, what := lib.fn.cubinSize, lib.fn.cubin, "nvrtcGetCUBIN"
	if out.PTX {
		sizeFn, getFn, what = lib.fn.ptxSize, lib.fn.ptx, "nvrtcGetPTX"
	}
	var size uintptr
	if err := call(op, what+"Size", sizeFn, prog, uintptr(unsafe.Pointer(&size))); err != nil {
		return nil, err
	}
	out.Image = make([]byte, size)
	if size > 0 {
		if err := call(op, what, getFn, prog, uintptr(unsafe.Pointer(&out.Image[0]))); err != nil {
			return nil, err
		}
	}
	for i, e := range opts.NameExpressions {
		var p uintptr
		if err := call(op, "nvrtcGetLoweredName", lib.fn.lowered, prog, uintptr(unsafe.Pointer(&exprs[i][0])), uintptr(unsafe.Pointer(&p))); err != nil {
			return nil, err
		}
		out.lowered[e] = dl.String(p)
	}
	return out, nil
}

func programLog(prog uintptr) string {
	var size uintptr
	if call("Compile", "nvrtcGetProgramLogSize", lib.fn.logSize, prog, uintptr(unsafe.Pointer(&size))) != nil || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if call("Compile", "nvrtcGetProgramLog", lib.fn.log, prog, uintptr(unsafe.Pointer(&buf[0]))) != nil {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00\n ")
}

func cbytes(s string) []byte { return append([]byte(s), 0) }

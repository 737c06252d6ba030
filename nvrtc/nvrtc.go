// Package nvrtc compiles CUDA C++ to device code at run time with NVIDIA's
// NVRTC library, opened at run time like the driver: nothing is needed to
// build, and libnvrtc only where Compile is called.
//
// The library is looked for as libnvrtc.so.13, .so.12 and libnvrtc.so, on
// the loader's path, in /usr/local/cuda and in the folders of NVIDIA's
// Python wheels (nvidia/cu13, nvidia/cuda_nvrtc); GOCUDA_LIBNVRTC names
// another file.
package nvrtc

//go:generate go run ../internal/driver/gen -in ../internal/lib/nvrtc/status.txt -backend lib-public -pkg nvrtc -out zstatus.go

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
	clib "github.com/gocuda/cuda/internal/lib/nvrtc"
)

// EnvLibrary names the environment variable that overrides which NVRTC
// library is opened.
const EnvLibrary = "GOCUDA_LIBNVRTC"

// lib is NVRTC, opened once per process by the first call that needs it,
// with the functions of internal/lib/nvrtc: a file that lacks one of the
// required ones (those every compilation calls) is not NVRTC, and the
// others fail only their own calls.
var lib = dl.Lazy{
	Library: dl.Library{
		Name:    "NVRTC",
		Env:     EnvLibrary,
		Sonames: []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"},
		DLLs:    []string{"nvrtc64_130_0.dll", "nvrtc64_120_0.dll"},
		Wheels:  []string{"cu13/lib", "cuda_nvrtc/lib"},
		Install: "install NVIDIA's NVRTC (the CUDA toolkit, or pip install nvidia-cuda-nvrtc)",
		Missing: cuda.ErrNotSupported,
	},
	Table: clib.Table,
}

// Library returns the path of the NVRTC library opened, opening it if
// needed.
func Library() (string, error) {
	if err := open("Library"); err != nil {
		return "", err
	}
	return lib.Path(), nil
}

// Version returns the NVRTC version, such as 13.0.
func Version() (cuda.Version, error) {
	const op = "Version"
	if err := open(op); err != nil {
		return cuda.Version{}, err
	}
	var major, minor int32
	if err := check(op, "nvrtcVersion", clib.Version(&major, &minor)); err != nil {
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
	// PTX asks for PTX instead of a cubin: for the device, or for Arch
	// where it is set (its sm_90 gives PTX for compute capability 9.0).
	PTX bool
	// Flags are further NVRTC options, such as "--use_fast_math", "-lineinfo"
	// or "-std=c++17"; not the target (-arch, --gpu-architecture), which
	// is Arch.
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
// compiler's log; so does a NUL byte in the source or an option, where
// NVRTC would stop reading it.
func Compile(ctx *cuda.Context, src string, opts Options) (*Output, error) {
	const op = "Compile"
	if err := open(op); err != nil {
		return nil, err
	}
	if strings.TrimSpace(src) == "" {
		return nil, errorf(op, cuda.ErrInvalidValue, "empty source")
	}
	if err := checkStrings(op, src, opts); err != nil {
		return nil, err
	}
	arch := opts.Arch
	if arch == "" {
		if ctx == nil {
			return nil, errorf(op, cuda.ErrInvalidValue, "no context and no Options.Arch to target")
		}
		cc, err := ctx.Device().ComputeCapability()
		if err != nil {
			return nil, &Error{Op: op, Err: err, Detail: "the context's device, to target"}
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
	var prog clib.Program
	if err := check(op, "nvrtcCreateProgram", clib.CreateProgram(&prog, &csrc[0], &cname[0], 0, nil, nil)); err != nil {
		return nil, err
	}
	defer clib.DestroyProgram(&prog)
	exprs := make([][]byte, len(opts.NameExpressions))
	for i, e := range opts.NameExpressions {
		exprs[i] = cbytes(e)
		if err := check(op, "nvrtcAddNameExpression", clib.AddNameExpression(prog, &exprs[i][0])); err != nil {
			return nil, err
		}
	}
	flags := append([]string{"-arch=" + arch}, opts.Flags...)
	cflags := make([]*byte, len(flags)) // the C strings, an array of them as NVRTC takes
	for i, f := range flags {
		cflags[i] = &cbytes(f)[0]
	}
	compileErr := check(op, "nvrtcCompileProgram", clib.CompileProgram(prog, int32(len(cflags)), &cflags[0]))
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
	out := &Output{PTX: opts.PTX || strings.HasPrefix(arch, "compute_"), Log: log, lowered: map[string]string{}}
	sizeFn, getFn, what := clib.GetCUBINSize, clib.GetCUBIN, "nvrtcGetCUBIN"
	if out.PTX {
		sizeFn, getFn, what = clib.GetPTXSize, clib.GetPTX, "nvrtcGetPTX"
	}
	var size uintptr
	if err := check(op, what+"Size", sizeFn(prog, &size)); err != nil {
		return nil, err
	}
	// NVRTC succeeds with no image where a flag asks for another output
	// (-dlto: LTO IR, which Compile does not return): a cubin of no bytes,
	// or PTX of its NUL alone. Such an Output would fail only later, in
	// LoadModule, far from the flag.
	if size == 0 || out.PTX && size == 1 {
		kind := "cubin"
		if out.PTX {
			kind = "PTX"
		}
		return nil, errorf(op, cuda.ErrInvalidValue, "compiling %s for %s with flags %q made no %s: a flag asks for another output (such as -dlto, LTO IR), which Compile does not return", name, arch, opts.Flags, kind)
	}
	out.Image = make([]byte, size)
	if err := check(op, what, getFn(prog, &out.Image[0])); err != nil {
		return nil, err
	}
	for i, e := range opts.NameExpressions {
		var p *byte // NVRTC's memory, until DestroyProgram
		if err := check(op, "nvrtcGetLoweredName", clib.GetLoweredName(prog, &exprs[i][0], &p)); err != nil {
			return nil, err
		}
		out.lowered[e] = dl.String(uintptr(unsafe.Pointer(p)))
	}
	return out, nil
}

func programLog(prog clib.Program) string {
	var size uintptr
	if clib.GetProgramLogSize(prog, &size) != clib.Success || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if clib.GetProgramLog(prog, &buf[0]) != clib.Success {
		return ""
	}
	return strings.TrimRight(string(buf), "\x00\n ")
}

func cbytes(s string) []byte { return append([]byte(s), 0) }

// isArchFlag reports whether f is NVRTC's target option, in any of its
// spellings (-arch=sm_90, -arch sm_90, --gpu-architecture=sm_90, ...).
func isArchFlag(f string) bool {
	name, _, _ := strings.Cut(strings.TrimSpace(f), "=")
	name, _, _ = strings.Cut(name, " ")
	return name == "-arch" || name == "--gpu-architecture" || name == "-gpu-architecture"
}

// checkStrings refuses a NUL byte in the source or an option: NVRTC reads
// each as a C string, which would end there, and compile a part of it.
func checkStrings(op, src string, opts Options) error {
	check := func(what, s string) error {
		if i := strings.IndexByte(s, 0); i >= 0 {
			return errorf(op, cuda.ErrInvalidValue, "%s has a NUL byte at %d, where NVRTC would stop reading it", what, i)
		}
		return nil
	}
	err := check("the source", src)
	if err == nil {
		err = check("Options.Name", opts.Name)
	}
	if err == nil {
		err = check("Options.Arch", opts.Arch)
	}
	for i, f := range opts.Flags {
		if err == nil {
			err = check(fmt.Sprintf("flag %d (%q)", i, f), f)
		}
		if err == nil && isArchFlag(f) {
			// NVRTC 13 takes a second target without a word, and Output
			// would then call the image what Arch asked for.
			err = errorf(op, cuda.ErrInvalidValue, "flag %d (%q) sets the target arch: give it as Options.Arch", i, f)
		}
	}
	for i, e := range opts.NameExpressions {
		if err == nil {
			err = check(fmt.Sprintf("name expression %d (%q)", i, e), e)
		}
	}
	return err
}

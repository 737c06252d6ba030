// Package cufft computes fast Fourier transforms on the device with
// NVIDIA's cuFFT, on gocuda's DeviceBuffers and streams. cuFFT is opened at
// run time like the driver: nothing is needed to build, and the library
// only where a Plan is made.
//
// A Plan is one transform's shape, made once and executed again and again
// on its stream: one to three dimensions, row-major as Go lays arrays out
// (the last dimension contiguous), batched, complex-to-complex (C2C in
// complex64, Z2Z in complex128), real-to-complex (R2C, D2Z) and
// complex-to-real (C2R, Z2D). The real transforms keep the half of the
// spectrum the rest follows from: the last dimension n becomes n/2+1
// complex numbers. A Plan's methods execute it, the destination first as
// in Go's copy(dst, src):
//
//	err = p.ExecC2C(dst, src, cufft.Forward)
//	err = p.ExecC2C(buf, buf, cufft.Inverse) // in place: dst == src
//
// Scaling: none, as cuFFT's (and NumPy's "backward" norm for the forward
// transform): a forward transform then an inverse one multiplies by the
// number of elements of the shape. Divide by it where the inverse should
// undo the forward.
//
// A plan's work area is gocuda's stream-ordered memory on the plan's
// stream, allocated once when the plan is made and freed by Close (as
// cuFFT's own plans keep theirs): an execution allocates nothing, and can
// be captured into a CUDA graph, which then keeps the work area alive.
//
// The library is looked for as libcufft.so.12, libcufft.so.11 and
// libcufft.so on the loader's path, in /usr/local/cuda, and in the folders
// of NVIDIA's Python wheels (nvidia/cu13, nvidia/cufft); GOCUDA_LIBCUFFT
// names another file.
package cufft

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
)

// EnvLibrary is the environment variable that names the cuFFT library to
// open.
const EnvLibrary = "GOCUDA_LIBCUFFT"

var library = dl.Library{
	Name:    "cuFFT",
	Env:     EnvLibrary,
	Sonames: []string{"libcufft.so.12", "libcufft.so.11", "libcufft.so"},
	DLLs:    []string{"cufft64_12.dll", "cufft64_11.dll"},
	Wheels:  []string{"cu13/lib", "cufft/lib"},
	Install: "install the CUDA toolkit's cuFFT (libcufft), or pip install nvidia-cufft",
	Missing: cuda.ErrNotSupported,
}

var lib struct {
	once sync.Once
	err  error
	path string
	create, destroy, setAutoAllocation, makePlanMany, setStream, setWorkArea, getVersion,
	execC2C, execZ2Z, execR2C, execD2Z, execC2R, execZ2D uintptr
}

func open(op string) error {
	lib.once.Do(func() {
		h, path, err := library.Open(dl.ProcessEnv())
		lib.path = path
		if err != nil {
			lib.err = err
			return
		}
		// Missing functions stay 0: only the calls that need them fail.
		_ = dl.Symbols(h, path, map[string]*uintptr{
			"cufftCreate": &lib.create, "cufftDestroy": &lib.destroy, "cufftSetAutoAllocation": &lib.setAutoAllocation,
			"cufftMakePlanMany": &lib.makePlanMany, "cufftSetStream": &lib.setStream, "cufftSetWorkArea": &lib.setWorkArea,
			"cufftGetVersion": &lib.getVersion, "cufftExecC2C": &lib.execC2C, "cufftExecZ2Z": &lib.execZ2Z,
			"cufftExecR2C": &lib.execR2C, "cufftExecD2Z": &lib.execD2Z, "cufftExecC2R": &lib.execC2R, "cufftExecZ2D": &lib.execZ2D,
		})
		if lib.create == 0 || lib.makePlanMany == 0 || lib.getVersion == 0 {
			lib.err = fmt.Errorf("%s is not cuFFT: it lacks cufftCreate or cufftMakePlanMany", path)
		}
	})
	if lib.err != nil {
		detail, match := dl.Cause(lib.err, cuda.ErrNotSupported)
		return &Error{Op: op, Err: match, Detail: detail}
	}
	return nil
}

// Library returns the path of the cuFFT library opened, or why none could
// be.
func Library() (string, error) {
	if err := open("Library"); err != nil {
		return lib.path, err
	}
	return lib.path, nil
}

// Version returns cuFFT's version, such as 12.0.0 (cufftGetVersion's
// number, major*1000 + minor*100 + patch).
func Version() (cuda.Version, error) {
	const op = "Version"
	if err := open(op); err != nil {
		return cuda.Version{}, err
	}
	var v int32
	if err := call(op, "cufftGetVersion", lib.getVersion, uintptr(unsafe.Pointer(&v))); err != nil {
		return cuda.Version{}, err
	}
	return cuda.Version{Major: int(v / 1000), Minor: int(v % 1000 / 100), Patch: int(v % 100)}, nil
}

// call calls a cuFFT function and turns its result into an error. Like
// purego.SyscallN, it takes pointers converted to uintptr in its argument
// list, and uintptrescapes keeps what they point to alive for the call.
//
//go:uintptrescapes
func call(op, name string, fn uintptr, args ...uintptr) error {
	if fn == 0 {
		return &Error{Op: op, Call: name, Err: cuda.ErrNotSupported, Detail: lib.path + " has no " + name}
	}
	r, _, _ := purego.SyscallN(fn, args...)
	if s := Result(int32(r)); s != ResultSuccess {
		return &Error{Op: op, Call: name, Code: s, Err: sentinels[s]}
	}
	return nil
}

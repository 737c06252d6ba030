// Package curand makes random numbers on the device with NVIDIA's cuRAND
// (its host API), into gocuda's DeviceBuffers, on a stream. cuRAND is
// opened at run time like the driver: nothing is needed to build, and the
// library only where a Generator is made.
//
// A Generator is one of cuRAND's generators (Philox4x32-10, the zero RNG
// and so the default, XORWOW, MRG32k3a, MTGP32, MT19937, or Sobol for
// quasi-random numbers), made for one stream: the functions Uniform, Normal
// and LogNormal (generic in the element type, so functions taking the
// generator first) and its methods Poisson and Bits queue their work
// there, and each call continues the generator's sequence. The same
// generator type, seed and offset give the same numbers as cuRAND called
// from C (the GPU tests check it bit for bit).
//
//	g, err := curand.New(s, curand.Philox4x32_10, 42) // or curand.DefaultRNG, or 0
//	err = curand.Normal(g, buf, 0, 1)
//	err = g.Bits(words)
//
// Elements are float32 and float64, or types defined on them (cuda.Float),
// and uint32 for Poisson and Bits. cuRAND has no half-precision output:
// generate float32 and convert (package compute's Cast). cuRAND's normal
// distributions make numbers in pairs: for an odd count gocuda makes the
// last one from a pair of its own. Uniform's numbers are on (0, 1],
// cuRAND's interval, not PyTorch's [0, 1) (see Uniform).
//
// The library is looked for as libcurand.so.10 and libcurand.so on the
// loader's path, in /usr/local/cuda, and in the folders of NVIDIA's Python
// wheels (nvidia/cu13, nvidia/curand); GOCUDA_LIBCURAND names another file.
package curand

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
)

// EnvLibrary is the environment variable that names the cuRAND library to
// open.
const EnvLibrary = "GOCUDA_LIBCURAND"

var library = dl.Library{
	Name:    "cuRAND",
	Env:     EnvLibrary,
	Sonames: []string{"libcurand.so.10", "libcurand.so"},
	DLLs:    []string{"curand64_10.dll"},
	Wheels:  []string{"cu13/lib", "curand/lib"},
	Install: "install the CUDA toolkit's cuRAND (libcurand), or pip install nvidia-curand",
	Missing: cuda.ErrNotSupported,
}

// lib is the library, opened once per process. The functions taking
// floating-point values are registered with purego (which passes them in
// the registers C expects); the rest are called with purego.SyscallN.
var lib struct {
	once sync.Once
	err  error
	path string
	create, destroy, setStream, setSeed, setOffset, setOrdering, getVersion,
	generate, uniform, uniformDouble uintptr
	normal       func(gen, out, n uintptr, mean, stddev float32) int32
	normalDouble func(gen, out, n uintptr, mean, stddev float64) int32
	logNormal    func(gen, out, n uintptr, mean, stddev float32) int32
	logNormalDbl func(gen, out, n uintptr, mean, stddev float64) int32
	poisson      func(gen, out, n uintptr, lambda float64) int32
	haveFloatFns bool
}

func open(op string) error {
	lib.once.Do(func() {
		h, path, err := library.Open(dl.ProcessEnv())
		lib.path = path
		if err != nil {
			lib.err = err
			return
		}
		var normal, normalDouble, logNormal, logNormalDouble, poisson uintptr
		// Missing functions stay 0: only the calls that need them fail.
		_ = dl.Symbols(h, path, map[string]*uintptr{
			"curandCreateGenerator": &lib.create, "curandDestroyGenerator": &lib.destroy,
			"curandSetStream": &lib.setStream, "curandSetPseudoRandomGeneratorSeed": &lib.setSeed,
			"curandSetGeneratorOffset": &lib.setOffset, "curandSetGeneratorOrdering": &lib.setOrdering, "curandGetVersion": &lib.getVersion,
			"curandGenerate": &lib.generate, "curandGenerateUniform": &lib.uniform,
			"curandGenerateUniformDouble": &lib.uniformDouble,
			"curandGenerateNormal":        &normal, "curandGenerateNormalDouble": &normalDouble,
			"curandGenerateLogNormal": &logNormal, "curandGenerateLogNormalDouble": &logNormalDouble,
			"curandGeneratePoisson": &poisson,
		})
		if lib.create == 0 || lib.getVersion == 0 || normal == 0 || normalDouble == 0 || logNormal == 0 || logNormalDouble == 0 || poisson == 0 {
			lib.err = fmt.Errorf("%s is not cuRAND: it lacks curandCreateGenerator or a generating function", path)
			return
		}
		purego.RegisterFunc(&lib.normal, normal)
		purego.RegisterFunc(&lib.normalDouble, normalDouble)
		purego.RegisterFunc(&lib.logNormal, logNormal)
		purego.RegisterFunc(&lib.logNormalDbl, logNormalDouble)
		purego.RegisterFunc(&lib.poisson, poisson)
	})
	if lib.err != nil {
		detail, match := dl.Cause(lib.err, cuda.ErrNotSupported)
		return &Error{Op: op, Err: match, Detail: detail}
	}
	return nil
}

// Library returns the path of the cuRAND library opened, or why none could
// be.
func Library() (string, error) {
	if err := open("Library"); err != nil {
		return lib.path, err
	}
	return lib.path, nil
}

// Version returns cuRAND's version, such as 10.4.0 (curandGetVersion's
// number, major*1000 + minor*100 + patch).
func Version() (cuda.Version, error) {
	const op = "Version"
	if err := open(op); err != nil {
		return cuda.Version{}, err
	}
	var v int32
	if err := call(op, "curandGetVersion", lib.getVersion, uintptr(unsafe.Pointer(&v))); err != nil {
		return cuda.Version{}, err
	}
	return cuda.Version{Major: int(v / 1000), Minor: int(v % 1000 / 100), Patch: int(v % 100)}, nil
}

// call calls a cuRAND function and turns its status into an error. Like
// purego.SyscallN, it takes pointers converted to uintptr in its argument
// list, and uintptrescapes keeps what they point to alive for the call.
//
//go:uintptrescapes
func call(op, name string, fn uintptr, args ...uintptr) error {
	if fn == 0 {
		return &Error{Op: op, Call: name, Err: cuda.ErrNotSupported, Detail: lib.path + " has no " + name}
	}
	r, _, _ := purego.SyscallN(fn, args...)
	return statusErr(op, name, Result(int32(r)))
}

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
// last one from a pair of its own, and a dst not aligned to a pair (a
// slice starting at an odd element, which cuRAND cannot store into) is
// filled through stream-ordered scratch memory, with the same numbers. Uniform's numbers are on (0, 1],
// cuRAND's interval, not PyTorch's [0, 1) (see Uniform).
//
// The library is looked for as libcurand.so.10 and libcurand.so on the
// loader's path, in /usr/local/cuda, and in the folders of NVIDIA's Python
// wheels (nvidia/cu13, nvidia/curand); GOCUDA_LIBCURAND names another file.
package curand

//go:generate go run ../internal/driver/gen -in ../internal/lib/curand/status.txt -backend lib-public -pkg curand -out zstatus.go

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
	clib "github.com/gocuda/cuda/internal/lib/curand"
)

// EnvLibrary is the environment variable that names the cuRAND library to
// open.
const EnvLibrary = "GOCUDA_LIBCURAND"

// lib is cuRAND, opened once per process by the first call that needs it,
// with the functions of internal/lib/curand: a file that lacks one of the
// required ones is not cuRAND, and the others fail only their own calls.
var lib = dl.Lazy{
	Library: dl.Library{
		Name:    "cuRAND",
		Env:     EnvLibrary,
		Sonames: []string{"libcurand.so.10", "libcurand.so"},
		DLLs:    []string{"curand64_10.dll"},
		Wheels:  []string{"cu13/lib", "curand/lib"},
		Install: "install the CUDA toolkit's cuRAND (libcurand), or pip install nvidia-curand",
		Missing: cuda.ErrNotSupported,
	},
	Table: clib.Table,
}

// Library returns the path of the cuRAND library opened, or why none could
// be.
func Library() (string, error) {
	return lib.Path(), open("Library")
}

// Version returns cuRAND's version, such as 10.4.0 (curandGetVersion's
// number, major*1000 + minor*100 + patch).
func Version() (cuda.Version, error) {
	const op = "Version"
	if err := open(op); err != nil {
		return cuda.Version{}, err
	}
	var v int32
	if err := check(op, "curandGetVersion", clib.GetVersion(&v)); err != nil {
		return cuda.Version{}, err
	}
	return cuda.Version{Major: int(v / 1000), Minor: int(v % 1000 / 100), Patch: int(v % 100)}, nil
}

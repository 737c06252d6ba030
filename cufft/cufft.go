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
// Any element-aligned buffer may be given, slices included. cuFFT itself
// refuses a real buffer that is not aligned as a complex number (a float32
// slice that starts at an odd element): such a buffer is copied through
// stream-ordered scratch memory of its length, on the plan's stream.
//
// The library is looked for as libcufft.so.12, libcufft.so.11 and
// libcufft.so on the loader's path, in /usr/local/cuda, and in the folders
// of NVIDIA's Python wheels (nvidia/cu13, nvidia/cufft); GOCUDA_LIBCUFFT
// names another file.
package cufft

//go:generate go run ../internal/driver/gen -in ../internal/lib/cufft/status.txt -backend lib-public -pkg cufft -out zstatus.go

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
	clib "github.com/gocuda/cuda/internal/lib/cufft"
)

// EnvLibrary is the environment variable that names the cuFFT library to
// open.
const EnvLibrary = "GOCUDA_LIBCUFFT"

// lib is cuFFT, opened once per process by the first call that needs it,
// with the functions of internal/lib/cufft: a file that lacks one of the
// required ones is not cuFFT, and the others fail only their own calls.
var lib = dl.Lazy{
	Library: dl.Library{
		Name:    "cuFFT",
		Env:     EnvLibrary,
		Sonames: []string{"libcufft.so.12", "libcufft.so.11", "libcufft.so"},
		DLLs:    []string{"cufft64_12.dll", "cufft64_11.dll"},
		Wheels:  []string{"cu13/lib", "cufft/lib"},
		Install: "install the CUDA toolkit's cuFFT (libcufft), or pip install nvidia-cufft",
		Missing: cuda.ErrNotSupported,
	},
	Table: clib.Table,
}

// Library returns the path of the cuFFT library opened, or why none could
// be.
func Library() (string, error) {
	return lib.Path(), open("Library")
}

// Version returns cuFFT's version, such as 12.0.0 (cufftGetVersion's
// number, major*1000 + minor*100 + patch).
func Version() (cuda.Version, error) {
	const op = "Version"
	if err := open(op); err != nil {
		return cuda.Version{}, err
	}
	var v int32
	if err := check(op, "cufftGetVersion", clib.GetVersion(&v)); err != nil {
		return cuda.Version{}, err
	}
	return cuda.Version{Major: int(v / 1000), Minor: int(v % 1000 / 100), Patch: int(v % 100)}, nil
}

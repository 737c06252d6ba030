// Package cublas computes matrix products and the other BLAS operations on
// gocuda's DeviceBuffers with NVIDIA's cuBLAS and cuBLASLt, opened at run
// time like the driver: nothing is needed to build, and the libraries only
// where a Handle is made.
//
// Matrices are row-major, as Go lays them out: a Matrix describes rows,
// columns and the stride between rows of a DeviceBuffer, and Gemm computes
// C = alpha·A·B + beta·C on it. cuBLAS itself is column-major; the package
// computes the transposed product on the same memory (Cᵀ = Bᵀ·Aᵀ) rather
// than copying, so a row-major product costs what cuBLAS's own does.
// Column-major matrices are a Layout away, and Matrix.T is a transposed view
// of either, free of copies.
//
// A Handle is made for one Stream and queues all its work there; make one
// per stream to run products side by side (cuBLAS's own advice: a handle's
// workspace is shared by its calls). A Handle is safe for use by many
// goroutines: its calls take turns.
//
// The products and vector updates can be captured into a CUDA graph
// (cuda.Stream.Capture on the handle's stream) and replayed; Dot, Nrm2,
// Asum and Iamax, whose results cuBLAS hands to the host, are refused while
// the stream captures, and so is GemmBatched, whose pointer arrays are
// copied from Go memory.
//
// Elements are float32 and float64 (cuda.Float) everywhere, and
// cuda.Float16 and cuda.BFloat16 too (cuda.AnyFloat) in Gemm, its batched
// forms and Matmul, which accumulate in float32; a type defined on float32
// or float64 (type Celsius float32) is computed as its float. Float32
// products may use the tensor cores' TF32 arithmetic when the Handle's
// math mode allows it (SetMathMode), as PyTorch's allow_tf32 does.
//
// The calls keep BLAS's order of arguments, which every reader of BLAS
// knows: the scalar before each operand, and the output, which is also an
// input (C = alpha·A·B + beta·C, y = alpha·x + y), last. alpha and beta are
// float64 for every element type: cuBLAS takes them in its compute type,
// float32 or float64, not in T (a cuda.Float16 alpha would be rounded to
// 11 bits first).
//
// The libraries are looked for as libcublas.so.13, libcublas.so.12 and
// libcublas.so (libcublasLt likewise) on the loader's path, in
// /usr/local/cuda, and in the folders of NVIDIA's Python wheels (nvidia/cu13,
// nvidia/cublas), so a machine with the driver and PyTorch has them;
// GOCUDA_LIBCUBLAS and GOCUDA_LIBCUBLASLT name other files.
package cublas

//go:generate go run ../internal/driver/gen -in ../internal/lib/cublas/status.txt -backend lib-public -pkg cublas -out zstatus.go

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
	clib "github.com/gocuda/cuda/internal/lib/cublas"
)

// The environment variables that override which libraries are opened.
const (
	EnvLibrary   = "GOCUDA_LIBCUBLAS"
	EnvLibraryLt = "GOCUDA_LIBCUBLASLT"
)

// lib and libLt are cuBLAS and cuBLASLt, each opened once per process by
// the first call that needs it, with the functions of internal/lib/cublas
// (its Table and LtTable): a file that lacks one of the required ones is
// not the library, and the others fail only their own calls. cuBLASLt is
// needed only by Matmul: without it the rest works.
var (
	lib = dl.Lazy{
		Library: dl.Library{
			Name:    "cuBLAS",
			Env:     EnvLibrary,
			Sonames: []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
			DLLs:    []string{"cublas64_13.dll", "cublas64_12.dll"},
			Wheels:  []string{"cu13/lib", "cublas/lib"},
			Install: "install the CUDA toolkit's cuBLAS (libcublas), or pip install nvidia-cublas",
			Missing: cuda.ErrNotSupported,
		},
		Table: clib.Table,
	}
	libLt = dl.Lazy{
		Library: dl.Library{
			Name:    "cuBLASLt",
			Env:     EnvLibraryLt,
			Sonames: []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
			DLLs:    []string{"cublasLt64_13.dll", "cublasLt64_12.dll"},
			Wheels:  []string{"cu13/lib", "cublas/lib"},
			Install: "install the CUDA toolkit's cuBLAS (libcublasLt), or pip install nvidia-cublas",
			Missing: cuda.ErrNotSupported,
		},
		Table: clib.LtTable,
	}
)

// openLt is open for what needs cuBLASLt too.
func openLt(op string) error {
	if err := open(op); err != nil {
		return err
	}
	return opened(op, &libLt)
}

// Library returns the paths of the cuBLAS and cuBLASLt libraries opened,
// opening them if needed; lt is "" where cuBLASLt did not open (Matmul
// then returns ErrNotSupported, saying why).
func Library() (path, lt string, err error) {
	if err := open("Library"); err != nil {
		return "", "", err
	}
	if libLt.Open() == nil {
		lt = libLt.Path()
	}
	return lib.Path(), lt, nil
}

// Version returns the version of cuBLAS, such as 13.0.2
// (cublasGetProperty: no handle, no context needed).
func Version() (cuda.Version, error) {
	const op = "Version"
	if err := open(op); err != nil {
		return cuda.Version{}, err
	}
	var v [3]int32 // libraryPropertyType: MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
	for i := range v {
		if err := check(op, "cublasGetProperty", clib.GetProperty(int32(i), &v[i])); err != nil {
			return cuda.Version{}, err
		}
	}
	return cuda.Version{Major: int(v[0]), Minor: int(v[1]), Patch: int(v[2])}, nil
}

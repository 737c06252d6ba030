// Package cusparse computes with sparse matrices on gocuda's DeviceBuffers
// with NVIDIA's cuSPARSE (its generic API), opened at run time like the
// driver: nothing is needed to build, and the library only where a Handle
// is made.
//
// A Matrix holds a sparse matrix in device memory in one of three formats,
// CSR (compressed rows), CSC (compressed columns) or COO (coordinates,
// sorted by row, then column), or in a blocked one (below). Its indices
// are int32 or int64 (Index), its values float32, float64, complex64 or
// complex128 (Element), or the half types cuda.Float16 and cuda.BFloat16
// (Half), and it owns its arrays: Free releases them. Matrices are made
// from Go slices (NewCSR, NewCSC, and NewCOO, which sorts triplets and
// sums duplicates), from a dense matrix on the device (FromDense), and
// from one another (Convert); ToDense writes one out dense.
//
// Two blocked formats hold square blocks of BlockSize×BlockSize elements,
// stored whole: BSR (block sparse rows, cusparseCreateBsr, each block
// row-major) and Blocked-ELL (each row of blocks as long as the fullest,
// cusparseCreateBlockedEll). They are made from a dense Go matrix (NewBSR,
// NewBlockedELL) or from a CSR, CSC or COO Matrix (ToBSR, ToBlockedELL,
// through the host), of sizes that are multiples of the block size (2 or
// more), and written out by ToDense (through the host). cuSPARSE multiplies them
// untransposed only: BSR by SpMV and SpMM, Blocked-ELL by SpMM alone (and
// SpMMHalf: tensor cores are what the format is for), of int32 indices
// and real or half values; the other operations and combinations refuse
// them, saying so.
//
//	a, err := cusparse.NewCOO(s, 3, 3, rows, cols, vals) // *Matrix[int32, float64]
//	err = cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, y) // y = A·x
//
// The operations take a Handle first (they are generic, and Go has no
// generic methods): SpMV (y = alpha·op(A)·x + beta·y), SpMM (C =
// alpha·op(A)·B + beta·C with dense B and C, row- or column-major),
// SpGEMM (C = A·B of two CSR matrices, the result allocated), and the
// triangular solves SpSV and SpSM (op(A)·y = alpha·x, op(A)·C = alpha·B,
// A lower or upper, its diagonal stored or unit). Scalars have the element
// type: cuSPARSE computes in it.
//
// Matrices and dense operands with no rows or no columns are taken by
// every operation; where the answer needs no arithmetic (nothing to
// write, a product over no columns with beta 0 or 1, a conversion of no
// non-zeros) the call does not ask cuSPARSE, whose handling of empty
// arrays is its own: y or C is zeroed for beta 0 and left as it is for 1.
//
// Half-precision matrices (Float16, BFloat16), made by NewCSR, NewCOO or
// NewBlockedELL, are multiplied by SpMVHalf and SpMMHalf: cuSPARSE reads
// and writes the halves and computes in float32 (CUDA_R_16F or
// CUDA_R_16BF values, CUDA_R_32F compute type), so their alpha and beta
// are float32. Those are the combinations of cuSPARSE's generic SpMV and
// SpMM this package offers: A in CSR or COO (SpMVHalf, SpMMHalf) or
// Blocked-ELL (SpMMHalf), x, y, B and C of A's half type (cuSPARSE also
// takes a float32 y or C, which is not offered). The other operations
// (Convert, ToDense, FromDense, SpGEMM, SpSV, SpSM, ToBSR, NewBSR) take
// Element: the compiler refuses a half matrix there; a half matrix in a
// format SpMVHalf or SpMMHalf does not take is refused with
// cuda.ErrNotSupported, which says so.
//
// A Handle is made for one Stream and queues all its work there. The work
// buffers cuSPARSE asks for come from stream-ordered memory, kept in the
// Handle and reused by later calls, grown when a call needs more, and
// freed by Close. A Handle is safe for use by many goroutines: its calls
// take turns. Make one per stream to run work side by side.
//
// The library is looked for as libcusparse.so.12 and libcusparse.so on the
// loader's path, in /usr/local/cuda, and in the folders of NVIDIA's Python
// wheels (nvidia/cu13, nvidia/cusparse); GOCUDA_LIBCUSPARSE names another
// file. cuSPARSE needs nvJitLink: the package loads it first from the same
// places (libnvJitLink.so.13 or .12, the wheels' nvidia/nvjitlink), where
// the loader's path lacks it.
package cusparse

//go:generate go run ../internal/driver/gen -in ../internal/lib/cusparse/status.txt -backend lib-public -pkg cusparse -out zstatus.go

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
	clib "github.com/gocuda/cuda/internal/lib/cusparse"
)

// EnvLibrary is the environment variable that names the cuSPARSE library
// to open.
const EnvLibrary = "GOCUDA_LIBCUSPARSE"

// lib is cuSPARSE, opened once per process by the first call that needs
// it, with the functions of internal/lib/cusparse: a file that lacks one
// of the required ones is not cuSPARSE, and the others fail only their own
// calls. jitLink is nvJitLink, which cuSPARSE 12 links against, opened
// first where it can be found so that cuSPARSE's own dependency is met
// from the same places (a library already loaded satisfies it); cuSPARSE
// opens without it where the loader finds nvJitLink itself.
var (
	lib = dl.Lazy{
		Library: dl.Library{
			Name:    "cuSPARSE",
			Env:     EnvLibrary,
			Sonames: []string{"libcusparse.so.12", "libcusparse.so"},
			DLLs:    []string{"cusparse64_12.dll"},
			Wheels:  []string{"cu13/lib", "cusparse/lib"},
			Install: "install the CUDA toolkit's cuSPARSE (libcusparse), or pip install nvidia-cusparse",
			Missing: cuda.ErrNotSupported,
		},
		Table: clib.Table,
	}
	jitLink = dl.Lazy{
		Library: dl.Library{
			Name:    "nvJitLink",
			Sonames: []string{"libnvJitLink.so.13", "libnvJitLink.so.12"},
			DLLs:    []string{"nvJitLink_130_0.dll", "nvJitLink_120_0.dll"},
			Wheels:  []string{"cu13/lib", "nvjitlink/lib"},
		},
	}
)

// load opens cuSPARSE (after nvJitLink, where it is found) once per
// process; op's Error says why it could not.
func load(op string) error {
	_ = jitLink.Open() // cuSPARSE's own error says what is missing, if anything
	return open(op)
}

// Library returns the path of the cuSPARSE library opened, or why none
// could be.
func Library() (string, error) {
	err := load("Library")
	return lib.Path(), err
}

// Version returns cuSPARSE's version, such as 12.5.8 (cusparseGetProperty:
// no handle, no context needed).
func Version() (cuda.Version, error) {
	const op = "Version"
	if err := load(op); err != nil {
		return cuda.Version{}, err
	}
	var v [3]int32 // libraryPropertyType: MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
	for i := range v {
		if err := check(op, "cusparseGetProperty", clib.GetProperty(int32(i), &v[i])); err != nil {
			return cuda.Version{}, err
		}
	}
	return cuda.Version{Major: int(v[0]), Minor: int(v[1]), Patch: int(v[2])}, nil
}

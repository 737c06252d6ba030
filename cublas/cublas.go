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

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
)

// The environment variables that override which libraries are opened.
const (
	EnvLibrary   = "GOCUDA_LIBCUBLAS"
	EnvLibraryLt = "GOCUDA_LIBCUBLASLT"
)

// fns are the libraries' functions, resolved when they are opened. A
// missing one stays 0, and only calls that need it fail.
type fns struct {
	create, destroy, setStream, setWorkspace, setPointerMode, getProperty, statusName, statusString,
	saxpy, daxpy, sdot, ddot, snrm2, dnrm2, sscal, dscal, sasum, dasum, isamax, idamax,
	sgemv, dgemv, gemmEx, gemmStridedBatchedEx, gemmBatchedEx uintptr
	// cuBLASLt
	ltCreate, ltDestroy, ltStatusName, ltStatusString, ltDescCreate, ltDescDestroy, ltDescSetAttribute,
	ltLayoutCreate, ltLayoutDestroy, ltPrefCreate, ltPrefDestroy, ltPrefSetAttribute,
	ltHeuristic, ltMatmul uintptr
}

var lib struct {
	once         sync.Once
	err, errLt   error
	path, pathLt string
	fn           fns
}

var (
	library = dl.Library{
		Name:    "cuBLAS",
		Env:     EnvLibrary,
		Sonames: []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
		DLLs:    []string{"cublas64_13.dll", "cublas64_12.dll"},
		Wheels:  []string{"cu13/lib", "cublas/lib"},
		Install: "install the CUDA toolkit's cuBLAS (libcublas), or pip install nvidia-cublas",
		Missing: cuda.ErrNotSupported,
	}
	libraryLt = dl.Library{
		Name:    "cuBLASLt",
		Env:     EnvLibraryLt,
		Sonames: []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
		DLLs:    []string{"cublasLt64_13.dll", "cublasLt64_12.dll"},
		Wheels:  []string{"cu13/lib", "cublas/lib"},
		Install: "install the CUDA toolkit's cuBLAS (libcublasLt), or pip install nvidia-cublas",
		Missing: cuda.ErrNotSupported,
	}
)

// open opens cuBLAS and cuBLASLt once per process. cuBLASLt is needed only
// by Matmul: without it the rest works.
func open(op string) error {
	lib.once.Do(func() {
		f := &lib.fn
		h, path, err := library.Open(dl.ProcessEnv())
		lib.path = path
		if err != nil {
			lib.err = err
		} else {
			// Missing functions stay 0: only the calls that need them fail.
			_ = dl.Symbols(h, path, map[string]*uintptr{
				"cublasCreate_v2": &f.create, "cublasDestroy_v2": &f.destroy, "cublasSetStream_v2": &f.setStream,
				"cublasSetWorkspace_v2": &f.setWorkspace, "cublasSetPointerMode_v2": &f.setPointerMode,
				"cublasGetProperty": &f.getProperty, "cublasGetStatusName": &f.statusName, "cublasGetStatusString": &f.statusString,
				"cublasSaxpy_v2": &f.saxpy, "cublasDaxpy_v2": &f.daxpy, "cublasSdot_v2": &f.sdot, "cublasDdot_v2": &f.ddot,
				"cublasSnrm2_v2": &f.snrm2, "cublasDnrm2_v2": &f.dnrm2, "cublasSscal_v2": &f.sscal, "cublasDscal_v2": &f.dscal,
				"cublasSasum_v2": &f.sasum, "cublasDasum_v2": &f.dasum, "cublasIsamax_v2": &f.isamax, "cublasIdamax_v2": &f.idamax,
				"cublasSgemv_v2": &f.sgemv, "cublasDgemv_v2": &f.dgemv, "cublasGemmEx": &f.gemmEx,
				"cublasGemmStridedBatchedEx": &f.gemmStridedBatchedEx, "cublasGemmBatchedEx": &f.gemmBatchedEx,
			})
			if f.create == 0 || f.getProperty == 0 {
				lib.err = fmt.Errorf("%s is not cuBLAS: it lacks cublasCreate_v2 or cublasGetProperty", path)
			}
		}
		h, path, err = libraryLt.Open(dl.ProcessEnv())
		lib.pathLt = path
		if err != nil {
			lib.errLt = err
			return
		}
		_ = dl.Symbols(h, path, map[string]*uintptr{
			"cublasLtCreate": &f.ltCreate, "cublasLtDestroy": &f.ltDestroy,
			"cublasLtGetStatusName": &f.ltStatusName, "cublasLtGetStatusString": &f.ltStatusString,
			"cublasLtMatmulDescCreate": &f.ltDescCreate, "cublasLtMatmulDescDestroy": &f.ltDescDestroy,
			"cublasLtMatmulDescSetAttribute": &f.ltDescSetAttribute, "cublasLtMatrixLayoutCreate": &f.ltLayoutCreate,
			"cublasLtMatrixLayoutDestroy": &f.ltLayoutDestroy, "cublasLtMatmulPreferenceCreate": &f.ltPrefCreate,
			"cublasLtMatmulPreferenceDestroy": &f.ltPrefDestroy, "cublasLtMatmulPreferenceSetAttribute": &f.ltPrefSetAttribute,
			"cublasLtMatmulAlgoGetHeuristic": &f.ltHeuristic, "cublasLtMatmul": &f.ltMatmul,
		})
		if f.ltCreate == 0 || f.ltMatmul == 0 {
			lib.errLt = fmt.Errorf("%s is not cuBLASLt: it lacks cublasLtMatmul", path)
		}
	})
	if lib.err != nil {
		detail, match := dl.Cause(lib.err, cuda.ErrNotSupported)
		return &Error{Op: op, Err: match, Detail: detail}
	}
	return nil
}

// openLt is open for what needs cuBLASLt too.
func openLt(op string) error {
	if err := open(op); err != nil {
		return err
	}
	if lib.errLt != nil {
		detail, match := dl.Cause(lib.errLt, cuda.ErrNotSupported)
		return &Error{Op: op, Err: match, Detail: detail}
	}
	return nil
}

// Library returns the paths of the cuBLAS and cuBLASLt libraries opened,
// opening them if needed; lt is "" where cuBLASLt did not open (Matmul
// then returns ErrNotSupported, saying why).
func Library() (path, lt string, err error) {
	if err := open("Library"); err != nil {
		return "", "", err
	}
	if lib.errLt == nil {
		lt = lib.pathLt
	}
	return lib.path, lt, nil
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
		if err := call(op, "cublasGetProperty", lib.fn.getProperty, uintptr(i), uintptr(unsafe.Pointer(&v[i]))); err != nil {
			return cuda.Version{}, err
		}
	}
	return cuda.Version{Major: int(v[0]), Minor: int(v[1]), Patch: int(v[2])}, nil
}

// call calls a cuBLAS function and turns its status into an error. Like
// purego.SyscallN, it takes pointers converted to uintptr in its argument
// list, and uintptrescapes moves what they point to onto the heap and keeps
// it alive for the call.
//
//go:uintptrescapes
func call(op, name string, fn uintptr, args ...uintptr) error {
	if fn == 0 {
		return missing(op, name, lib.path)
	}
	r, _, _ := purego.SyscallN(fn, args...)
	if s := Result(int32(r)); s != StatusSuccess {
		return statusError(op, name, s, lib.fn.statusName, lib.fn.statusString)
	}
	return nil
}

// callLt is call for a cuBLASLt function.
//
//go:uintptrescapes
func callLt(op, name string, fn uintptr, args ...uintptr) error {
	if fn == 0 {
		return missing(op, name, lib.pathLt)
	}
	r, _, _ := purego.SyscallN(fn, args...)
	if s := Result(int32(r)); s != StatusSuccess {
		return statusError(op, name, s, lib.fn.ltStatusName, lib.fn.ltStatusString)
	}
	return nil
}

func missing(op, name, path string) error {
	return &Error{Op: op, Call: name, Err: cuda.ErrNotSupported, Detail: fmt.Sprintf("%s lacks %s: a newer cuBLAS is needed", path, name)}
}

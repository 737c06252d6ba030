package cusolver

import (
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/internal/dl"
	blib "github.com/gocuda/cuda/internal/lib/cublas"
)

// The batched Cholesky's other triangle. cuSOLVER's potrfBatched runs its
// column-major CUBLAS_FILL_MODE_LOWER about 2.8 times faster than UPPER
// (10,000 8×8 matrices on an H100: 39-41 µs against 110). So where a
// batch's triangle is cuSOLVER's upper one (a row-major Lower, a
// column-major Upper), CholeskyBatched transposes each matrix into the
// device workspace with cuBLASLt's batched matrix transform
// (cublasLtMatrixTransform, CUBLAS_OP_T), factors the lower triangle
// there, and transposes the batch back. A plain transpose (not the
// conjugate one) is what turns one storage order into the other, so the
// matrix the workspace holds, read column-major, is the caller's as the
// caller's layout reads it (row-major Lower), or its transpose (column-
// major Upper: Aᵀ, which is A for a symmetric matrix and conj(A) for a
// Hermitian one, whose lower factor L gives A = (Lᵀ)ᴴ·Lᵀ): either way the
// factor comes back in the triangle the caller named, the other triangle
// goes there and back unchanged, and the leading minors, and so the info
// values, are the caller's matrix's.
//
// cuBLASLt is the one cuSOLVER is linked against, loaded with it (deps.go);
// where it cannot be opened, lacks the transform, or refuses the element
// type or the batch (CUBLAS_STATUS_NOT_SUPPORTED, before anything is
// queued), the batch is factored in place in cuSOLVER's upper triangle as
// before: right, and slower.

// ltLib is cuBLASLt, with the functions of internal/lib/cublas's
// TransformTable: a table of its own, so that package cublas's Lazy and
// this one never write the same addresses. Its sonames are set, once,
// after cuSOLVER is opened: the generation cuSOLVER is linked against
// first, which the loader finds by name among the libraries it loaded.
var (
	ltLib = dl.Lazy{
		Library: dl.Library{
			Name:    "cuBLASLt",
			Env:     cublas.EnvLibraryLt,
			Wheels:  []string{"cu13/lib", "cu12/lib", "cublas/lib"},
			Install: "install the CUDA toolkit's cuBLAS (libcublasLt), or pip install nvidia-cublas",
			Missing: cuda.ErrNotSupported,
		},
		Table: blib.TransformTable,
	}
	ltOnce sync.Once
)

// ltSonames returns cuBLASLt's sonames and DLLs, the generation of the
// cuSOLVER at path first: cuSOLVER 11 (libcusolver.so.11, CUDA 12) is
// linked against libcublasLt.so.12, cuSOLVER 12 (CUDA 13) against
// libcublasLt.so.13.
func ltSonames(path string) (sonames, dlls []string) {
	base := filepath.Base(path)
	if strings.Contains(base, ".so.11") || strings.Contains(base, "64_11") {
		return []string{"libcublasLt.so.12", "libcublasLt.so.13", "libcublasLt.so"}, []string{"cublasLt64_12.dll", "cublasLt64_13.dll"}
	}
	return []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, []string{"cublasLt64_13.dll", "cublasLt64_12.dll"}
}

// openLt opens cuBLASLt once per process and reports whether it did.
func openLt() bool {
	ltOnce.Do(func() {
		preloadDeps() // as lib.Path opens cuSOLVER where New has not
		ltLib.Library.Sonames, ltLib.Library.DLLs = ltSonames(lib.Path())
	})
	return ltLib.Open() == nil
}

// cuBLASLt's attributes (cublasLt.h).
const (
	ltLayoutBatchCount  = 5 // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, int32_t
	ltLayoutBatchStride = 6 // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, int64_t
	ltTransformTransA   = 2 // CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA, int32_t
)

// ltObjects are cuBLASLt's objects a Handle keeps for its transposes,
// made by the first call that needs them and kept until Close: the
// handle, a transform descriptor (CUBLAS_OP_T) per element type, and the
// layout of the last batch (n×n, packed, count of them), which serves as
// both the source's and the destination's.
type ltObjects struct {
	h      blib.LtHandle
	desc   [4]blib.LtMatrixTransformDesc // float32, float64, complex64, complex128
	layout blib.LtMatrixLayout
	key    [3]int64 // the layout's data type, n and count
	// off says, by element type, that the transform is not to be used:
	// cuBLASLt could not be opened, or refused the type's descriptor;
	// refused holds the batches (keys as key) whose transform cuBLASLt
	// refused, which take cuSOLVER's slow triangle from then on.
	off     [4]bool
	refused map[[3]int64]bool
}

// destroy releases o's objects, each zeroed once gone, so that a failed
// destroy can be tried again.
func (o *ltObjects) destroy(op string) error {
	if o.layout != 0 {
		if err := checkLt(op, "cublasLtMatrixLayoutDestroy", blib.TrMatrixLayoutDestroy(o.layout)); err != nil {
			return err
		}
		o.layout, o.key = 0, [3]int64{}
	}
	for i, d := range o.desc {
		if d != 0 {
			if err := checkLt(op, "cublasLtMatrixTransformDescDestroy", blib.TrMatrixTransformDescDestroy(d)); err != nil {
				return err
			}
			o.desc[i] = 0
		}
	}
	if o.h != 0 {
		if err := checkLt(op, "cublasLtDestroy", blib.TrDestroy(o.h)); err != nil {
			return err
		}
		o.h = 0
	}
	return nil
}

// ltSentinels are the gocuda sentinels cuBLAS's codes match, as package
// cublas maps them.
var ltSentinels = map[cublas.Result]error{
	cublas.ResultInvalidValue: cuda.ErrInvalidValue,
	cublas.ResultAllocFailed:  cuda.ErrOutOfMemory,
	cublas.ResultNotSupported: cuda.ErrNotSupported,
	cublas.ResultArchMismatch: cuda.ErrNotSupported,
}

// checkLt turns what cuBLASLt's function name returned into an error: a
// *cublas.Error carrying its code (cuBLAS's codes, not cuSOLVER's).
func checkLt(op, name string, r blib.Result) error {
	switch r {
	case blib.Success:
		return nil
	case blib.Missing:
		return &cublas.Error{Op: op, Call: name, Err: cuda.ErrNotSupported, Detail: ltLib.Lacks(name)}
	}
	s := cublas.Result(r)
	return &cublas.Error{Op: op, Call: name, Code: s, Text: s.String(), Err: ltSentinels[s]}
}

// elemIndex is T's index in ltObjects' arrays.
func elemIndex[T Element]() int {
	switch dataType[T]() {
	case typeF64:
		return 1
	case typeC32:
		return 2
	case typeC64:
		return 3
	}
	return 0
}

// prepareTranspose makes what transposing count packed n×n matrices of T
// takes (cuBLASLt's handle, T's descriptor, the batch's layout) and
// reports whether they can be transposed: false, with nothing queued and
// no error, where cuBLASLt cannot be opened or refuses T. Called in do.
func prepareTranspose[T Element](h *Handle, op string, n, count int) (bool, error) {
	o, k, dt := &h.raw.lt, elemIndex[T](), dataType[T]()
	if o.off[k] {
		return false, nil
	}
	if o.h == 0 {
		if !openLt() {
			o.off = [4]bool{true, true, true, true}
			return false, nil
		}
		var lt blib.LtHandle
		if err := checkLt(op, "cublasLtCreate", blib.TrCreate(&lt)); err != nil {
			return false, err
		}
		o.h = lt
	}
	if o.desc[k] == 0 {
		var d blib.LtMatrixTransformDesc
		r := blib.TrMatrixTransformDescCreate(&d, dt)
		if r == blib.Missing || r == blib.NotSupported {
			o.off[k] = true
			return false, nil
		}
		if err := checkLt(op, "cublasLtMatrixTransformDescCreate", r); err != nil {
			return false, err
		}
		trans := int32(opT)
		err := checkLt(op, "cublasLtMatrixTransformDescSetAttribute", blib.TrMatrixTransformDescSetAttribute(d, ltTransformTransA, unsafe.Pointer(&trans), 4))
		if err != nil {
			closeLt(&err, op, "cublasLtMatrixTransformDescDestroy", func() blib.Result { return blib.TrMatrixTransformDescDestroy(d) })
			return false, err
		}
		o.desc[k] = d
	}
	key := [3]int64{int64(dt), int64(n), int64(count)}
	if o.refused[key] {
		return false, nil
	}
	if o.layout != 0 && o.key != key {
		if err := checkLt(op, "cublasLtMatrixLayoutDestroy", blib.TrMatrixLayoutDestroy(o.layout)); err != nil {
			return false, err
		}
		o.layout, o.key = 0, [3]int64{}
	}
	if o.layout == 0 {
		var l blib.LtMatrixLayout
		if err := checkLt(op, "cublasLtMatrixLayoutCreate", blib.TrMatrixLayoutCreate(&l, dt, uint64(n), uint64(n), int64(n))); err != nil {
			return false, err
		}
		batch, stride := int32(count), int64(n)*int64(n)
		err := checkLt(op, "cublasLtMatrixLayoutSetAttribute", blib.TrMatrixLayoutSetAttribute(l, ltLayoutBatchCount, unsafe.Pointer(&batch), 4))
		if err == nil {
			err = checkLt(op, "cublasLtMatrixLayoutSetAttribute", blib.TrMatrixLayoutSetAttribute(l, ltLayoutBatchStride, unsafe.Pointer(&stride), 8))
		}
		if err != nil {
			closeLt(&err, op, "cublasLtMatrixLayoutDestroy", func() blib.Result { return blib.TrMatrixLayoutDestroy(l) })
			return false, err
		}
		o.layout, o.key = l, key
	}
	return true, nil
}

// closeLt destroys an object a failed call made, into *err (as
// lifetime.CloseTemp: tried twice, the first failure kept unless *err
// holds one).
func closeLt(err *error, op, name string, destroy func() blib.Result) {
	cerr := checkLt(op, name, destroy())
	if cerr != nil {
		cerr = checkLt(op, name, destroy())
	}
	if *err == nil {
		*err = cerr
	}
}

// transpose queues dst = srcᵀ, each of the batch prepareTranspose made
// ready (column-major, packed), on h's stream. first says that nothing of
// the operation is queued yet: then a cuBLASLt that refuses the call
// (CUBLAS_STATUS_NOT_SUPPORTED) turns the transform off for this batch's
// type and shape and transpose reports false, not an error. Called in do.
func transpose[T Element](h *Handle, op string, dst, src uintptr, first bool) (bool, error) {
	o, k := &h.raw.lt, elemIndex[T]()
	var one, zero T
	one = T(1)
	r := blib.TrMatrixTransform(o.h, o.desc[k], unsafe.Pointer(&one), src, o.layout, unsafe.Pointer(&zero), 0, 0, dst, o.layout, h.base.RawStream())
	if first && r == blib.NotSupported {
		if o.refused == nil {
			o.refused = map[[3]int64]bool{}
		}
		o.refused[o.key] = true
		return false, nil
	}
	if err := checkLt(op, "cublasLtMatrixTransform", r); err != nil {
		return false, err
	}
	return true, nil
}

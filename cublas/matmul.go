package cublas

import (
	"math/bits"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cublas"
	"github.com/gocuda/cuda/internal/lifetime"
)

// Epilogue is what Matmul applies to each element of its result, after the
// bias.
type Epilogue int

const (
	NoEpilogue Epilogue = iota // the product alone, nothing applied after it
	ReLU                       // max(x, 0)
	GELU                       // GELU in its tanh approximation, as cuBLASLt computes it
)

func (e Epilogue) String() string {
	switch e {
	case NoEpilogue:
		return "none"
	case ReLU:
		return "ReLU"
	case GELU:
		return "GELU"
	}
	return "Epilogue(?)"
}

// cuBLASLt's attributes and epilogues.
const (
	descTransA   = 3 // CUBLASLT_MATMUL_DESC_TRANSA, int32
	descTransB   = 4 // CUBLASLT_MATMUL_DESC_TRANSB, int32
	descEpilogue = 7 // CUBLASLT_MATMUL_DESC_EPILOGUE, uint32
	descBias     = 8 // CUBLASLT_MATMUL_DESC_BIAS_POINTER, a pointer

	prefMaxWorkspace = 1 // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64
	prefAlignA       = 5 // CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, uint32; B, C and D follow

	epiDefault = 1  // CUBLASLT_EPILOGUE_DEFAULT
	epiReLU    = 2  // CUBLASLT_EPILOGUE_RELU
	epiBias    = 4  // CUBLASLT_EPILOGUE_BIAS, or'ed with the others
	epiGELU    = 32 // CUBLASLT_EPILOGUE_GELU
)

// planKey is what a Matmul's descriptors and algorithm depend on.
type planKey struct {
	dt, compute, transA, transB, m, n, k, lda, ldb, ldc int32
	epilogue                                            uint32
	align                                               [4]uint32 // of the first operand, the second, C and the bias
}

// plan is cuBLASLt's description of one shape of product and the algorithm
// its heuristic chose, kept by the Handle for the next product of that
// shape.
type plan struct {
	desc       clib.LtMatmulDesc
	la, lb, lc clib.LtMatrixLayout
	// heuristic is the heuristic's choice: the algorithm, its workspace
	// size, state and waves.
	heuristic clib.LtMatmulHeuristicResult
}

// destroy releases p's descriptors, each zeroed once gone, so that a
// failed destroy can be tried again.
func (p *plan) destroy(op string) error {
	if p.desc != 0 {
		if err := checkLt(op, "cublasLtMatmulDescDestroy", clib.LtMatmulDescDestroy(p.desc)); err != nil {
			return err
		}
		p.desc = 0
	}
	for _, l := range []*clib.LtMatrixLayout{&p.la, &p.lb, &p.lc} {
		if *l != 0 {
			if err := checkLt(op, "cublasLtMatrixLayoutDestroy", clib.LtMatrixLayoutDestroy(*l)); err != nil {
				return err
			}
			*l = 0
		}
	}
	return nil
}

// alignment returns the largest power of two up to 256 that divides p.
func alignment(p uintptr) uint32 {
	if p == 0 {
		return 256
	}
	return uint32(1) << min(bits.TrailingZeros64(uint64(p)), 8)
}

// Matmul computes C = epi(alpha·A·B + beta·C + bias) with cuBLASLt, with
// A the m×k matrix a, B the k×n matrix b and C the m×n matrix c, as for
// Gemm. bias, if not nil, is added to every row of C (one element per
// column, as in y = x·W + b), needs a row-major c, and may not share
// memory with c. The descriptors and the algorithm cuBLASLt's heuristic
// chooses are made once per shape and kept by the handle until Close.
func Matmul[T cuda.AnyFloat](h *Handle, alpha float64, a, b Matrix[T], beta float64, c Matrix[T], epi Epilogue, bias *cuda.DeviceBuffer[T]) error {
	const op = "Matmul"
	if err := h.valid(op); err != nil {
		return err
	}
	if epi != NoEpilogue && epi != ReLU && epi != GELU {
		return errorf(op, cuda.ErrInvalidValue, "epi is %d: want NoEpilogue, ReLU or GELU", int(epi))
	}
	p, err := checkProduct(op, h, a, b, c, 1, "")
	if err != nil {
		return err
	}
	if err := openLt(op); err != nil {
		return err
	}
	mem := []cuda.Memory{a.Data, b.Data, c.Data}
	epilogue := uint32(map[Epilogue]uint32{NoEpilogue: epiDefault, ReLU: epiReLU, GELU: epiGELU}[epi])
	var biasPtr uintptr
	if bias != nil {
		switch {
		case c.Layout != RowMajor:
			return errorf(op, cuda.ErrInvalidValue, "a bias needs a row-major c (it is added to every row)")
		case bias.Len() != c.Cols:
			return errorf(op, cuda.ErrInvalidValue, "bias has %d elements: want one per column of c, %d", bias.Len(), c.Cols)
		case bias.Context() != h.base.Context():
			return contextError(op, "bias", bias.Context())
		}
		lo, hi := c.bytes(1)
		if blo, bhi := uint64(bias.Ptr()), uint64(bias.Ptr())+uint64(bias.ByteSize()); lo < bhi && blo < hi {
			return aliasError(op, "c", c.Data, "bias", bias, "bias shares memory with c: cuBLASLt reads it while it writes c, and the result is undefined")
		}
		biasPtr = uintptr(bias.Ptr())
		mem = append(mem, bias)
		if epi == NoEpilogue {
			epilogue = epiBias
		} else {
			epilogue |= epiBias
		}
	}
	if p.m == 0 || p.n == 0 {
		// C has no elements: nothing to compute, and cuBLASLt fails to
		// launch (CUBLAS_STATUS_EXECUTION_FAILED) on an empty C. What a
		// call with work holds is held all the same (a closed handle or
		// stream, a freed operand or bias, is ErrClosed).
		return h.core().Idle(op, mem)
	}
	dt := dataType[T]()
	return h.do(op, mem, func(stream uintptr) error {
		compute, al, be := computeType[T](h.math, alpha, beta)
		key := planKey{dt: dt, compute: compute, transA: p.transA, transB: p.transB, m: p.m, n: p.n, k: p.k,
			lda: int32(p.first.ld()), ldb: int32(p.second.ld()), ldc: int32(c.ld()), epilogue: epilogue,
			align: [4]uint32{alignment(uintptr(p.first.Data.Ptr())), alignment(uintptr(p.second.Data.Ptr())), alignment(uintptr(c.Data.Ptr())), alignment(biasPtr)}}
		pl, err := h.plan(op, key, biasPtr)
		if err != nil {
			return err
		}
		if biasPtr != 0 {
			if err := checkLt(op, "cublasLtMatmulDescSetAttribute", clib.LtMatmulDescSetAttribute(pl.desc, descBias,
				unsafe.Pointer(&biasPtr), unsafe.Sizeof(biasPtr))); err != nil {
				return err
			}
		}
		cp := uintptr(c.Data.Ptr())
		return checkLt(op, "cublasLtMatmul", clib.LtMatmul(h.raw.lt, pl.desc, al,
			uintptr(p.first.Data.Ptr()), pl.la, uintptr(p.second.Data.Ptr()), pl.lb, be, cp, pl.lc, cp, pl.lc,
			&pl.heuristic.Algo, uintptr(h.base.Buffer(0).Ptr()), WorkspaceBytes, stream))
	})
}

// plan returns the plan of key, making it (and the cuBLASLt handle) on
// first use. Called in h's turn, with the context current.
func (h *Handle) plan(op string, key planKey, bias uintptr) (*plan, error) {
	if p, ok := h.plans[key]; ok {
		return p, nil
	}
	if h.raw.lt == 0 {
		if err := checkLt(op, "cublasLtCreate", clib.LtCreate(&h.raw.lt)); err != nil {
			return nil, err
		}
	}
	p := new(plan)
	if err := p.make(op, h.raw.lt, key, bias); err != nil {
		lifetime.CloseTemp(&err, func() error { return p.destroy(op) })
		return nil, err
	}
	h.plans[key] = p
	return p, nil
}

// make makes p's descriptors for key and asks cuBLASLt's heuristic for the
// best algorithm.
func (p *plan) make(op string, lt clib.LtHandle, key planKey, bias uintptr) (err error) {
	scale := int32(typeF32)
	if key.compute == compute64F {
		scale = typeF64
	}
	if err := checkLt(op, "cublasLtMatmulDescCreate", clib.LtMatmulDescCreate(&p.desc, key.compute, scale)); err != nil {
		return err
	}
	transA, transB, epilogue := key.transA, key.transB, key.epilogue
	for _, a := range []struct {
		attr int32
		v    unsafe.Pointer
		size uintptr
	}{
		{descTransA, unsafe.Pointer(&transA), 4},
		{descTransB, unsafe.Pointer(&transB), 4},
		{descEpilogue, unsafe.Pointer(&epilogue), 4},
		{descBias, unsafe.Pointer(&bias), 8},
	} {
		if err := checkLt(op, "cublasLtMatmulDescSetAttribute", clib.LtMatmulDescSetAttribute(p.desc, a.attr, a.v, a.size)); err != nil {
			return err
		}
	}
	// The layouts are of the operands' memory, before their operation.
	rowsA, colsA := key.m, key.k
	if key.transA == opT {
		rowsA, colsA = key.k, key.m
	}
	rowsB, colsB := key.k, key.n
	if key.transB == opT {
		rowsB, colsB = key.n, key.k
	}
	for _, l := range []struct {
		out            *clib.LtMatrixLayout
		rows, cols, ld int32
	}{{&p.la, rowsA, colsA, key.lda}, {&p.lb, rowsB, colsB, key.ldb}, {&p.lc, key.m, key.n, key.ldc}} {
		if err := checkLt(op, "cublasLtMatrixLayoutCreate", clib.LtMatrixLayoutCreate(l.out, key.dt, uint64(l.rows), uint64(l.cols), int64(l.ld))); err != nil {
			return err
		}
	}
	var pref clib.LtMatmulPreference
	if err := checkLt(op, "cublasLtMatmulPreferenceCreate", clib.LtMatmulPreferenceCreate(&pref)); err != nil {
		return err
	}
	defer lifetime.CloseTemp(&err, func() error {
		return checkLt(op, "cublasLtMatmulPreferenceDestroy", clib.LtMatmulPreferenceDestroy(pref))
	})
	ws := uint64(WorkspaceBytes)
	if err := checkLt(op, "cublasLtMatmulPreferenceSetAttribute", clib.LtMatmulPreferenceSetAttribute(pref, prefMaxWorkspace, unsafe.Pointer(&ws), 8)); err != nil {
		return err
	}
	// Algorithms that need more alignment than the pointers have are
	// left out (cuBLASLt assumes 256 bytes).
	align := [4]uint32{key.align[0], key.align[1], key.align[2], key.align[2]}
	for i := range align {
		if err := checkLt(op, "cublasLtMatmulPreferenceSetAttribute", clib.LtMatmulPreferenceSetAttribute(pref, prefAlignA+int32(i), unsafe.Pointer(&align[i]), 4)); err != nil {
			return err
		}
	}
	returned := new(int32)
	if err := checkLt(op, "cublasLtMatmulAlgoGetHeuristic", clib.LtMatmulAlgoGetHeuristic(lt, p.desc, p.la, p.lb, p.lc, p.lc, pref, 1,
		&p.heuristic, returned)); err != nil {
		return err
	}
	if *returned == 0 {
		return errorf(op, cuda.ErrNotSupported, "cuBLASLt has no algorithm for this product (%d×%d×%d)", key.m, key.n, key.k)
	}
	return nil
}

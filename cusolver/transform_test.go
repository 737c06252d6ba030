package cusolver_test

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
	blib "github.com/gocuda/cuda/internal/lib/cublas"
)

// TestTransposeBatch: cuBLASLt's batched transform transposes each of a
// batch of packed n×n matrices exactly, for every element type the
// package has (float32, float64, complex64, complex128; the complex ones
// not conjugated), at several sizes and counts, the layout and
// descriptors remade as the batch changes. On a GPU whose cuBLASLt
// refuses a type, the test says so: CholeskyBatched then factors in
// cuSOLVER's slow triangle.
func TestTransposeBatch(t *testing.T) {
	t.Run("float32", testTransposeBatch[float32])
	t.Run("float64", testTransposeBatch[float64])
	t.Run("complex64", testTransposeBatch[complex64])
	t.Run("complex128", testTransposeBatch[complex128])
}

func testTransposeBatch[T cusolver.Element](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct{ n, count int }{{1, 1}, {2, 3}, {8, 100}, {8, 7}, {17, 5}, {32, 3}} {
		src := make([]T, c.n*c.n*c.count)
		for i := range src {
			src[i] = randomElement[T](rng)
		}
		a := cudatest.Upload(t, ctx, src)
		b := cudatest.Upload(t, ctx, make([]T, len(src)))
		ok, err := cusolver.TransposeBatch(h, b, a, c.n, c.count)
		if err != nil {
			t.Fatalf("%d×%d ×%d: %v", c.n, c.n, c.count, err)
		}
		if !ok {
			t.Logf("cuBLASLt (%s) refuses this type's transform: CholeskyBatched takes cuSOLVER's slow triangle for it", cusolver.OpenLt())
			return
		}
		if err := h.Stream().Synchronize(); err != nil {
			t.Fatal(err)
		}
		got := cudatest.Download(t, b)
		n := c.n
		for m := 0; m < c.count; m++ {
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if g, w := got[m*n*n+i+j*n], src[m*n*n+j+i*n]; g != w {
						t.Fatalf("%d×%d ×%d: matrix %d (%d,%d) is %v, want %v", n, n, c.count, m, i, j, g, w)
					}
				}
			}
		}
	}
}

// randomElement returns a random T, its imaginary part too where T is
// complex.
func randomElement[T cusolver.Element](rng *rand.Rand) T {
	re, im := 2*rng.Float64()-1, 2*rng.Float64()-1
	var v T
	switch p := any(&v).(type) {
	case *float32:
		*p = float32(re)
	case *float64:
		*p = re
	case *complex64:
		*p = complex(float32(re), float32(im))
	case *complex128:
		*p = complex(re, im)
	}
	return v
}

// TestFakeTransformChecks (fake): the fake's cuBLASLt transform is as
// strict as the library's: attributes at their C sizes, a transform
// descriptor and layouts that agree on the type and the shape, no B
// without beta (and none the fake adds), no transpose onto itself, device
// memory, a live handle.
func TestFakeTransformChecks(t *testing.T) {
	fake := cudatest.Fake(t)
	if fake == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	a := cudatest.Upload(t, ctx, make([]float32, 64))
	c := cudatest.Upload(t, ctx, make([]float32, 64))
	if cusolver.OpenLt() == "" {
		t.Fatal("the fake's cuBLASLt did not open")
	}
	must := func(what string, r blib.Result) {
		t.Helper()
		if r != blib.Success {
			t.Fatalf("%s = %v", what, r)
		}
	}
	var lt blib.LtHandle
	must("cublasLtCreate", blib.TrCreate(&lt))
	defer blib.TrDestroy(lt)
	layout := func(dt int32, rows, cols uint64, batch int32, stride int64) blib.LtMatrixLayout {
		t.Helper()
		var l blib.LtMatrixLayout
		must("cublasLtMatrixLayoutCreate", blib.TrMatrixLayoutCreate(&l, dt, rows, cols, int64(rows)))
		must("set BATCH_COUNT", blib.TrMatrixLayoutSetAttribute(l, layoutBatchCount, unsafe.Pointer(&batch), 4))
		must("set STRIDED_BATCH_OFFSET", blib.TrMatrixLayoutSetAttribute(l, layoutBatchStride, unsafe.Pointer(&stride), 8))
		t.Cleanup(func() { blib.TrMatrixLayoutDestroy(l) })
		return l
	}
	var desc blib.LtMatrixTransformDesc
	must("cublasLtMatrixTransformDescCreate", blib.TrMatrixTransformDescCreate(&desc, dtF32))
	defer blib.TrMatrixTransformDescDestroy(desc)
	trans := int32(1)
	must("set TRANSA", blib.TrMatrixTransformDescSetAttribute(desc, transformTransA, unsafe.Pointer(&trans), 4))
	sq := layout(dtF32, 4, 4, 4, 16)
	wide := layout(dtF32, 2, 8, 4, 16)
	tall := layout(dtF32, 8, 2, 4, 16)
	three := layout(dtF32, 4, 4, 3, 16)
	f64 := layout(dtF64, 4, 4, 4, 16)
	one, zero := float32(1), float32(0)
	pa, pc := uintptr(a.Ptr()), uintptr(c.Ptr())
	batch := int32(2)
	// With the context current, on the stream's thread: as package
	// cusolver calls cuBLASLt.
	err := s.Do(func(raw uintptr) error {
		checkTransforms(t, []struct {
			name string
			r    blib.Result
			want blib.Result
		}{
			{"batch count of 8 bytes", blib.TrMatrixLayoutSetAttribute(sq, layoutBatchCount, unsafe.Pointer(&stride8), 8), blib.InvalidValue},
			{"batch count 0", blib.TrMatrixLayoutSetAttribute(sq, layoutBatchCount, unsafe.Pointer(&zero32), 4), blib.InvalidValue},
			{"TRANSA of 8 bytes", blib.TrMatrixTransformDescSetAttribute(desc, transformTransA, unsafe.Pointer(&stride8), 8), blib.InvalidValue},
			{"descriptor of an unknown type", blib.TrMatrixTransformDescCreate(new(blib.LtMatrixTransformDesc), 99), blib.InvalidValue},
			{"no handle", blib.TrMatrixTransform(0, desc, unsafe.Pointer(&one), pa, sq, unsafe.Pointer(&zero), 0, 0, pc, sq, raw), blib.NotInitialized},
			{"no alpha", blib.TrMatrixTransform(lt, desc, nil, pa, sq, unsafe.Pointer(&zero), 0, 0, pc, sq, raw), blib.InvalidValue},
			{"transposed shape", blib.TrMatrixTransform(lt, desc, unsafe.Pointer(&one), pa, wide, unsafe.Pointer(&zero), 0, 0, pc, tall, raw), blib.Success},
			{"shapes that disagree", blib.TrMatrixTransform(lt, desc, unsafe.Pointer(&one), pa, wide, unsafe.Pointer(&zero), 0, 0, pc, wide, raw), blib.InvalidValue},
			{"batches that disagree", blib.TrMatrixTransform(lt, desc, unsafe.Pointer(&one), pa, sq, unsafe.Pointer(&zero), 0, 0, pc, three, raw), blib.InvalidValue},
			{"types that disagree", blib.TrMatrixTransform(lt, desc, unsafe.Pointer(&one), pa, f64, unsafe.Pointer(&zero), 0, 0, pc, f64, raw), blib.NotSupported},
			{"beta without B", blib.TrMatrixTransform(lt, desc, unsafe.Pointer(&one), pa, sq, unsafe.Pointer(&one), 0, 0, pc, sq, raw), blib.InvalidValue},
			{"onto itself", blib.TrMatrixTransform(lt, desc, unsafe.Pointer(&one), pa, sq, unsafe.Pointer(&zero), 0, 0, pa, sq, raw), blib.InvalidValue},
			{"host memory", blib.TrMatrixTransform(lt, desc, unsafe.Pointer(&one), uintptr(unsafe.Pointer(&batch)), sq, unsafe.Pointer(&zero), 0, 0, pc, sq, raw), blib.ExecutionFailed},
			{"a batch past the buffer", blib.TrMatrixTransform(lt, desc, unsafe.Pointer(&one), pa, layout(dtF32, 4, 4, 5, 16), unsafe.Pointer(&zero), 0, 0, pc, layout(dtF32, 4, 4, 5, 16), raw), blib.ExecutionFailed},
			{"no stream", blib.TrMatrixTransform(lt, desc, unsafe.Pointer(&one), pa, sq, unsafe.Pointer(&zero), 0, 0, pc, sq, 0), blib.ExecutionFailed},
		})
		return nil
	}, a, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// checkTransforms checks what each call returned.
func checkTransforms(t *testing.T, calls []struct {
	name string
	r    blib.Result
	want blib.Result
}) {
	t.Helper()
	for _, tt := range calls {
		if tt.r != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.r, tt.want)
		}
	}
}

var (
	stride8 = int64(16)
	zero32  = int32(0)
)

// cuBLASLt's and CUDA's values (cublasLt.h, library_types.h).
const (
	layoutBatchCount  = 5 // CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
	layoutBatchStride = 6 // CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET
	transformTransA   = 2 // CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA
	dtF32             = 0 // CUDA_R_32F
	dtF64             = 1 // CUDA_R_64F
)

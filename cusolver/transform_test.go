package cusolver_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestTransposeKernelLoads: the driver compiles CholeskyBatched's
// transpose (PTX written by hand) and has its entry; a refusal shows
// here with the JIT's log, where CholeskyBatched would only be slower.
func TestTransposeKernelLoads(t *testing.T) {
	ctx := cudatest.Context(t)
	mod, err := ctx.LoadModule([]byte(cusolver.TransposePTX))
	if err != nil {
		t.Fatalf("loading the transpose's PTX: %v", err)
	}
	defer mod.Close()
	if _, err := mod.Function("gocuda_transpose_batch"); err != nil {
		t.Fatalf("the transpose's entry: %v", err)
	}
}

// TestTransposeBatch: CholeskyBatched's kernel transposes each of a batch
// of packed n×n matrices exactly (plain transposes: the complex ones not
// conjugated), for every element type the package has, at sizes from 1
// to 97 (both of its grids) and odd counts, and one large float32
// matrix, against the host's transpose;
// the elements past the batch in dst are not written, and src is left as
// it was.
func TestTransposeBatch(t *testing.T) {
	t.Run("float32", testTransposeBatch[float32])
	t.Run("float64", testTransposeBatch[float64])
	t.Run("complex64", testTransposeBatch[complex64])
	t.Run("complex128", testTransposeBatch[complex128])
	t.Run("float32/large", func(t *testing.T) {
		// 4099×4099 on a GPU (129×513 tiles); 1025×1025 on the fake (33×129),
		// whose copies and host checks of 17 million elements take 16 s
		// under the race detector.
		n := 4099
		if cudatest.IsFake() {
			n = 1025
		}
		ctx, h := handle(t)
		checkTranspose[float32](t, ctx, h, rand.New(rand.NewPCG(9, 10)), n, 1)
	})
}

func testTransposeBatch[T cusolver.Element](t *testing.T) {
	ctx, h := handle(t)
	rng := rand.New(rand.NewPCG(5, 6))
	// n up to 16 take whole matrices a block (2: 64 of them, 3: 28),
	// larger ones tiles of 32×8 (97: 4×13 tiles, the last ones partly).
	for _, n := range []int{1, 2, 3, 8, 16, 17, 97} {
		for _, count := range []int{1, 7, 33, 65} {
			t.Run(fmt.Sprintf("%dx%d/%d", n, n, count), func(t *testing.T) {
				checkTranspose[T](t, ctx, h, rng, n, count)
			})
		}
	}
}

// checkTranspose transposes count random n×n matrices with the kernel
// and checks them against the host's transposes.
func checkTranspose[T cusolver.Element](t *testing.T, ctx *cuda.Context, h *cusolver.Handle, rng *rand.Rand, n, count int) {
	t.Helper()
	const tail = 5 // elements after the batch in dst, which must stay
	src := make([]T, n*n*count)
	for i := range src {
		src[i] = randomElement[T](rng)
	}
	marks := make([]T, len(src)+tail)
	for i := range marks {
		marks[i] = T(-1)
	}
	a := cudatest.Upload(t, ctx, src)
	b := cudatest.Upload(t, ctx, marks)
	defer func() { a.Free(); b.Free() }()
	ok, err := cusolver.TransposeBatch(h, b, a, n, count)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("the kernel did not take the batch: CholeskyBatched would take cuSOLVER's slow triangle")
	}
	if err := h.Stream().Synchronize(); err != nil {
		t.Fatal(err)
	}
	checkTransposed(t, cudatest.Download(t, b), src, n, count)
	if back := cudatest.Download(t, a); !slices.Equal(back, src) {
		t.Fatal("src changed")
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

// TestTransposeBatchWide (GPU): a batch of more than 2³² elements, whose
// offsets the kernel takes in 64 bits; 3×3 float32 matrices (2×16 GiB),
// the first, the one across element 2³², and the last checked. Skipped
// on the fake and where the device lacks the memory.
func TestTransposeBatchWide(t *testing.T) {
	if cudatest.IsFake() {
		t.Skip("the fake driver: 32 GiB of host memory")
	}
	const n, count = 3, 1<<32/9 + 2 // 4,294,967,310 elements
	ctx, h := handle(t)
	a, err := cuda.Alloc[float32](ctx, n*n*count)
	if err != nil {
		t.Skipf("the batch's 16 GiB: %v", err)
	}
	defer a.Free()
	b, err := cuda.Alloc[float32](ctx, n*n*count)
	if err != nil {
		t.Skipf("the transposes' 16 GiB: %v", err)
	}
	defer b.Free()
	if err := a.Memset32(0); err != nil {
		t.Fatal(err)
	}
	if err := b.Memset32(0xffffffff); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	checked := []int{0, 1<<32/9 - 1, 1 << 32 / 9, count - 1} // 1<<32/9: elements 2³²-4 to 2³²+4
	want := map[int][]float32{}
	for _, m := range checked {
		v := make([]float32, n*n)
		for i := range v {
			v[i] = rng.Float32() + 1
		}
		s := must(a.Slice(m*n*n, n*n))(t)
		if err := s.CopyFromHost(v); err != nil {
			t.Fatal(err)
		}
		want[m] = v
	}
	ok, err := cusolver.TransposeBatch(h, b, a, n, count)
	if err != nil || !ok {
		t.Fatalf("TransposeBatch = %v, %v", ok, err)
	}
	if err := h.Stream().Synchronize(); err != nil {
		t.Fatal(err)
	}
	for _, m := range checked {
		got := make([]float32, n*n)
		if err := must(b.Slice(m*n*n, n*n))(t).CopyToHost(got); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if g, w := got[i+j*n], want[m][j+i*n]; g != w {
					t.Fatalf("matrix %d (%d,%d) is %v, want %v", m, i, j, g, w)
				}
			}
		}
	}
}

// checkTransposed fails t unless got holds the count n×n matrices of src
// transposed, then only the -1s that marked the elements after them.
func checkTransposed[T cusolver.Element](t *testing.T, got, src []T, n, count int) {
	t.Helper()
	for m := 0; m < count; m++ {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if g, w := got[m*n*n+i+j*n], src[m*n*n+j+i*n]; g != w {
					t.Fatalf("matrix %d (%d,%d) is %v, want %v", m, i, j, g, w)
				}
			}
		}
	}
	for i, g := range got[len(src):] {
		if g != T(-1) {
			t.Fatalf("element %d after the batch was written: %v", i, g)
		}
	}
}

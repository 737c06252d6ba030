package compute_test

import (
	"math"
	"runtime"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// largeN is the large count: past 2^28 elements, by a tail that
// no vector covers; a float64 buffer of it spans more than 2^31 bytes.
const largeN = 1<<28 + 5

// parallel runs f over [0, n) in a few pieces, one goroutine each.
func parallel(n int, f func(lo, hi int)) {
	var wg sync.WaitGroup
	pieces := runtime.GOMAXPROCS(0)
	for p := range pieces {
		wg.Go(func() { f(n*p/pieces, n*(p+1)/pieces) })
	}
	wg.Wait()
}

// firstWrong returns the first i in [0, n) where ok(i) is false, or -1.
func firstWrong(n int, ok func(i int) bool) int {
	var mu sync.Mutex
	bad := -1
	parallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if !ok(i) {
				mu.Lock()
				if bad < 0 || i < bad {
					bad = i
				}
				mu.Unlock()
				return
			}
		}
	})
	return bad
}

// TestLargeCount runs a kernel of each kind over 2^28+5 elements: an
// elementwise kernel of two buffers and a scalar one (float64: byte
// offsets past 2^31), a cast to a narrower type, Iota (indices in the
// results), a fill of bytes (16 at a time and a tail), Where, a whole Sum,
// ArgMax finding the last element, and a reduction per column.
func TestLargeCount(t *testing.T) {
	if testing.Short() {
		t.Skip("large buffers: not with -short")
	}
	if cudatest.IsFake() {
		t.Skip("2^28 elements: minutes on the fake driver, which runs the kernels on the CPU")
	}
	e := gpu(t)
	n := largeN
	a := make([]float64, n)
	parallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			a[i] = float64(i%1000) - 500.25
		}
	})
	da := cudatest.Upload(t, e.ctx, a)
	db := must(cuda.Alloc[float64](e.ctx, n))(t)
	defer db.Free()
	if err := compute.Iota(db, 0, 1, e.s); err != nil {
		t.Fatal(err)
	}
	if err := compute.Add(db, da, db, e.s); err != nil { // a[i] + i
		t.Fatal(err)
	}
	got := cudatest.Download(t, db)
	if i := firstWrong(n, func(i int) bool { return got[i] == a[i]+float64(i) }); i >= 0 {
		t.Fatalf("Iota then Add: element %d = %v, want %v", i, got[i], a[i]+float64(i))
	}
	if err := compute.MulScalar(db, da, 2, e.s); err != nil {
		t.Fatal(err)
	}
	got = cudatest.Download(t, db)
	if i := firstWrong(n, func(i int) bool { return got[i] == 2*a[i] }); i >= 0 {
		t.Fatalf("MulScalar: element %d = %v, want %v", i, got[i], 2*a[i])
	}
	got = nil
	db.Free()

	// float64 to float32, then a whole sum and ArgMax of the float32s.
	f := must(cuda.Alloc[float32](e.ctx, n))(t)
	defer f.Free()
	if err := compute.Cast(f, da, e.s); err != nil {
		t.Fatal(err)
	}
	hf := cudatest.Download(t, f)
	if i := firstWrong(n, func(i int) bool { return hf[i] == float32(a[i]) }); i >= 0 {
		t.Fatalf("Cast: element %d = %v, want %v", i, hf[i], float32(a[i]))
	}
	var want, magnitude float64
	for _, v := range hf {
		want += float64(v)
		magnitude += math.Abs(float64(v))
	}
	sum := must(cuda.Alloc[float32](e.ctx, 1))(t)
	defer sum.Free()
	if err := compute.Sum(sum, f, e.s); err != nil {
		t.Fatal(err)
	}
	// float32 sums of 2^28 terms: off by some units of the last place of
	// the partial sums, whose size is bounded by the terms' magnitudes.
	if got := float64(cudatest.Download(t, sum)[0]); math.Abs(got-want) > 1e-6*magnitude {
		t.Errorf("Sum = %v, want %v (within %v)", got, want, 1e-6*magnitude)
	}
	last := []float32{1e9}
	if err := must(f.Slice(n-1, 1))(t).CopyFromHost(last); err != nil {
		t.Fatal(err)
	}
	idx := must(cuda.Alloc[int64](e.ctx, 1))(t)
	defer idx.Free()
	if err := compute.ArgMax(idx, f, e.s); err != nil {
		t.Fatal(err)
	}
	if got := cudatest.Download(t, idx)[0]; got != int64(n-1) {
		t.Errorf("ArgMax = %d, want %d", got, n-1)
	}

	// Per column: the first 2^28 elements as 2^14 rows of 2^14.
	sh := compute.Shape{Rows: 1 << 14, Cols: 1 << 14}
	cols := must(cuda.Alloc[float32](e.ctx, sh.Cols))(t)
	defer cols.Free()
	if err := compute.MaxAxis(cols, must(f.Slice(0, sh.Rows*sh.Cols))(t), sh, compute.PerColumn, e.s); err != nil {
		t.Fatal(err)
	}
	for c, got := range cudatest.Download(t, cols) {
		m := float32(math.Inf(-1))
		for r := range sh.Rows {
			m = max(m, hf[r*sh.Cols+c])
		}
		if got != m {
			t.Errorf("MaxAxis per column: column %d = %v, want %v", c, got, m)
		}
	}
	hf = nil
	f.Free()

	// Bytes: a fill, then Where choosing by them.
	mask := must(cuda.Alloc[uint8](e.ctx, n))(t)
	defer mask.Free()
	if err := compute.Fill(mask, 1, e.s); err != nil {
		t.Fatal(err)
	}
	if err := must(mask.Slice(n-3, 3))(t).Memset8(0); err != nil {
		t.Fatal(err)
	}
	w := must(cuda.Alloc[uint8](e.ctx, n))(t)
	defer w.Free()
	ones, twos := must(cuda.Alloc[uint8](e.ctx, n))(t), must(cuda.Alloc[uint8](e.ctx, n))(t)
	defer ones.Free()
	defer twos.Free()
	if err := compute.Fill(ones, 1, e.s); err != nil {
		t.Fatal(err)
	}
	if err := compute.Fill(twos, 2, e.s); err != nil {
		t.Fatal(err)
	}
	if err := compute.Where(w, mask, ones, twos, e.s); err != nil {
		t.Fatal(err)
	}
	hw := cudatest.Download(t, w)
	if i := firstWrong(n, func(i int) bool { return hw[i] == 1 && i < n-3 || hw[i] == 2 && i >= n-3 }); i >= 0 {
		t.Fatalf("Fill then Where: byte %d = %d", i, hw[i])
	}
}

package compute_test

import (
	"fmt"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestTransposeSkinny: matrices of 1 to 7 rows or columns (_skinny: tiles
// of the whole short side by a span of the long one, staged in shared
// memory) of every element width (1, 2, 4 and 8 bytes: spans of 1024 and
// 512), long sides around a block's span (one short, one, one past, two
// and a few), both buffers views an element into theirs, against the
// host's transpose, element for element.
func TestTransposeSkinny(t *testing.T) {
	e := gpu(t)
	transposeSkinnyOf[int8](t, e, 1024)
	transposeSkinnyOf[cuda.Float16](t, e, 1024)
	transposeSkinnyOf[float32](t, e, 1024)
	transposeSkinnyOf[float64](t, e, 512)
}

func transposeSkinnyOf[T cuda.Number](t *testing.T, e env, span int) {
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		for k := 1; k <= 7; k++ {
			for _, n := range []int{1, 5, span - 1, span, span + 1, 2*span + 3} {
				for _, sh := range []compute.Shape{{Rows: k, Cols: n}, {Rows: n, Cols: k}} {
					t.Run(fmt.Sprintf("%dx%d", sh.Rows, sh.Cols), func(t *testing.T) {
						checkTranspose[T](t, e, sh)
					})
				}
			}
		}
	})
}

// checkTranspose checks Transpose of sh from a view one element into its
// buffer into another such view, against the host's.
func checkTranspose[T cuda.Number](t *testing.T, e env, sh compute.Shape) {
	t.Helper()
	n := sh.Rows * sh.Cols
	x := make([]T, n)
	for i := range x {
		x[i] = T(i%97 + 1)
	}
	srcBase := must(cuda.Alloc[T](e.ctx, n+1))(t)
	defer srcBase.Free()
	dstBase := must(cuda.Zeroed[T](e.ctx, n+2))(t)
	defer dstBase.Free()
	src, dst := must(srcBase.Slice(1, n))(t), must(dstBase.Slice(1, n))(t)
	if err := src.CopyFromHost(x); err != nil {
		t.Fatal(err)
	}
	if err := compute.Transpose(dst, src, sh, e.s); err != nil {
		t.Fatal(err)
	}
	got := cudatest.Download(t, dstBase)
	if got[0] != 0 || got[n+1] != 0 {
		t.Fatalf("Transpose %v wrote outside dst: %v before, %v after", sh, got[0], got[n+1])
	}
	for r := range sh.Rows {
		for c := range sh.Cols {
			if g, w := got[1+c*sh.Rows+r], x[r*sh.Cols+c]; g != w {
				t.Fatalf("Transpose %v: dst[%d,%d] = %v, want %v", sh, c, r, g, w)
			}
		}
	}
}

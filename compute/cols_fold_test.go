package compute_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// colsFoldShapes hit _colsv's and _cols' last-block folds of a few chunks
// of rows, several columns a warp at once (layout_cols.go's foldBatch), on
// the fake driver (4 multiprocessors): float32 1000×100 is _colsv (fewer
// than 128 columns) of 16 chunks, its block of columns 100 of 128 wide
// (float64's two blocks, the last 36 of 64); 300×520
// float16 _colsv of 5 chunks, 256 columns a block, the last 8 wide;
// 600×130 float32 _cols of 3 chunks; float64's fold a column at a time.
var colsFoldShapes = []compute.Shape{{Rows: 1000, Cols: 100}, {Rows: 300, Cols: 520}, {Rows: 600, Cols: 130}}

// TestColumnFoldBatches: SumAxis and MaxAxis per column of
// colsFoldShapes, in float32, float16 and float64, from an aligned buffer
// and from a view one element in, equal the host's fold (small integers: exact sums), and the
// same bits in a graph capture, whose partial results a second kernel
// folds, as outside it.
func TestColumnFoldBatches(t *testing.T) {
	e := gpu(t)
	columnFoldBatchesOf[float32](t, e)
	columnFoldBatchesOf[cuda.Float16](t, e)
	columnFoldBatchesOf[float64](t, e)
}

func columnFoldBatchesOf[T cuda.AnyFloat](t *testing.T, e env) {
	t.Helper()
	for _, tc := range []struct {
		sh   compute.Shape
		view bool
	}{{colsFoldShapes[0], false}, {colsFoldShapes[0], true}, {colsFoldShapes[1], false}, {colsFoldShapes[1], true}, {colsFoldShapes[2], false}, {colsFoldShapes[2], true}} {
		sh := tc.sh
		t.Run(fmt.Sprintf("%T/%dx%d/view=%v", *new(T), sh.Rows, sh.Cols, tc.view), func(t *testing.T) {
			n := sh.Rows * sh.Cols
			in := make([]T, n)
			for i := range in {
				in[i] = fromF[T](float64((i*7)%11 - 5)) // small integers: exact sums in any order
			}
			// A view one element in is not aligned for vectors: each
			// column loaded alone, in the same order.
			off := 0
			if tc.view {
				off = 1
			}
			base := must(cuda.Alloc[T](e.ctx, n+1))(t)
			defer base.Free()
			src := must(base.Slice(off, n))(t)
			if err := src.CopyFromHost(in); err != nil {
				t.Fatal(err)
			}
			sums, maxes := must(cuda.Alloc[T](e.ctx, sh.Cols))(t), must(cuda.Alloc[T](e.ctx, sh.Cols))(t)
			defer sums.Free()
			defer maxes.Free()
			record := func() error {
				if err := compute.SumAxis(sums, src, sh, compute.PerColumn, e.s); err != nil {
					return err
				}
				return compute.MaxAxis(maxes, src, sh, compute.PerColumn, e.s)
			}
			if err := record(); err != nil {
				t.Fatal(err)
			}
			gotSums, gotMaxes := cudatest.Download(t, sums), cudatest.Download(t, maxes)
			for c := range sh.Cols {
				sum, most := 0.0, math.Inf(-1)
				for r := range sh.Rows {
					v := toF(in[r*sh.Cols+c])
					sum += v
					most = max(most, v)
				}
				if g := toF(gotSums[c]); g != sum {
					t.Fatalf("column %d: sum %v, want %v", c, g, sum)
				}
				if g := toF(gotMaxes[c]); g != most {
					t.Fatalf("column %d: max %v, want %v", c, g, most)
				}
			}
			g := must(e.s.Capture(cuda.CaptureGlobal, record))(t)
			defer g.Close()
			exec := must(g.Instantiate())(t)
			defer exec.Close()
			if err := sums.Memset8(0); err != nil || maxes.Memset8(0) != nil {
				t.Fatal(err)
			}
			if err := exec.Launch(e.s); err != nil {
				t.Fatal(err)
			}
			if err := e.s.Synchronize(); err != nil {
				t.Fatal(err)
			}
			if got := cudatest.Download(t, sums); !slices.Equal(got, gotSums) {
				t.Errorf("column sums in a graph differ from outside it")
			}
			if got := cudatest.Download(t, maxes); !slices.Equal(got, gotMaxes) {
				t.Errorf("column maxima in a graph differ from outside it")
			}
		})
	}
}

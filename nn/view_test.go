package nn_test

import (
	"fmt"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// TestLayersOnViews: a contiguous view that starts at any element (a
// Slice of whole rows, reshaped) is taken as it is, and gives what a
// fresh array does: the layers' 16-byte vectors and attention's
// tensor-core path are for aligned arrays only, the rest read an element
// at a time.
func TestLayersOnViews(t *testing.T) {
	t.Run("float32", testLayersOnViews[float32])
	t.Run("float16", testLayersOnViews[cuda.Float16])
}

func testLayersOnViews[T nn.Float](t *testing.T) {
	s := layerStream(t)
	tol := 2 * layerTol[T]()
	const rows, cols = 5, 64
	n := rows * cols
	for _, off := range []int{1, 3, 8} {
		t.Run(fmt.Sprint("offset ", off), func(t *testing.T) {
			all := layerRound[T](layerData(4*n+16, uint64(off), -2, 2))
			base := layerUp[T](t, s, all, 4*n+16)
			view := func(o int, shape ...int) *nd.Array[T] {
				t.Helper()
				size := 1
				for _, d := range shape {
					size *= d
				}
				return must(must(base.Slice(0, o, o+size, 1))(t).Reshape(shape...))(t)
			}
			x, xv := view(off, rows, cols), all[off:off+n]
			w, wv := view(n+off+1, cols), all[n+off+1:n+off+1+cols]
			dst := view(2*n+off+5, rows, cols)
			if err := nn.LayerNormInto(dst, x, w, w, 1e-5); err != nil {
				t.Fatal(err)
			}
			layerClose(t, "LayerNormInto", layerDown(t, dst), normRef(false, xv, wv, wv, rows, cols, 1e-5), tol)
			if err := nn.SoftmaxInto(dst, x, 1, nn.Mask{Causal: true}); err != nil {
				t.Fatal(err)
			}
			layerClose(t, "SoftmaxInto", layerDown(t, dst), softmaxRef(xv, 1, rows, cols, 1, true, nil), tol)
			dx, dw, db, err := nn.LayerNormBackward(x, x, w, w, 1e-5)
			if err != nil {
				t.Fatal(err)
			}
			wdx, wdw, wdb := normBackRef(false, xv, xv, wv, rows, cols, 1e-5)
			layerClose(t, "dx", layerDown(t, layerFree(t, dx)), wdx, 4*tol)
			layerClose(t, "dweight", layerDown(t, layerFree(t, dw)), wdw, 4*tol)
			layerClose(t, "dbias", layerDown(t, layerFree(t, db)), wdb, 4*tol)
			targets := []int64{1, 5, 63, 0, 2}
			tg := layerFree(t, must(nd.FromSlice(s, targets, rows))(t))
			_, wg := crossEntropyRef(xv, targets, rows, cols, -100)
			layerClose(t, "CrossEntropyBackward", layerDown(t, layerFree(t, must(nn.CrossEntropyBackward(x, tg, -100, 1))(t))), wg, tol)
			ids := layerFree(t, must(nd.FromSlice(s, []int32{4, 0, 2}, 3))(t))
			e := layerFree(t, must(nn.Embedding(x, ids))(t))
			layerClose(t, "Embedding", layerDown(t, e), append(append(append([]float64{}, xv[4*cols:5*cols]...), xv[:cols]...), xv[2*cols:3*cols]...), 0)
			q, o := view(off, 1, 1, rows, cols), view(2*n+off+5, 1, 1, rows, cols)
			if err := nn.AttentionInto(o, q, q, q, nn.AttentionOptions{Causal: true}); err != nil {
				t.Fatal(err)
			}
			layerClose(t, "AttentionInto", layerDown(t, o), attnRef(attnShape{1, 1, 1, rows, rows, cols, true}, xv, xv, xv, 0.125), 2*attnTol[T]())
		})
	}
}

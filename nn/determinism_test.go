package nn_test

import (
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// TestLayerDeterminism: each layer gives the same bits twice (sums in a
// fixed order, no atomics), at shapes of a block a row and of many rows.
func TestLayerDeterminism(t *testing.T) {
	s := layerStream(t)
	const rows, cols = 300, 1500
	x := layerUp[cuda.BFloat16](t, s, layerData(rows*cols, 1, -3, 3), rows, cols)
	w := layerUp[cuda.BFloat16](t, s, layerData(cols, 2, 0.5, 1.5), cols)
	b := layerUp[cuda.BFloat16](t, s, layerData(cols, 3, -1, 1), cols)
	dy := layerUp[cuda.BFloat16](t, s, layerData(rows*cols, 4, -1, 1), rows, cols)
	tg := layerFree(t, must(nd.FromSlice(s, make([]int32, rows), rows))(t))
	runs := map[string]func() []*nd.Array[cuda.BFloat16]{
		"LayerNorm": func() []*nd.Array[cuda.BFloat16] {
			return []*nd.Array[cuda.BFloat16]{must(nn.LayerNorm(x, w, b, 1e-5))(t)}
		},
		"LayerNormBackward": func() []*nd.Array[cuda.BFloat16] {
			dx, dw, db, err := nn.LayerNormBackward(dy, x, w, b, 1e-5)
			if err != nil {
				t.Fatal(err)
			}
			return []*nd.Array[cuda.BFloat16]{dx, dw, db}
		},
		"Softmax": func() []*nd.Array[cuda.BFloat16] {
			return []*nd.Array[cuda.BFloat16]{must(nn.Softmax(x, 0.5, nn.Mask{}))(t)}
		},
		"CrossEntropyBackward": func() []*nd.Array[cuda.BFloat16] {
			return []*nd.Array[cuda.BFloat16]{must(nn.CrossEntropyBackward(x, tg, -100, 1))(t)}
		},
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			var first [][]cuda.BFloat16
			for i := range 2 {
				for k, a := range run() {
					v := must(layerFree(t, a).ToSlice())(t)
					if i == 0 {
						first = append(first, v)
					} else if !slices.Equal(first[k], v) {
						t.Errorf("result %d differs between two runs", k)
					}
				}
			}
		})
	}
	l1 := layerFree(t, must(nn.CrossEntropy(x, tg, -100))(t))
	l2 := layerFree(t, must(nn.CrossEntropy(x, tg, -100))(t))
	if a, b := must(l1.Item())(t), must(l2.Item())(t); a != b {
		t.Errorf("CrossEntropy %v then %v", a, b)
	}
}

package nn_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// TestIntoAliasing: an output that shares memory with an input, other
// than by being the very memory of an input the call may write in place,
// is refused before anything is written; the arrays are compared by
// their memory, not as pointers (a Reshape of sum as dst, or a view one
// element on from x, is the same memory to the kernel). In place itself,
// through another view of the same memory, still runs.
func TestIntoAliasing(t *testing.T) {
	s := layerStream(t)
	const rows, cols = 4, 8
	n := rows * cols
	// base holds two arrays' worth; at(off) is a [rows, cols] view of it
	// from element off.
	base := layerUp[float32](t, s, layerData(3*n, 1, -1, 1), 3*n)
	at := func(off int, shape ...int) *nd.Array[float32] {
		t.Helper()
		if shape == nil {
			shape = []int{rows, cols}
		}
		size := 1
		for _, d := range shape {
			size *= d
		}
		return must(must(base.Slice(0, off, off+size, 1))(t).Reshape(shape...))(t)
	}
	x := at(0)
	other := layerUp[float32](t, s, layerData(n, 2, -1, 1), rows, cols)
	w := at(2*n, cols)
	ids := layerFree(t, must(nd.FromSlice(s, []int32{0, 1, 2, 3}, rows))(t))
	cache := must(nn.NewKVCache[float32](s, 1, 1, 8, 8))(t)
	t.Cleanup(func() { cache.Free() })
	cacheK := cache.K()
	kvView := func(off, pos int) *nd.Array[float32] {
		return must(must(must(cacheK.Reshape(64))(t).Slice(0, off, off+pos*8, 1))(t).Reshape(1, 1, pos, 8))(t)
	}
	q4 := at(0, 1, 1, 4, 8)
	for _, tc := range []struct {
		name  string
		call  func() error
		words []string
	}{
		{"AddLayerNormInto dst a view of sum", func() error {
			return nn.AddLayerNormInto(other, must(other.Reshape(rows, cols))(t), x, x, nil, nil, 1e-5)
		}, []string{"dst and sum are one array"}},
		{"AddRMSNormInto sum one on from x", func() error { return nn.AddRMSNormInto(at(1), other, x, x, nil, 1e-5) }, []string{"sum overlaps x without being the same memory"}},
		{"LayerNormInto dst one on from x", func() error { return nn.LayerNormInto(at(1), x, nil, nil, 1e-5) }, []string{"dst overlaps x"}},
		{"RMSNormInto dst over the weight", func() error { return nn.RMSNormInto(at(2*n-cols), other, w, 1e-5) }, []string{"dst overlaps weight"}},
		{"GELUInto dst one on from x", func() error { return nn.GELUInto(at(1), x) }, []string{"dst overlaps x"}},
		{"SwiGLUInto dst one back from up", func() error { return nn.SwiGLUInto(at(n-1), other, at(n)) }, []string{"dst overlaps up"}},
		{"SoftmaxInto dst one on from x", func() error { return nn.SoftmaxInto(at(3), x, 1, nn.Mask{}) }, []string{"dst overlaps x"}},
		{"DropoutInto dst one on from x", func() error { return nn.DropoutInto(at(4), x, 0.5, 1, 0) }, []string{"dst overlaps x"}},
		{"RoPEInto dst one on from x", func() error { return nn.RoPEInto(at(2, 1, rows, cols), at(0, 1, rows, cols), 0, nn.Rotary{}) }, []string{"dst overlaps x"}},
		{"EmbeddingInto dst the table", func() error { return nn.EmbeddingInto(x, x, ids) }, []string{"dst and table are one array"}},
		{"AttentionInto out q", func() error { return nn.AttentionInto(q4, q4, q4, q4, nn.AttentionOptions{}) }, []string{"out and q are one array"}},
		{"AttentionInto out over v", func() error {
			return nn.AttentionInto(at(n, 1, 1, 4, 8), q4, q4, at(n+5, 1, 1, 4, 8), nn.AttentionOptions{})
		}, []string{"out overlaps v"}},
		{"KVCache.AttentionInto out the cache", func() error { return cache.AttentionInto(kvView(0, 4), q4, nn.AttentionOptions{}) }, []string{"out overlaps the cache's K"}},
		{"KVCache.Append from the cache", func() error { return cache.Append(kvView(8, 2), at(0, 1, 1, 2, 8)) }, []string{"the cache's K overlaps k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := layerDown(t, base)
			layerWantErr(t, tc.call(), cuda.ErrInvalidValue, tc.words...)
			layerClose(t, "the memory after the refusal", layerDown(t, base), before, 0)
		})
	}
	// In place through another view of the same memory still runs.
	t.Run("in place by a view", func(t *testing.T) {
		if err := nn.SoftmaxInto(must(x.Reshape(rows, cols))(t), x, 1, nn.Mask{Causal: true}); err != nil {
			t.Fatal(err)
		}
		if err := nn.AddRMSNormInto(x, other, x, must(x.Reshape(rows, cols))(t), nil, 1e-5); err != nil {
			t.Fatal(err)
		}
	})
}

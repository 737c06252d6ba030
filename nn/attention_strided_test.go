package nn_test

import (
	"fmt"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// TestAttentionStrided takes q, k and v as views of one projection's
// output [B, S, 3, H, D] (a transformer's packed QKV, in LayoutBSHD:
// each row of a head's positions 3·H·D elements apart), with no copy,
// through every kernel; and a KV cache fed such views, its k and v of
// different strides (k from the packed output, v an array of its own).
func TestAttentionStrided(t *testing.T) {
	t.Run("float32", testAttentionStrided[float32])
	t.Run("float16", testAttentionStrided[cuda.Float16])
	t.Run("bfloat16", testAttentionStrided[cuda.BFloat16])
}

func testAttentionStrided[T nn.Float](t *testing.T) {
	s := layerStream(t)
	for _, path := range attnPaths[T]() {
		for i, c := range []attnShape{
			{1, 2, 2, 7, 7, 64, true},
			{2, 4, 4, 65, 65, 64, true},
			{1, 2, 2, 1, 1, 32, false},
			{1, 3, 3, 33, 33, 80, false},
		} {
			if path == "tc" && (c.D%16 != 0 || c.D > 128) || path == "split" && c.Sq > 16 {
				continue
			}
			t.Run(fmt.Sprintf("%s/%v", path, c), func(t *testing.T) {
				defer nn.SetAttnPath(path)()
				B, S, H, D := c.B, c.Sq, c.H, c.D
				qh := layerRound[T](layerData(B*H*S*D, 7*uint64(i)+1, -1, 1))
				kh := layerRound[T](layerData(B*H*S*D, 7*uint64(i)+2, -1, 1))
				vh := layerRound[T](layerData(B*H*S*D, 7*uint64(i)+3, -1, 1))
				want := attnRef(c, qh, kh, vh, 1/math.Sqrt(float64(D)))
				// [B, S, 3, H, D]: q, k, v of position s side by side.
				packed := make([]float64, 3*len(qh))
				for b := range B {
					for p := range S {
						for w, x := range [][]float64{qh, kh, vh} {
							for h := range H {
								copy(packed[(((b*S+p)*3+w)*H+h)*D:][:D], x[((b*H+h)*S+p)*D:][:D])
							}
						}
					}
				}
				qkv := layerUp[T](t, s, packed, B, S, 3, H, D)
				view := func(w int) *nd.Array[T] {
					t.Helper()
					return must(qkv.Index(2, w))(t) // [B, S, H, D], strides (3SHD, 3HD, D, 1)
				}
				q, k, v := view(0), view(1), view(2)
				if S > 1 && q.IsContiguous() {
					t.Fatalf("q of strides %v is contiguous: the test takes no strided path", q.Strides())
				}
				opts := nn.AttentionOptions{Causal: c.causal, Layout: nn.LayoutBSHD}
				out := layerFree(t, must(nn.Attention(q, k, v, opts))(t))
				layerClose(t, "out", attnSwap(layerDown(t, out), B, S, H, D), want, attnTol[T]())

				// The cache: k a view of the packed output, v its own array.
				kv := must(nn.NewKVCache[T](s, B, H, S, D))(t)
				t.Cleanup(func() { kv.Free() })
				vOwn := layerUp[T](t, s, attnSwap(vh, B, H, S, D), B, S, H, D)
				if err := kv.AppendLayout(k, vOwn, nn.LayoutBSHD); err != nil {
					t.Fatal(err)
				}
				into := layerFree(t, must(nd.Empty[T](s, B, S, H, D))(t))
				if err := kv.AttentionInto(into, q, opts); err != nil {
					t.Fatal(err)
				}
				layerClose(t, "cache", attnSwap(layerDown(t, into), B, S, H, D), want, attnTol[T]())
			})
		}
	}
}

// TestAttentionStridedErrors: the views Attention cannot read (D's stride
// not 1, a negative stride) and a strided out.
func TestAttentionStridedErrors(t *testing.T) {
	s := layerStream(t)
	base := layerFree(t, must(nd.Zeros[float32](s, 1, 4, 32, 5))(t))
	dStrided := must(base.Permute(0, 1, 3, 2))(t) // [1, 4, 5, 32], D's stride 5
	fwd := layerFree(t, must(nd.Zeros[float32](s, 1, 4, 5, 32))(t))
	backward := must(fwd.Slice(2, nd.None, nd.None, -1))(t) // positions 4 down to 0: stride -32
	k := layerFree(t, must(nd.Zeros[float32](s, 1, 4, 5, 32))(t))
	for _, tc := range []struct {
		name  string
		q     *nd.Array[float32]
		words []string
	}{
		{"D strided", dStrided, []string{"q has strides", "D's stride must be 1"}},
		{"negative stride", backward, []string{"operand q", "negative stride"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := nn.Attention(tc.q, k, k, nn.AttentionOptions{})
			if out != nil {
				t.Errorf("a result beside the error")
			}
			layerWantErr(t, err, cuda.ErrInvalidValue, tc.words...)
		})
	}
	t.Run("strided out", func(t *testing.T) {
		wide := layerFree(t, must(nd.Zeros[float32](s, 1, 5, 4, 32))(t))
		out := must(wide.Permute(0, 2, 1, 3))(t) // [1, 4, 5, 32], not contiguous
		layerWantErr(t, nn.AttentionInto(out, k, k, k, nn.AttentionOptions{}), cuda.ErrInvalidValue, "operand out", "contiguous")
	})
}

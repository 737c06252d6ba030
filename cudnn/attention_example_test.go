package cudnn_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
)

// Causal attention of three queries over three keys, heads of 8: with
// every score equal (q is zero), each query averages the values of the
// keys it sees, itself and those before it.
func ExampleAttention() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	h, err := cudnn.New(s)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	const S, D = 3, 8
	zeros := make([]cuda.BFloat16, S*D)
	values := make([]cuda.BFloat16, S*D)
	for i := range values {
		values[i] = cuda.NewBFloat16(float32(i/D + 1)) // key j's values are all j+1
	}
	qk, _ := cuda.FromHost(ctx, zeros)
	defer qk.Free()
	vb, _ := cuda.FromHost(ctx, values)
	defer vb.Free()
	ob, _ := cuda.Alloc[cuda.BFloat16](ctx, S*D)
	defer ob.Free()
	shape := [4]int{1, 1, S, D} // batch, heads, positions, D
	q := cudnn.AttentionTensor[cuda.BFloat16]{Data: qk, Shape: shape}
	v := cudnn.AttentionTensor[cuda.BFloat16]{Data: vb, Shape: shape}
	o := cudnn.AttentionTensor[cuda.BFloat16]{Data: ob, Shape: shape}
	if err := cudnn.Attention(h, o, q, q, v, cudnn.AttentionOptions{Causal: true}); err != nil {
		log.Fatal(err) // cuda.ErrNotSupported: no fused engine for this GPU
	}
	out, _ := ob.ToHost()
	fmt.Println(out[0].Float32(), out[D].Float32(), out[2*D].Float32())
	// Output: 1 1.5 2
}

package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
)

// TestAttentionCUDNNOver checks attnCUDNNOver, the form a KV cache whose
// length the host knows would call: cuDNN's attention of 5 queries over
// the first 9 of 16 positions (causal, aligned to the 9th), against nn's
// own kernel over those 9 positions alone.
func TestAttentionCUDNNOver(t *testing.T) {
	if !cudatest.KernelsRun() {
		t.Skip("kernels cannot run here")
	}
	s := cudatest.Stream(t, cudatest.Context(t))
	const B, H, Sq, max, sk, D = 1, 2, 5, 16, 9, 16
	r := rand.New(rand.NewPCG(7, 8))
	rnd := func(n int) []cuda.BFloat16 {
		out := make([]cuda.BFloat16, n)
		for i := range out {
			out[i] = cuda.NewBFloat16(float32(r.Float64()*2 - 1))
		}
		return out
	}
	arr := func(data []cuda.BFloat16, shape ...int) *nd.Array[cuda.BFloat16] {
		a, err := nd.FromSlice(s, data, shape...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Free() })
		return a
	}
	qh, kh, vh := rnd(B*H*Sq*D), rnd(B*H*max*D), rnd(B*H*max*D)
	// The first sk positions of each head, for nn's own kernel.
	cut := func(x []cuda.BFloat16) []cuda.BFloat16 {
		var out []cuda.BFloat16
		for h := range B * H {
			out = append(out, x[h*max*D:][:sk*D]...)
		}
		return out
	}
	q, k, v := arr(qh, B, H, Sq, D), arr(kh, B, H, max, D), arr(vh, B, H, max, D)
	opts := AttentionOptions{Causal: true}
	p, err := attnPrepare("test", q, k, v, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := arr(make([]cuda.BFloat16, B*H*Sq*D), B, H, Sq, D)
	gb, _ := got.Buffer()
	defer SetAttnBackend("cudnn")()
	ran, err := attnCUDNNOver("test", gb, p, sk)
	if err != nil || !ran {
		t.Fatalf("attnCUDNNOver: ran %v, %v", ran, err)
	}
	restore := SetAttnBackend("own")
	want, err := Attention(q, arr(cut(kh), B, H, sk, D), arr(cut(vh), B, H, sk, D), opts)
	restore()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { want.Free() })
	g, err := got.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	w, err := want.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i := range w {
		if d := math.Abs(float64(g[i].Float32() - w[i].Float32())); d > 2e-2 {
			t.Errorf("out[%d] = %v, want %v", i, g[i].Float32(), w[i].Float32())
		}
	}
}

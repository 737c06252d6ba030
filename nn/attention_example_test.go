package nn_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// Causal attention of three positions of one head: the first position
// sees only itself, the last all three.
func ExampleAttention() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	// q, k, v [B=1, H=1, S=3, D=2]
	q, _ := nd.FromSlice(s, []float32{1, 0, 0, 1, 1, 1}, 1, 1, 3, 2)
	k, _ := nd.FromSlice(s, []float32{1, 0, 0, 1, 1, 1}, 1, 1, 3, 2)
	v, _ := nd.FromSlice(s, []float32{1, 2, 3, 4, 5, 6}, 1, 1, 3, 2)
	out, err := nn.Attention(q, k, v, nn.AttentionOptions{Causal: true})
	if err != nil {
		log.Fatal(err)
	}
	defer out.Free()
	o, _ := out.ToSlice()
	fmt.Printf("%.3f\n", o)
	// Output: [1.000 2.000 2.340 3.340 3.510 4.510]
}

// A KV cache decoding one position at a time after a prompt of two: each
// step appends the position's key and value, then attends its query to
// every position so far.
func ExampleKVCache() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	cache, err := nn.NewKVCache[float32](s, 1, 1, 16, 2) // B 1, one head, 16 positions, D 2
	if err != nil {
		log.Fatal(err)
	}
	defer cache.Free()
	kv, _ := nd.FromSlice(s, []float32{1, 0, 0, 1}, 1, 1, 2, 2)
	q, _ := nd.FromSlice(s, []float32{1, 0, 0, 1}, 1, 1, 2, 2)
	cache.Append(kv, kv) // the prompt
	out, _ := cache.Attention(q, nn.AttentionOptions{Causal: true})
	o, _ := out.ToSlice()
	fmt.Printf("prompt: %.3f\n", o)
	step, _ := nd.FromSlice(s, []float32{1, 1}, 1, 1, 1, 2)
	cache.Append(step, step) // one more position
	out, _ = cache.Attention(step, nn.AttentionOptions{Causal: true})
	o, _ = out.ToSlice()
	n, _ := cache.Len()
	fmt.Printf("step: %.3f, length %d\n", o, n)
	// Output:
	// prompt: [1.000 0.000 0.330 0.670]
	// step: [0.752 0.752], length 3
}

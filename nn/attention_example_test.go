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

// A decoding step captured once as a CUDA graph and replayed: each replay
// appends the position's key and value (written in place into k and v
// before it) and attends the query to every position so far, the cache's
// length advancing on the device.
func ExampleKVCache_graph() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	cache, err := nn.NewKVCache[float32](s, 1, 1, 16, 2)
	if err != nil {
		log.Fatal(err)
	}
	defer cache.Free()
	// The step's inputs and output, made once: the graph reads and
	// writes these arrays at every replay.
	q, _ := nd.Ones[float32](s, 1, 1, 1, 2)
	k, _ := nd.Zeros[float32](s, 1, 1, 1, 2)
	v, _ := nd.Zeros[float32](s, 1, 1, 1, 2)
	out, _ := nd.Empty[float32](s, 1, 1, 1, 2)
	kb, _ := k.Buffer()
	vb, _ := v.Buffer()
	step := func() error {
		if err := cache.Append(k, v); err != nil {
			return err
		}
		return cache.AttentionInto(out, q, nn.AttentionOptions{Causal: true})
	}
	// Position 0 outside the capture: it compiles the kernels.
	vb.CopyFromHost([]float32{0, 0})
	if err := step(); err != nil {
		log.Fatal(err)
	}
	g, err := s.Capture(cuda.CaptureGlobal, step)
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	exec, err := g.Instantiate()
	if err != nil {
		log.Fatal(err)
	}
	defer exec.Close()
	for p := 1; p < 4; p++ {
		kb.CopyFromHost([]float32{0, 0}) // equal keys: the mean of the values so far
		vb.CopyFromHost([]float32{float32(p), float32(2 * p)})
		if err := exec.Launch(s); err != nil {
			log.Fatal(err)
		}
		o, _ := out.ToSlice()
		fmt.Printf("position %d: %.2f\n", p, o)
	}
	n, _ := cache.Len()
	fmt.Println("length", n)
	// Output:
	// position 1: [0.50 1.00]
	// position 2: [1.00 2.00]
	// position 3: [1.50 3.00]
	// length 4
}

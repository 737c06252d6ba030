package nn_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// LayerNorm over the last axis of a 2×4 batch, with a weight and a bias.
func ExampleLayerNorm() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	x, _ := nd.FromSlice(s, []float32{1, 2, 3, 4, 2, 2, 2, 6}, 2, 4)
	w, _ := nd.FromSlice(s, []float32{1, 1, 2, 2}, 4)
	b, _ := nd.FromSlice(s, []float32{0, 0, 0, 1}, 4)
	defer x.Free()
	defer w.Free()
	defer b.Free()
	y, err := nn.LayerNorm(x, w, b, 1e-5)
	if err != nil {
		log.Fatal(err)
	}
	defer y.Free()
	out, _ := y.ToSlice()
	fmt.Printf("%.3f\n", out)
	// Output: [-1.342 -0.447 0.894 3.683 -0.577 -0.577 -1.155 4.464]
}

// A causal softmax over a 3×3 matrix of attention scores: query i sees
// keys 0 to i.
func ExampleSoftmax() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	scores, _ := nd.FromSlice(s, []float32{1, 9, 9, 1, 1, 9, 1, 1, 1}, 3, 3)
	defer scores.Free()
	p, err := nn.Softmax(scores, 1, nn.Mask{Causal: true})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Free()
	out, _ := p.ToSlice()
	fmt.Printf("%.3f\n", out)
	// Output: [1.000 0.000 0.000 0.500 0.500 0.000 0.333 0.333 0.333]
}

// The mean cross-entropy of two rows of logits, the second ignored, and
// its gradient.
func ExampleCrossEntropy() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	logits, _ := nd.FromSlice(s, []float32{0, 0, 0, 0, 5, 1, 2, 3}, 2, 4)
	defer logits.Free()
	targets, _ := nd.FromSlice(s, []int64{2, -100}, 2)
	defer targets.Free()
	loss, err := nn.CrossEntropy(logits, targets, -100)
	if err != nil {
		log.Fatal(err)
	}
	defer loss.Free()
	v, _ := loss.Item()
	fmt.Printf("loss %.4f (log 4)\n", v)
	grad, err := nn.CrossEntropyBackward(logits, targets, -100, 1)
	if err != nil {
		log.Fatal(err)
	}
	defer grad.Free()
	g, _ := grad.ToSlice()
	fmt.Printf("%.2f\n", g)
	// Output:
	// loss 1.3863 (log 4)
	// [0.25 0.25 -0.75 0.25 0.00 0.00 0.00 0.00]
}

// Token embeddings looked up by id, then turned by rotary position
// embeddings at positions 0 and 1 (one head of 2 dimensions: the pair
// turns by the position in radians).
func ExampleRoPE() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	table, _ := nd.FromSlice(s, []float32{1, 0, 0, 1}, 2, 2) // two tokens' vectors
	defer table.Free()
	ids, _ := nd.FromSlice(s, []int32{0, 0}, 1, 2) // a batch of one sequence of two tokens
	defer ids.Free()
	x, err := nn.Embedding(table, ids) // [1, 2, 2]: batch, sequence, dimensions
	if err != nil {
		log.Fatal(err)
	}
	defer x.Free()
	heads, _ := x.Reshape(1, 2, 1, 2) // [batch, sequence, heads, head dim]
	y, err := nn.RoPE(heads, 0, nn.Rotary{})
	if err != nil {
		log.Fatal(err)
	}
	defer y.Free()
	out, _ := y.ToSlice()
	fmt.Printf("%.4f\n", out)
	// Output: [1.0000 0.0000 0.5403 0.8415]
}

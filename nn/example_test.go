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
	y, err := nn.LayerNorm(x, w, b, 1e-5)
	if err != nil {
		log.Fatal(err)
	}
	defer y.Free()
	out, _ := y.ToSlice()
	fmt.Printf("%.3f\n", out)
	// Output: [-1.342 -0.447 0.894 3.683 -0.577 -0.577 -1.155 4.464]
}

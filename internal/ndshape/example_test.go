package ndshape_test

import (
	"fmt"
	"slices"

	"github.com/gocuda/cuda/internal/ndshape"
)

// A transposed, reversed view of a 3x4 array, the offsets it reads, and why
// reshaping it needs a copy.
func Example() {
	a, _ := ndshape.Contiguous([]int{3, 4})
	t := a.Transpose()                                 // shape [4 3]
	r, _ := t.Slice(0, ndshape.None, ndshape.None, -1) // t[::-1]
	fmt.Println(r)
	fmt.Println(slices.Collect(r.Offsets()))
	_, view, _ := r.Reshape([]int{12})
	fmt.Println("flatten is a view:", view)

	shape, err := ndshape.Broadcast([]int{4096, 4096}, []int{4096})
	fmt.Println(shape, err)
	_, err = ndshape.Broadcast([]int{2, 3}, []int{4})
	fmt.Println(err)
	// Output:
	// shape [4 3] strides [-1 4] offset 3
	// [3 7 11 2 6 10 1 5 9 0 4 8]
	// flatten is a view: false
	// [4096 4096] <nil>
	// ndshape: broadcast: shapes [2 3] and [4] cannot be broadcast together (axis -1: 3 vs 4)
}

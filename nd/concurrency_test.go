package nd_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/gocuda/cuda/nd"
)

// TestConcurrentCalls: an Array's methods and the operations on shared
// inputs called from many goroutines at once, each writing its own
// results (as the Array's doc allows: its methods from many goroutines,
// the work ordered by the stream), and one Expr evaluated by all of them;
// run under -race, and each result checked against Go.
func TestConcurrentCalls(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	const n = 8
	a := free(t, must(nd.FromSlice(s, iota[float32](12), 3, 4))(t))
	b := free(t, must(nd.FromSlice(s, []float32{1, 2, 3, 4}, 4))(t))
	shared := nd.Lazy(a).Mul(nd.Lazy(b)).Add(nd.Const[float32](1))
	want := make([]float32, 12)
	for i := range want {
		want[i] = float32(i)*float32(i%4+1) + 1
	}
	rowSums := []float32{6, 22, 38}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- concurrentWork(g, a, b, shared, want, rowSums)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// concurrentWork is one goroutine's calls of TestConcurrentCalls.
func concurrentWork(g int, a, b *nd.Array[float32], shared nd.Expr[float32], want, rowSums []float32) (err error) {
	var made []*nd.Array[float32]
	keep := func(x *nd.Array[float32], e error) *nd.Array[float32] {
		if e != nil && err == nil {
			err = e
		}
		if x != nil {
			made = append(made, x)
		}
		return x
	}
	defer func() {
		for _, x := range made {
			if e := x.Free(); e != nil && err == nil {
				err = e
			}
		}
	}()
	for i := range 5 {
		e := keep(shared.Eval())
		p := keep(nd.Add(keep(nd.Mul(a, b)), nd.Scalar[float32](1)))
		sum := keep(nd.Sum(a, nd.Along(1)))
		tr := keep(a.T().Copy())
		r := keep(a.Reshape(4, 3))
		_ = a.String()
		_ = a.Shape()
		if err != nil {
			return fmt.Errorf("goroutine %d, round %d: %w", g, i, err)
		}
		for _, c := range []struct {
			name string
			x    *nd.Array[float32]
			want []float32
		}{{"Eval", e, want}, {"Add(Mul)", p, want}, {"Sum", sum, rowSums}} {
			got, err := c.x.ToSlice()
			if err != nil || !slices.Equal(got, c.want) {
				return fmt.Errorf("goroutine %d, round %d: %s gave %v, %v; want %v", g, i, c.name, got, err, c.want)
			}
		}
		if v, err := tr.Item(3, 2); err != nil || v != 11 {
			return fmt.Errorf("goroutine %d: a.T()[3, 2] is %v, %v; want 11", g, v, err)
		}
		if v, err := r.Item(3, 0); err != nil || v != 9 {
			return fmt.Errorf("goroutine %d: a.Reshape(4, 3)[3, 0] is %v, %v; want 9", g, v, err)
		}
	}
	return nil
}

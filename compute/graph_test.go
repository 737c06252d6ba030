package compute_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestCapture captures operations of each kind (an elementwise kernel, a
// whole reduction with its stream-ordered partial results, a reduction
// per row, Softmax, Transpose) into a graph and launches it twice, with
// new inputs between: each launch computes from the inputs of its time.
func TestCapture(t *testing.T) {
	e := gpu(t)
	sh := compute.Shape{Rows: 3, Cols: 5}
	n := sh.Rows * sh.Cols
	x := must(cuda.Alloc[float32](e.ctx, n))(t)
	y, sm, tr := must(cuda.Alloc[float32](e.ctx, n))(t), must(cuda.Alloc[float32](e.ctx, n))(t), must(cuda.Alloc[float32](e.ctx, n))(t)
	sum, rows := must(cuda.Alloc[float32](e.ctx, 1))(t), must(cuda.Alloc[float32](e.ctx, sh.Rows))(t)
	for _, b := range []*cuda.DeviceBuffer[float32]{x, y, sm, tr, sum, rows} {
		defer b.Free()
	}
	record := func() error {
		for _, op := range []func() error{
			func() error { return compute.MulScalar(y, x, 2, e.s) },
			func() error { return compute.Sum(sum, y, e.s) },
			func() error { return compute.SumAxis(rows, y, sh, compute.PerRow, e.s) },
			func() error { return compute.Softmax(sm, y, sh, e.s) },
			func() error { return compute.Transpose(tr, y, sh, e.s) },
		} {
			if err := op(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := record(); err != nil { // compiled: a capture does not compile
		t.Fatal(err)
	}
	g := must(e.s.Capture(cuda.CaptureGlobal, record))(t)
	defer g.Close()
	exec := must(g.Instantiate())(t)
	defer exec.Close()
	for round := range 2 {
		in := make([]float32, n)
		for i := range in {
			in[i] = float32(i + round*100)
		}
		if err := x.CopyFromHost(in); err != nil {
			t.Fatal(err)
		}
		if err := exec.Launch(e.s); err != nil {
			t.Fatal(err)
		}
		if err := e.s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		var total float32
		for _, v := range in {
			total += 2 * v
		}
		if got := cudatest.Download(t, sum)[0]; got != total {
			t.Errorf("round %d: Sum = %v, want %v", round, got, total)
		}
		gotRows, gotY, gotT := cudatest.Download(t, rows), cudatest.Download(t, y), cudatest.Download(t, tr)
		for r := range sh.Rows {
			var want float32
			for c := range sh.Cols {
				want += 2 * in[r*sh.Cols+c]
				if gotT[c*sh.Rows+r] != gotY[r*sh.Cols+c] {
					t.Errorf("round %d: transpose [%d,%d] = %v, want %v", round, c, r, gotT[c*sh.Rows+r], gotY[r*sh.Cols+c])
				}
			}
			if gotRows[r] != want {
				t.Errorf("round %d: row %d sums to %v, want %v", round, r, gotRows[r], want)
			}
		}
		if gotY[n-1] != 2*in[n-1] {
			t.Errorf("round %d: y[%d] = %v, want %v", round, n-1, gotY[n-1], 2*in[n-1])
		}
		smv := cudatest.Download(t, sm)
		if smv[sh.Cols-1] <= smv[0] { // softmax grows with the input
			t.Errorf("round %d: softmax row 0 = %v", round, smv[:sh.Cols])
		}
	}
}

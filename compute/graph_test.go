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

// TestCaptureLongRows captures the operations that cut a few long rows
// into chunks (Softmax's cluster kernel, its two kernels with memory of
// the call's own, a reduction's second kernel) and launches the graph
// twice, with new inputs between: each launch gives the bits the same
// call gives outside a capture, from the inputs of its time.
func TestCaptureLongRows(t *testing.T) {
	e := gpu(t)
	for _, c := range []struct {
		name     string
		sh       compute.Shape
		clusters bool
		op       func(dst, src *cuda.DeviceBuffer[float32], sh compute.Shape, s *cuda.Stream) error
		outs     func(sh compute.Shape) int // the results at dst's start
	}{
		{"Softmax 1x65536 (a cluster a row)", compute.Shape{Rows: 1, Cols: 65536}, true, compute.Softmax[float32], elems},
		{"LogSoftmax 2x40001 (two kernels)", compute.Shape{Rows: 2, Cols: 40001}, false, compute.LogSoftmax[float32], elems},
		{"LogSoftmax 2x40001 (a cluster a row)", compute.Shape{Rows: 2, Cols: 40001}, true, compute.LogSoftmax[float32], elems},
		{"SumAxis rows 2x70001", compute.Shape{Rows: 2, Cols: 70001}, false, func(dst, src *cuda.DeviceBuffer[float32], sh compute.Shape, s *cuda.Stream) error {
			d, err := dst.Slice(0, sh.Rows)
			if err != nil {
				return err
			}
			return compute.SumAxis(d, src, sh, compute.PerRow, s)
		}, func(sh compute.Shape) int { return sh.Rows }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.clusters {
				needClusters(t, e)
			}
			compute.SetClusters(t, e.s, c.clusters)
			n := c.sh.Rows * c.sh.Cols
			src, dst := must(cuda.Alloc[float32](e.ctx, n))(t), must(cuda.Alloc[float32](e.ctx, n))(t)
			defer src.Free()
			defer dst.Free()
			inputs := [2][]float32{randoms[float32](n, -20, 20), randoms[float32](n, 5, 40)}
			direct := func(in []float32) []float32 {
				t.Helper()
				if err := src.CopyFromHost(in); err != nil {
					t.Fatal(err)
				}
				if err := c.op(dst, src, c.sh, e.s); err != nil {
					t.Fatal(err)
				}
				return cudatest.Download(t, dst)[:c.outs(c.sh)]
			}
			wants := [2][]float32{direct(inputs[0]), direct(inputs[1])}
			g := must(e.s.Capture(cuda.CaptureGlobal, func() error { return c.op(dst, src, c.sh, e.s) }))(t)
			defer g.Close()
			exec := must(g.Instantiate())(t)
			defer exec.Close()
			for round, in := range inputs {
				if err := src.CopyFromHost(in); err != nil {
					t.Fatal(err)
				}
				if err := dst.Memset32Async(0x7fc00000, e.s); err != nil { // NaNs: what the graph leaves unwritten
					t.Fatal(err)
				}
				if err := exec.Launch(e.s); err != nil {
					t.Fatal(err)
				}
				got := cudatest.Download(t, dst)
				for i := range len(wants[round]) {
					if got[i] != wants[round][i] {
						t.Fatalf("round %d: [%d] = %v in the graph, %v called", round, i, got[i], wants[round][i])
					}
				}
			}
		})
	}
}

func elems(sh compute.Shape) int { return sh.Rows * sh.Cols }

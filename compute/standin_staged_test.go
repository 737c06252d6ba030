package compute_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestStandInSoftmaxStaged: the fake's C version of softmax_bfloat16_staged
// (internal/fakecuda/csrc/kernels.c), which Example reaches where there is
// no C++ compiler, computes Softmax of rows of 1 to 16 bfloat16 elements as
// the generated kernel does: one row, a block's span and one past it, two
// spans and more (the grid-stride loop over spans), from aligned buffers,
// views an element in, and in place; rows 0 to 3 hold a NaN, a +Inf, only
// -Inf and a -Inf (Softmax's documented results: a +Inf row NaN where
// +Inf, 0 elsewhere), against float64 on the host; and, where a C++
// compiler is found, the same bits as the generated kernel compiled for
// the host (internal/hostcc: __expf is expf there, as in the C version).
func TestStandInSoftmaxStaged(t *testing.T) {
	if cudatest.Fake(t) == nil {
		return
	}
	var host *env
	if compute.HostCompiles() {
		// Its kernels compiled for the host now, before the stand-in
		// takes the compiler's place, and kept loaded in its context.
		h := newEnv(t)
		host = &h
		x := must(cuda.Zeroed[cuda.BFloat16](h.ctx, 4))(t)
		defer x.Free()
		if err := compute.Softmax(x, x, compute.Shape{Rows: 4, Cols: 1}, h.s); err != nil {
			t.Fatal(err)
		}
	}
	compute.UseStandIn(t)
	e := newEnv(t)
	for cols := 1; cols <= 16; cols++ {
		span := compute.StagedSpan(cols, 2)
		for _, rows := range []int{1, 4, span + 1, 2*span + 3} {
			for _, tc := range []struct {
				name    string
				off     int
				inPlace bool
			}{{"aligned", 0, false}, {"view", 1, false}, {"in place", 0, true}, {"in place view", 3, true}} {
				t.Run(fmt.Sprintf("%dx%d %s", rows, cols, tc.name), func(t *testing.T) {
					checkStandInStaged(t, e, host, compute.Shape{Rows: rows, Cols: cols}, tc.off, tc.inPlace)
				})
			}
		}
	}
}

// checkStandInStaged checks Softmax of sh on the stand-in in e, from a
// view off elements into its buffer, into another buffer or in place,
// and, with host, that it gives the bits the host-compiled kernel does.
func checkStandInStaged(t *testing.T, e env, host *env, sh compute.Shape, off int, inPlace bool) {
	t.Helper()
	n := sh.Rows * sh.Cols
	x := randoms[cuda.BFloat16](n, -20, 20)
	if sh.Rows >= 4 {
		x[sh.Cols/2] = fromF[cuda.BFloat16](math.NaN())
		x[sh.Cols+sh.Cols/3] = fromF[cuda.BFloat16](math.Inf(1))
		for c := range sh.Cols {
			x[2*sh.Cols+c] = fromF[cuda.BFloat16](math.Inf(-1))
		}
		x[3*sh.Cols+sh.Cols-1] = fromF[cuda.BFloat16](math.Inf(-1))
	}
	softmax := func(e env) []cuda.BFloat16 {
		t.Helper()
		whole := make([]cuda.BFloat16, off+n)
		copy(whole[off:], x)
		base := cudatest.Upload(t, e.ctx, whole)
		defer base.Free()
		src := must(base.Slice(off, n))(t)
		dst := src
		if !inPlace {
			dst = must(cuda.Alloc[cuda.BFloat16](e.ctx, n))(t)
			defer dst.Free()
		}
		if err := compute.Softmax(dst, src, sh, e.s); err != nil {
			t.Fatal(err)
		}
		return cudatest.Download(t, dst)
	}
	got := softmax(e)
	if host != nil {
		if want := softmax(*host); !bytes.Equal(rawBytes(got), rawBytes(want)) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("[%d,%d] = %v (bits %#04x) on the stand-in, %v (%#04x) compiled for the host", i/sh.Cols, i%sh.Cols, toF(got[i]), uint16(got[i]), toF(want[i]), uint16(want[i]))
				}
			}
		}
	}
	for r := range sh.Rows {
		want, _ := softmaxWant(x[r*sh.Cols : (r+1)*sh.Cols])
		for c := range sh.Cols {
			g, w := toF(got[r*sh.Cols+c]), want[c]
			if math.IsNaN(w) != math.IsNaN(g) || math.Abs(g-w) > 1.6e-2*4*math.Max(w, 1e-3) {
				t.Fatalf("[%d,%d] = %v, want %v", r, c, g, w)
			}
		}
	}
}

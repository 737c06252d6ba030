package cublas_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The docs' promises at their edges, as an outside reader of them tests
// them: empty problems on closed handles and streams and with freed
// buffers, beta 0 over NaN, and the zero values.

// emptyCalls are calls of every function on problems with no elements
// (or, for Gemv, no columns: y = beta·y for each beta), of operands of
// buf, on h.
func emptyCalls(h *cublas.Handle, buf func(n int) *cuda.DeviceBuffer[float32]) []struct {
	name string
	call func() error
} {
	m := func(b *cuda.DeviceBuffer[float32], r, c int) cublas.Matrix[float32] { return cublas.NewMatrix(b, r, c) }
	type matrices = []cublas.Matrix[float32]
	calls := []struct {
		name string
		call func() error
	}{
		{"Gemm of an empty c", func() error { return cublas.Gemm(h, 1, m(buf(6), 0, 3), m(buf(6), 3, 2), 0, m(buf(4), 0, 2)) }},
		{"GemmStridedBatched of an empty c", func() error {
			return cublas.GemmStridedBatched(h, 2, 1, m(buf(6), 2, 0), m(buf(6), 0, 2), 1, m(buf(8), 2, 2))
		}},
		{"GemmBatched of empty cs", func() error {
			return cublas.GemmBatched(h, 1, matrices{m(buf(3), 0, 3)}, matrices{m(buf(6), 3, 2)}, 0, matrices{m(buf(2), 0, 2)})
		}},
		{"Matmul of a c of no rows", func() error {
			return cublas.Matmul(h, 1, m(buf(6), 0, 3), m(buf(6), 3, 2), 0, m(buf(4), 0, 2), cublas.NoEpilogue, nil)
		}},
		{"Matmul of a c of no columns", func() error {
			return cublas.Matmul(h, 1, m(buf(6), 2, 3), m(buf(6), 3, 0), 0, m(buf(4), 2, 0), cublas.ReLU, nil)
		}},
		{"Matmul of a c of no rows, with a bias", func() error {
			return cublas.Matmul(h, 1, m(buf(6), 0, 3), m(buf(6), 3, 2), 0, m(buf(4), 0, 2), cublas.GELU, buf(2))
		}},
		{"Axpy of no elements", func() error { return cublas.Axpy(h, 2, buf(0), buf(0)) }},
		{"Scal of no elements", func() error { return cublas.Scal(h, 2, buf(0)) }},
		{"Dot of no elements", func() error { return errOf(cublas.Dot(h, buf(0), buf(0))) }},
		{"Nrm2 of no elements", func() error { return errOf(cublas.Nrm2(h, buf(0))) }},
		{"Iamax of no elements", func() error { return errOf(cublas.Iamax(h, buf(0))) }},
	}
	for _, beta := range []float64{0, 1, 2} {
		calls = append(calls, struct {
			name string
			call func() error
		}{fmt.Sprintf("Gemv of no columns, beta %v", beta), func() error { return cublas.Gemv(h, 1, m(buf(4), 2, 0), buf(0), beta, buf(2)) }})
	}
	return calls
}

// TestPromisesEmptyClosed: a problem with no elements on a closed handle,
// or on a handle whose stream is closed, is cuda.ErrClosed as one with
// elements is: nothing to do does not make a closed handle usable
// (Matmul of an empty c, and Gemv of no columns with beta 1, said nil).
func TestPromisesEmptyClosed(t *testing.T) {
	ctx := cudatest.Context(t)
	buf := func(n int) *cuda.DeviceBuffer[float32] { return cudatest.Upload(t, ctx, make([]float32, n)) }
	closedHandle := must(cublas.New(cudatest.Stream(t, ctx)))(t)
	if err := closedHandle.Close(); err != nil {
		t.Fatal(err)
	}
	s := must(ctx.NewStream())(t)
	onClosedStream := must(cublas.New(s))(t)
	defer func() {
		if err := onClosedStream.Close(); err != nil {
			t.Errorf("Close of a handle whose stream is closed: %v", err)
		}
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, h := range []struct {
		name string
		h    *cublas.Handle
	}{{"closed handle", closedHandle}, {"closed stream", onClosedStream}} {
		for _, tc := range emptyCalls(h.h, buf) {
			t.Run(h.name+"/"+tc.name, func(t *testing.T) {
				cudatest.WantErr(t, tc.name+" on a "+h.name, tc.call(), cuda.ErrClosed, "closed")
			})
		}
	}
}

// TestPromisesEmptyFreed: a freed operand is cuda.ErrClosed also where
// the problem has no elements; each operand of each call in turn.
func TestPromisesEmptyFreed(t *testing.T) {
	ctx, s, h := handle(t)
	for i := range len(emptyCalls(h, nil)) {
		name := emptyCalls(h, nil)[i].name
		// Count the call's operands, then free each in turn.
		var n int
		emptyCalls(h, func(k int) *cuda.DeviceBuffer[float32] { n++; return cudatest.Upload(t, ctx, make([]float32, k)) })[i].call()
		for freed := range n {
			t.Run(fmt.Sprintf("%s/operand %d", name, freed), func(t *testing.T) {
				var k int
				buf := func(size int) *cuda.DeviceBuffer[float32] {
					b := must(cuda.Alloc[float32](ctx, max(size, 1)))(t)
					v := b
					if size == 0 {
						v = must(b.Slice(0, 0))(t) // no elements, of memory freed with b
					}
					if k == freed {
						if err := b.Free(); err != nil {
							t.Fatal(err)
						}
					} else {
						t.Cleanup(func() { b.Free() })
					}
					k++
					return v
				}
				cudatest.WantErr(t, fmt.Sprintf("%s with operand %d freed", name, freed), emptyCalls(h, buf)[i].call(), cuda.ErrClosed, "closed")
			})
		}
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// TestPromisesBetaZeroNaN: with beta 0, c (or y) is not read, as BLAS
// promises: NaN there gives no NaN, also for a product of no inner
// dimension (k 0: C = beta·C, zero).
func TestPromisesBetaZeroNaN(t *testing.T) {
	ctx, s, h := handle(t)
	nan := float32(math.NaN())
	nans := func(n int) *cuda.DeviceBuffer[float32] {
		v := make([]float32, n)
		for i := range v {
			v[i] = nan
		}
		return cudatest.Upload(t, ctx, v)
	}
	ones := func(n int) *cuda.DeviceBuffer[float32] {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1
		}
		return cudatest.Upload(t, ctx, v)
	}
	m := func(b *cuda.DeviceBuffer[float32], r, c int) cublas.Matrix[float32] { return cublas.NewMatrix(b, r, c) }
	for _, tc := range []struct {
		name string
		want float32 // every element of out
		out  *cuda.DeviceBuffer[float32]
		call func(out *cuda.DeviceBuffer[float32]) error
	}{
		{"Gemm", 3, nans(4), func(out *cuda.DeviceBuffer[float32]) error {
			return cublas.Gemm(h, 1, m(ones(6), 2, 3), m(ones(6), 3, 2), 0, m(out, 2, 2))
		}},
		{"Gemm with k 0", 0, nans(4), func(out *cuda.DeviceBuffer[float32]) error {
			return cublas.Gemm(h, 1, m(ones(1), 2, 0), m(ones(1), 0, 2), 0, m(out, 2, 2))
		}},
		{"GemmStridedBatched with k 0", 0, nans(8), func(out *cuda.DeviceBuffer[float32]) error {
			return cublas.GemmStridedBatched(h, 2, 1, m(ones(1), 2, 0), m(ones(1), 0, 2), 0, m(out, 2, 2))
		}},
		{"Matmul", 3, nans(4), func(out *cuda.DeviceBuffer[float32]) error {
			return cublas.Matmul(h, 1, m(ones(6), 2, 3), m(ones(6), 3, 2), 0, m(out, 2, 2), cublas.NoEpilogue, nil)
		}},
		{"Gemv", 3, nans(2), func(out *cuda.DeviceBuffer[float32]) error {
			return cublas.Gemv(h, 1, m(ones(6), 2, 3), ones(3), 0, out)
		}},
		{"Gemv of no columns", 0, nans(2), func(out *cuda.DeviceBuffer[float32]) error {
			return cublas.Gemv(h, 1, m(ones(1), 2, 0), must(ones(1).Slice(0, 0))(t), 0, out)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(tc.out); err != nil {
				t.Fatal(err)
			}
			for i, v := range download(t, s, tc.out) {
				if v != tc.want {
					t.Fatalf("%s with beta 0 over NaN: element %d is %v, want %v", tc.name, i, v, tc.want)
				}
			}
		})
	}
}

// TestPromisesZeroValues: the zero value of every exported type is
// refused with an error where it is used, or answers, without a panic.
func TestPromisesZeroValues(t *testing.T) {
	ctx, _, h := handle(t)
	x := cudatest.Upload(t, ctx, []float32{1, 2, 3, 4})
	a := cublas.NewMatrix(x, 2, 2)
	var zm cublas.Matrix[float32]
	zb := new(cuda.DeviceBuffer[float32])
	for _, tc := range []struct {
		name string
		err  error
		says string // a zero buffer is told as one, not as another context's
	}{
		{"Gemm of a zero a", cublas.Gemm(h, 1, zm, a, 0, a), ""},
		{"Matmul of a zero b", cublas.Matmul(h, 1, a, zm, 0, a, cublas.NoEpilogue, nil), ""},
		{"GemmStridedBatched of a zero c", cublas.GemmStridedBatched(h, 1, 1, a, a, 0, zm), ""},
		{"GemmBatched of zero matrices", cublas.GemmBatched(h, 1, []cublas.Matrix[float32]{zm}, []cublas.Matrix[float32]{zm}, 0, []cublas.Matrix[float32]{zm}), ""},
		{"Gemv of a zero a", cublas.Gemv(h, 1, zm, x, 0, x), ""},
		{"Axpy of a zero buffer", cublas.Axpy(h, 1, zb, zb), "x is a zero cuda.DeviceBuffer"},
		{"Scal of a zero buffer", cublas.Scal(h, 1, zb), "x is a zero cuda.DeviceBuffer"},
		{"Dot of a zero buffer", errOf(cublas.Dot(h, zb, zb)), "x is a zero cuda.DeviceBuffer"},
		{"Matmul with a zero bias", cublas.Matmul(h, 1, cublas.NewMatrix(x, 2, 2), cublas.NewMatrix(cudatest.Upload(t, ctx, make([]float32, 4)), 2, 2), 0,
			cublas.NewMatrix(cudatest.Upload(t, ctx, make([]float32, 4)), 2, 2), cublas.NoEpilogue, zb), ""},
	} {
		t.Run(tc.name, func(t *testing.T) { cudatest.WantErr(t, tc.name, tc.err, cuda.ErrInvalidValue, tc.says) })
	}
	var zh cublas.Handle
	if got := zh.String(); !strings.Contains(got, "zero") {
		t.Errorf("String of a zero Handle: %q", got)
	}
	if zh.Stream() != nil || zh.MathMode() != cublas.DefaultMath {
		t.Errorf("a zero Handle's Stream and MathMode: %v, %v", zh.Stream(), zh.MathMode())
	}
	var ze *cublas.Error
	_ = ze.Error()
	_ = (&cublas.Error{}).Error()
	for _, s := range []string{cublas.Layout(9).String(), cublas.MathMode(9).String(), cublas.Epilogue(9).String()} {
		if !strings.Contains(s, "?") {
			t.Errorf("an unknown value's String: %q", s)
		}
	}
}

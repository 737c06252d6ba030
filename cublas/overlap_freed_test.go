package cublas_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/internal/cudatest"
)

// span is the elements from off of a block of memory (cudatest.FreedAt).
func span(off, n int) cudatest.Span { return cudatest.Span{Off: off, N: n} }

// TestAliasFreed: a call whose output or input was freed, while the
// other names memory at the freed one's address, returns cuda.ErrClosed
// naming the freed one, not the overlap a comparison of addresses alone
// finds (as cuda's copies do: TestCopyFromFreedBuffer).
func TestAliasFreed(t *testing.T) {
	ctx, _, h := handle(t)
	// The other operands, live, made first: memory freed later is not
	// theirs.
	buf := func(n int) *cuda.DeviceBuffer[float32] { return cudatest.Upload(t, ctx, make([]float32, n)) }
	sq := cublas.NewMatrix(buf(9), 3, 3)    // inputs may share memory
	other := cublas.NewMatrix(buf(9), 3, 3) // another product's output
	col, row, x := cublas.NewMatrix(buf(3), 3, 1), cublas.NewMatrix(buf(3), 1, 3), buf(3)
	m := func(b *cuda.DeviceBuffer[float32]) cublas.Matrix[float32] { return cublas.NewMatrix(b, 3, 3) }
	type matrices = []cublas.Matrix[float32]
	all := span(0, 9)
	// Each call writes out and reads in (named so in its errors), over
	// the spans of one block of memory given.
	for _, tc := range []struct {
		name, out, in string
		outAt, inAt   cudatest.Span
		call          func(out, in *cuda.DeviceBuffer[float32]) error
	}{
		{"Gemm c and a", "c", "a", all, all, func(out, in *cuda.DeviceBuffer[float32]) error { return cublas.Gemm(h, 1, m(in), sq, 0, m(out)) }},
		{"Gemm c and b", "c", "b", all, span(2, 9), func(out, in *cuda.DeviceBuffer[float32]) error { return cublas.Gemm(h, 1, sq, m(in), 0, m(out)) }},
		{"GemmStridedBatched c and a", "c", "a", all, all, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cublas.GemmStridedBatched(h, 1, 1, m(in), sq, 0, m(out))
		}},
		{"Matmul c and a", "c", "a", all, all, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cublas.Matmul(h, 1, m(in), sq, 0, m(out), cublas.NoEpilogue, nil)
		}},
		{"Matmul c and bias", "c", "bias", all, span(3, 3), func(out, in *cuda.DeviceBuffer[float32]) error {
			return cublas.Matmul(h, 1, col, row, 0, m(out), cublas.NoEpilogue, in)
		}},
		{"GemmBatched c and a", "c[0]", "a[0]", all, all, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cublas.GemmBatched(h, 1, matrices{m(in)}, matrices{sq}, 0, matrices{m(out)})
		}},
		{"GemmBatched c and another's b", "c[1]", "b[0]", all, all, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cublas.GemmBatched(h, 1, matrices{sq, sq}, matrices{m(in), sq}, 0, matrices{other, m(out)})
		}},
		{"GemmBatched c and c", "c[1]", "c[0]", all, all, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cublas.GemmBatched(h, 1, matrices{sq, sq}, matrices{sq, sq}, 0, matrices{m(in), m(out)})
		}},
		{"Axpy", "y", "x", span(1, 8), span(0, 8), func(out, in *cuda.DeviceBuffer[float32]) error { return cublas.Axpy(h, 1, in, out) }},
		{"Gemv y and x", "y", "x", span(1, 3), span(0, 3), func(out, in *cuda.DeviceBuffer[float32]) error { return cublas.Gemv(h, 1, sq, in, 0, out) }},
		{"Gemv y and a", "y", "a", span(4, 3), all, func(out, in *cuda.DeviceBuffer[float32]) error { return cublas.Gemv(h, 1, m(in), x, 0, out) }},
	} {
		for _, freed := range []string{tc.out, tc.in} {
			t.Run(tc.name+"/"+freed+" freed", func(t *testing.T) {
				var out, in *cuda.DeviceBuffer[float32]
				if freed == tc.out {
					out, in = cudatest.FreedAt[float32](t, ctx, tc.outAt, tc.inAt)
				} else {
					in, out = cudatest.FreedAt[float32](t, ctx, tc.inAt, tc.outAt)
				}
				err := tc.call(out, in)
				if want := freed + " is closed"; !errors.Is(err, cuda.ErrClosed) || !strings.Contains(err.Error(), want) {
					t.Errorf("%s with %s freed and its memory another buffer's: %v; want cuda.ErrClosed saying %q", tc.name, freed, err, want)
				}
			})
		}
	}
}

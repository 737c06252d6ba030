package nd_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
)

// span is the elements from off of a block of memory.
type span struct{ off, n int }

// freedAt returns two [2, 4] arrays over a live block of memory: one over
// f, freed (its buffer a FromRaw one, so that the memory stays valid for
// the kernels the operation may run), and one live over l: a freed
// array whose address is another array's now.
func freedAt(t *testing.T, s *cuda.Stream, f, l span) (freed, live *nd.Array[float32]) {
	t.Helper()
	block := cudatest.Upload(t, s.Context(), make([]float32, 32))
	b := must(cuda.FromRaw[float32](s.Context(), block.Ptr()+cuda.DevicePtr(4*f.off), f.n))(t)
	freed = must(nd.FromBuffer(s, b, 2, f.n/2))(t)
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	return freed, must(nd.FromBuffer(s, must(block.Slice(l.off, l.n))(t), 2, l.n/2))(t)
}

// TestOverlapFreed: nd refuses no overlap (it reads an input that
// overlaps the output from a copy, or computes into a temporary), so a
// freed array whose address is another operand's is no overlap error:
// the operation returns cuda.ErrClosed, whether the freed one is dst or
// an input.
func TestOverlapFreed(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	b := free(t, must(nd.FromSlice(s, iota[float32](8), 2, 4))(t))
	w := free(t, must(nd.FromSlice(s, iota[float32](16), 4, 4))(t))
	idx := free(t, must(nd.FromSlice(s, []int64{0, 1, 2, 3}, 4))(t))
	apart := [2]span{{1, 8}, {0, 8}} // dst's, a's: one element apart
	for _, tc := range []struct {
		name string
		at   [2]span
		call func(dst, a *nd.Array[float32]) error
	}{
		{"AddInto", apart, func(dst, a *nd.Array[float32]) error { return nd.AddInto(dst, a, b) }},
		{"SoftmaxInto", apart, func(dst, a *nd.Array[float32]) error { return nd.SoftmaxInto(dst, a, -1) }},
		{"CumsumInto", apart, func(dst, a *nd.Array[float32]) error { return nd.CumsumInto(dst, a, 1) }},
		{"MatmulInto", apart, func(dst, a *nd.Array[float32]) error { return nd.MatmulInto(dst, a, w) }},
		{"SumInto", [2]span{{2, 2}, {0, 8}}, func(dst, a *nd.Array[float32]) error {
			return nd.SumInto(must(dst.Reshape(2))(t), a, nd.Along(1))
		}},
		{"TakeInto", apart, func(dst, a *nd.Array[float32]) error { return nd.TakeInto(dst, a, idx, 1) }},
		{"ConcatInto", [2]span{{1, 16}, {0, 8}}, func(dst, a *nd.Array[float32]) error {
			return nd.ConcatInto(must(dst.Reshape(4, 4))(t), []*nd.Array[float32]{a, b}, 0)
		}},
	} {
		for _, freed := range []string{"dst", "a"} {
			t.Run(tc.name+"/"+freed+" freed", func(t *testing.T) {
				var dst, a *nd.Array[float32]
				if freed == "dst" {
					dst, a = freedAt(t, s, tc.at[0], tc.at[1])
				} else {
					a, dst = freedAt(t, s, tc.at[1], tc.at[0])
				}
				if err := tc.call(dst, a); !errors.Is(err, cuda.ErrClosed) {
					t.Errorf("%s with %s freed and its memory another array's: %v; want cuda.ErrClosed", tc.name, freed, err)
				}
			})
		}
	}
}

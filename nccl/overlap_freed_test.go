package nccl_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nccl"
)

// span is the elements from off of a block of memory (cudatest.FreedAt).
func span(off, n int) cudatest.Span { return cudatest.Span{Off: off, N: n} }

// TestOverlapFreed: a collective whose dst or src was freed, while the
// other names memory at the freed one's address (overlapping it, not in
// place), returns cuda.ErrClosed naming the freed one, not the overlap a
// comparison of addresses alone finds (as cuda's copies do:
// TestCopyFromFreedBuffer).
func TestOverlapFreed(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	defer c.Close()
	// dst and src of 8 elements, one element apart (AllToAll's at one
	// address: it is never in place).
	apart, same := [2]cudatest.Span{span(1, 8), span(0, 8)}, [2]cudatest.Span{span(0, 8), span(0, 8)}
	for _, tc := range []struct {
		name string
		at   [2]cudatest.Span // dst's, src's
		call func(dst, src *cuda.DeviceBuffer[float32]) error
	}{
		{"AllReduce", apart, func(dst, src *cuda.DeviceBuffer[float32]) error { return nccl.AllReduce(c, dst, src, nccl.Sum, s) }},
		{"Broadcast", apart, func(dst, src *cuda.DeviceBuffer[float32]) error { return nccl.Broadcast(c, dst, src, 0, s) }},
		{"Reduce", apart, func(dst, src *cuda.DeviceBuffer[float32]) error { return nccl.Reduce(c, dst, src, nccl.Sum, 0, s) }},
		{"AllGather", apart, func(dst, src *cuda.DeviceBuffer[float32]) error { return nccl.AllGather(c, dst, src, s) }},
		{"ReduceScatter", apart, func(dst, src *cuda.DeviceBuffer[float32]) error {
			return nccl.ReduceScatter(c, dst, src, nccl.Sum, s)
		}},
		{"AllToAll", same, func(dst, src *cuda.DeviceBuffer[float32]) error { return nccl.AllToAll(c, dst, src, s) }},
	} {
		for _, freed := range []string{"dst", "src"} {
			t.Run(tc.name+"/"+freed+" freed", func(t *testing.T) {
				var dst, src *cuda.DeviceBuffer[float32]
				if freed == "dst" {
					dst, src = cudatest.FreedAt[float32](t, ctx, tc.at[0], tc.at[1])
				} else {
					src, dst = cudatest.FreedAt[float32](t, ctx, tc.at[1], tc.at[0])
				}
				err := tc.call(dst, src)
				if want := freed + " is freed"; !errors.Is(err, cuda.ErrClosed) || !strings.Contains(err.Error(), want) {
					t.Errorf("%s with %s freed and its memory another buffer's: %v; want cuda.ErrClosed saying %q", tc.name, freed, err, want)
				}
			})
		}
	}
}

package cudnn_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/cudatest"
)

// span is the elements from off of a block of memory (cudatest.FreedAt).
func span(off, n int) cudatest.Span { return cudatest.Span{Off: off, N: n} }

// TestAliasedFreed: a call whose output or input was freed, while the
// other names memory at the freed one's address, returns cuda.ErrClosed
// naming the freed one, not the sharing of memory a comparison of
// addresses alone finds (as cuda's copies do: TestCopyFromFreedBuffer).
func TestAliasedFreed(t *testing.T) {
	ctx, _, h := handle(t)
	s := cudnn.Shape{N: 1, C: 2, H: 3, W: 3}
	// The other operands, live, made first: memory freed later is not
	// theirs.
	other := tensor(t, ctx, s, cudnn.NCHW, make([]float32, s.Len()))
	y := tensor(t, ctx, s, cudnn.NCHW, make([]float32, s.Len())) // another output
	w := tensor(t, ctx, cudnn.Shape{N: 2, C: 2, H: 1, W: 1}, cudnn.NCHW, []float32{1, 2, 3, 4})
	c2 := func() *cuda.DeviceBuffer[float32] { return upload32(t, ctx, []float64{1, 2}) }
	bn := cudnn.BatchNorm{Scale: c2(), Bias: c2(), Mean: c2(), Var: c2()}
	save := [2]*cuda.DeviceBuffer[float32]{c2(), c2()}
	pool := cudnn.Pool2D{WindowH: 3, WindowW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	x := func(b *cuda.DeviceBuffer[float32]) cudnn.Tensor[float32] {
		return cudnn.Tensor[float32]{Data: b, Shape: s}
	}
	all, c := span(0, s.Len()), span(4, 2)
	// Each call writes out and reads (or writes too) in, named so in its
	// errors, over the spans of one block of memory given.
	for _, tc := range []struct {
		name, out, in string
		outAt, inAt   cudatest.Span
		call          func(out, in *cuda.DeviceBuffer[float32]) error
	}{
		{"ConvForward", "y.Data", "x.Data", all, all, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cudnn.ConvForward(h, x(out), x(in), w, cudnn.Conv2D{})
		}},
		{"ConvBackwardData", "dx.Data", "dy.Data", all, span(3, s.Len()), func(out, in *cuda.DeviceBuffer[float32]) error {
			return cudnn.ConvBackwardData(h, x(out), x(in), w, cudnn.Conv2D{})
		}},
		{"ConvBackwardFilter", "dw.Data", "x.Data", span(2, 4), all, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cudnn.ConvBackwardFilter(h, cudnn.Tensor[float32]{Data: out, Shape: w.Shape}, x(in), other, cudnn.Conv2D{})
		}},
		{"ConvBiasActivation", "y.Data", "bias", all, c, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cudnn.ConvBiasActivation(h, x(out), other, w, in, cudnn.ReLU, cudnn.Conv2D{})
		}},
		{"ConvBackwardBias", "db", "dy.Data", c, all, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cudnn.ConvBackwardBias(h, out, x(in))
		}},
		{"PoolForward", "y.Data", "x.Data", all, all, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cudnn.PoolForward(h, x(out), x(in), pool)
		}},
		{"PoolBackward", "dx.Data", "dy.Data", all, all, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cudnn.PoolBackward(h, x(out), other, x(in), other, pool)
		}},
		{"BatchNormInference", "y.Data", "bn.Var", all, c, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cudnn.BatchNormInference(h, x(out), other, cudnn.BatchNorm{Scale: bn.Scale, Bias: bn.Bias, Mean: bn.Mean, Var: in})
		}},
		{"BatchNormTraining running stats", "bn.Mean", "bn.Var", c, c, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cudnn.BatchNormTraining(h, y, other, cudnn.BatchNorm{Scale: bn.Scale, Bias: bn.Bias, Mean: out, Var: in}, nil, nil)
		}},
		{"BatchNormTraining saved over scale", "saveMean", "bn.Scale", c, c, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cudnn.BatchNormTraining(h, y, other, cudnn.BatchNorm{Scale: in, Bias: bn.Bias}, out, save[1])
		}},
		{"BatchNormBackward", "dScale", "saveMean", c, c, func(out, in *cuda.DeviceBuffer[float32]) error {
			return cudnn.BatchNormBackward(h, y, other, other, bn, out, save[0], in, save[1])
		}},
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

package cudnn_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
)

// TestAliased: an output that shares memory with an input or another
// output is refused with cuda.ErrInvalidValue naming both, before any
// work is queued (the output is left as it was). In place, the fake's
// 3×3 max pooling gave 9 for [[4 5] [7 8]]'s window: it read what it had
// written.
func TestAliased(t *testing.T) {
	ctx, _, h := handle(t)
	s := cudnn.Shape{N: 1, C: 2, H: 3, W: 3}
	base := make([]float32, 2*s.Len())
	for i := range base {
		base[i] = float32(i%7) - 3
	}
	whole := cudnn.Tensor[float32]{Data: tensor(t, ctx, cudnn.Shape{N: 2, C: 2, H: 3, W: 3}, cudnn.NCHW, base).Data, Shape: cudnn.Shape{N: 2, C: 2, H: 3, W: 3}}
	x := cudnn.Tensor[float32]{Data: slice(t, whole.Data, 0, s.Len()), Shape: s}
	// shifted starts inside x: a partial overlap.
	shifted := cudnn.Tensor[float32]{Data: slice(t, whole.Data, 5, s.Len()), Shape: s}
	other := tensor(t, ctx, s, cudnn.NCHW, base[:s.Len()])
	w := tensor(t, ctx, cudnn.Shape{N: 2, C: 2, H: 1, W: 1}, cudnn.NCHW, []float32{1, 2, 3, 4})
	w2 := tensor(t, ctx, cudnn.Shape{N: 2, C: 2, H: 1, W: 1}, cudnn.NCHW, []float32{1, 2, 3, 4})
	c2 := func() *cuda.DeviceBuffer[float32] { return upload32(t, ctx, []float64{1, 2}) }
	pool := cudnn.Pool2D{WindowH: 3, WindowW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
	bn := cudnn.BatchNorm{Scale: c2(), Bias: c2(), Mean: c2(), Var: c2()}
	shared := c2()
	for _, tt := range []struct {
		name, want string
		err        error
	}{
		{"conv forward in place", "x.Data", cudnn.ConvForward(h, x, x, w, cudnn.Conv2D{})},
		{"conv forward partly", "y.Data shares memory with x.Data", cudnn.ConvForward(h, shifted, x, w, cudnn.Conv2D{})},
		{"conv forward over w", "y.Data shares memory with w.Data", cudnn.ConvForward(h, cudnn.Tensor[float32]{Data: w.Data, Shape: cudnn.Shape{N: 1, C: 2, H: 1, W: 2}}, cudnn.Tensor[float32]{Data: slice(t, other.Data, 0, 4), Shape: cudnn.Shape{N: 1, C: 2, H: 1, W: 2}}, w, cudnn.Conv2D{})},
		{"backward data in place", "dx.Data shares memory with dy.Data", cudnn.ConvBackwardData(h, x, shifted, w, cudnn.Conv2D{})},
		{"backward filter over x", "dw.Data shares memory with x.Data", cudnn.ConvBackwardFilter(h, cudnn.Tensor[float32]{Data: slice(t, x.Data, 0, 4), Shape: w.Shape}, x, other, cudnn.Conv2D{})},
		{"fused over bias", "y.Data shares memory with bias", cudnn.ConvBiasActivation(h, x, other, w2, slice(t, x.Data, 1, 2), cudnn.ReLU, cudnn.Conv2D{})},
		{"bias gradient over dy", "db shares memory with dy.Data", cudnn.ConvBackwardBias(h, slice(t, x.Data, 16, 2), x)},
		{"pool in place", "y.Data shares memory with x.Data", cudnn.PoolForward(h, x, x, pool)},
		{"pool backward over dy", "dx.Data shares memory with dy.Data", cudnn.PoolBackward(h, shifted, other, x, other, pool)},
		{"inference in place", "y.Data shares memory with x.Data", cudnn.BatchNormInference(h, x, x, bn)},
		{"training running stats one buffer", "bn.Mean and bn.Var share memory", cudnn.BatchNormTraining(h, other, x, cudnn.BatchNorm{Scale: bn.Scale, Bias: bn.Bias, Mean: shared, Var: shared}, nil, nil)},
		{"training saved over running", "bn.Mean and saveMean share memory", cudnn.BatchNormTraining(h, other, x, bn, bn.Mean, c2())},
		{"training running over scale", "bn.Var shares memory with bn.Scale", cudnn.BatchNormTraining(h, other, x, cudnn.BatchNorm{Scale: bn.Scale, Bias: bn.Bias, Mean: c2(), Var: bn.Scale}, nil, nil)},
		{"backward dScale over saveMean", "dScale shares memory with saveMean", cudnn.BatchNormBackward(h, other, x, shifted, bn, shared, c2(), shared, c2())},
		{"backward dx over x", "dx.Data shares memory with x.Data", cudnn.BatchNormBackward(h, x, x, other, bn, c2(), c2(), nil, nil)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, cuda.ErrInvalidValue) || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("got %v, want cuda.ErrInvalidValue saying %q", tt.err, tt.want)
			}
		})
	}
	// Nothing ran: the buffers hold what they were given.
	got := must(whole.Data.ToHost())(t)
	for i, v := range got {
		if v != base[i] {
			t.Fatalf("element %d is %v: want %v, untouched", i, v, base[i])
		}
	}
	// Disjoint halves of one buffer are not aliased.
	y := cudnn.Tensor[float32]{Data: slice(t, whole.Data, s.Len(), s.Len()), Shape: s}
	if err := cudnn.PoolForward(h, y, x, pool); err != nil {
		t.Errorf("PoolForward into the other half of x's buffer: %v", err)
	}
}

// slice is b's n elements from off.
func slice(t testing.TB, b *cuda.DeviceBuffer[float32], off, n int) *cuda.DeviceBuffer[float32] {
	t.Helper()
	return must(b.Slice(off, n))(t)
}

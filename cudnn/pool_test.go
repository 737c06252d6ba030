package cudnn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
)

// TestPool checks the three modes forward and backward against the
// reference: windows with padding and strides, in both layouts and the
// three types.
func TestPool(t *testing.T) {
	ctx, _, h := handle(t)
	t.Run("float32", func(t *testing.T) { testPool[float32](t, ctx, h) })
	t.Run("float16", func(t *testing.T) { testPool[cuda.Float16](t, ctx, h) })
	t.Run("bfloat16", func(t *testing.T) { testPool[cuda.BFloat16](t, ctx, h) })
}

func testPool[T cudnn.Element](t *testing.T, ctx *cuda.Context, h *cudnn.Handle) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct {
		name string
		x    cudnn.Shape
		p    cudnn.Pool2D
	}{
		{"2x2", cudnn.Shape{N: 1, C: 3, H: 6, W: 7}, cudnn.Pool2D{WindowH: 2, WindowW: 2}},
		{"3x3 stride 2 pad 1", cudnn.Shape{N: 3, C: 17, H: 9, W: 8}, cudnn.Pool2D{WindowH: 3, WindowW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}},
		{"1x1", cudnn.Shape{N: 1, C: 1, H: 3, W: 3}, cudnn.Pool2D{WindowH: 1, WindowW: 1}},
		{"3x2 stride 1 pad 1x0", cudnn.Shape{N: 2, C: 3, H: 5, W: 5}, cudnn.Pool2D{WindowH: 3, WindowW: 2, StrideH: 1, StrideW: 1, PadH: 1}},
		{"3x3 over 2x2 pad 1 (window above the input)", cudnn.Shape{N: 1, C: 2, H: 2, W: 2}, cudnn.Pool2D{WindowH: 3, WindowW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}},
		{"2x2 stride 3 pad 1 inexact", cudnn.Shape{N: 2, C: 1, H: 7, W: 6}, cudnn.Pool2D{WindowH: 2, WindowW: 2, StrideH: 3, StrideW: 3, PadH: 1, PadW: 1}},
	} {
		for _, mode := range []cudnn.PoolMode{cudnn.MaxPool, cudnn.AvgPool, cudnn.AvgPoolExcludePad} {
			for _, l := range layouts {
				t.Run(fmt.Sprintf("%s %v %v", c.name, mode, l), func(t *testing.T) {
					p := c.p
					p.Mode = mode
					ys := must(cudnn.PoolOutput(c.x, p))(t)
					// Distinct values within each window (2039 is prime,
					// and the halves keep them apart but for bfloat16),
					// so that the largest has one place.
					xt, xf := make([]T, c.x.Len()), make([]float64, c.x.Len())
					for i := range xt {
						xt[i] = of[T](float64(i*7%2039)/2039*2 - 1)
						xf[i] = val(xt[i])
					}
					x, y := tensor(t, ctx, c.x, l, xt), empty[T](t, ctx, ys, l)
					if err := cudnn.PoolForward(h, y, x, p); err != nil {
						t.Fatal(err)
					}
					sh, sw := p.StrideH, p.StrideW
					if sh == 0 {
						sh, sw = p.WindowH, p.WindowW
					}
					want, scale := make([]float64, ys.Len()), make([]float64, ys.Len())
					dyt, dyf := random[T](r, ys.Len())
					wantDX, scaleDX := make([]float64, c.x.Len()), make([]float64, c.x.Len())
					for n := range ys.N {
						for ch := range ys.C {
							for oh := range ys.H {
								for ow := range ys.W {
									best, sum, count, arg := math.Inf(-1), 0.0, 0, -1
									var inside []int
									for i := range p.WindowH {
										for j := range p.WindowW {
											ih, iw := oh*sh-p.PadH+i, ow*sw-p.PadW+j
											if ih < 0 || ih >= c.x.H || iw < 0 || iw >= c.x.W {
												continue
											}
											xi := at(c.x, l, n, ch, ih, iw)
											v := xf[xi]
											if v > best {
												best, arg = v, xi
											}
											sum, count = sum+v, count+1
											inside = append(inside, xi)
										}
									}
									yi := at(ys, l, n, ch, oh, ow)
									g := dyf[yi]
									switch mode {
									case cudnn.MaxPool:
										wantDX[arg] += g
										scaleDX[arg] += math.Abs(g)
									default:
										share := g / float64(count)
										if mode == cudnn.AvgPool {
											share = g / float64(p.WindowH*p.WindowW)
										}
										for _, xi := range inside {
											wantDX[xi] += share
											scaleDX[xi] += math.Abs(share)
										}
									}
									switch mode {
									case cudnn.MaxPool:
										want[yi] = best
									case cudnn.AvgPool:
										want[yi] = sum / float64(p.WindowH*p.WindowW)
									default:
										want[yi] = sum / float64(count)
									}
									scale[yi] = 1
								}
							}
						}
					}
					near(t, "y", download(t, y), want, scale, tol[T]())

					if _, half := any(*new(T)).(cuda.BFloat16); half && mode == cudnn.MaxPool {
						return // bfloat16 rounds some of the values together: the largest may tie
					}
					dy, dx := tensor(t, ctx, ys, l, dyt), empty[T](t, ctx, c.x, l)
					if err := cudnn.PoolBackward(h, dx, y, dy, x, p); err != nil {
						t.Fatal(err)
					}
					near(t, "dx", download(t, dx), wantDX, scaleDX, tol[T]())
				})
			}
		}
	}
}

// TestBatchNorm checks inference, training (the output, the running
// statistics, the saved ones) and the backward pass against the
// reference, in both layouts and the three types.
func TestBatchNorm(t *testing.T) {
	ctx, _, h := handle(t)
	t.Run("float32", func(t *testing.T) { testBatchNorm[float32](t, ctx, h) })
	t.Run("float16", func(t *testing.T) { testBatchNorm[cuda.Float16](t, ctx, h) })
	t.Run("bfloat16", func(t *testing.T) { testBatchNorm[cuda.BFloat16](t, ctx, h) })
}

func upload32(t testing.TB, ctx *cuda.Context, v []float64) *cuda.DeviceBuffer[float32] {
	t.Helper()
	f := make([]float32, len(v))
	for i := range v {
		f[i] = float32(v[i])
	}
	b := must(cuda.FromHost(ctx, f))(t)
	t.Cleanup(func() { b.Free() })
	return b
}

func host32(t testing.TB, b *cuda.DeviceBuffer[float32]) []float64 {
	t.Helper()
	f := must(b.ToHost())(t)
	out := make([]float64, len(f))
	for i := range f {
		out[i] = float64(f[i])
	}
	return out
}

func testBatchNorm[T cudnn.Element](t *testing.T, ctx *cuda.Context, h *cudnn.Handle) {
	r := rand.New(rand.NewPCG(9, 10))
	rnd := func(n int, lo, hi float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(float32(lo + (hi-lo)*r.Float64()))
		}
		return v
	}
	for _, s := range []cudnn.Shape{{N: 1, C: 1, H: 3, W: 3}, {N: 3, C: 17, H: 5, W: 4}, {N: 2, C: 3, H: 1, W: 1}} {
		for _, l := range layouts {
			t.Run(fmt.Sprintf("%v %v", s, l), func(t *testing.T) {
				c := s.C
				m := float64(s.N * s.H * s.W)
				xt, xf := random[T](r, s.Len())
				gamma, beta := rnd(c, 0.5, 2), rnd(c, -1, 1)
				rmean, rvar := rnd(c, -0.5, 0.5), rnd(c, 0.5, 2)
				x := tensor(t, ctx, s, l, xt)
				bn := cudnn.BatchNorm{Scale: upload32(t, ctx, gamma), Bias: upload32(t, ctx, beta), Mean: upload32(t, ctx, rmean), Var: upload32(t, ctx, rvar), Epsilon: 1e-3, Momentum: 0.25}
				tolT := tol[T]() * 4
				idx := func(f func(i, ch int)) {
					for n := range s.N {
						for ch := range c {
							for i := range s.H {
								for j := range s.W {
									f(at(s, l, n, ch, i, j), ch)
								}
							}
						}
					}
				}
				ones := make([]float64, s.Len())
				for i := range ones {
					ones[i] = 8 // the normalized values reach a few units
				}

				y := empty[T](t, ctx, s, l)
				if err := cudnn.BatchNormInference(h, y, x, bn); err != nil {
					t.Fatal(err)
				}
				want := make([]float64, s.Len())
				idx(func(i, ch int) { want[i] = gamma[ch]*(xf[i]-rmean[ch])/math.Sqrt(rvar[ch]+1e-3) + beta[ch] })
				near(t, "inference y", download(t, y), want, ones, tolT)

				mean, vr := make([]float64, c), make([]float64, c)
				idx(func(i, ch int) { mean[ch] += xf[i] / m })
				idx(func(i, ch int) { vr[ch] += (xf[i] - mean[ch]) * (xf[i] - mean[ch]) / m })
				saveMean, saveInv := upload32(t, ctx, make([]float64, c)), upload32(t, ctx, make([]float64, c))
				if err := cudnn.BatchNormTraining(h, y, x, bn, saveMean, saveInv); err != nil {
					t.Fatal(err)
				}
				idx(func(i, ch int) { want[i] = gamma[ch]*(xf[i]-mean[ch])/math.Sqrt(vr[ch]+1e-3) + beta[ch] })
				near(t, "training y", download(t, y), want, ones, tolT)
				wantMean, wantVar, wantInv := make([]float64, c), make([]float64, c), make([]float64, c)
				for ch := range c {
					unbiased := vr[ch]
					if m > 1 {
						unbiased = vr[ch] * m / (m - 1)
					}
					wantMean[ch] = 0.75*rmean[ch] + 0.25*mean[ch]
					wantVar[ch] = 0.75*rvar[ch] + 0.25*unbiased
					wantInv[ch] = 1 / math.Sqrt(vr[ch]+1e-3)
				}
				unit := ones[:c]
				near(t, "running mean", host32(t, bn.Mean), wantMean, unit, 1e-5)
				near(t, "running var", host32(t, bn.Var), wantVar, unit, 1e-5)
				near(t, "saved mean", host32(t, saveMean), mean, unit, 1e-5)
				near(t, "saved 1/std", host32(t, saveInv), wantInv, unit, 1e-4)

				dyt, dyf := random[T](r, s.Len())
				dy, dx := tensor(t, ctx, s, l, dyt), empty[T](t, ctx, s, l)
				dScale, dBias := upload32(t, ctx, make([]float64, c)), upload32(t, ctx, make([]float64, c))
				if err := cudnn.BatchNormBackward(h, dx, x, dy, bn, dScale, dBias, saveMean, saveInv); err != nil {
					t.Fatal(err)
				}
				sdy, sdyx := make([]float64, c), make([]float64, c)
				xhat := func(i, ch int) float64 { return (xf[i] - mean[ch]) * wantInv[ch] }
				idx(func(i, ch int) { sdy[ch] += dyf[i]; sdyx[ch] += dyf[i] * xhat(i, ch) })
				idx(func(i, ch int) {
					want[i] = gamma[ch] * wantInv[ch] * (dyf[i] - sdy[ch]/m - xhat(i, ch)*sdyx[ch]/m)
				})
				near(t, "dx", download(t, dx), want, ones, tolT)
				near(t, "dScale", host32(t, dScale), sdyx, ones[:c], 1e-4)
				near(t, "dBias", host32(t, dBias), sdy, ones[:c], 1e-4)
			})
		}
	}
}

// TestBatchNormOneValue: training on one value per channel (N·H·W = 1)
// normalizes each to 0 (y = bias) with variance 0, saving the value as
// the mean and 1/√ε; only the running variance's update is refused
// (TestBadArguments).
func TestBatchNormOneValue(t *testing.T) {
	ctx, _, h := handle(t)
	s := cudnn.Shape{N: 1, C: 3, H: 1, W: 1}
	x, y := tensor(t, ctx, s, cudnn.NCHW, []float32{3, -2, 0.5}), empty[float32](t, ctx, s, cudnn.NCHW)
	bn := cudnn.BatchNorm{Scale: upload32(t, ctx, []float64{2, 3, 4}), Bias: upload32(t, ctx, []float64{0.25, -1, 7}), Epsilon: 1e-3}
	saveMean, saveInv := upload32(t, ctx, make([]float64, 3)), upload32(t, ctx, make([]float64, 3))
	if err := cudnn.BatchNormTraining(h, y, x, bn, saveMean, saveInv); err != nil {
		t.Fatal(err)
	}
	inv := 1 / math.Sqrt(1e-3)
	// x - mean is 0 but for float32 rounding in cuDNN's mean (an ulp of x
	// or two), which 1/√ε and the scale magnify: scale·|x|/√ε float32
	// epsilons (7.6e-6 seen on an H100 for x = 3).
	ulps := []float64{2 * 3 * inv, 3 * 2 * inv, 4 * 0.5 * inv}
	near(t, "y", download(t, y), []float64{0.25, -1, 7}, ulps, 2.4e-7)
	near(t, "saved mean", host32(t, saveMean), []float64{3, -2, 0.5}, []float64{1, 1, 1}, 1e-6)
	near(t, "saved 1/std", host32(t, saveInv), []float64{inv, inv, inv}, []float64{inv, inv, inv}, 1e-5)
}

package libs_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/sweep"
)

func init() {
	// cuDNN's calls fail with bad parameter, host allocation failed and
	// execution failed, each carried as cudnn.Result.
	families = append(families, sweep.Family{Prefix: "cudnn", Codes: []int{2000, 4003, 5000},
		Carries:   func(err error, code int) bool { return errors.Is(err, cudnn.Result(code)) },
		Sentinels: map[int]error{2000: cuda.ErrInvalidValue, 4003: cuda.ErrOutOfMemory}})
	noDriverMethods = append(noDriverMethods, "cudnn.Library", "cudnn.ConvOutput", "cudnn.PoolOutput", "Handle.SetBenchmark",
		"Handle.SetTF32", "Shape.Len", "Shape.String", "Activation.String", "PoolMode.String")
}

// sweepDNN is the fault sweep's rows of cuDNN's handles: every operation,
// a convolution by heuristics and one timed (SetBenchmark), and Close;
// the convolutions run through cuDNN's backend API, then again, in a row
// of their own, through the legacy calls (GOCUDA_CUDNN_LEGACY=1).
func sweepDNN() []sweep.Case {
	return []sweep.Case{dnnCase("cudnn", false), dnnCase("cudnn legacy", true)}
}

func dnnCase(name string, legacy bool) sweep.Case {
	covers := []string{"cudnn.New", "cudnn.Version", "cudnn.ConvForward", "cudnn.ConvBackwardData", "cudnn.ConvBackwardFilter",
		"cudnn.ConvBackwardBias", "cudnn.ConvBiasActivation", "cudnn.PoolForward", "cudnn.PoolBackward", "cudnn.BatchNormInference", "cudnn.BatchNormTraining", "cudnn.BatchNormBackward",
		"Handle.Close", "Handle.WorkBytes"}
	if !legacy {
		covers = append(covers, "cudnn.Attention") // the backend API's alone
	}
	return sweep.Case{Name: name, Covers: covers,
		Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
			if legacy {
				t.Setenv(cudnn.EnvLegacy, "1")
			}
			// The fake's cuDNN handles and descriptors: none may be left
			// behind, whichever call failed.
			live := e.Fake.Live("dnn")
			var h *cudnn.Handle
			var bufs []*cuda.DeviceBuffer[float32]
			buf := func(n int) *cuda.DeviceBuffer[float32] {
				b := must(cuda.Alloc[float32](e.Ctx, n))(t)
				bufs = append(bufs, b)
				return b
			}
			ten := func(s cudnn.Shape) cudnn.Tensor[float32] {
				return cudnn.Tensor[float32]{Data: buf(s.Len()), Shape: s, Layout: cudnn.NHWC}
			}
			xs, ws, ys := cudnn.Shape{N: 1, C: 2, H: 4, W: 4}, cudnn.Shape{N: 3, C: 2, H: 3, W: 3}, cudnn.Shape{N: 1, C: 3, H: 4, W: 4}
			x, w, y, dx, dw := ten(xs), ten(ws), ten(ys), ten(xs), ten(ws)
			y2 := ten(cudnn.Shape{N: 1, C: 3, H: 2, W: 2})
			bias, c2 := buf(3), buf(2)
			bn := cudnn.BatchNorm{Scale: c2, Bias: c2, Mean: buf(2), Var: buf(2)}
			p := cudnn.Conv2D{PadH: 1, PadW: 1}
			pool := ten(cudnn.Shape{N: 1, C: 2, H: 2, W: 2})
			inv, dScale, dBias, saveMean := buf(2), buf(2), buf(2), buf(2)
			// Attention: causal, bottom-right (4 queries over 8 keys), with
			// its statistics, twice (the plan, then the plan kept).
			var hbufs []*cuda.DeviceBuffer[cuda.BFloat16]
			att := func(shape [4]int) cudnn.AttentionTensor[cuda.BFloat16] {
				b := must(cuda.Alloc[cuda.BFloat16](e.Ctx, shape[0]*shape[1]*shape[2]*shape[3]))(t)
				hbufs = append(hbufs, b)
				return cudnn.AttentionTensor[cuda.BFloat16]{Data: b, Shape: shape}
			}
			aq, ak, av, ao := att([4]int{1, 2, 4, 16}), att([4]int{1, 1, 8, 16}), att([4]int{1, 1, 8, 16}), att([4]int{1, 2, 4, 16})
			aopts := cudnn.AttentionOptions{Causal: true, Stats: buf(8)}
			attention := func() error {
				if legacy {
					return nil // attention has no legacy form
				}
				if err := cudnn.Attention(h, ao, aq, ak, av, aopts); err != nil {
					return err
				}
				return cudnn.Attention(h, ao, aq, ak, av, aopts)
			}
			return func() error {
					return sweep.FirstErr(
						func() error { _, err := cudnn.Version(); return err },
						func() (err error) { h, err = cudnn.New(e.S); return err },
						func() error { return cudnn.ConvForward(h, y, x, w, p) },
						func() error { return cudnn.ConvBackwardData(h, dx, y, w, p) },
						func() error { return cudnn.ConvBackwardFilter(h, dw, x, y, p) },
						func() error { return cudnn.ConvBackwardBias(h, bias, y) },
						func() error { return cudnn.ConvBiasActivation(h, y, x, w, bias, cudnn.ReLU, p) },
						func() error { return cudnn.ConvBiasActivation(h, y, x, w, bias, cudnn.Identity, p) },
						func() error { return h.SetBenchmark(true) },
						func() error {
							return cudnn.ConvForward(h, y2, x, w, cudnn.Conv2D{StrideH: 2, StrideW: 2, PadH: 1, PadW: 1})
						},
						func() error { return cudnn.PoolForward(h, pool, x, cudnn.Pool2D{WindowH: 2, WindowW: 2}) },
						func() error { return cudnn.PoolBackward(h, dx, pool, pool, x, cudnn.Pool2D{WindowH: 2, WindowW: 2}) },
						func() error { return cudnn.BatchNormInference(h, dx, x, bn) },
						func() error { return cudnn.BatchNormTraining(h, dx, x, bn, saveMean, inv) },
						func() error { return cudnn.BatchNormBackward(h, dx, x, x, bn, dScale, dBias, nil, nil) },
						attention,
						func() error { _ = h.WorkBytes(); return nil },
						e.S.Synchronize,
						func() error { return h.Close() },
					)
				}, func(t *testing.T, _ error) {
					e.S.Synchronize()
					if h != nil && h.Close() != nil {
						if err := h.Close(); err != nil {
							t.Errorf("closing a cuDNN handle again: %v", err)
						}
					}
					for _, b := range bufs {
						b.Free()
					}
					for _, b := range hbufs {
						b.Free()
					}
					if n := e.Fake.Live("dnn") - live; n != 0 {
						t.Errorf("the fake holds %+d cuDNN handle(s) and descriptor(s) afterwards", n)
					}
					sweep.StillWorks(t, "cudnn", e.Ctx, e.S)
				}
		}}
}

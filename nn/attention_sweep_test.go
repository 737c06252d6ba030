package nn_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/sweep"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// Attention's rows of the package's zero values and fault sweep
// (zero_test.go, sweep_test.go).
func init() {
	nnZeroTypes["nn.AttentionOptions"] = sweep.ZeroType{Zero: new(nn.AttentionOptions)}
	nnZeroTypes["nn.AttentionLayout"] = sweep.ZeroType{Zero: new(nn.AttentionLayout)}
	nnZeroTypes["nn.KVCache"] = sweep.ZeroType{Zero: new(nn.KVCache[float32])}
	type a32 = *nd.Array[float32]
	nnZeroFuncs["nn.Attention"] = func() []error {
		return zeroEach(func(x a32) error { return zeroErr(nn.Attention(x, x, x, nn.AttentionOptions{Causal: true})) })
	}
	nnZeroFuncs["nn.AttentionInto"] = func() []error {
		return zeroEach(func(x a32) error { return nn.AttentionInto(x, x, x, x, nn.AttentionOptions{Layout: nn.LayoutBSHD}) })
	}
	nnZeroFuncs["nn.NewKVCache"] = func() []error {
		return []error{zeroErr(nn.NewKVCache[float32](nil, 1, 1, 4, 32)), zeroErr(nn.NewKVCache[cuda.BFloat16](new(cuda.Stream), 1, 1, 4, 32))}
	}
	nnNoDriver = append(nnNoDriver, "AttentionLayout.String", "KVCache.K", "KVCache.V", "KVCache.MaxLen", "KVCache.Stream")
	nnSweepCases = append(nnSweepCases, attnSweepCase())
}

// attnSweepCase sweeps attention: the portable kernel (float32), the
// tensor-core one (bfloat16, D 128: more than 48 KiB of shared memory),
// the split-K form (one query over 256 keys: its workspace), and a KV
// cache's life (made, appended to, attended, its length read, reset and
// freed in one step, so that the step leaves nothing behind).
func attnSweepCase() sweep.Case {
	return layerSweepCase("attention", []string{"nn.Attention", "nn.AttentionInto", "nn.NewKVCache",
		"KVCache.Len", "KVCache.Reset", "KVCache.Append", "KVCache.AppendLayout", "KVCache.Attention", "KVCache.AttentionInto", "KVCache.Free"},
		func(t *testing.T, s *cuda.Stream) ([]layerSweepStep, func()) {
			r := &layerSweepArrays{t: t, s: s}
			x := make([]float32, 2*5*32)
			for i := range x {
				x[i] = float32(i%13)/8 - 0.7
			}
			q, kv := r.f32(x[:2*3*32], 1, 2, 3, 32), r.f32(x, 1, 2, 5, 32)
			out := r.f32(make([]float32, 2*3*32), 1, 2, 3, 32)
			long := make([]float32, 256*32)
			for i := range long {
				long[i] = float32(i%11)/8 - 0.6
			}
			q1, kv256 := r.f32(long[:32], 1, 1, 1, 32), r.f32(long, 1, 1, 256, 32)
			big := make([]float32, 2*3*128)
			for i := range big {
				big[i] = float32(i%7)/8 - 0.4
			}
			hq := r.bf16(big, 1, 2, 3, 128)
			one := r.f32(x[:2*32], 1, 1, 2, 32) // [B 1, S 1, Hkv 2, D 32] in LayoutBSHD
			qc := r.f32(x[:2*2*32], 1, 2, 2, 32)
			outc := r.f32(make([]float32, 2*2*32), 1, 2, 2, 32)
			causal := nn.AttentionOptions{Causal: true}
			return []layerSweepStep{
				func() ([]float32, error) { return layerSweepRead(nn.Attention(q, kv, kv, causal)) },
				func() ([]float32, error) {
					return layerSweepInto(out, nn.AttentionInto(out, q, kv, kv, nn.AttentionOptions{}))
				},
				func() ([]float32, error) { return layerSweepRead(nn.Attention(q1, kv256, kv256, causal)) },
				func() ([]float32, error) {
					// nn's own kernel: cuDNN's (EnvAttention's auto) falls back
					// to it on a failure, by design; cudnn.Attention's faults
					// are internal/sweep/libs' cudnn row's.
					defer nn.SetAttnBackend("own")()
					return layerSweepRead(nn.Attention(hq, hq, hq, causal))
				},
				func() ([]float32, error) { return attnSweepCache(s, kv, one, qc, outc) },
			}, r.release
		})
}

// attnSweepCache is a KV cache's life in one step: its results (the
// attention of qc after two appends, the same into outc, the length),
// and everything it made freed whatever failed.
func attnSweepCache(s *cuda.Stream, kv, one, qc, outc *nd.Array[float32]) (res []float32, err error) {
	c, err := nn.NewKVCache[float32](s, 1, 2, 8, 32)
	if err != nil {
		return nil, err
	}
	defer func() {
		if e := c.Free(); e != nil {
			c.Free() // a refusal leaves the memory allocated: once more
			err = errors.Join(err, e)
		}
	}()
	if err := c.Append(kv, kv); err != nil {
		return nil, err
	}
	if err := c.AppendLayout(one, one, nn.LayoutBSHD); err != nil {
		return nil, err
	}
	a, err := layerSweepRead(c.Attention(qc, nn.AttentionOptions{Causal: true}))
	if err != nil {
		return nil, err
	}
	b, err := layerSweepInto(outc, c.AttentionInto(outc, qc, nn.AttentionOptions{}))
	if err != nil {
		return nil, err
	}
	n, err := c.Len()
	if err != nil {
		return nil, err
	}
	if err := c.Reset(); err != nil {
		return nil, err
	}
	return append(append(a, b...), float32(n)), nil
}

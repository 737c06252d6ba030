package nn

import (
	"errors"
	"math"
	"os"
	"sync"
	"sync/atomic"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/attach"
)

// EnvAttention is the environment variable that chooses what runs
// Attention and AttentionInto for float16 and bfloat16: "auto" (the
// default) runs cuDNN's fused attention (package cudnn's Attention) where
// cuDNN is found and takes the shape, else, and wherever cuDNN fails,
// nn's own kernel; "own" runs nn's own kernel always; "cudnn"
// runs cuDNN wherever it takes the shape and returns its errors. A KV
// cache's attention runs cuDNN's under "auto" only for a prompt's pass of
// 64 queries or more: a decoding step's stays nn's (the cache's length
// changes at every step, and cuDNN makes a plan for each length). float32, a KV
// cache's attention once an Append was captured (a graph's replays
// lengthen the cache where only the device sees it), a capturing stream
// and shapes cuDNN does not take (D not a multiple of 8 or above 256,
// causal with more queries than keys) always run nn's own kernel.
//
// cuDNN's is the default since its path passed the tests on an H100,
// where it ran 1.4 to 1.9 times as fast as PyTorch's FlashAttention kernel
// and nn's own kernel 0.7 to 0.9 times (docs/nn-benchmarks.md).
const EnvAttention = "GOCUDA_NN_ATTENTION"

// attnBackend overrides EnvAttention, for the tests: "own", "cudnn",
// "auto" (a string; "" reads the environment).
var attnBackend atomic.Value

// attnMode returns the backend chosen: "auto" (also for an unknown
// name), "cudnn" or "own".
func attnMode() string {
	m, _ := attnBackend.Load().(string)
	if m == "" {
		m = os.Getenv(EnvAttention)
	}
	switch m {
	case "own", "cudnn":
		return m
	}
	return "auto"
}

// attnDNN are the cuDNN handles attention made, one a stream, each closed
// with its stream's context (attach.OnClose); unavailable is why cuDNN
// could not be opened, remembered.
var attnDNN struct {
	mu          sync.Mutex
	handles     map[*cuda.Stream]*cudnn.Handle
	unavailable error
}

// attnCtxKey names a context's registration for the handles' release.
type attnCtxKey struct{ ctx *cuda.Context }

// attnHandle returns s's cuDNN handle, made the first time; nil and no
// error where it has none yet and capturing is set (cudnnCreate would
// break the capture).
func attnHandle(s *cuda.Stream, capturing bool) (*cudnn.Handle, error) {
	attnDNN.mu.Lock()
	defer attnDNN.mu.Unlock()
	if err := attnDNN.unavailable; err != nil {
		return nil, err
	}
	if h := attnDNN.handles[s]; h != nil {
		return h, nil
	}
	if capturing {
		return nil, nil
	}
	if _, err := cudnn.Library(); err != nil {
		attnDNN.unavailable = err
		return nil, err
	}
	attnPrune()
	ctx := s.Context()
	h, err := cudnn.New(s)
	if err != nil {
		return nil, err
	}
	if err := attach.OnClose(ctx, attnCtxKey{ctx}, func() error { return attnRelease(ctx) }); err != nil {
		return nil, errors.Join(err, h.Close())
	}
	if attnDNN.handles == nil {
		attnDNN.handles = map[*cuda.Stream]*cudnn.Handle{}
	}
	attnDNN.handles[s] = h
	return h, nil
}

// attnRelease closes the handles of ctx's streams; those that fail to
// close stay, for the next Close of ctx to try again.
func attnRelease(ctx *cuda.Context) error {
	attnDNN.mu.Lock()
	defer attnDNN.mu.Unlock()
	var errs []error
	for s, h := range attnDNN.handles {
		if s.Context() != ctx {
			continue
		}
		if err := h.Close(); err != nil && !errors.Is(err, cuda.ErrClosed) {
			errs = append(errs, err)
			continue
		}
		delete(attnDNN.handles, s)
	}
	return errors.Join(errs...)
}

// attnPrune closes the handles of streams closed since they were made,
// so that a program that makes a stream for each piece of work keeps one
// cuDNN handle for each stream open, not one for each it ever made. A
// handle that fails to close stays, to be tried again. attnDNN.mu is held.
func attnPrune() {
	for s, h := range attnDNN.handles {
		if _, err := s.Query(); !errors.Is(err, cuda.ErrClosed) {
			continue
		}
		if err := h.Close(); err == nil || errors.Is(err, cuda.ErrClosed) {
			delete(attnDNN.handles, s)
		}
	}
}

// attnDrop forgets s's handle (its stream closed), closing it.
func attnDrop(s *cuda.Stream) {
	attnDNN.mu.Lock()
	defer attnDNN.mu.Unlock()
	if h := attnDNN.handles[s]; h != nil {
		h.Close()
		delete(attnDNN.handles, s)
	}
}

// attnCUDNN runs p into o through cuDNN's fused attention where the mode
// (EnvAttention), the type and the shape allow it: ran says whether it
// did, err its error; where ran is false nn's own kernel runs p.
func attnCUDNN[T Float](op string, o *cuda.DeviceBuffer[T], p *attnParams[T]) (ran bool, err error) {
	if p.lenp != nil {
		return false, nil // a KV cache's length is on the device
	}
	return attnCUDNNOver(op, o, p, p.Sk)
}

// attnCUDNNOver is attnCUDNN over the first sk of p's keys and values
// (sk ≤ p.Sk): for a KV cache whose length the host knows exactly (no
// Append captured since its Reset), whose later positions are not read;
// p.lenp is not read.
func attnCUDNNOver[T Float](op string, o *cuda.DeviceBuffer[T], p *attnParams[T], sk int) (ran bool, err error) {
	mode := attnMode()
	if mode == "own" || sk <= 0 || sk > p.Sk {
		return false, nil
	}
	if f, _ := attnPath.Load().(string); f != "" {
		return false, nil // a kernel of nn's forced, for the tests
	}
	kind := attnKind[T]()
	if kind == 0 || p.D%8 != 0 || p.D > 256 || (p.causal && p.Sq > sk) {
		return false, nil
	}
	h, err := attnHandle(p.s, p.s.Capturing())
	if h == nil && err == nil {
		return false, nil // no handle yet, and the stream captures: nn's own kernel
	}
	if err != nil {
		if mode == "cudnn" {
			return true, err
		}
		return false, nil
	}
	// The scale nn keeps is multiplied by log2(e), for its kernels' exp2.
	scale := float32(float64(p.scaleLog2) / math.Log2E)
	switch kind {
	case 1:
		err = attnRunCUDNN(h, any(o).(*cuda.DeviceBuffer[cuda.Float16]), any(p.q).(*cuda.DeviceBuffer[cuda.Float16]),
			any(p.k).(*cuda.DeviceBuffer[cuda.Float16]), any(p.v).(*cuda.DeviceBuffer[cuda.Float16]), p.B, p.H, p.Hkv, p.Sq, sk, p.D,
			[4][3]int64{p.qst, p.kst, p.vst, p.ost}, p.causal, scale)
	default:
		err = attnRunCUDNN(h, any(o).(*cuda.DeviceBuffer[cuda.BFloat16]), any(p.q).(*cuda.DeviceBuffer[cuda.BFloat16]),
			any(p.k).(*cuda.DeviceBuffer[cuda.BFloat16]), any(p.v).(*cuda.DeviceBuffer[cuda.BFloat16]), p.B, p.H, p.Hkv, p.Sq, sk, p.D,
			[4][3]int64{p.qst, p.kst, p.vst, p.ost}, p.causal, scale)
	}
	if err != nil {
		if errors.Is(err, cuda.ErrClosed) {
			attnDrop(p.s)
		}
		if mode == "auto" {
			return false, nil // nn's own kernel runs what cuDNN did not
		}
		return true, err
	}
	attnCUDNNRuns.Add(1)
	return true, nil
}

// attnCUDNNRuns counts the attentions cuDNN ran, for the tests.
var attnCUDNNRuns atomic.Int64

// attnRunCUDNN is cudnn.Attention of the operands with their strides
// (batch, heads, positions; D's 1): q, k, v, o's.
func attnRunCUDNN[H cudnn.Half](h *cudnn.Handle, o, q, k, v *cuda.DeviceBuffer[H], B, heads, hkv, sq, sk, d int, st [4][3]int64, causal bool, scale float32) error {
	t := func(b *cuda.DeviceBuffer[H], n, s int, st [3]int64) cudnn.AttentionTensor[H] {
		return cudnn.AttentionTensor[H]{Data: b, Shape: [4]int{B, n, s, d}, Strides: [4]int{int(st[0]), int(st[1]), int(st[2]), 1}}
	}
	return cudnn.Attention(h, t(o, heads, sq, st[3]), t(q, heads, sq, st[0]), t(k, hkv, sk, st[1]), t(v, hkv, sk, st[2]),
		cudnn.AttentionOptions{Causal: causal, Scale: scale})
}

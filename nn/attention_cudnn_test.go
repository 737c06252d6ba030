package nn_test

import (
	"errors"
	"fmt"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// TestAttentionBackends checks Attention (BHSD and BSHD) of the halves
// under each backend EnvAttention names against the float64 reference:
// cuDNN's fused attention ("cudnn": wherever it takes the shape, nn's
// own kernel elsewhere, as for 70 queries over 7 keys under the causal
// mask), nn's own ("own", the default), and "auto". Under "cudnn" cuDNN
// must have run (the fake answers its calls; a GPU needs cuDNN found: the
// test skips where it is not).
func TestAttentionBackends(t *testing.T) {
	for _, mode := range []string{"cudnn", "own", "auto"} {
		t.Run(mode, func(t *testing.T) {
			if _, err := cudnn.Library(); err != nil && mode == "cudnn" {
				t.Skipf("cuDNN: %v", err)
			}
			defer nn.SetAttnBackend(mode)()
			t.Run("float16", func(t *testing.T) { testAttentionBackend[cuda.Float16](t, mode) })
			t.Run("bfloat16", func(t *testing.T) { testAttentionBackend[cuda.BFloat16](t, mode) })
		})
	}
}

func testAttentionBackend[T nn.Float](t *testing.T, mode string) {
	s := layerStream(t)
	before := nn.AttnCUDNNRuns()
	for i, c := range attnShapes {
		t.Run(c.String(), func(t *testing.T) {
			attnCheck[T](t, s, c, uint64(i))
		})
	}
	ran := nn.AttnCUDNNRuns() - before
	switch {
	case mode == "own" && ran != 0:
		t.Errorf("cuDNN ran %d attention(s) under \"own\"", ran)
	case mode == "cudnn" && ran == 0 && !t.Failed():
		t.Errorf("cuDNN ran no attention under \"cudnn\"")
	}
	t.Logf("cuDNN ran %d attention(s)", ran)
}

// TestAttentionCUDNNFails checks what a failure of cuDNN does: under
// "auto" nn's own kernel runs the attention instead (the result is
// right), under "cudnn" the error is returned.
func TestAttentionCUDNNFails(t *testing.T) {
	c := cudatest.Fake(t)
	if c == nil {
		return
	}
	s := layerStream(t)
	shape := attnShape{1, 2, 2, 9, 9, 32, true}
	// A first call makes the plan, so that the fault hits the execution.
	func() {
		defer nn.SetAttnBackend("cudnn")()
		attnCheck[cuda.BFloat16](t, s, shape, 0)
	}()
	t.Run("auto", func(t *testing.T) {
		defer nn.SetAttnBackend("auto")()
		c.Fail("cudnnBackendExecute", 1, 5000)
		before := nn.AttnCUDNNRuns()
		attnCheck[cuda.BFloat16](t, s, shape, 0)
		if n := nn.AttnCUDNNRuns() - before; n != 0 {
			t.Errorf("cuDNN ran %d attention(s) while failing", n)
		}
	})
	t.Run("cudnn", func(t *testing.T) {
		defer nn.SetAttnBackend("cudnn")()
		c.Fail("cudnnBackendExecute", 1, 5000)
		q := layerUp[cuda.BFloat16](t, s, make([]float64, 2*9*32), 1, 2, 9, 32)
		_, err := nn.Attention(q, q, q, nn.AttentionOptions{Causal: true})
		if err == nil || errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Attention with cuDNN failing: %v, want cuDNN's execution failure", err)
		}
	})
}

// TestAttentionCUDNNStreams checks that a program making a stream for
// each attention keeps no cuDNN handle for the streams it closed: each
// new stream's handle closes those of the streams closed before it.
func TestAttentionCUDNNStreams(t *testing.T) {
	c := cudatest.Fake(t)
	if c == nil {
		return
	}
	defer nn.SetAttnBackend("cudnn")()
	ctx := cudatest.Context(t)
	shape := attnShape{1, 2, 2, 9, 9, 32, false}
	before := nn.AttnCUDNNHandles()
	for i := range 5 {
		s, err := ctx.NewStream()
		if err != nil {
			t.Fatal(err)
		}
		attnCheck[cuda.BFloat16](t, s, shape, uint64(i))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The last stream's handle is closed by the next stream's, or with
	// the context.
	if n := nn.AttnCUDNNHandles() - before; n > 1 {
		t.Errorf("%d cuDNN handles open for 5 streams made and closed one after another; want at most 1", n)
	}
}

// TestKVCacheCUDNN checks a KV cache's attention under "cudnn": over the
// length the host knows (Appends queued outside a capture) cuDNN runs it,
// and once an Append was captured, whose replays lengthen the cache
// unseen, nn's kernels (which read the length on the device) do: an
// attention after the replays must see every replayed position.
func TestKVCacheCUDNN(t *testing.T) {
	if _, err := cudnn.Library(); err != nil {
		t.Skipf("cuDNN: %v", err)
	}
	defer nn.SetAttnBackend("cudnn")()
	t.Run("host", func(t *testing.T) {
		before := nn.AttnCUDNNRuns()
		testKVCache[cuda.BFloat16](t, nn.LayoutBHSD)
		if nn.AttnCUDNNRuns() == before {
			t.Error("cuDNN ran none of the cache's attentions")
		}
	})
	t.Run("replayed", func(t *testing.T) {
		s := layerStream(t)
		const B, H, Hkv, D, max = 1, 2, 1, 32, 16
		c := must(nn.NewKVCache[cuda.BFloat16](s, B, Hkv, max, D))(t)
		t.Cleanup(func() { c.Free() })
		up := func(seed uint64, heads int) *nd.Array[cuda.BFloat16] {
			return layerUp[cuda.BFloat16](t, s, layerData(B*heads*D, seed, -1, 1), B, heads, 1, D)
		}
		q, k, v := up(1, H), up(2, Hkv), up(3, Hkv)
		out := layerFree(t, must(nd.Empty[cuda.BFloat16](s, B, H, 1, D))(t))
		opts := nn.AttentionOptions{Causal: true}
		decode := func() error {
			if err := c.Append(k, v); err != nil {
				return err
			}
			return c.AttentionInto(out, q, opts)
		}
		if err := decode(); err != nil {
			t.Fatal(err)
		}
		g := must(s.Capture(cuda.CaptureGlobal, decode))(t)
		defer g.Close()
		exec := must(g.Instantiate())(t)
		defer exec.Close()
		// Distinct keys and values at each position: the replays read k
		// and v as they are at launch.
		kb, vb := must(k.Buffer())(t), must(v.Buffer())(t)
		for p := range 3 {
			for i, b := range []*cuda.DeviceBuffer[cuda.BFloat16]{kb, vb} {
				if err := b.CopyFromHost(layerTo[cuda.BFloat16](layerData(B*Hkv*D, uint64(10+2*p+i), -1, 1))); err != nil {
					t.Fatal(err)
				}
			}
			if err := exec.Launch(s); err != nil {
				t.Fatal(err)
			}
		}
		replayed := layerDown(t, out)
		before := nn.AttnCUDNNRuns()
		if err := c.AttentionInto(out, q, opts); err != nil {
			t.Fatal(err)
		}
		if n := nn.AttnCUDNNRuns() - before; n != 0 {
			t.Errorf("cuDNN ran %d attention(s) over a cache a graph lengthened", n)
		}
		layerClose(t, "after the replays", layerDown(t, out), replayed, 0)
		if n, err := c.Len(); n != 4 || err != nil {
			t.Fatalf("Len = %d, %v; want 4", n, err)
		}
	})
}

// TestKVCacheAuto checks which kernel runs a KV cache's attention under
// "auto": cuDNN's for a prompt's pass of 64 queries or more, nn's for a
// decoding step (a query a step: cuDNN would make a plan for each
// length), both against the full attention.
func TestKVCacheAuto(t *testing.T) {
	if _, err := cudnn.Library(); err != nil {
		t.Skipf("cuDNN: %v", err)
	}
	defer nn.SetAttnBackend("auto")()
	s := layerStream(t)
	const B, H, D, prompt, total = 1, 2, 64, 64, 66
	full := attnShape{B, H, H, total, total, D, true}
	qh := layerRound[cuda.BFloat16](layerData(B*H*total*D, 31, -1, 1))
	kh := layerRound[cuda.BFloat16](layerData(B*H*total*D, 32, -1, 1))
	vh := layerRound[cuda.BFloat16](layerData(B*H*total*D, 33, -1, 1))
	want := attnRef(full, qh, kh, vh, 1/8.0)
	c := must(nn.NewKVCache[cuda.BFloat16](s, B, H, total, D))(t)
	t.Cleanup(func() { c.Free() })
	for _, step := range []struct {
		from, to int
		cudnn    bool
	}{{0, prompt, true}, {prompt, prompt + 1, false}, {prompt + 1, total, false}} {
		up := func(x []float64) *nd.Array[cuda.BFloat16] {
			return layerUp[cuda.BFloat16](t, s, attnSlice(x, B, H, total, D, step.from, step.to), B, H, step.to-step.from, D)
		}
		if err := c.Append(up(kh), up(vh)); err != nil {
			t.Fatal(err)
		}
		before := nn.AttnCUDNNRuns()
		out := layerFree(t, must(c.Attention(up(qh), nn.AttentionOptions{Causal: true}))(t))
		if ran := nn.AttnCUDNNRuns() != before; ran != step.cudnn {
			t.Errorf("positions %d-%d: cuDNN ran: %v, want %v", step.from, step.to-1, ran, step.cudnn)
		}
		layerClose(t, fmt.Sprintf("positions %d-%d", step.from, step.to-1), layerDown(t, out), attnSlice(want, B, H, total, D, step.from, step.to), attnTol[cuda.BFloat16]())
	}
}

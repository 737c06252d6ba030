package nn_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nn"
)

// TestAttentionBackends checks Attention (BHSD and BSHD) of the halves
// under each backend EnvAttention names against the float64 reference:
// cuDNN's fused attention ("cudnn": wherever it takes the shape, nn's
// own kernel elsewhere, as for 70 queries over 7 keys under the causal
// mask), nn's own ("own"), and the default ("auto"). Under "cudnn" cuDNN
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

package cudnn_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/cudatest"
)

// attnBenchCase is one case of BenchmarkAttention: nn's
// (nn/attention_bench_test.go), whose names and table it shares.
type attnBenchCase struct {
	op, dtype  string
	B, H, S, D int
}

func (c attnBenchCase) shape() string { return fmt.Sprintf("%dx%dx%dx%d", c.B, c.H, c.S, c.D) }

// attnBenchCases is nn's BenchmarkAttention table (and
// bench/pyref/attention_peers.py's CASES) but its float32 case: cuDNN's
// fused attention takes the halves alone.
var attnBenchCases = []attnBenchCase{
	{"sdpa_causal", "bf16", 8, 12, 512, 64},
	{"sdpa_causal", "bf16", 8, 12, 1024, 64},
	{"sdpa_causal", "bf16", 8, 12, 4096, 64},
	{"sdpa_causal", "bf16", 8, 16, 512, 128},
	{"sdpa_causal", "bf16", 8, 16, 1024, 128},
	{"sdpa_causal", "bf16", 8, 16, 4096, 128},
	{"sdpa", "bf16", 8, 12, 1024, 64},
	{"sdpa", "bf16", 8, 16, 1024, 128},
	{"sdpa", "bf16", 8, 16, 4096, 128},
	{"sdpa_causal", "f16", 8, 16, 1024, 128},
	{"decode", "bf16", 8, 12, 1024, 64},
	{"decode", "bf16", 8, 16, 4096, 128},
}

// BenchmarkAttention is issue 52's attention benchmarks through
// cuDNN's fused attention (Attention), under nn's BenchmarkAttention's
// names, BenchmarkAttention/<op>/<dtype>/<BxHxSxD>, so that
// bench/pyref/attention_peers.py --report sets it beside PyTorch's
// scaled_dot_product_attention as it sets nn's: sdpa_causal and sdpa (Sq
// = Sk = S, with and without the causal mask), decode (one query a
// sequence over S keys, causal: aligned to the end). Timed as nn's: one
// call (the plan), then b.N calls between CUDA events and one
// synchronize; us/op and TFLOP/s (4·B·H·Sq·Sk·D, halved under the mask
// where Sq = Sk). GOCUDA_ATTN_OPS (a comma list of ops) selects a subset.
func BenchmarkAttention(b *testing.B) {
	if cudatest.IsFake() {
		b.Skip("the fake computes on the CPU: nothing to measure")
	}
	var ops map[string]bool
	if list := os.Getenv("GOCUDA_ATTN_OPS"); strings.TrimSpace(list) != "" {
		ops = map[string]bool{}
		for _, op := range strings.Split(list, ",") {
			ops[strings.TrimSpace(op)] = true
		}
	}
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	h := must(cudnn.New(s))(b)
	defer h.Close()
	for _, c := range attnBenchCases {
		if ops != nil && !ops[c.op] {
			continue
		}
		b.Run(c.op+"/"+c.dtype+"/"+c.shape(), func(b *testing.B) {
			if c.dtype == "f16" {
				benchAttention[cuda.Float16](b, ctx, s, h, c)
			} else {
				benchAttention[cuda.BFloat16](b, ctx, s, h, c)
			}
		})
	}
}

func benchAttention[T cudnn.Half](b *testing.B, ctx *cuda.Context, s *cuda.Stream, h *cudnn.Handle, c attnBenchCase) {
	sq := c.S
	if c.op == "decode" {
		sq = 1
	}
	data := make([]T, c.B*c.H*c.S*c.D)
	for i := range data {
		data[i] = of[T](float64(i%251)/125 - 1)
	}
	ten := func(rows int) cudnn.AttentionTensor[T] {
		buf := cudatest.Upload(b, ctx, data[:c.B*c.H*rows*c.D])
		return cudnn.AttentionTensor[T]{Data: buf, Shape: [4]int{c.B, c.H, rows, c.D}}
	}
	q, k, v, o := ten(sq), ten(c.S), ten(c.S), ten(sq)
	opts := cudnn.AttentionOptions{Causal: c.op != "sdpa"}
	call := func() error { return cudnn.Attention(h, o, q, k, v, opts) }
	if err := call(); err != nil {
		b.Skipf("Attention: %v", err)
	}
	cudatest.WarmUp(b, s, call)
	flops := 4 * float64(c.B*c.H) * float64(sq) * float64(c.S) * float64(c.D)
	if c.op == "sdpa_causal" {
		flops /= 2
	}
	start, end := must(ctx.NewEvent())(b), must(ctx.NewEvent())(b)
	defer start.Close()
	defer end.Close()
	b.ResetTimer()
	must(0, start.Record(s))(b)
	for range b.N {
		if err := call(); err != nil {
			b.Fatal(err)
		}
	}
	must(0, end.Record(s))(b)
	must(0, s.Synchronize())(b)
	b.StopTimer()
	elapsed := must(cuda.ElapsedTime(start, end))(b)
	us := float64(elapsed.Nanoseconds()) / 1e3 / float64(b.N)
	b.ReportMetric(us, "us/op")
	b.ReportMetric(flops/us/1e6, "TFLOP/s")
}

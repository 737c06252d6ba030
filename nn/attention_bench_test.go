package nn_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// BenchmarkAttention is issue 52's attention benchmarks (item 4), each
// case BenchmarkAttention/<op>/<dtype>/<shape> with shape BxHxSxD (decode:
// BxHxSkxD, one query), beside PyTorch: bench/pyref/attention_peers.py
// times the same cases under the same names with
// torch.nn.functional.scaled_dot_product_attention, and its --report mode
// sets both side by side (scripts/gpu-attention.sh runs the three).
//
// The ops: sdpa_causal and sdpa (Attention with and without the causal
// mask, Sq = Sk = S), decode (one query a sequence over a KV cache of S
// positions, KVCache.AttentionInto). A case's inputs are random in
// [-1, 1); it calls AttentionInto once (compiling the kernel), then times
// b.N calls and one Synchronize by CUDA events, and reports µs a call
// (us/op) and TFLOP/s (4*B*H*Sq*Sk*D, halved under the causal mask, as
// FlashAttention counts).
//
// GOCUDA_ATTN_OPS (a comma list of ops) selects a subset;
// GOCUDA_ATTN_TILES=NW,MT,BN (or several, separated by ';') times the
// tensor-core kernel's other tiles too, each a case of its own (op
// suffixed @NWxMTxBN), for the search of the defaults.
func BenchmarkAttention(b *testing.B) {
	ops := attnBenchSet(os.Getenv("GOCUDA_ATTN_OPS"))
	s := cudatest.Stream(b, cudatest.Context(b))
	tiles := [][3]int{{0, 0, 0}}
	for _, t := range strings.Split(os.Getenv("GOCUDA_ATTN_TILES"), ";") {
		var nw, mt, bn int
		if _, err := fmt.Sscanf(strings.TrimSpace(t), "%d,%d,%d", &nw, &mt, &bn); err == nil {
			tiles = append(tiles, [3]int{nw, mt, bn})
		}
	}
	for _, c := range attnBenchCases {
		if ops != nil && !ops[c.op] {
			continue
		}
		for _, t := range tiles {
			name := c.op
			if t[0] != 0 {
				if c.dtype == "f32" {
					continue
				}
				name += fmt.Sprintf("@%dx%dx%d", t[0], t[1], t[2])
			}
			b.Run(name+"/"+c.dtype+"/"+c.shape(), func(b *testing.B) {
				layerRequireKernels(b)
				if cudatest.IsFake() {
					b.Skip("the fake driver's CPU would take minutes a case")
				}
				defer nn.SetAttnTiles(t[0], t[1], t[2])()
				switch c.dtype {
				case "bf16":
					attnBench[cuda.BFloat16](b, s, c)
				case "f16":
					attnBench[cuda.Float16](b, s, c)
				default:
					attnBench[float32](b, s, c)
				}
			})
		}
	}
}

// attnBenchCase is one case of BenchmarkAttention.
type attnBenchCase struct {
	op, dtype  string
	B, H, S, D int
}

func (c attnBenchCase) shape() string { return fmt.Sprintf("%dx%dx%dx%d", c.B, c.H, c.S, c.D) }

// attnBenchCases is the table of cases, the first: GPT-2 small's
// heads (12 of 64) and a larger model's (16 of 128), batch 8, at 512,
// 1024 and 4096 positions. bench/pyref/attention_peers.py's CASES is the
// same table.
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
	{"sdpa_causal", "f32", 8, 12, 1024, 64},
	{"decode", "bf16", 8, 12, 1024, 64},
	{"decode", "bf16", 8, 16, 4096, 128},
}

// attnBenchSet is the ops of a comma list; nil for all.
func attnBenchSet(list string) map[string]bool {
	if strings.TrimSpace(list) == "" {
		return nil
	}
	set := map[string]bool{}
	for _, op := range strings.Split(list, ",") {
		set[strings.TrimSpace(op)] = true
	}
	return set
}

// attnBenchData is n values random in [-1, 1) as T: a block of them
// repeated (the timing does not depend on the values, only on their being
// no NaN), kept for the next case of T (the largest made so far, sliced).
func attnBenchData[T nn.Float](n int) []T {
	if have, ok := attnBenchHost.Load(attnTypeKey[T]{}); ok && len(have.([]T)) >= n {
		return have.([]T)[:n]
	}
	block := layerTo[T](layerData(1<<16+7, 1, -1, 1))
	out := make([]T, n)
	for i := 0; i < n; i += len(block) {
		copy(out[i:], block)
	}
	attnBenchHost.Store(attnTypeKey[T]{}, out)
	return out
}

// attnBenchHost holds attnBenchData's values by type (attnTypeKey[T]).
var attnBenchHost sync.Map

type attnTypeKey[T any] struct{}

func attnBench[T nn.Float](b *testing.B, s *cuda.Stream, c attnBenchCase) {
	n := c.B * c.H * c.S * c.D
	arr := func(shape ...int) *nd.Array[T] {
		size := 1
		for _, d := range shape {
			size *= d
		}
		return layerFree(b, must(nd.FromSlice(s, attnBenchData[T](size), shape...))(b))
	}
	var call func() error
	flops := 4 * float64(n) * float64(c.S)
	switch c.op {
	case "decode":
		cache := must(nn.NewKVCache[T](s, c.B, c.H, c.S, c.D))(b)
		b.Cleanup(func() { cache.Free() })
		kv := arr(c.B, c.H, c.S, c.D)
		if err := cache.Append(kv, kv); err != nil {
			b.Fatal(err)
		}
		q, out := arr(c.B, c.H, 1, c.D), arr(c.B, c.H, 1, c.D)
		call = func() error { return cache.AttentionInto(out, q, nn.AttentionOptions{Causal: true}) }
		flops /= float64(c.S)
	default:
		q, k, v, out := arr(c.B, c.H, c.S, c.D), arr(c.B, c.H, c.S, c.D), arr(c.B, c.H, c.S, c.D), arr(c.B, c.H, c.S, c.D)
		opts := nn.AttentionOptions{Causal: c.op == "sdpa_causal"}
		if opts.Causal {
			flops /= 2
		}
		call = func() error { return nn.AttentionInto(out, q, k, v, opts) }
	}
	us := attnBenchLoop(b, s, call)
	b.ReportMetric(flops/us/1e6, "TFLOP/s")
}

// attnBenchLoop times b.N calls of op by CUDA events, after a warm-up,
// and reports µs a call.
func attnBenchLoop(b *testing.B, s *cuda.Stream, op func() error) float64 {
	b.Helper()
	cudatest.WarmUp(b, s, op)
	start, end := must(s.Context().NewEvent())(b), must(s.Context().NewEvent())(b)
	defer start.Close()
	defer end.Close()
	b.ResetTimer()
	if err := start.Record(s); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	if err := end.Record(s); err != nil {
		b.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	elapsed := must(cuda.ElapsedTime(start, end))(b)
	us := float64(elapsed.Nanoseconds()) / 1e3 / float64(b.N)
	b.ReportMetric(us, "us/op")
	return us
}

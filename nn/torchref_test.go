package nn_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// torchRefEnv names the JSON file of PyTorch's outputs that
// bench/pyref/nn_ref.py writes (scripts/gpu-nn.sh makes it on the GPU
// machine and sets this).
const torchRefEnv = "GOCUDA_NN_TORCH_REF"

// torchRefCase is one case of nn_ref.py's file.
type torchRefCase struct {
	Op      string               `json:"op"`
	Dtype   string               `json:"dtype"`
	Shape   []int                `json:"shape"`
	Params  map[string]any       `json:"params"`
	Inputs  map[string][]float64 `json:"inputs"`
	Outputs map[string][]float64 `json:"outputs"`
}

// TestLayersAgainstPyTorch runs each layer on the inputs of PyTorch's
// reference file (bench/pyref/nn_ref.py) and compares with PyTorch's
// outputs, in the case's type, at the type's tolerance: the layers mean
// what PyTorch's mean (GELU's approximation, the causal mask's alignment,
// RoPE's layout, cross-entropy's mean and gradient). The file is the one
// GOCUDA_NN_TORCH_REF names (scripts/gpu-nn.sh writes one on the GPU
// machine, by PyTorch on the GPU, at GPT-2's widths too), else
// testdata/torch_ref.json: the small cases, by PyTorch 1.13 on the CPU
// (NN_REF_SMALL=1 NN_REF_DEVICE=cpu; its CPU has no float16 layer norm,
// activations or cross-entropy, so those cases are bfloat16 and float32
// only).
func TestLayersAgainstPyTorch(t *testing.T) {
	path := os.Getenv(torchRefEnv)
	if path == "" {
		path = "testdata/torch_ref.json"
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Meta  map[string]string `json:"meta"`
		Cases []torchRefCase    `json:"cases"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	t.Logf("PyTorch %s on %s: %d cases", ref.Meta["torch"], ref.Meta["device"], len(ref.Cases))
	s := layerStream(t)
	for i, c := range ref.Cases {
		t.Run(fmt.Sprintf("%d/%s/%s/%v", i, c.Op, c.Dtype, c.Shape), func(t *testing.T) {
			switch c.Dtype {
			case "f32":
				torchRefRun[float32](t, s, c)
			case "f16":
				torchRefRun[cuda.Float16](t, s, c)
			case "bf16":
				torchRefRun[cuda.BFloat16](t, s, c)
			default:
				t.Fatalf("dtype %q", c.Dtype)
			}
		})
	}
	if cudatest.IsFake() {
		t.Log("on the fake driver: the kernels ran on the host")
	}
}

func torchRefRun[T nn.Float](t *testing.T, s *cuda.Stream, c torchRefCase) {
	in := func(name string, shape ...int) *nd.Array[T] {
		v, ok := c.Inputs[name]
		if !ok {
			t.Fatalf("no input %s", name)
		}
		return layerUp[T](t, s, v, shape...)
	}
	ints := func(name string) []int64 {
		out := make([]int64, len(c.Inputs[name]))
		for i, v := range c.Inputs[name] {
			out[i] = int64(v)
		}
		return out
	}
	tol := layerTol[T]() * 2
	check := func(name string, a *nd.Array[T], tol float64) {
		t.Helper()
		layerClose(t, name, layerDown(t, layerFree(t, a)), c.Outputs[name], tol)
	}
	param := func(name string) float64 { v, _ := c.Params[name].(float64); return v }
	flag := func(name string) bool { v, _ := c.Params[name].(bool); return v }
	sh := c.Shape
	switch c.Op {
	case "layernorm", "rmsnorm":
		rows, cols := sh[0], sh[1]
		x, w := in("x", rows, cols), in("w", cols)
		dy := in("dy", rows, cols)
		eps := float32(param("eps"))
		btol := tol * 4 * math.Sqrt(float64(rows))
		if c.Op == "layernorm" {
			b := in("b", cols)
			check("y", must(nn.LayerNorm(x, w, b, eps))(t), tol)
			dx, dw, db, err := nn.LayerNormBackward(dy, x, w, b, eps)
			if err != nil {
				t.Fatal(err)
			}
			check("dx", dx, tol*4)
			check("dw", dw, btol)
			check("db", db, btol)
		} else {
			check("y", must(nn.RMSNorm(x, w, eps))(t), tol)
			dx, dw, err := nn.RMSNormBackward(dy, x, w, eps)
			if err != nil {
				t.Fatal(err)
			}
			check("dx", dx, tol*4)
			check("dw", dw, btol)
		}
	case "gelu":
		check("y", must(nn.GELU(in("x", sh...)))(t), tol)
	case "gelu_tanh":
		check("y", must(nn.GELUTanh(in("x", sh...)))(t), tol)
	case "silu":
		check("y", must(nn.SiLU(in("x", sh...)))(t), tol)
	case "swiglu":
		check("y", must(nn.SwiGLU(in("x", sh...), in("b", sh...)))(t), tol)
	case "softmax":
		mask := nn.Mask{Causal: flag("causal")}
		if _, ok := c.Inputs["lengths"]; ok {
			l := ints("lengths")
			l32 := make([]int32, len(l))
			for i := range l {
				l32[i] = int32(l[i])
			}
			mask.Lengths = layerFree(t, must(nd.FromSlice(s, l32, len(l32)))(t))
		}
		check("y", must(nn.Softmax(in("x", sh...), float32(param("scale")), mask))(t), tol)
	case "cross_entropy":
		x := in("x", sh...)
		tg := layerFree(t, must(nd.FromSlice(s, ints("t"), sh[0]))(t))
		loss := layerFree(t, must(nn.CrossEntropy(x, tg, -100))(t))
		got := must(loss.Item())(t)
		layerClose(t, "loss", []float64{float64(got)}, c.Outputs["loss"], tol)
		check("dx", must(nn.CrossEntropyBackward(x, tg, -100, 1))(t), tol)
	case "embedding":
		ids := layerFree(t, must(nd.FromSlice(s, ints("ids"), len(c.Inputs["ids"])))(t))
		check("y", must(nn.Embedding(in("table", sh...), ids))(t), 1e-7) // exact, less the file's 9 digits
	case "rope":
		r := nn.Rotary{HeadsFirst: flag("heads_first")}
		check("y", must(nn.RoPE(in("x", sh...), int(param("offset")), r))(t), tol*2)
	default:
		t.Fatalf("op %q", c.Op)
	}
}

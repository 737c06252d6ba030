package compute

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nvrtc"
)

// halfKernels returns the sources of kernels that convert halves of type
// d, by name: elementwise, standard operations of d (their buffers' vectors
// loaded and stored through the prelude's vector conversions, a scalar
// converted on its own), the vectors of other widths beside a wider or
// narrower type (4 halves beside float32, 2 beside float64, 8 beside
// int8) and a raw half; others, a reduction, softmax's rows and arg max,
// which convert element by element.
func halfKernels(t *testing.T, d dtype) (elementwise, others map[string]string) {
	t.Helper()
	elementwise, others = map[string]string{}, map[string]string{}
	add := func(name, in, out, body string, pattern ...bool) {
		t.Helper()
		elementwise[fmt.Sprint(name, pattern)] = elementwiseSource(t, name, in, out, body, pattern...)
	}
	h := d.name
	add("gelu_"+h, h+" x", h+" y", unaryBodies["gelu"][1], true, true)
	add("max_"+h, h+" a, "+h+" b", h+" y", binaryBodies["max"][1], true, true, true)
	add("max_"+h, h+" a, "+h+" b", h+" y", binaryBodies["max"][1], true, false, true)
	add("axpby_"+h, h+" alpha, "+h+" x, "+h+" beta, "+h+" y", h+" y", "y = alpha * x + beta * y;", false, true, false, true)
	add("from_f32_"+h, "float32 x", h+" y", "y = x;", true, true)
	add("to_f32_"+h, h+" x", "float32 y", "y = x;", true, true)
	add("from_f64_"+h, "float64 x", h+" y", "y = x;", true, true)
	add("from_i8_"+h, "int8 x", h+" y, "+h+" z", "y = x; z = -x;", true, true, true)
	add("raw_"+h, "raw "+h+" x", h+" y, raw "+h+" acc", "y = x[i]; acc[i] += y;", true, true, true)
	r, err := newStdReduction(d, "max")
	if err != nil {
		t.Fatal(err)
	}
	others["reduce_max_"+h] = r.source([]bool{true, true})
	others["softmax_"+h] = softmaxSource(d, "softmax_"+h, false)
	others["argmax_"+h] = argSource(d, "argmax_"+h, true)
	others["transpose_"+h] = transposeSource(d, "transpose_"+h)
	return elementwise, others
}

// elementwiseSource returns the source of the kernel that name, in, out
// and body declare (ElementwiseSpec's fields) for an argument pattern.
func elementwiseSource(t *testing.T, name, in, out, body string, pattern ...bool) string {
	t.Helper()
	k, err := NewElementwise(ElementwiseSpec{Name: name, InParams: in, OutParams: out, Operation: body})
	if err != nil {
		t.Fatal(err)
	}
	return k.source(pattern)
}

// typeKernels returns the sources of a kernel of each template family
// (templates/*.cu.tmpl) of type d, not a half, by name: elementwise (a
// buffer and a scalar operand, an in-place output, a raw input, a cast to
// and from float32), reductions (of rows and columns, each source holding
// every layout's kernels: a sum and a max), Softmax and LogSoftmax for
// the floats, ArgMax and ArgMin, Transpose.
func typeKernels(t *testing.T, d dtype) map[string]string {
	t.Helper()
	out := map[string]string{}
	h := d.name
	add := func(name, in, result, body string, pattern ...bool) {
		t.Helper()
		out[fmt.Sprint(name, pattern)] = elementwiseSource(t, name, in, result, body, pattern...)
	}
	body := func(ops map[string][2]string, name string) string {
		if d.float {
			return ops[name][1]
		}
		return ops[name][0]
	}
	add("max_"+h, h+" a, "+h+" b", h+" y", body(binaryBodies, "max"), true, true, true)
	add("max_"+h, h+" a, "+h+" b", h+" y", body(binaryBodies, "max"), true, false, true)
	add("axpby_"+h, h+" alpha, "+h+" x, "+h+" beta, "+h+" y", h+" y", "y = alpha * x + beta * y;", false, true, false, true)
	add("abs_"+h, h+" x", h+" y", body(unaryBodies, "abs"), true, true)
	add("gather_"+h, "raw "+h+" x, int64 idx", h+" y, raw "+h+" acc", "y = x[idx]; acc[i] += y;", true, true, true, true)
	add("to_f32_"+h, h+" x", "float32 y", "y = x;", true, true)
	add("from_f32_"+h, "float32 x", h+" y", "y = x;", true, true)
	for _, what := range []string{"sum", "max"} {
		r, err := newStdReduction(d, what)
		if err != nil {
			t.Fatal(err)
		}
		out["reduce_"+what+"_"+h] = r.source([]bool{true})
	}
	if d.float {
		for _, logarithm := range []bool{false, true} {
			name := softmaxName(h, logarithm)
			out[name] = softmaxSource(d, name, logarithm)
		}
	}
	out["argmax_"+h] = argSource(d, "argmax_"+h, true)
	out["argmin_"+h] = argSource(d, "argmin_"+h, false)
	out["transpose_"+h] = transposeSource(d, "transpose_"+h)
	return out
}

// TestTemplatesCompile compiles a kernel of each template family
// (templates/*.cu.tmpl: elementwise, with raw halves too, reduction,
// softmax, transpose, argmax) of every element type with a real NVRTC
// (GOCUDA_LIBNVRTC naming one, as a machine without a GPU may have),
// each source on its own: the integers, float32 and float64 for sm_80
// (typeKernels); the halves (halfKernels), whose kernels convert, for each
// branch of the prelude's conversions that the device takes and the
// fake's tests, which run the host's, do not: sm_70 (no bfloat16
// instruction, no packed conversions), sm_80 (both) and sm_90, the H100's
// and H200's.
func TestTemplatesCompile(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skip("no NVRTC here (set GOCUDA_LIBNVRTC to one): ", err)
	}
	if !cudatest.IsFake() {
		t.Skip("on the GPU the numeric tests compile and run them")
	}
	if testing.Short() {
		t.Skip("compiles 200 kernels, two minutes' work")
	}
	compile := func(name, src string, archs ...string) {
		t.Helper()
		for _, arch := range archs {
			if _, err := nvrtc.Compile(nil, src, nvrtc.Options{Name: name + ".cu", Arch: arch, Flags: compileFlags}); err != nil {
				t.Errorf("%s for %s: %v", name, arch, err)
			}
		}
	}
	for _, d := range dtypes {
		if d.half == "" {
			for name, src := range typeKernels(t, d) {
				compile(name, src, "sm_80")
			}
			continue
		}
		elementwise, others := halfKernels(t, d)
		for name, src := range elementwise {
			compile(name, src, "sm_70", "sm_80", "sm_90")
		}
		for name, src := range others {
			compile(name, src, "sm_70", "sm_90") // slower to compile; no branch of sm_80's own
		}
	}
}

// TestSoftmaxRegsCompile compiles Softmax's and LogSoftmax's kernels of
// every float type with a real NVRTC (GOCUDA_LIBNVRTC) for sm_80 and
// sm_90, asking ptxas for its figures, and fails where a kernel that
// holds rows in registers (_regsE, and _staged, a thread's rows) spills
// to local memory: a spill is a trip to device memory, which holding the
// row in registers is meant to save.
func TestSoftmaxRegsCompile(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skip("no NVRTC here (set GOCUDA_LIBNVRTC to one): ", err)
	}
	if !cudatest.IsFake() {
		t.Skip("on the GPU the numeric tests compile and run them")
	}
	if testing.Short() {
		t.Skip("compiles 16 kernels, a minute's work")
	}
	for _, sm := range softmaxSources() {
		name, src := sm.name, sm.source
		for _, arch := range []string{"sm_80", "sm_90"} {
			out, err := nvrtc.Compile(nil, src, nvrtc.Options{Name: name + ".cu", Arch: arch, Flags: append([]string{"-Xptxas=-v"}, compileFlags...)})
			if err != nil {
				t.Fatalf("%s for %s: %v", name, arch, err)
			}
			figures := ptxasFigures(out.Log)
			regs := 0
			for k, f := range figures {
				if !strings.HasPrefix(k, name+"_regs") && k != name+"_staged" {
					continue
				}
				regs++
				t.Logf("%s for %s: %s", k, arch, f)
				if !strings.Contains(f, " 0 bytes spill stores") || !strings.Contains(f, " 0 bytes stack frame") {
					t.Errorf("%s for %s: %s spills: %s", name, arch, k, f)
				}
			}
			if _, ok := figures[name+"_staged"]; regs < 2 || !ok {
				t.Fatalf("%s for %s: ptxas said nothing of %s_regs or of %s_staged:\n%s", name, arch, name, name, out.Log)
			}
			for _, k := range []string{name, name + "_stats", name + "_apply"} {
				t.Logf("%s for %s: %s", k, arch, figures[k])
			}
		}
	}
}

// ptxasFigures returns ptxas -v's lines of each entry function, by name,
// joined.
func ptxasFigures(log string) map[string]string {
	out := map[string]string{}
	fn := ""
	for _, line := range strings.Split(log, "\n") {
		if i := strings.Index(line, "Function properties for "); i >= 0 {
			fn = strings.TrimSpace(line[i+len("Function properties for "):])
			continue
		}
		if i := strings.Index(line, "Compiling entry function '"); i >= 0 {
			rest := line[i+len("Compiling entry function '"):]
			fn = rest[:strings.Index(rest, "'")]
			continue
		}
		if fn != "" && strings.TrimSpace(line) != "" {
			out[fn] += " " + strings.TrimSpace(line)
		}
	}
	return out
}

// TestWriteCubins writes the sm_90 cubins of the float types' sum
// reductions (sum_TYPE.cubin) and of Softmax's and LogSoftmax's kernels
// (NAME.cubin) into GOCUDA_CUBIN_DIR, compiled by a real NVRTC
// (GOCUDA_LIBNVRTC), for reading their machine code on a machine without
// a GPU (`cuobjdump -sass`; scripts/offline-nvrtc.sh fetches both): how a
// loop's loads are scheduled is seen there, not in the source.
func TestWriteCubins(t *testing.T) {
	dir := os.Getenv("GOCUDA_CUBIN_DIR")
	if dir == "" {
		t.Skip("set GOCUDA_CUBIN_DIR to a folder for the cubins")
	}
	if _, err := nvrtc.Version(); err != nil {
		t.Fatal("no NVRTC here (set GOCUDA_LIBNVRTC to one): ", err)
	}
	write := func(name, src string) {
		t.Helper()
		out, err := nvrtc.Compile(nil, src, nvrtc.Options{Name: name + ".cu", Arch: "sm_90", Flags: compileFlags})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".cubin"), out.Image, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, fs := range floatSums(t) {
		write("sum_"+fs.d.name, fs.r.source([]bool{true}))
	}
	for _, sm := range softmaxSources() {
		write(sm.name, sm.source)
	}
}

// floatSum is a float element type and its sum reduction.
type floatSum struct {
	d dtype
	r *Reduction
}

// floatSums returns the sum reduction of each float type, in dtypes'
// order.
func floatSums(t *testing.T) []floatSum {
	t.Helper()
	var out []floatSum
	for _, d := range dtypes {
		if !d.float {
			continue
		}
		r, err := newStdReduction(d, "sum")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, floatSum{d, r})
	}
	return out
}

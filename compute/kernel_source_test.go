package compute

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// envUpdateKernelSources, set to 1, makes TestKernelSources write its
// goldens (testdata/kernelsrc) instead of comparing with them.
const envUpdateKernelSources = "GOCUDA_UPDATE_KERNELSRC"

// kernelSourcesDir holds the goldens of TestKernelSources: sums.txt, a
// line "name sha256 bytes" for every generated source, and the text of a
// few after the prelude, which every source starts with (fullSources:
// NAME.cu.golden), so that a change shows as a readable diff.
var kernelSourcesDir = filepath.Join("testdata", "kernelsrc")

// fullSources are the sources whose whole text is a golden: one of each
// family, halves among them.
var fullSources = []string{
	"elementwise/axpby_float16/sbsb",
	"elementwise/user/hstencil/bbb",
	"reduction/reduce_sum_float32/b",
	"reduction/user/wsum/bb",
	"softmax/logsoftmax_bfloat16",
	"argmax/argmax_float64",
	"transpose/transpose_int8",
}

// patterns returns every pattern of n inputs (true: a buffer), in a
// fixed order: all buffers first.
func patterns(n int) [][]bool {
	var ps [][]bool
	for m := 0; m < 1<<n; m++ {
		p := make([]bool, n)
		for j := range p {
			p[j] = m&(1<<j) == 0
		}
		ps = append(ps, p)
	}
	return ps
}

func patternName(p []bool) string {
	var b strings.Builder
	for _, buf := range p {
		if buf {
			b.WriteByte('b')
		} else {
			b.WriteByte('s')
		}
	}
	return b.String()
}

// kernelSources returns the source of every kernel the package generates
// for a wide set of declarations, by a name that says which: each standard
// operation of every type it takes (elementwise in each pattern of
// buffers and scalars, reductions, Softmax and LogSoftmax, ArgMax and
// ArgMin, Transpose), and user declarations of several parameters,
// halves, raw parameters and mixed widths in every pattern.
func kernelSources(t *testing.T) map[string]string {
	t.Helper()
	src := map[string]string{}
	add := func(name, s string) {
		t.Helper()
		if _, ok := src[name]; ok {
			t.Fatalf("two sources named %s", name)
		}
		src[name] = s
	}
	elementwise := func(prefix string, spec ElementwiseSpec) {
		t.Helper()
		k, err := NewElementwise(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec.Name, err)
		}
		for _, p := range everyPattern(k) {
			add(prefix+spec.Name+"/"+patternName(p), k.source(p))
		}
	}
	reduction := func(prefix string, r *Reduction) {
		t.Helper()
		for _, p := range patterns(len(r.in)) {
			if !slices.Contains(p, true) && len(r.in) > 1 {
				continue // all scalars: one is enough
			}
			add(prefix+r.name+"/"+patternName(p), r.source(p))
		}
	}
	for _, d := range dtypes {
		h := d.name
		ew := func(name, in, out, body string) {
			t.Helper()
			r := strings.NewReplacer("%s", h)
			elementwise("elementwise/", ElementwiseSpec{Name: name + "_" + h, InParams: r.Replace(in), OutParams: r.Replace(out), Operation: body})
		}
		ew("fill", "%s v", "%s y", "y = v;")
		ew("iota", "%s start, %s step", "%s y", fmt.Sprintf("y = start + (%s)i * step;", d.value))
		ew("axpby", "%s alpha, %s x, %s beta, %s y", "%s y", "y = alpha * x + beta * y;")
		ew("where", "uint8 mask, %s a, %s b", "%s y", "y = mask ? a : b;")
		for _, op := range slices.Sorted(mapKeys(binaryBodies)) {
			body := binaryBodies[op][0]
			if d.float {
				body = binaryBodies[op][1]
			}
			ew(op, "%s a, %s b", "%s y", body)
		}
		for _, op := range slices.Sorted(mapKeys(unaryBodies)) {
			body := unaryBodies[op][1]
			if !d.float {
				body = unaryBodies[op][0]
				if op == "abs" && !d.signed {
					body = "y = x;"
				}
			}
			if body != "" {
				ew(op, "%s x", "%s y", body)
			}
		}
		for _, to := range dtypes {
			body := "y = x;"
			if d.half != "" && !to.float {
				body = fmt.Sprintf("y = (%s)x;", to.value)
			}
			elementwise("elementwise/", ElementwiseSpec{Name: "cast_" + d.name + "_" + to.name, InParams: d.name + " x", OutParams: to.name + " y", Operation: body})
		}
		whats := []string{"sum", "max", "min"}
		if d.float {
			whats = append(whats, "mean")
		}
		for _, what := range whats {
			r, err := newStdReduction(d, what)
			if err != nil {
				t.Fatal(err)
			}
			reduction("reduction/", r)
		}
		if d.float {
			for _, logarithm := range []bool{false, true} {
				name := softmaxName(d.name, logarithm)
				add("softmax/"+name, softmaxSource(d, name, logarithm))
			}
		}
		for _, maximum := range []bool{true, false} {
			name := "argmin_" + h
			if maximum {
				name = "argmax_" + h
			}
			add("argmax/"+name, argSource(d, name, maximum))
		}
		add("transpose/transpose_"+h, transposeSource(d, "transpose_"+h))
	}
	for _, spec := range []ElementwiseSpec{
		{Name: "axpy", InParams: "float32 a, float32 x, float32 y", OutParams: "float32 y", Operation: "y = a * x + y"},
		{Name: "haxpy", InParams: "float16 a, float16 x, float16 y", OutParams: "float16 y", Operation: "y = a * x + y;"},
		{Name: "mixed", InParams: "int8 q, bfloat16 s, float64 z", OutParams: "float16 y, uint32 c", Operation: "y = q * s + z; c = q // a comment"},
		{Name: "gather", InParams: "raw float64 x, int32 idx", OutParams: "float32 y", Operation: "y = x[idx]"},
		{Name: "scatter", InParams: "float32 v, int64 idx", OutParams: "raw float32 y", Operation: "y[idx] = v"},
		{Name: "hstencil", InParams: "raw float16 x, raw bfloat16 acc", OutParams: "float16 y, raw bfloat16 acc", Operation: "y = x[i] + x[i + 1]; acc[i] += y"},
		{Name: "copy", InParams: "raw float32 x", OutParams: "raw float32 y", Operation: "y[i] = x[i]"},
		{Name: "blur", InParams: "raw float32 x, float32 w", OutParams: "float32 y", Operation: "const float l = i > 0 ? x[i - 1] : x[i];\n\t\t\tconst float r = i + 1 < n ? x[i + 1] : x[i];\n\t\t\ty = w * l + (1 - 2 * w) * x[i] + w * r"},
		{Name: "split2", InParams: "bfloat16 x", OutParams: "bfloat16 y, float16 z", Operation: "y = x; z = -x;"},
	} {
		elementwise("elementwise/user/", spec)
	}
	for _, spec := range []ReductionSpec{
		{Name: "sumsq", InParams: "float32 x, float32 m", OutParams: "float64 y", MapExpr: "(x - m) * (x - m)", ReduceExpr: "a + b", PostMapExpr: "y = a / n;", Identity: "0", ReduceType: "float64"},
		{Name: "wsum", InParams: "float16 x, int8 w", OutParams: "float32 y", MapExpr: "x * w", ReduceExpr: "a + b", PostMapExpr: "y = a", Identity: "0", ReduceType: "float32"},
		{Name: "hnorm", InParams: "bfloat16 x, float16 s", OutParams: "bfloat16 y", MapExpr: "x * s * i", ReduceExpr: "a > b ? a : b", PostMapExpr: "y = a", Identity: "-1e30f", ReduceType: "float32"},
		{Name: "sumsq1", InParams: "float32 x", OutParams: "float32 y", MapExpr: "x * x // squares", ReduceExpr: "a + b;", PostMapExpr: "y = a", Identity: "0;", ReduceType: "float32"},
		{Name: "count", InParams: "uint8 x, int64 k, float64 d", OutParams: "int64 y", MapExpr: "x == k ? d : 0", ReduceExpr: "a + b", PostMapExpr: "y = a", Identity: "0", ReduceType: "int64"},
	} {
		r, err := NewReduction(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec.Name, err)
		}
		reduction("reduction/user/", r)
	}
	return src
}

// everyPattern returns every argument pattern of k that a launch may
// have: an output or a raw parameter is a buffer, an input may be either.
func everyPattern(k *Elementwise) [][]bool {
	var free []int
	for j, p := range k.ps {
		if k.readOnly[j] && !p.raw {
			free = append(free, j)
		}
	}
	var ps [][]bool
	for m := 0; m < 1<<len(free); m++ {
		p := make([]bool, len(k.ps))
		for j := range p {
			p[j] = true
		}
		for i, j := range free {
			if m&(1<<i) != 0 {
				p[j] = false
			}
		}
		ps = append(ps, p)
	}
	return ps
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestKernelSources compares the source of every kernel of kernelSources
// with the goldens of testdata/kernelsrc, byte for byte: the kernels'
// text, however it is produced, stays what it was (and so do the disk
// cache's keys). GOCUDA_UPDATE_KERNELSRC=1 writes the goldens.
func TestKernelSources(t *testing.T) {
	src := kernelSources(t)
	names := slices.Sorted(mapKeys(src))
	var sums strings.Builder
	for _, name := range names {
		fmt.Fprintf(&sums, "%s %x %d\n", name, sha256.Sum256([]byte(src[name])), len(src[name]))
	}
	fullName := func(name string) string {
		return filepath.Join(kernelSourcesDir, strings.ReplaceAll(name, "/", "_")+".cu.golden")
	}
	// The text after the prelude (a source without it, whole).
	afterPrelude := func(name string) string { return strings.TrimPrefix(src[name], prelude) }
	if os.Getenv(envUpdateKernelSources) == "1" {
		if err := os.MkdirAll(kernelSourcesDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(kernelSourcesDir, "sums.txt"), []byte(sums.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, name := range fullSources {
			if err := os.WriteFile(fullName(name), []byte(afterPrelude(name)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote %d sources' sums and %d whole", len(names), len(fullSources))
		return
	}
	for _, name := range fullSources {
		want, err := os.ReadFile(fullName(name))
		if err != nil {
			t.Fatal(err)
		}
		if got := afterPrelude(name); got != string(want) {
			t.Errorf("%s differs from %s: %s", name, fullName(name), firstDiff(got, string(want)))
		}
	}
	want, err := os.ReadFile(filepath.Join(kernelSourcesDir, "sums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	wantSums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		name, sum, _ := strings.Cut(line, " ")
		wantSums[name] = sum
	}
	gotLines := strings.Split(strings.TrimSpace(sums.String()), "\n")
	for _, line := range gotLines {
		name, sum, _ := strings.Cut(line, " ")
		switch w, ok := wantSums[name]; {
		case !ok:
			t.Errorf("%s: no golden", name)
		case w != sum:
			t.Errorf("%s: source changed (sha256 and bytes %s, golden %s)", name, sum, w)
		}
		delete(wantSums, name)
	}
	for name := range wantSums {
		t.Errorf("%s: golden of no source", name)
	}
	if len(names) < 1000 {
		t.Errorf("%d sources: want the golden set's whole (1000 or more)", len(names))
	}
}

// firstDiff says where got first differs from want, by line.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d is\n\t%q\nwant\n\t%q", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}

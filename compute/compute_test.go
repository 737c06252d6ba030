package compute_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nvrtc"
)

// TestMain runs the tests, and on the fake driver, which has no NVRTC,
// with the stand-in compiler in its place (StandInOnFake): the Examples run
// there too, on the kernels the fake knows.
func TestMain(m *testing.M) {
	if err := compute.StandInOnFake(); err != nil {
		fmt.Fprintln(os.Stderr, "compute tests:", err)
		os.Exit(1)
	}
	cudatest.Main(m)
}

func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }

// onFake returns gpu, or small on the fake driver, which runs the kernels
// on the CPU at a few tens of millions of elements a second: a size that
// keeps what a test checks there (the fake's device has 4
// multiprocessors, so its layouts change at smaller shapes) without its
// minutes.
func onFake[T any](gpu, small T) T {
	if cudatest.IsFake() {
		return small
	}
	return gpu
}

// requireNVRTC skips where the kernels can be neither compiled nor run:
// where NVRTC is missing, except on the fake driver with a C++ compiler,
// which compiles them for the host and runs them on the CPU
// (StandInOnFake), and except on the GPU machine (GOCUDA_REQUIRE_GPU=1),
// where NVRTC must be there.
func requireNVRTC(t testing.TB) {
	t.Helper()
	if cudatest.IsFake() && compute.HostCompiles() {
		return
	}
	if _, err := nvrtc.Version(); err == nil {
		return
	} else if os.Getenv(cudatest.EnvRequireGPU) == "1" {
		t.Fatalf("GOCUDA_REQUIRE_GPU=1 and no NVRTC: %v", err)
	}
	t.Skip("no NVRTC, and no C++ compiler to compile the kernels for the fake: they cannot be compiled here")
}

// TestDeclarationErrors: a kernel's declaration is checked in Go, field by
// field before anything is compiled, and refused in words that name the
// field.
func TestDeclarationErrors(t *testing.T) {
	ew := func(change func(*compute.ElementwiseSpec)) error {
		spec := compute.ElementwiseSpec{Name: "k", InParams: "float32 x", OutParams: "float32 y", Operation: "y = x"}
		change(&spec)
		return second(compute.NewElementwise(spec))
	}
	red := func(change func(*compute.ReductionSpec)) error {
		spec := compute.ReductionSpec{Name: "r", InParams: "float32 x", OutParams: "float32 y", MapExpr: "x", ReduceExpr: "a + b",
			PostMapExpr: "y = a", Identity: "0", ReduceType: "float32"}
		change(&spec)
		return second(compute.NewReduction(spec))
	}
	for _, tt := range []struct {
		name, want string
		err        error
	}{
		{"kernel name", `NewElementwise: invalid value: Name "1x" is not a kernel name`, ew(func(s *compute.ElementwiseSpec) { s.Name = "1x" })},
		{"reserved name", `Name "gocuda_x" is not a kernel name`, ew(func(s *compute.ElementwiseSpec) { s.Name = "gocuda_x" })},
		{"no name", "Name is empty", ew(func(s *compute.ElementwiseSpec) { s.Name = "" })},
		{"reserved parameter", `InParams: "gocudax" is not a name a parameter may have`, ew(func(s *compute.ElementwiseSpec) { s.InParams = "float32 gocudax" })},
		{"unknown type", `InParams: "float" is not a type: want one of int8, `, ew(func(s *compute.ElementwiseSpec) { s.InParams = "float x" })},
		{"no parameter name", `InParams: "float32" is not a type and a name`, ew(func(s *compute.ElementwiseSpec) { s.InParams = "float32" })},
		{"bad parameter name", `InParams: "_x" is not a name`, ew(func(s *compute.ElementwiseSpec) { s.InParams = "float32 _x" })},
		{"output type", `OutParams: "float" is not a type`, ew(func(s *compute.ElementwiseSpec) { s.OutParams = "float y" })},
		{"no outputs", "OutParams is empty", ew(func(s *compute.ElementwiseSpec) { s.OutParams = "" })},
		{"empty operation", "Operation is empty", ew(func(s *compute.ElementwiseSpec) { s.Operation = " " })},
		{"twice", `InParams declares "x" twice`, ew(func(s *compute.ElementwiseSpec) { s.InParams = "float32 x, float32 x" })},
		{"output twice", `OutParams declares "y" twice`, ew(func(s *compute.ElementwiseSpec) { s.OutParams = "float32 y, float32 y" })},
		{"index name", `InParams: "i" is reserved`, ew(func(s *compute.ElementwiseSpec) { s.InParams = "float32 i" })},
		{"count name", `OutParams: "n" is reserved`, ew(func(s *compute.ElementwiseSpec) { s.OutParams = "float32 n" })},
		{"in-place of another type", "OutParams: x is an input of type float32 and an output of type float64", ew(func(s *compute.ElementwiseSpec) { s.OutParams = "float64 x" })},
		{"reduction name", `NewReduction: invalid value: Name "r-1" is not a kernel name`, red(func(s *compute.ReductionSpec) { s.Name = "r-1" })},
		{"reduction inputs", "InParams is empty", red(func(s *compute.ReductionSpec) { s.InParams = "" })},
		{"reduction outputs", "OutParams declares 2 parameters: a reduction has exactly one output", red(func(s *compute.ReductionSpec) { s.OutParams = "float32 y, float32 z" })},
		{"reduction no output", "OutParams declares 0 parameters", red(func(s *compute.ReductionSpec) { s.OutParams = "" })},
		{"reduction names", `InParams: "a" is reserved`, red(func(s *compute.ReductionSpec) { s.InParams = "float32 a" })},
		{"reduction output name", `OutParams: "b" is reserved`, red(func(s *compute.ReductionSpec) { s.OutParams = "float32 b" })},
		{"reduction output is an input", `OutParams declares "x" twice`, red(func(s *compute.ReductionSpec) { s.OutParams = "float32 x" })},
		{"map", "MapExpr is empty", red(func(s *compute.ReductionSpec) { s.MapExpr = "" })},
		{"reduce", "ReduceExpr is empty", red(func(s *compute.ReductionSpec) { s.ReduceExpr = "\t" })},
		{"post-map", "PostMapExpr is empty", red(func(s *compute.ReductionSpec) { s.PostMapExpr = "" })},
		{"identity", "NewReduction: invalid value: Identity is empty", red(func(s *compute.ReductionSpec) { s.Identity = "" })},
		{"reduce type", `NewReduction: invalid value: ReduceType "float" is not a type: want one of int8, `, red(func(s *compute.ReductionSpec) { s.ReduceType = "float" })},
		{"no reduce type", "ReduceType is empty", red(func(s *compute.ReductionSpec) { s.ReduceType = "" })},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, cuda.ErrInvalidValue) || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("got %v; want ErrInvalidValue saying %q", tt.err, tt.want)
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

// TestLaunchErrors: the arguments of a launch are checked before anything
// is compiled or launched: count, types, lengths, contexts, streams; and an
// empty launch does nothing. Nothing compiles here (NVRTC put back, where
// the fake has none), so a call these checks let through would fail with
// ErrNotSupported: none of them gets that far.
func TestLaunchErrors(t *testing.T) {
	ctxs := cudatest.Contexts(t, 1)
	ctx := ctxs[0]
	compute.UseNVRTC(t)
	s := cudatest.Stream(t, ctx)
	other := must(ctx.NewStream())(t)
	defer other.Close()
	axpy := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "axpy", InParams: "float32 a, float32 x, float32 y", OutParams: "float32 y", Operation: "y = a * x + y;"}))(t)
	x := must(cuda.Zeroed[float32](ctx, 8))(t)
	defer x.Free()
	y := must(cuda.Zeroed[float32](ctx, 8))(t)
	defer y.Free()
	short := must(cuda.Zeroed[float32](ctx, 7))(t)
	defer short.Free()
	ints := must(cuda.Zeroed[int32](ctx, 8))(t)
	defer ints.Free()
	empty := must(cuda.Alloc[float32](ctx, 0))(t)
	defer empty.Free()
	one := must(cuda.Alloc[int64](ctx, 1))(t)
	defer one.Free()
	var nilBuf *cuda.DeviceBuffer[float32]
	for _, tt := range []struct {
		name, want string
		err        error
	}{
		{"count", "takes 3 arguments", axpy.Launch(s, float32(1), x)},
		{"scalar type", "a is declared float32", axpy.Launch(s, 1.0, x, y)},
		{"buffer type", "x is declared float32, and a buffer of int32", axpy.Launch(s, float32(1), ints, y)},
		{"lengths", "y has 7 elements, and x 8: every buffer must have as many", axpy.Launch(s, float32(1), x, short)},
		{"nil buffer", "x is a nil *cuda.DeviceBuffer", axpy.Launch(s, float32(1), nilBuf, y)},
		{"zero buffer", "x is a zero cuda.DeviceBuffer", axpy.Launch(s, float32(1), new(cuda.DeviceBuffer[float32]), y)},
		{"output scalar", "y is an output", mustLaunch(t, "float32 x", "float32 y", s, x, float32(0))},
		{"nil stream", "s is a nil *cuda.Stream", axpy.Launch(nil, float32(1), x, y)},
		{"zero kernel", "zero *Elementwise", new(compute.Elementwise).Launch(s, x)},
		{"Add lengths", "Add: invalid value: b has 7 elements, and a 8", compute.Add(y, x, short, s)},
		{"Cast lengths", "Cast: invalid value: dst has 7 elements, and src 8", compute.Cast(short, ints, s)},
		{"Sum output", "Sum: invalid value: dst has 8 elements, want 1", compute.Sum(y, x, s)},
		{"SumAxis shape", "dst has 7 elements, want 2: one per row", compute.SumAxis(short, x, compute.Shape{Rows: 2, Cols: 4}, compute.PerRow, s)},
		{"SumAxis axis", "axis 7 is not an axis", compute.SumAxis(short, x, compute.Shape{Rows: 2, Cols: 4}, 7, s)},
		{"Softmax shape", "dst has 8 elements, want 9: a 3×3 matrix", compute.Softmax(y, x, compute.Shape{Rows: 3, Cols: 3}, s)},
		{"Transpose in place", "in place", compute.Transpose(x, x, compute.Shape{Rows: 2, Cols: 4}, s)},
		{"negative shape", "dimensions must be zero or more", compute.Transpose(y, x, compute.Shape{Rows: -2, Cols: -4}, s)},
		{"ArgMax of nothing", "src is empty", compute.ArgMax(one, empty, s)},
		{"ArgMax output", "dst has 0 elements, want 1", compute.ArgMax(must(cuda.Alloc[int64](ctx, 0))(t), x, s)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, cuda.ErrInvalidValue) || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("got %v; want ErrInvalidValue saying %q", tt.err, tt.want)
			}
		})
	}
	// Empty buffers launch nothing, and need no compiler.
	for name, err := range map[string]error{
		"Elementwise": axpy.Launch(s, float32(1), empty, empty),
		"Add":         compute.Add(empty, empty, empty, s),
		"Softmax":     compute.Softmax(empty, empty, compute.Shape{Rows: 0, Cols: 5}, s),
		"Transpose":   compute.Transpose(empty, empty, compute.Shape{Rows: 3, Cols: 0}, s),
		"SumAxis":     compute.SumAxis(empty, empty, compute.Shape{Rows: 0, Cols: 3}, compute.PerRow, s),
	} {
		if err != nil {
			t.Errorf("%s of empty buffers: %v", name, err)
		}
	}
}

func mustLaunch(t *testing.T, in, out string, s *cuda.Stream, args ...any) error {
	t.Helper()
	k := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "k", InParams: in, OutParams: out, Operation: "y = x;"}))(t)
	return k.Launch(s, args...)
}

// TestSource: the generated kernel has a grid-stride loop with 64-bit
// indices, over 16-byte vectors where every buffer is aligned for them and
// then over the elements left; inputs read through const restricted
// pointers, an in-place output read before the body, halves converted on
// load and store, and a scalar passed by value.
func TestSource(t *testing.T) {
	k := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "axpy", InParams: "float16 a, float16 x, float16 y", OutParams: "float16 y", Operation: "y = a * x + y;"}))(t)
	src := compute.ElementwiseSource(k, false, true, true)
	for _, want := range []string{
		"void gocuda_body(const float a, const float x, float& y, const long long i, const long long n) {\ny = a * x + y;\n;\n}",
		`extern "C" __global__ void axpy(unsigned short gocudap_a, const unsigned short* __restrict__ gocudap_x, unsigned short* gocudap_y, long long n)`,
		"if ((unsigned long long)gocudap_x % sizeof(gocuda_vec<unsigned short, 8>) == 0 && (unsigned long long)gocudap_y % sizeof(gocuda_vec<unsigned short, 8>) == 0) {",
		"const gocuda_vec<unsigned short, 8> gocudav_x = ((const gocuda_vec<unsigned short, 8>*)gocudap_x)[gocuda_j];",
		"gocuda_vec<unsigned short, 8> gocudav_y = ((gocuda_vec<unsigned short, 8>*)gocudap_y)[gocuda_j];",
		"const long long i = gocuda_j * 8 + gocuda_k;",
		"gocuda_load_f16(gocudaf_x, gocudav_x);",
		"gocuda_load_f16(gocudaf_y, gocudav_y);",
		"const float x = gocudaf_x[gocuda_k];",
		"float y = gocudaf_y[gocuda_k];",
		"gocudaf_y[gocuda_k] = (float)(y);",
		"gocuda_store_f16(gocudav_y, gocudaf_y);\n\t\t\t((gocuda_vec<unsigned short, 8>*)gocudap_y)[gocuda_j] = gocudav_y;",
		"gocuda_start = gocuda_vectors * 8;",
		"for (long long i = gocuda_start + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gocuda_stride)",
		"const float a = gocuda_f16_to_f32(gocudap_a);",
		"const float x = gocuda_f16_to_f32(gocudap_x[i]);",
		"float y = gocuda_f16_to_f32(gocudap_y[i]);",
		"gocuda_body(a, x, y, i, n);",
		"gocudap_y[i] = gocuda_f32_to_f16((float)(y));",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("source lacks %q:\n%s", want, src)
		}
	}
	// The vectors are 16 bytes of the widest buffer: 4 of int32 beside int8.
	out := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "cast", InParams: "int8 x", OutParams: "int32 y", Operation: "y = x;"}))(t)
	src = compute.ElementwiseSource(out, true, true)
	if !strings.Contains(src, "int y;\n") || strings.Contains(src, "int y = ") {
		t.Errorf("an output that is no input is read before the body:\n%s", src)
	}
	if !strings.Contains(src, "gocuda_vec<signed char, 4>") || !strings.Contains(src, "gocuda_vec<int, 4>") {
		t.Errorf("int8 to int32 does not take 4 elements at a time:\n%s", src)
	}
	r := must(compute.NewReduction(compute.ReductionSpec{Name: "sumsq", InParams: "float32 x, float32 m", OutParams: "float64 y", MapExpr: "(x - m) * (x - m)", ReduceExpr: "a + b", PostMapExpr: "y = a / n;", Identity: "0", ReduceType: "float64"}))(t)
	src = compute.ReductionSource(r, true, false)
	for _, want := range []string{"typedef double gocuda_acc;", "sumsq_rows(", "sumsq_split(", "sumsq_chunks(", "sumsq_cols(", "sumsq_narrow(",
		"float gocudap_m, ", "gocuda_map(const float x, const float m, const long long i) { return (gocuda_acc)(\n(x - m) * (x - m)\n); }",
		"const bool gocuda_wide = ((unsigned long long)gocudap_x % sizeof(gocuda_vec<float, 4>) == 0) && cols % 4 == 0;",
		"v = gocuda_reduce(v, gocuda_map(gocudav_x.v[gocuda_k], gocudap_m, gocuda_j * 4 + gocuda_k));",
		"v = gocuda_reduce(v, gocuda_map(gocudap_x[i], gocudap_m, i));", "y = a / n;"} {
		if !strings.Contains(src, want) {
			t.Errorf("reduction source lacks %q:\n%s", want, src)
		}
	}
	// A reduction of scalars only has nothing to load as vectors.
	r = must(compute.NewReduction(compute.ReductionSpec{Name: "scalars", InParams: "float32 x", OutParams: "float32 y", MapExpr: "x", ReduceExpr: "a + b", PostMapExpr: "y = a;", Identity: "0", ReduceType: "float32"}))(t)
	if src := compute.ReductionSource(r, false); !strings.Contains(src, "const bool gocuda_wide = (false) && ") {
		t.Errorf("a reduction of a scalar loads vectors:\n%s", src)
	}
}

// TestWithoutSemicolon: an operation and a post-map are taken with or
// without their last semicolon (CuPy's bodies have none), or ending in a //
// comment; an expression (map, reduce, identity) needs none, and one a port
// ends with is dropped. The generated source ends each statement itself.
func TestWithoutSemicolon(t *testing.T) {
	for _, tt := range []struct{ operation, want string }{
		{"z = x * y + 1.0f", "{\nz = x * y + 1.0f\n;\n}"},
		{"z = x * y + 1.0f;", "{\nz = x * y + 1.0f;\n;\n}"},
		{"z = x; // a copy", "{\nz = x; // a copy\n;\n}"},
		{"z = x // a copy", "{\nz = x // a copy\n;\n}"},
		{"if (x > 0) { z = x; } else { z = y; }", "{\nif (x > 0) { z = x; } else { z = y; }\n;\n}"},
	} {
		k := must(compute.NewElementwise(compute.ElementwiseSpec{Name: "k", InParams: "float32 x, float32 y", OutParams: "float32 z", Operation: tt.operation}))(t)
		if src := compute.ElementwiseSource(k, true, true, true); !strings.Contains(src, "void gocuda_body(const float x, const float y, float& z, const long long i, const long long n) "+tt.want) {
			t.Errorf("operation %q: the source lacks %q:\n%s", tt.operation, tt.want, src)
		}
	}
	for _, tt := range []struct {
		spec compute.ReductionSpec
		want []string
	}{
		{compute.ReductionSpec{MapExpr: "x * x", ReduceExpr: "a + b", PostMapExpr: "y = a", Identity: "0"},
			[]string{"return (gocuda_acc)(\nx * x\n); }", "return (gocuda_acc)(\na + b\n); }", "{\ny = a\n;\n}", "return (gocuda_acc)(\n0\n); }"}},
		{compute.ReductionSpec{MapExpr: "x * x;", ReduceExpr: " a + b ; ", PostMapExpr: "y = a;", Identity: "0;"},
			[]string{"return (gocuda_acc)(\nx * x\n); }", "return (gocuda_acc)(\na + b\n); }", "{\ny = a;\n;\n}", "return (gocuda_acc)(\n0\n); }"}},
		{compute.ReductionSpec{MapExpr: "x * x // squares", ReduceExpr: "a + b", PostMapExpr: "y = a // the sum", Identity: "0"},
			[]string{"return (gocuda_acc)(\nx * x // squares\n); }", "{\ny = a // the sum\n;\n}"}},
	} {
		spec := tt.spec
		spec.Name, spec.InParams, spec.OutParams, spec.ReduceType = "r", "float32 x", "float32 y", "float32"
		r := must(compute.NewReduction(spec))(t)
		src := compute.ReductionSource(r, true)
		for _, want := range tt.want {
			if !strings.Contains(src, want) {
				t.Errorf("%+v: the source lacks %q:\n%s", tt.spec, want, src)
			}
		}
	}
}

// TestCacheEntries: an entry reads back as written; a damaged, truncated
// or foreign one is not taken; writers at once leave one whole entry.
func TestCacheEntries(t *testing.T) {
	dir := t.TempDir()
	key := strings.Repeat("ab", 32)
	image := []byte("a cubin, or PTX text\x00")
	if _, ok := compute.ReadEntry(dir, key); ok {
		t.Fatal("an entry read from an empty folder")
	}
	if err := compute.WriteEntry(dir, key, image); err != nil {
		t.Fatal(err)
	}
	if got, ok := compute.ReadEntry(dir, key); !ok || string(got) != string(image) {
		t.Fatalf("read back %q, %v", got, ok)
	}
	path := compute.EntryPath(dir, key)
	whole := must(os.ReadFile(path))(t)
	for name, data := range map[string][]byte{
		"a byte of the image changed": append(append([]byte(nil), whole[:len(whole)-2]...), whole[len(whole)-2]^1, whole[len(whole)-1]),
		"truncated":                   whole[:len(whole)-5],
		"only the header":             whole[:20],
		"empty":                       nil,
		"another key's":               []byte(strings.Replace(string(whole), key, strings.Repeat("cd", 32), 1)),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, ok := compute.ReadEntry(dir, key); ok {
				t.Error("the entry was taken")
			}
		})
	}
	// Writers at once (several goroutines, each a write and a rename)
	// leave one whole entry and no temporary file.
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := compute.WriteEntry(dir, key, append([]byte(nil), image...)); err != nil {
				t.Errorf("writer %d: %v", g, err)
			}
		}()
	}
	wg.Wait()
	if got, ok := compute.ReadEntry(dir, key); !ok || string(got) != string(image) {
		t.Errorf("after concurrent writers: %q, %v", got, ok)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	if _, ok := compute.ReadEntry("", key); ok {
		t.Error("the disk cache turned off read an entry")
	}
}

// envCacheWriter makes the test binary, run as a child by
// TestCacheTwoProcesses, write one cache entry again and again.
const envCacheWriter = "GOCUDA_TEST_CACHE_WRITER"

// TestCacheTwoProcesses: two processes writing the same entry at once, with
// a third reading it meanwhile, never leave or show a part of an entry:
// each read is a miss or the whole image.
func TestCacheTwoProcesses(t *testing.T) {
	key := strings.Repeat("ef", 32)
	image := bytes.Repeat([]byte("the image of a kernel "), 1<<14) // 352 KiB: a write is several syscalls
	if dir := os.Getenv(envCacheWriter); dir != "" {
		for range 200 {
			if err := compute.WriteEntry(dir, key, image); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	dir := t.TempDir()
	var children []*exec.Cmd
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCacheTwoProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), envCacheWriter+"="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children = append(children, cmd)
	}
	done := make(chan error, len(children))
	for _, c := range children {
		go func() { done <- c.Wait() }()
	}
	reads, whole := 0, 0
	for finished := 0; finished < len(children); {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("a writer failed: %v", err)
			}
			finished++
		default:
			got, ok := compute.ReadEntry(dir, key)
			reads++
			if ok {
				whole++
				if !bytes.Equal(got, image) {
					t.Fatal("a read returned an image that is not the one written")
				}
			}
		}
	}
	if got, ok := compute.ReadEntry(dir, key); !ok || !bytes.Equal(got, image) {
		t.Error("after both writers, the entry is not whole")
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	t.Logf("%d reads while two processes wrote, %d of them whole entries, none partial", reads, whole)
}

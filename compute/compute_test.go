package compute_test

import (
	"bytes"
	"errors"
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

func TestMain(m *testing.M) { cudatest.Main(m) }

func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }

// requireNVRTC skips where NVRTC is missing (the fake's machines: the
// kernels can be neither compiled nor run there), except on the GPU machine
// (GOCUDA_REQUIRE_GPU=1), where it must be there.
func requireNVRTC(t testing.TB) {
	t.Helper()
	if _, err := nvrtc.Version(); err == nil {
		return
	} else if os.Getenv(cudatest.EnvRequireGPU) == "1" {
		t.Fatalf("GOCUDA_REQUIRE_GPU=1 and no NVRTC: %v", err)
	}
	t.Skip("no NVRTC: kernels cannot be compiled here")
}

// TestDeclarationErrors: a kernel's declaration is checked in Go, before
// anything is compiled, and refused in words.
func TestDeclarationErrors(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		err        error
	}{
		{"kernel name", "not a kernel name", second(compute.NewElementwise("1x", "float32 x", "float32 y", "y = x;"))},
		{"reserved name", "not a kernel name", second(compute.NewElementwise("gocuda_x", "float32 x", "float32 y", "y = x;"))},
		{"reserved parameter", "not a name a parameter may have", second(compute.NewElementwise("k", "float32 gocudax", "float32 y", "y = gocudax;"))},
		{"unknown type", `unknown type "float"`, second(compute.NewElementwise("k", "float x", "float32 y", "y = x;"))},
		{"no name", "not a type and a name", second(compute.NewElementwise("k", "float32", "float32 y", "y = x;"))},
		{"bad parameter name", "is not a name", second(compute.NewElementwise("k", "float32 _x", "float32 y", "y = _x;"))},
		{"no outputs", "has no outputs", second(compute.NewElementwise("k", "float32 x", "", "x;"))},
		{"empty body", "empty body", second(compute.NewElementwise("k", "float32 x", "float32 y", " "))},
		{"twice", "declared twice", second(compute.NewElementwise("k", "float32 x, float32 x", "float32 y", "y = x;"))},
		{"index name", "declared twice, or is i or n", second(compute.NewElementwise("k", "float32 i", "float32 y", "y = i;"))},
		{"in-place of another type", "an input of type float32 and an output of type float64", second(compute.NewElementwise("k", "float32 y", "float64 y", "y = y;"))},
		{"reduction outputs", "exactly one output", second(compute.NewReduction("r", "float32 x", "float32 y, float32 z", "x", "a + b", "0", "y = a;", "float32"))},
		{"reduction type", "unknown reduce type", second(compute.NewReduction("r", "float32 x", "float32 y", "x", "a + b", "0", "y = a;", "float"))},
		{"reduction names", "is a, b, i or n", second(compute.NewReduction("r", "float32 a", "float32 y", "a", "a + b", "0", "y = a;", "float32"))},
		{"reduction expression", "empty identity expression", second(compute.NewReduction("r", "float32 x", "float32 y", "x", "a + b", "", "y = a;", "float32"))},
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
// empty launch does nothing. On the fake nothing compiles (no NVRTC), so a
// call these checks let through fails with ErrNotSupported there: none of
// them gets that far.
func TestLaunchErrors(t *testing.T) {
	ctxs := cudatest.Contexts(t, 1)
	ctx := ctxs[0]
	s := cudatest.Stream(t, ctx)
	other := must(ctx.NewStream())(t)
	defer other.Close()
	axpy := must(compute.NewElementwise("axpy", "float32 a, float32 x, float32 y", "float32 y", "y = a * x + y;"))(t)
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
		{"lengths", "has 7 elements", axpy.Launch(s, float32(1), x, short)},
		{"nil buffer", "nil *DeviceBuffer", axpy.Launch(s, float32(1), nilBuf, y)},
		{"zero buffer", "zero DeviceBuffer", axpy.Launch(s, float32(1), new(cuda.DeviceBuffer[float32]), y)},
		{"output scalar", "y is an output", mustLaunch(t, "float32 x", "float32 y", s, x, float32(0))},
		{"nil stream", "nil or zero *cuda.Stream", axpy.Launch(nil, float32(1), x, y)},
		{"zero kernel", "zero *Elementwise", new(compute.Elementwise).Launch(s, x)},
		{"Add lengths", "has 7 elements", compute.Add(s, y, x, short)},
		{"Cast lengths", "has 7 elements", compute.Cast(s, short, ints)},
		{"Sum output", "y has 8 elements: want 1", compute.Sum(s, y, x)},
		{"SumAxis shape", "want 2", compute.SumAxis(s, short, x, compute.Shape{Rows: 2, Cols: 4}, compute.PerRow)},
		{"SumAxis axis", "unknown axis", compute.SumAxis(s, short, x, compute.Shape{Rows: 2, Cols: 4}, 7)},
		{"Softmax shape", "a 3×3 matrix has 9", compute.Softmax(s, y, x, compute.Shape{Rows: 3, Cols: 3})},
		{"Transpose in place", "in place", compute.Transpose(s, x, x, compute.Shape{Rows: 2, Cols: 4})},
		{"negative shape", "dimensions must be zero or more", compute.Transpose(s, y, x, compute.Shape{Rows: -2, Cols: -4})},
		{"ArgMax of nothing", "src is empty", compute.ArgMax(s, one, empty)},
		{"ArgMax output", "dst has 0 elements", compute.ArgMax(s, must(cuda.Alloc[int64](ctx, 0))(t), x)},
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
		"Add":         compute.Add(s, empty, empty, empty),
		"Softmax":     compute.Softmax(s, empty, empty, compute.Shape{Rows: 0, Cols: 5}),
		"Transpose":   compute.Transpose(s, empty, empty, compute.Shape{Rows: 3, Cols: 0}),
		"SumAxis":     compute.SumAxis(s, empty, empty, compute.Shape{Rows: 0, Cols: 3}, compute.PerRow),
	} {
		if err != nil {
			t.Errorf("%s of empty buffers: %v", name, err)
		}
	}
	if _, err := nvrtc.Version(); err != nil {
		if err := compute.Add(s, y, x, x); !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), "compute: Add") {
			t.Errorf("Add without NVRTC: %v; want ErrNotSupported naming Add", err)
		}
	}
}

func mustLaunch(t *testing.T, in, out string, s *cuda.Stream, args ...any) error {
	t.Helper()
	k := must(compute.NewElementwise("k", in, out, "y = x;"))(t)
	return k.Launch(s, args...)
}

// TestSource: the generated kernel has a grid-stride loop with 64-bit
// indices, over 16-byte vectors where every buffer is aligned for them and
// then over the elements left; inputs read through const restricted
// pointers, an in-place output read before the body, halves converted on
// load and store, and a scalar passed by value.
func TestSource(t *testing.T) {
	k := must(compute.NewElementwise("axpy", "float16 a, float16 x, float16 y", "float16 y", "y = a * x + y;"))(t)
	src := compute.ElementwiseSource(k, false, true, true)
	for _, want := range []string{
		"void gocuda_body(const float a, const float x, float& y, const long long i, const long long n) {\ny = a * x + y;\n}",
		`extern "C" __global__ void axpy(unsigned short gocudap_a, const unsigned short* __restrict__ gocudap_x, unsigned short* gocudap_y, long long n)`,
		"if ((unsigned long long)gocudap_x % sizeof(gocuda_vec<unsigned short, 8>) == 0 && (unsigned long long)gocudap_y % sizeof(gocuda_vec<unsigned short, 8>) == 0) {",
		"const gocuda_vec<unsigned short, 8> gocudav_x = ((const gocuda_vec<unsigned short, 8>*)gocudap_x)[gocuda_j];",
		"gocuda_vec<unsigned short, 8> gocudav_y = ((gocuda_vec<unsigned short, 8>*)gocudap_y)[gocuda_j];",
		"const long long i = gocuda_j * 8 + gocuda_k;",
		"const float x = gocuda_f16_to_f32(gocudav_x.v[gocuda_k]);",
		"gocudav_y.v[gocuda_k] = gocuda_f32_to_f16((float)(y));",
		"((gocuda_vec<unsigned short, 8>*)gocudap_y)[gocuda_j] = gocudav_y;",
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
	out := must(compute.NewElementwise("cast", "int8 x", "int32 y", "y = x;"))(t)
	src = compute.ElementwiseSource(out, true, true)
	if !strings.Contains(src, "int y;\n") || strings.Contains(src, "int y = ") {
		t.Errorf("an output that is no input is read before the body:\n%s", src)
	}
	if !strings.Contains(src, "gocuda_vec<signed char, 4>") || !strings.Contains(src, "gocuda_vec<int, 4>") {
		t.Errorf("int8 to int32 does not take 4 elements at a time:\n%s", src)
	}
	r := must(compute.NewReduction("sumsq", "float32 x, float32 m", "float64 y", "(x - m) * (x - m)", "a + b", "0", "y = a / n;", "float64"))(t)
	src = compute.ReductionSource(r, true, false)
	for _, want := range []string{"typedef double gocuda_acc;", "sumsq_partial(", "sumsq_final(", "sumsq_rows(", "sumsq_cols(",
		"float gocudap_m, ", "gocuda_map(const float x, const float m, const long long i) { return (gocuda_acc)((x - m) * (x - m)); }",
		"if ((unsigned long long)gocudap_x % sizeof(gocuda_vec<float, 4>) == 0) {",
		"v = gocuda_reduce(v, gocuda_map(gocudav_x.v[gocuda_k], gocudap_m, gocuda_j * 4 + gocuda_k));",
		"v = gocuda_reduce(v, gocuda_map(gocudap_x[i], gocudap_m, i));", "y = a / n;"} {
		if !strings.Contains(src, want) {
			t.Errorf("reduction source lacks %q:\n%s", want, src)
		}
	}
	// A reduction of scalars only has nothing to load as vectors.
	r = must(compute.NewReduction("scalars", "float32 x", "float32 y", "x", "a + b", "0", "y = a;", "float32"))(t)
	if src := compute.ReductionSource(r, false); !strings.Contains(src, "if (false) {") {
		t.Errorf("a reduction of a scalar loads vectors:\n%s", src)
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

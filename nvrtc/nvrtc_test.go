package nvrtc_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nvrtc"
)

// The fake driver has no NVRTC, and runs only its own kernels.
func TestMain(m *testing.M) { cudatest.MainSkipFake(m, "^ExampleCompile$") }

// requireNVRTC skips where NVRTC is missing, except on the GPU machine
// (GOCUDA_REQUIRE_GPU=1), where it must be there.
func requireNVRTC(t *testing.T) {
	t.Helper()
	v, err := nvrtc.Version()
	if err == nil {
		path, err := nvrtc.Library()
		if err != nil || path == "" {
			t.Fatalf("Version works and Library returns %q, %v", path, err)
		}
		t.Logf("NVRTC %v (%s)", v, path)
		return
	}
	if !errors.Is(err, cuda.ErrNotSupported) {
		t.Fatalf("Version: %v", err)
	}
	if os.Getenv(cudatest.EnvRequireGPU) == "1" {
		t.Fatalf("GOCUDA_REQUIRE_GPU=1 and no NVRTC: %v", err)
	}
	t.Skip(err)
}

const saxpySrc = `
template <typename T>
__global__ void scale(T a, T *x, unsigned n) {
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] = a * x[i];
}
template __global__ void scale<float>(float, float *, unsigned);
template __global__ void scale<double>(double, double *, unsigned);
`

func TestCompileAndLaunch(t *testing.T) {
	requireNVRTC(t)
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	for _, ptx := range []bool{false, true} {
		out, err := nvrtc.Compile(ctx, saxpySrc, nvrtc.Options{Name: "scale.cu", PTX: ptx, Flags: []string{"--use_fast_math"},
			NameExpressions: []string{"scale<float>", "scale<double>"}})
		if err != nil {
			t.Fatalf("Compile(PTX=%v): %v", ptx, err)
		}
		if out.PTX != ptx || len(out.Image) == 0 {
			t.Fatalf("output PTX=%v, %d bytes", out.PTX, len(out.Image))
		}
		m, err := ctx.LoadModule(out.Image)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		name, err := out.LoweredName("scale<double>")
		if err != nil || !strings.Contains(name, "scale") {
			t.Fatalf("LoweredName = %q, %v", name, err)
		}
		f, err := m.Function(name)
		if err != nil {
			t.Fatal(err)
		}
		const n = 1001
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(i)
		}
		d, err := cuda.FromHost(ctx, x)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Free()
		if err := f.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: (n + 127) / 128}, Block: cuda.Dim3{X: 128}, Stream: s}, 2.0, d, uint32(n)); err != nil {
			t.Fatal(err)
		}
		d.CopyToHostAsync(x, s)
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		for i, v := range x {
			if v != 2*float64(i) {
				t.Fatalf("x[%d] = %v, want %v", i, v, 2*float64(i))
			}
		}
	}
	if _, err := (&nvrtc.Output{}).LoweredName("nope"); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("LoweredName of an unknown expression: %v", err)
	}
}

func TestCompileError(t *testing.T) {
	requireNVRTC(t)
	ctx := cudatest.Context(t)
	_, err := nvrtc.Compile(ctx, "__global__ void broken() { undeclared_thing = 1; }", nvrtc.Options{Name: "broken.cu"})
	if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "undeclared_thing") || !strings.Contains(err.Error(), "broken.cu") {
		t.Fatalf("compile error: %v; want ErrInvalidValue carrying the log", err)
	}
	var e *nvrtc.Error
	if !errors.Is(err, nvrtc.ResultCompilationError) || !errors.As(err, &e) || e.Call != "nvrtcCompileProgram" || e.Op != "Compile" {
		t.Errorf("compile error %#v: want an *nvrtc.Error from nvrtcCompileProgram matching nvrtc.ResultCompilationError", err)
	}
	t.Log(err)
	if _, err := nvrtc.Compile(ctx, " ", nvrtc.Options{}); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("empty source: %v", err)
	}
	if _, err := nvrtc.Compile(nil, saxpySrc, nvrtc.Options{}); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("no context and no arch: %v", err)
	}
}

// TestMissingLibrary runs in a child process whose GOCUDA_LIBNVRTC names a
// file that does not exist.
func TestMissingLibrary(t *testing.T) {
	if !cudatest.InChild(t) {
		cudatest.RunChild(t, nvrtc.EnvLibrary+"=/nonexistent/libnvrtc.so")
		return
	}
	_, err := nvrtc.Version()
	// One line: the variable with its value, and what to do (not "set it").
	want := "nvrtc: Version: " + nvrtc.EnvLibrary + "=/nonexistent/libnvrtc.so does not load ("
	if !errors.Is(err, cuda.ErrNotSupported) || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "unset it") ||
		strings.Contains(err.Error(), "or set "+nvrtc.EnvLibrary) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Version with no library: %v; want it to begin %q", err, want)
	}
	var le *cuda.LibraryError
	if !errors.As(err, &le) || le.Value != "/nonexistent/libnvrtc.so" || len(le.Tried) != 1 {
		t.Errorf("Version with no library: %v; want a *cuda.LibraryError naming the one path tried", err)
	}
	if path, err := nvrtc.Library(); path != "" || !errors.Is(err, cuda.ErrNotSupported) {
		t.Fatalf("Library with no library: %q, %v", path, err)
	}
}

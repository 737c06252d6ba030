package nvrtc_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
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
		if cudatest.IsFake() {
			continue // the fake driver runs only its own kernels
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

// TestCompileInputs: what C would cut short at a NUL is refused, not
// compiled in part, and Options.PTX gives PTX whatever the Arch.
func TestCompileInputs(t *testing.T) {
	requireNVRTC(t)
	ctx := cudatest.Context(t)
	const src = `extern "C" __global__ void k(float *x) { x[0] = 1; }`
	for _, tt := range []struct {
		name string
		src  string
		opts nvrtc.Options
		want string // in the error; "" for none
		ptx  bool   // with no error: the output is PTX
	}{
		{"NUL in the source", src + "\x00 this is not C++", nvrtc.Options{Arch: "compute_80"}, "source has a NUL byte at 52", false},
		{"NUL in a flag", src, nvrtc.Options{Arch: "compute_80", Flags: []string{"-std=c++17\x00--bogus"}}, "flag 0", false},
		{"NUL in the name", src, nvrtc.Options{Arch: "compute_80", Name: "a\x00.cu"}, "Options.Name", false},
		{"NUL in the arch", src, nvrtc.Options{Arch: "compute_80\x00x"}, "Options.Arch", false},
		{"NUL in a name expression", src, nvrtc.Options{Arch: "compute_80", NameExpressions: []string{"k", "k\x00x"}}, "name expression 1", false},
		{"zero context", src, nvrtc.Options{}, "the context's device", false},
		{"bad flag", src, nvrtc.Options{Arch: "compute_80", Flags: []string{"--bogus"}}, "--bogus", false},
		{"PTX for an sm_ arch", src, nvrtc.Options{Arch: "sm_80", PTX: true}, "", true},
		{"cubin for an sm_ arch", src, nvrtc.Options{Arch: "sm_80"}, "", false},
		{"PTX for a compute_ arch", src, nvrtc.Options{Arch: "compute_80"}, "", true},
		{"odd file name", src, nvrtc.Options{Arch: "compute_80", Name: "dir/a b\"c\n.cu"}, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ctx
			if tt.name == "zero context" {
				c = new(cuda.Context)
			}
			out, err := nvrtc.Compile(c, tt.src, tt.opts)
			if tt.want != "" {
				if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "nvrtc: Compile: ") {
					t.Fatalf("Compile: %v; want nvrtc's Compile error wrapping ErrInvalidValue mentioning %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			isPTX := !strings.HasPrefix(string(out.Image), "\x7fELF")
			if out.PTX != tt.ptx || isPTX != tt.ptx {
				t.Errorf("Output.PTX = %v, the image is PTX: %v; want %v", out.PTX, isPTX, tt.ptx)
			}
		})
	}
}

// TestCompileConcurrent: compilations from many goroutines at once, good
// and bad, each get their own output and log (-race).
func TestCompileConcurrent(t *testing.T) {
	requireNVRTC(t)
	ctx := cudatest.Context(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("k%d", i)
			out, err := nvrtc.Compile(ctx, `extern "C" __global__ void `+name+`(float *x) { x[0] = 1; }`, nvrtc.Options{Arch: "compute_80", NameExpressions: []string{name}})
			if err != nil {
				t.Error(err)
				return
			}
			if lowered, err := out.LoweredName(name); err != nil || lowered != name || !strings.Contains(string(out.Image), ".entry "+name) {
				t.Errorf("goroutine %d: lowered name %q, %v; or its kernel is not in its PTX", i, lowered, err)
			}
			bad := fmt.Sprintf("bad%d.cu", i)
			if _, err := nvrtc.Compile(ctx, "not C++", nvrtc.Options{Arch: "compute_80", Name: bad}); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), bad+"(1)") {
				t.Errorf("goroutine %d: bad source: %v; want its own log", i, err)
			}
		}()
	}
	wg.Wait()
}

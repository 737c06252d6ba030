package nvrtc_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nvrtc"
)

// promiseSrc has a kernel, a template of kernels and a device function.
const promiseSrc = `extern "C" __global__ void k(float *x) { x[0] = 1; }
template <typename T> __global__ void tk(T *x) { x[0] = 1; }
__device__ int devfn() { return 1; }
`

// TestPromiseCompileRefuses: options NVRTC cannot take, name expressions
// that name no kernel, and flags that leave no cubin or PTX are errors of
// Compile wrapping cuda.ErrInvalidValue, saying what was wrong (the log
// where NVRTC wrote one), never an Output with no image. (What the log
// says is NVRTC's, and its words change: only what the input named is
// looked for in it.)
func TestPromiseCompileRefuses(t *testing.T) {
	requireNVRTC(t)
	for _, tt := range []struct {
		name string
		src  string
		opts nvrtc.Options
		says string
	}{
		{"empty source", "", nvrtc.Options{Arch: "compute_80"}, "empty source"},
		{"blank source", "\n\t \r\n", nvrtc.Options{Arch: "compute_80"}, "empty source"},
		{"syntax error", "__global__ void k( {", nvrtc.Options{Arch: "compute_80", Name: "bad.cu"}, "bad.cu(1)"},
		{"empty name expression", promiseSrc, nvrtc.Options{Arch: "compute_80", NameExpressions: []string{""}}, "name expression"},
		{"undefined name expression", promiseSrc, nvrtc.Options{Arch: "compute_80", NameExpressions: []string{"nosuch"}}, `nosuch`},
		{"device function expression", promiseSrc, nvrtc.Options{Arch: "compute_80", NameExpressions: []string{"devfn"}}, `devfn`},
		{"empty flag", promiseSrc, nvrtc.Options{Arch: "compute_80", Flags: []string{""}}, "option"},
		{"unknown flag", promiseSrc, nvrtc.Options{Arch: "compute_80", Flags: []string{"--no-such-flag"}}, "--no-such-flag"},
		{"arch twice", promiseSrc, nvrtc.Options{Arch: "sm_80", Flags: []string{"-arch=compute_80"}}, "Options.Arch"},
		{"arch as a long flag", promiseSrc, nvrtc.Options{Arch: "sm_80", Flags: []string{"-lineinfo", "--gpu-architecture=sm_90"}}, `flag 1 ("--gpu-architecture=sm_90")`},
		{"unknown arch", promiseSrc, nvrtc.Options{Arch: "sm_999"}, "sm_999"},
		{"arch with a flag in it", promiseSrc, nvrtc.Options{Arch: "sm_80 -G"}, "for sm_80 -G"},
		{"LTO IR, no cubin", promiseSrc, nvrtc.Options{Arch: "sm_80", Flags: []string{"-dlto"}}, "made no cubin"},
		{"LTO IR, no PTX", promiseSrc, nvrtc.Options{Arch: "sm_80", PTX: true, Flags: []string{"-dlto"}}, "made no PTX"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := nvrtc.Compile(nil, tt.src, tt.opts)
			var e *nvrtc.Error
			if strings.HasPrefix(tt.name, "LTO IR") && errors.As(err, &e) && e.Call != "" && out == nil {
				// An NVRTC that refuses to give the image itself (11.8
				// gives an empty one, which Compile refuses) is as good.
				t.Logf("NVRTC refused: %v", err)
				return
			}
			if !errors.Is(err, cuda.ErrInvalidValue) || !errors.As(err, &e) || e.Op != "Compile" || !strings.Contains(err.Error(), tt.says) {
				n := -1
				if out != nil {
					n = len(out.Image)
				}
				t.Fatalf("Compile: %v (an image of %d bytes); want Compile's error wrapping ErrInvalidValue saying %q", err, n, tt.says)
			}
			if out != nil {
				t.Errorf("Compile returned an Output beside its error")
			}
		})
	}
}

// TestPromiseCompileEdges: a long list of include folders, a name
// expression given twice, a function template's address: each compiles,
// and each expression lowers to its name.
func TestPromiseCompileEdges(t *testing.T) {
	requireNVRTC(t)
	includes := make([]string, 5000)
	for i := range includes {
		includes[i] = fmt.Sprintf("-I/nonexistent/include%d", i)
	}
	for _, tt := range []struct {
		name  string
		opts  nvrtc.Options
		names map[string]string // expression: lowered name
	}{
		{"5000 include folders", nvrtc.Options{Arch: "compute_80", Flags: includes, NameExpressions: []string{"k"}}, map[string]string{"k": "k"}},
		{"an expression twice", nvrtc.Options{Arch: "compute_80", NameExpressions: []string{"k", "k"}}, map[string]string{"k": "k"}},
		{"a template's address", nvrtc.Options{Arch: "sm_80", NameExpressions: []string{"&tk<int>", "tk<float>"}},
			map[string]string{"&tk<int>": "_Z2tkIiEvPT_", "tk<float>": "_Z2tkIfEvPT_"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := nvrtc.Compile(nil, promiseSrc, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Image) < 2 {
				t.Errorf("an image of %d bytes", len(out.Image))
			}
			for expr, want := range tt.names {
				if got, err := out.LoweredName(expr); err != nil || got != want {
					t.Errorf("LoweredName(%q) = %q, %v; want %q", expr, got, err, want)
				}
			}
			if _, err := out.LoweredName("tk<double>"); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), `"tk<double>" was not among`) {
				t.Errorf("LoweredName of an expression not compiled: %v", err)
			}
		})
	}
}

// TestPromiseZeroValues: the zero Options with no context, the zero and
// nil Output are errors wrapping cuda.ErrInvalidValue, not panics.
func TestPromiseZeroValues(t *testing.T) {
	requireNVRTC(t)
	var nilOut *nvrtc.Output
	for name, err := range map[string]error{
		"Compile, zero Options, no context": errOf(nvrtc.Compile(nil, promiseSrc, nvrtc.Options{})),
		"Compile, PTX, no context":          errOf(nvrtc.Compile(nil, promiseSrc, nvrtc.Options{PTX: true})),
		"zero Output's LoweredName":         errOf(new(nvrtc.Output).LoweredName("k")),
		"nil Output's LoweredName":          errOf(nilOut.LoweredName("k")),
	} {
		if !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("%s: %v; want ErrInvalidValue", name, err)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }

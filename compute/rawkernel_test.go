package compute_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
)

// rowSums is a block per row, its threads folding the row in shared
// memory: what Elementwise cannot say.
const rowSums = `
extern "C" __global__ void row_sums(const float* x, float* out, int cols) {
	__shared__ float part[128];
	const float* row = x + (long long)blockIdx.x * cols;
	float v = 0;
	for (int j = threadIdx.x; j < cols; j += blockDim.x) v += row[j];
	part[threadIdx.x] = v;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w /= 2) {
		if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

extern "C" __global__ void scale(float* x, float a, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] *= a;
}
`

func TestRawKernel(t *testing.T) {
	e := gpu(t)
	const rows, cols = 5, 300
	x := make([]float32, rows*cols)
	want := make([]float32, rows)
	for i := range x {
		x[i] = float32(i%7) - 2
		want[i/cols] += x[i]
	}
	in := must(cuda.FromHost(e.ctx, x))(t)
	defer in.Free()
	out := must(cuda.Alloc[float32](e.ctx, rows))(t)
	defer out.Free()
	sums := must(compute.NewRawKernel(rowSums, "row_sums"))(t)
	scale := must(compute.NewRawKernel(rowSums, "scale"))(t) // the same module
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: rows, Y: 1, Z: 1}, Block: cuda.Dim3{X: 128, Y: 1, Z: 1}, Stream: e.s}
	if err := sums.Launch(cfg, in, out, int32(cols)); err != nil {
		t.Fatal(err)
	}
	if err := scale.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: 1, Y: 1, Z: 1}, Block: cuda.Dim3{X: 32, Y: 1, Z: 1}, Stream: e.s}, out, float32(2), int32(rows)); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, rows)
	if err := out.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != 2*want[i] {
			t.Errorf("row %d: got %v, want %v", i, got[i], 2*want[i])
		}
	}
	f, err := sums.Function(e.ctx)
	if err != nil || f.Name() != "row_sums" {
		t.Errorf("Function: %v, %v; want row_sums", f.Name(), err)
	}
	// Nothing to launch: no error, no compile.
	if err := sums.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{}, Block: cuda.Dim3{X: 128, Y: 1, Z: 1}, Stream: e.s}, in, out, int32(cols)); err != nil {
		t.Errorf("an empty grid: %v", err)
	}
}

func TestRawKernelErrors(t *testing.T) {
	e := newEnv(t)
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	for _, tc := range []struct {
		name, source, kernel, want string
	}{
		{"empty source", " \n", "k", "the source is empty"},
		{"bad name", rowSums, "row sums", "not a C identifier"},
		{"empty name", rowSums, "", "not a C identifier"},
		{"digit first", rowSums, "1k", "not a C identifier"},
		{"absent", rowSums, "softmax", "does not mention kernel softmax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := compute.NewRawKernel(tc.source, tc.kernel)
			if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), tc.want) || k != nil {
				t.Errorf("got %v, %v; want an ErrInvalidValue saying %q", k, err, tc.want)
			}
		})
	}
	k := must(compute.NewRawKernel(rowSums, "row_sums"))(t)
	for _, tc := range []struct {
		name string
		k    *compute.RawKernel
		cfg  cuda.LaunchConfig
		want string
	}{
		{"nil kernel", nil, cuda.LaunchConfig{Grid: one, Block: one, Stream: e.s}, "nil or zero"},
		{"zero kernel", new(compute.RawKernel), cuda.LaunchConfig{Grid: one, Block: one, Stream: e.s}, "nil or zero"},
		{"nil stream", k, cuda.LaunchConfig{Grid: one, Block: one}, "cfg.Stream is nil"},
		{"zero stream", k, cuda.LaunchConfig{Grid: one, Block: one, Stream: new(cuda.Stream)}, "zero cuda.Stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.k.Launch(tc.cfg)
			if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v; want an ErrInvalidValue saying %q", err, tc.want)
			}
		})
	}
	if _, err := (*compute.RawKernel)(nil).Function(e.ctx); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Function of a nil kernel: %v", err)
	}
	if _, err := k.Function(nil); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Function in a nil context: %v", err)
	}
	if (*compute.RawKernel)(nil).Name() != "" || k.Name() != "row_sums" {
		t.Error("Name")
	}
}

func TestRawKernelCompileError(t *testing.T) {
	e := gpu(t)
	k := must(compute.NewRawKernel(`extern "C" __global__ void broken(float* x) { x[0] = undeclared; }`, "broken"))(t)
	buf := must(cuda.Alloc[float32](e.ctx, 1))(t)
	defer buf.Free()
	one := cuda.Dim3{X: 1, Y: 1, Z: 1}
	err := k.Launch(cuda.LaunchConfig{Grid: one, Block: one, Stream: e.s}, buf)
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("got %v; want a compile error naming the kernel", err)
	}
}

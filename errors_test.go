package cuda_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/driver"
)

func TestErrorMessages(t *testing.T) {
	cudatest.Device(t) // the driver's names for codes need a loaded driver
	tests := []struct {
		name     string
		err      *cuda.Error
		sentinel error
		want     []string
	}{
		{"driver code", &cuda.Error{Op: "Alloc", Call: "cuMemAlloc_v2", Code: 2, Err: cuda.ErrOutOfMemory},
			cuda.ErrOutOfMemory, []string{"cuda: Alloc: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY", "out of memory"}},
		{"validation", &cuda.Error{Op: "Alloc", Err: cuda.ErrInvalidValue, Detail: "length is 0"},
			cuda.ErrInvalidValue, []string{"cuda: Alloc: invalid value: length is 0"}},
		{"missing symbol", &cuda.Error{Op: "Launch", Call: "cuLaunchKernelEx", Code: cuda.Result(driver.ResultMissingSymbol), Err: cuda.ErrNotSupported},
			cuda.ErrNotSupported, []string{"lacks cuLaunchKernelEx", "not supported"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if !errors.Is(tt.err, tt.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", tt.err, tt.sentinel)
			}
		})
	}
}

func TestErrorIsResult(t *testing.T) {
	err := error(&cuda.Error{Op: "Stream.Synchronize", Call: "cuStreamSynchronize", Code: 700})
	if !errors.Is(err, cuda.Result(700)) {
		t.Error("errors.Is(err, Result(700)) = false for a driver error with code 700")
	}
	if errors.Is(err, cuda.Result(1)) {
		t.Error("errors.Is(err, Result(1)) = true for a driver error with code 700")
	}
	ours := error(&cuda.Error{Op: "Alloc", Err: cuda.ErrInvalidValue, Detail: "x"})
	if errors.Is(ours, cuda.Result(1)) {
		t.Error("a validation error of ours matched a driver Result")
	}
}

// TestMissingDriver runs itself in a child process whose GOCUDA_LIBCUDA
// names a file that does not exist.
func TestMissingDriver(t *testing.T) {
	if !cudatest.InChild(t) {
		cudatest.RunChild(t, cudatest.DriverAsIs, driver.EnvLibrary+"=/nonexistent/libcuda.so.1")
		return
	}
	_, err := cuda.DeviceCount()
	if !errors.Is(err, cuda.ErrNoDriver) {
		t.Fatalf("DeviceCount with a missing driver: %v, want ErrNoDriver", err)
	}
	// The variable was set: it is named with its value, and the hint is
	// not to set it.
	for _, w := range []string{"GOCUDA_LIBCUDA=/nonexistent/libcuda.so.1", "unset it"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "or set GOCUDA_LIBCUDA") {
		t.Errorf("error %q tells the user to set GOCUDA_LIBCUDA, which is set", err)
	}
	if _, err := cuda.GetDevice(0); !errors.Is(err, cuda.ErrNoDriver) {
		t.Errorf("GetDevice with a missing driver: %v, want ErrNoDriver", err)
	}
	if _, _, err := cuda.Open(0); !errors.Is(err, cuda.ErrNoDriver) || !strings.HasPrefix(err.Error(), "cuda: Open: ") {
		t.Errorf("Open with a missing driver: %v, want ErrNoDriver labelled Open", err)
	}
	if _, err := cuda.DriverVersion(); !errors.Is(err, cuda.ErrNoDriver) {
		t.Errorf("DriverVersion with a missing driver: %v, want ErrNoDriver", err)
	}
}

// TestNotADriver points GOCUDA_LIBCUDA at a library that is no CUDA driver.
func TestNotADriver(t *testing.T) {
	if !cudatest.InChild(t) {
		cudatest.RunChild(t, cudatest.DriverAsIs, driver.EnvLibrary+"=libc.so.6")
		return
	}
	_, err := cuda.DeviceCount()
	if !errors.Is(err, cuda.ErrNoDriver) || !strings.Contains(err.Error(), "not a CUDA driver") {
		t.Fatalf("DeviceCount with libc as the driver: %v, want ErrNoDriver saying it is not a CUDA driver", err)
	}
}

// TestErrorTexts: errors name the operation the caller called and say in
// words what was wrong.
func TestErrorTexts(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	b := must(cuda.Alloc[float32](ctx, 8))(t)
	defer b.Free()
	e1, e2 := must(ctx.NewEvent())(t), must(ctx.NewEvent())(t)
	defer e1.Close()
	defer e2.Close()
	if err := e1.Record(s); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		call    func() error
		want    []string
		notWant string
	}{
		{"GetDevice names itself", func() error {
			f.Fail("cuDeviceGetCount", 1, 999)
			_, err := cuda.GetDevice(0)
			return err
		}, []string{"cuda: GetDevice: cuDeviceGetCount"}, "DeviceCount:"},
		{"Slice with a negative length", func() error { _, err := b.Slice(0, -1); return err }, []string{"length -1"}, "+-"},
		{"Slice past the end", func() error { _, err := b.Slice(6, 4); return err }, []string{"elements 6 to 10", "buffer of 8"}, ""},
		{"ElapsedTime of an event never recorded", func() error {
			_, err := cuda.ElapsedTime(e1, e2)
			return err
		}, []string{"the end event was never recorded"}, "INVALID_HANDLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
			if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("%q holds %q", err, tt.notWant)
			}
		})
	}
}

// TestBindFailureNamed: when making the context current fails, the error
// names the call that failed (cuCtxGetCurrent), not the one it was for,
// with either backend.
func TestBindFailureNamed(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	b := must(cuda.Alloc[float32](ctx, 8))(t)
	defer b.Free()
	f.Fail("cuCtxGetCurrent", 1, 999)
	err := b.CopyFromHost(make([]float32, 8))
	var ce *cuda.Error
	if !errors.As(err, &ce) || ce.Call != "cuCtxGetCurrent" || ce.Code != 999 {
		t.Fatalf("CopyFromHost with the bind failing: %v; want an error naming cuCtxGetCurrent with code 999", err)
	}
	if err := b.CopyFromHost(make([]float32, 8)); err != nil {
		t.Fatalf("the next call: %v", err)
	}
}

// TestInitRetriedAfterFailure: a cuInit that fails (here the process's
// first) is not kept: the next call initializes again and works.
func TestInitRetriedAfterFailure(t *testing.T) {
	if !cudatest.InChild(t) {
		cudatest.RunChild(t, cudatest.EnvDriver+"=fake", cudatest.EnvRequireGPU+"=")
		return
	}
	f := cudatest.Fake(t)
	f.Fail("cuInit", 1, 999)
	if _, err := cuda.DeviceCount(); !errors.Is(err, cuda.ErrNoDriver) || !strings.Contains(err.Error(), "cuInit failed") {
		t.Fatalf("DeviceCount with cuInit failing: %v; want ErrNoDriver saying cuInit failed", err)
	}
	if n, err := cuda.DeviceCount(); err != nil || n < 1 {
		t.Fatalf("DeviceCount after the failure: %d, %v; a failed cuInit must be retried", n, err)
	}
}

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
	for _, w := range []string{"/nonexistent/libcuda.so.1", "install the NVIDIA driver", "GOCUDA_LIBCUDA"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
	if _, err := cuda.GetDevice(0); !errors.Is(err, cuda.ErrNoDriver) {
		t.Errorf("GetDevice with a missing driver: %v, want ErrNoDriver", err)
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

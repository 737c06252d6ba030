package cudatest

import (
	"errors"
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/hostcc"
	"github.com/gocuda/cuda/internal/kernelhook"
	"github.com/gocuda/cuda/nvrtc"
)

// useHostCompiler puts internal/hostcc's compiler in NVRTC's place for
// package compute's kernels (internal/kernelhook) where the tests run
// against the fake driver and a C++ compiler is found: the fake runs the
// images on the CPU, so every package's tests run generated kernels.
func useHostCompiler() {
	if kind != "fake" || !hostcc.Available() {
		return
	}
	kernelhook.Compile = HostCompile
}

// HostCompile compiles a generated source for the host (internal/hostcc).
// A source that does not compile is an error of NVRTC's shape: wrapping
// ErrInvalidValue, with the compiler's log, in which the source is named
// as NVRTC names it.
func HostCompile(source, name string) ([]byte, error) {
	image, err := hostcc.Compile(source, name)
	if ce := (*hostcc.CompileError)(nil); errors.As(err, &ce) {
		return nil, &nvrtc.Error{Op: "Compile", Err: cuda.ErrInvalidValue, Detail: fmt.Sprintf("compiling %s for the host (internal/hostcc):\n%s", ce.Name, ce.Log)}
	}
	return image, err
}

// KernelsRun reports whether generated kernels run here: on a GPU with
// NVRTC, or on the fake driver with the host compiler.
func KernelsRun() bool {
	if kind == "fake" {
		return kernelhook.Compile != nil
	}
	_, err := nvrtc.Version()
	return err == nil
}

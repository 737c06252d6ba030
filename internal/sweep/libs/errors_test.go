package libs_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nccl"
	"github.com/gocuda/cuda/nvrtc"
)

// TestMissingLibraries: with each library's variable naming a file that
// does not exist, a call that needs the library fails with one line that
// names the variable with its value and says to fix or unset it (not to
// set it), wrapping ErrNotSupported, with a *cuda.LibraryError in the
// chain whose Tried is that one path.
func TestMissingLibraries(t *testing.T) {
	vars := map[string]string{
		nvrtc.EnvLibrary: "/nonexistent/libnvrtc.so", cublas.EnvLibrary: "/nonexistent/libcublas.so",
		curand.EnvLibrary: "/nonexistent/libcurand.so", cufft.EnvLibrary: "/nonexistent/libcufft.so",
		nccl.EnvLibrary: "/nonexistent/libnccl.so",
	}
	if !cudatest.InChild(t) {
		var env []string
		for k, v := range vars {
			env = append(env, k+"="+v)
		}
		cudatest.RunChild(t, env...)
		return
	}
	for _, c := range []struct {
		name, env string
		call      func() error
	}{
		{"nvrtc", nvrtc.EnvLibrary, func() error { _, err := nvrtc.Version(); return err }},
		{"cublas", cublas.EnvLibrary, func() error { _, err := cublas.Version(); return err }},
		{"curand", curand.EnvLibrary, func() error { _, err := curand.Version(); return err }},
		{"cufft", cufft.EnvLibrary, func() error { _, err := cufft.Version(); return err }},
		{"nccl", nccl.EnvLibrary, func() error { _, err := nccl.Version(); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			msg := fmt.Sprint(err)
			want := c.env + "=" + vars[c.env] + " does not load ("
			if !errors.Is(err, cuda.ErrNotSupported) || !strings.HasPrefix(msg, c.name+": Version: "+want) ||
				!strings.Contains(msg, "unset it") || strings.Contains(msg, "or set "+c.env) || strings.Contains(msg, "\n") {
				t.Errorf("Version: %q; want ErrNotSupported, one line beginning %q", msg, c.name+": Version: "+want)
			}
			var le *cuda.LibraryError
			if !errors.As(err, &le) || le.Value != vars[c.env] || len(le.Tried) != 1 || le.Tried[0] != vars[c.env] {
				t.Errorf("Version: %v; want a *cuda.LibraryError whose Tried is the variable's one path", err)
			}
		})
	}
}

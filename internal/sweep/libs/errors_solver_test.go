package libs_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusolver"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestMissingCuSOLVER is TestMissingLibraries for cuSOLVER: with
// GOCUDA_LIBCUSOLVER naming a file that does not exist, Version and New
// fail with one line that names the variable with its value and says to
// fix or unset it, wrapping ErrNotSupported, with a *cuda.LibraryError in
// the chain whose Tried is that one path.
func TestMissingCuSOLVER(t *testing.T) {
	const path = "/nonexistent/libcusolver.so"
	if !cudatest.InChild(t) {
		cudatest.RunChild(t, cusolver.EnvLibrary+"="+path)
		return
	}
	s := cudatest.Stream(t, cudatest.Context(t))
	for _, c := range []struct {
		op   string
		call func() error
	}{
		{"Version", func() error { _, err := cusolver.Version(); return err }},
		{"New", func() error { _, err := cusolver.New(s); return err }},
	} {
		t.Run(c.op, func(t *testing.T) {
			err := c.call()
			msg := fmt.Sprint(err)
			want := "cusolver: " + c.op + ": " + cusolver.EnvLibrary + "=" + path + " does not load ("
			if !errors.Is(err, cuda.ErrNotSupported) || !strings.HasPrefix(msg, want) || !strings.Contains(msg, "unset it") || strings.Contains(msg, "\n") {
				t.Errorf("%s: %q; want ErrNotSupported, one line beginning %q", c.op, msg, want)
			}
			var le *cuda.LibraryError
			if !errors.As(err, &le) || le.Value != path || len(le.Tried) != 1 || le.Tried[0] != path {
				t.Errorf("%s: %v; want a *cuda.LibraryError whose Tried is the variable's one path", c.op, err)
			}
		})
	}
}

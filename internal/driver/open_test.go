package driver

import (
	"errors"
	"strings"
	"testing"
)

// TestInitRetried: a cuInit that fails is not kept for the life of the
// process: the next Open initializes again and succeeds.
func TestInitRetried(t *testing.T) {
	path, fake := fakeLibrary(t)
	defer fake.ResetFaults()
	fake.Fail("cuInit", 1, 999)
	var o opener
	table := &syms // Init calls through the process's table
	err := o.open([]string{path}, table)
	var oe *OpenError
	if !errors.As(err, &oe) || oe.Result != 999 {
		t.Fatalf("first open with cuInit failing: %v, want an OpenError with code 999", err)
	}
	if err := o.open([]string{path}, table); err != nil {
		t.Fatalf("second open: %v; a failed cuInit must be retried", err)
	}
	if o.path != path {
		t.Errorf("path %q, want %q", o.path, path)
	}
	// A library that cannot be loaded is kept: no retry.
	var missing opener
	_ = missing.open([]string{"/nonexistent/libcuda.so.1"}, table)
	if !missing.done.Load() {
		t.Error("a missing library was not kept")
	}
}

// TestDefaultLibraries: the driver's file names on each system (Windows's
// driver puts nvcuda.dll in System32, on the system's search path).
func TestDefaultLibraries(t *testing.T) {
	for _, tt := range []struct{ goos, want string }{
		{"linux", "libcuda.so.1 libcuda.so"},
		{"windows", "nvcuda.dll"},
	} {
		t.Run(tt.goos, func(t *testing.T) {
			if got := strings.Join(defaultLibraries(tt.goos), " "); got != tt.want {
				t.Errorf("defaultLibraries(%q) = %s, want %s", tt.goos, got, tt.want)
			}
		})
	}
}

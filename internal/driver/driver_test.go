package driver

import (
	"errors"
	"strings"
	"testing"
)

func TestLoadMissingLibrary(t *testing.T) {
	var table [symCount]uintptr
	_, err := load([]string{"/nonexistent/libcuda.so.1", "/nonexistent/libcuda.so"}, &table)
	var oe *OpenError
	if !errors.As(err, &oe) {
		t.Fatalf("load: %v, want *OpenError", err)
	}
	for _, w := range []string{"/nonexistent/libcuda.so.1", "/nonexistent/libcuda.so", "cannot open"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
}

func TestMissingSymbol(t *testing.T) {
	saved := syms[symMemAlloc]
	syms[symMemAlloc] = 0
	defer func() { syms[symMemAlloc] = saved }()
	var p DevicePtr
	if r := MemAlloc(0, &p, 16); r.Code != ResultMissingSymbol || r.Func.String() != "cuMemAlloc_v2" {
		t.Errorf("MemAlloc with no symbol = %+v, want ResultMissingSymbol from cuMemAlloc_v2", r)
	}
}

func TestGoString(t *testing.T) {
	b := []byte("hello\x00world")
	if s := GoString(&b[0]); s != "hello" {
		t.Errorf("GoString = %q", s)
	}
	if GoString(nil) != "" {
		t.Error("GoString(nil) not empty")
	}
}

// TestBackend: a build with cgo calls the driver through the cgo shim,
// one without through purego.
func TestBackend(t *testing.T) {
	if Backend != wantBackend || BindsInCall != (wantBackend == "cgo") {
		t.Errorf("Backend %q (binds in call: %v), want %q", Backend, BindsInCall, wantBackend)
	}
}

// TestFuncNames: each Func names its own function, and 0 names none.
func TestFuncNames(t *testing.T) {
	for _, tt := range []struct {
		f    Func
		want string
	}{
		{FuncInit, "cuInit"},
		{FuncMemAlloc, "cuMemAlloc_v2"},
		{FuncMemcpyPeerAsync, "cuMemcpyPeerAsync"},
		{0, ""},
		{Func(symCount + 1), ""},
	} {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.f.String(); got != tt.want {
				t.Errorf("Func(%d).String() = %q, want %q", tt.f, got, tt.want)
			}
		})
	}
	for i, name := range symNames {
		if got := Func(i + 1).String(); got != name {
			t.Errorf("Func(%d) names %q, want %q", i+1, got, name)
		}
	}
}

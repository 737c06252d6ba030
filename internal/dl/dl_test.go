package dl

import (
	"strings"
	"testing"
	"unsafe"
)

func TestOpenFirst(t *testing.T) {
	h, path, err := OpenFirst([]string{"/nonexistent/a.so", "/nonexistent/b.so"})
	if h != 0 || path != "" || err == nil || !strings.Contains(err.Error(), "b.so") {
		t.Fatalf("OpenFirst of missing libraries = %#x, %q, %v; want the last one's error", h, path, err)
	}
	if h, path, err = OpenFirst([]string{"/nonexistent/a.so", "libc.so.6"}); h == 0 || path != "libc.so.6" || err != nil {
		t.Fatalf("OpenFirst = %#x, %q, %v; want libc.so.6", h, path, err)
	}
}

func TestString(t *testing.T) {
	b := []byte("hello\x00world")
	if s := String(uintptr(unsafe.Pointer(&b[0]))); s != "hello" {
		t.Errorf("String = %q", s)
	}
	if String(0) != "" {
		t.Error("String(0) not empty")
	}
}

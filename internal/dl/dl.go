// Package dl opens the optional libraries that gocuda's packages call
// through purego (NVRTC, NCCL): the first of several names that loads.
package dl

import (
	"unsafe"

	"github.com/ebitengine/purego"
)

// OpenFirst loads the first of paths that loads and returns its handle and
// path, or the error of the last one tried.
func OpenFirst(paths []string) (h uintptr, path string, err error) {
	for _, p := range paths {
		if h, err = purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_LOCAL); err == nil {
			return h, p, nil
		}
	}
	return 0, "", err
}

// String copies the NUL-terminated C string at address p; "" for 0.
func String(p uintptr) string {
	if p == 0 {
		return ""
	}
	var b []byte
	for i := uintptr(0); ; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(nil), p+i)) // C memory, not Go's
		if c == 0 {
			return string(b)
		}
		b = append(b, c)
	}
}

package dl

import (
	"fmt"
	"path/filepath"
	"syscall"
	"unsafe"
)

var loadLibraryEx = syscall.NewLazyDLL("kernel32.dll").NewProc("LoadLibraryExW")

// loadWithAlteredSearchPath makes Windows look for a DLL's own
// dependencies in its folder first (cublas64_13.dll needs the
// cublasLt64_13.dll beside it), as the Linux loader does through the
// libraries' RPATH.
const loadWithAlteredSearchPath = 0x8

// Load opens the DLL at path (a file name alone is looked for on the
// system's search path) and returns its handle.
func Load(path string) (uintptr, error) {
	if !filepath.IsAbs(path) {
		h, err := syscall.LoadLibrary(path)
		return uintptr(h), err
	}
	p, err := syscall.UTF16PtrFromString(path)
	if err != nil {
		return 0, err
	}
	h, _, err := loadLibraryEx.Call(uintptr(unsafe.Pointer(p)), 0, loadWithAlteredSearchPath)
	if h == 0 {
		return 0, fmt.Errorf("LoadLibraryEx %s: %w", path, err)
	}
	return h, nil
}

// Sym returns the address of the function name in the DLL h.
func Sym(h uintptr, name string) (uintptr, error) {
	return syscall.GetProcAddress(syscall.Handle(h), name)
}

// Close closes the DLL h.
func Close(h uintptr) error { return syscall.FreeLibrary(syscall.Handle(h)) }

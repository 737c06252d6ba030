//go:build !windows

package dl

import "github.com/ebitengine/purego"

// Load opens the shared library at path (a file name alone is looked for
// on the loader's path) and returns its handle.
func Load(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// Sym returns the address of the function name in the library h.
func Sym(h uintptr, name string) (uintptr, error) {
	return purego.Dlsym(h, name)
}

// Close closes the library h.
func Close(h uintptr) error { return purego.Dlclose(h) }

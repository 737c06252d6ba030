//go:build !linux

package cuda

// adviseHugePages does nothing where the kernel has no transparent huge
// pages to ask for (hugepages_linux.go).
func adviseHugePages([]byte) {}

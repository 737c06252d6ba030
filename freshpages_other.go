//go:build !linux

package cuda

// adviseHugePages does nothing where the kernel has no transparent huge
// pages to ask for (freshpages_linux.go).
func adviseHugePages([]byte) {}

// pagesMissing reports no page missing where mincore is not asked
// (freshpages_linux.go): the copies fault them in.
func pagesMissing(_ []byte, vec []byte) (bool, []byte) { return false, vec }

func populatePart([]byte) int { return 256 << 10 }

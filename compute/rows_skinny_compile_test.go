package compute

import (
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nvrtc"
)

// TestTransposeSkinnyCompile compiles Transpose's kernels of every
// element type with a real NVRTC (GOCUDA_LIBNVRTC) for sm_80 and sm_90,
// asking ptxas for its figures, and fails where NAME_skinny, which holds
// a thread's 7·P elements in registers before staging them, spills to
// local memory, or its tile is not the 28 KiB (of 8-byte and 4-byte
// elements) that leaves a multiprocessor 8 blocks.
func TestTransposeSkinnyCompile(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skip("no NVRTC here (set GOCUDA_LIBNVRTC to one): ", err)
	}
	if !cudatest.IsFake() {
		t.Skip("on the GPU the numeric tests compile and run them")
	}
	for _, d := range dtypes {
		name := "transpose_" + d.name
		src := transposeSource(d, name)
		for _, arch := range []string{"sm_80", "sm_90"} {
			out, err := nvrtc.Compile(nil, src, nvrtc.Options{Name: name + ".cu", Arch: arch, Flags: append([]string{"-Xptxas=-v"}, compileFlags...)})
			if err != nil {
				t.Fatalf("%s for %s: %v", name, arch, err)
			}
			f, ok := ptxasFigures(out.Log)[name+"_skinny"]
			if !ok {
				t.Fatalf("%s for %s: ptxas said nothing of %s_skinny:\n%s", name, arch, name, out.Log)
			}
			t.Logf("%s_skinny for %s: %s", name, arch, f)
			if !strings.Contains(f, " 0 bytes spill stores") || !strings.Contains(f, " 0 bytes stack frame") {
				t.Errorf("%s_skinny for %s spills: %s", name, arch, f)
			}
			if size := int(d.goType.Size()); size >= 4 && !strings.Contains(f, "28672 bytes smem") {
				t.Errorf("%s_skinny for %s: want a tile of 28672 bytes: %s", name, arch, f)
			}
		}
	}
}

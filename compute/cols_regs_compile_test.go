package compute

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gocuda/cuda/nvrtc"
)

// TestColumnKernelsRegsCompile compiles the sum's column kernels and
// ArgMax's first pass of each floating type for sm_90 with a
// real NVRTC (GOCUDA_LIBNVRTC) and logs ptxas's registers and spills:
// _cols and _colsv are held by their __launch_bounds__ to colsBlocks
// blocks a multiprocessor (64 registers) and _narrow to 2 of 1024
// threads (32), the counts planCols lays their grids out by; a spill of
// more than a few registers would cost more than the waves saved. It
// fails where ptxas spills more than 32 bytes, and runs on the GPU's
// machine too, where its NVRTC may allot registers otherwise.
func TestColumnKernelsRegsCompile(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skip("no NVRTC here (set GOCUDA_LIBNVRTC to one): ", err)
	}
	for _, fs := range floatSums(t) {
		d, r := fs.d, fs.r
		arg := "argmax_" + d.name
		for _, src := range []string{r.source([]bool{true}), argSource(d, arg, true)} {
			out, err := nvrtc.Compile(nil, src, nvrtc.Options{Name: d.name + ".cu", Arch: "sm_90", Flags: append([]string{"-Xptxas=-v"}, compileFlags...)})
			if err != nil {
				t.Fatalf("%s: %v", d.name, err)
			}
			figures := ptxasFigures(out.Log)
			for _, k := range []string{r.name + "_cols", r.name + "_colsv", r.name + "_narrow", arg + "_partial"} {
				f, ok := figures[k]
				if !ok {
					continue
				}
				t.Logf("%s: %s", k, f)
				for _, field := range strings.Split(f, ",") {
					var bytes int
					if !strings.HasSuffix(field, " bytes spill stores") {
						continue
					}
					if _, err := fmt.Sscanf(field, " %d", &bytes); err == nil && bytes > 32 {
						t.Errorf("%s spills %d bytes: %s", k, bytes, f)
					}
				}
			}
		}
	}
}

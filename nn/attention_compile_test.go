package nn

import (
	"fmt"
	"testing"

	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nvrtc"
)

// attnCompileVariants are the variants TestAttentionCompiles compiles:
// every type at the usual head dimensions and two others, with the
// default tiles, and the tensor-core kernel's other tiles at 64 and 128.
func attnCompileVariants() []attnVariant {
	var vs []attnVariant
	for kind := 0; kind < 3; kind++ {
		for _, d := range []int{32, 40, 64, 80, 96, 128, 256} {
			vs = append(vs, attnVariant{kind: kind, d: d, tiles: attnDefaultTiles(d)})
		}
	}
	for _, d := range []int{64, 128} {
		for _, t := range attnTileChoices {
			if t != attnDefaultTiles(d) { // compiled above
				vs = append(vs, attnVariant{kind: 2, d: d, tiles: t})
			}
		}
	}
	return vs
}

// attnTileChoices are the tiles the benchmarks may try.
var attnTileChoices = []attnTiles{{4, 1, 32}, {4, 1, 64}, {4, 1, 128}, {4, 2, 32}, {4, 2, 64}, {8, 1, 64}, {8, 1, 128}}

// TestAttentionCompiles compiles attention's source with a real NVRTC
// (GOCUDA_LIBNVRTC naming one, as a machine without a GPU may have) for
// sm_80 and sm_90, the tensor-core kernel's inline PTX included, which
// the fake's tests (compiled for the host) never see, and for sm_75,
// where that kernel's body is compiled out.
func TestAttentionCompiles(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skip("no NVRTC here (set GOCUDA_LIBNVRTC to one): ", err)
	}
	if !cudatest.IsFake() {
		t.Skip("on the GPU the numeric tests compile and run them")
	}
	vs := attnCompileVariants()
	if testing.Short() {
		vs = vs[:3]
	}
	for _, v := range vs {
		name := fmt.Sprintf("attn_t%d_d%d_nw%d_mt%d_bn%d", v.kind, v.d, v.tiles.NW, v.tiles.MT, v.tiles.BN)
		t.Run(name, func(t *testing.T) {
			archs := []string{"sm_80", "sm_90"}
			if v.tiles == attnDefaultTiles(v.d) {
				archs = append(archs, "sm_75") // the tensor-core kernel's body compiled out
			}
			for _, arch := range archs {
				out, err := nvrtc.Compile(nil, attnVariantSource(v), nvrtc.Options{Name: name + ".cu", Arch: arch, Flags: []string{"-std=c++17", "-Xptxas=-v"}})
				if err != nil {
					t.Errorf("%s for %s: %v", name, arch, err)
					continue
				}
				if testing.Verbose() && arch == "sm_90" {
					t.Logf("%s", out.Log) // registers and stack of each kernel
				}
			}
		})
	}
}

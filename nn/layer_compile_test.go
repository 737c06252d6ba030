package nn

import (
	"testing"

	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nvrtc"
)

// TestLayersCompile compiles every layer's source, for each element type,
// with a real NVRTC (GOCUDA_LIBNVRTC naming one, as a machine without a
// GPU may have) for sm_75, sm_80 and sm_90: the device's own branches
// (the conversions' inline PTX, __CUDA_ARCH__'s), which the fake's tests
// (compiled for the host) never see.
func TestLayersCompile(t *testing.T) {
	if _, err := nvrtc.Version(); err != nil {
		t.Skip("no NVRTC here (set GOCUDA_LIBNVRTC to one): ", err)
	}
	if !cudatest.IsFake() {
		t.Skip("on the GPU the numeric tests compile and run them")
	}
	sources := map[string]*layerSource{
		"norm": normKernels, "activation": activationKernels, "softmax": softmaxKernels, "crossentropy": crossEntropyKernels,
		"embedding": embeddingKernels, "rope": ropeKernels, "dropout": dropoutKernels,
	}
	for name, src := range sources {
		for ti, typ := range layerTypes {
			t.Run(name+"/"+typ.suffix, func(t *testing.T) {
				for _, arch := range []string{"sm_75", "sm_80", "sm_90"} {
					if _, err := nvrtc.Compile(nil, src.source(ti), nvrtc.Options{Name: name + ".cu", Arch: arch, Flags: []string{"-std=c++17"}}); err != nil {
						t.Errorf("%s for %s: %v", name, arch, err)
					}
				}
			})
		}
	}
}

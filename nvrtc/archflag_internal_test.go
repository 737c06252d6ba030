package nvrtc

import "testing"

// TestIsArchFlag: every spelling of NVRTC's target option is seen, and no
// other option that merely starts alike.
func TestIsArchFlag(t *testing.T) {
	for f, want := range map[string]bool{
		"-arch=sm_90":                true,
		"-arch sm_90":                true,
		"-arch":                      true,
		" -arch=compute_80":          true,
		"--gpu-architecture=sm_90":   true,
		"--gpu-architecture compute": true,
		"-gpu-architecture=sm_90":    true,
		"-archive":                   false,
		"--use_fast_math":            false,
		"-std=c++17":                 false,
		"-DARCH=-arch":               false,
		"":                           false,
	} {
		if got := isArchFlag(f); got != want {
			t.Errorf("isArchFlag(%q) = %v, want %v", f, got, want)
		}
	}
}

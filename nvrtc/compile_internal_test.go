package nvrtc

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
)

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

// TestInputCodesAreInvalidValue: NVRTC's codes for a wrong program or
// name expression match cuda.ErrInvalidValue, as Compile's own refusals
// of bad input do.
func TestInputCodesAreInvalidValue(t *testing.T) {
	for _, code := range []Result{ResultInvalidInput, ResultInvalidOption, ResultCompilationError, ResultInvalidProgram,
		ResultNameExpressionNotValid, ResultNoNameExpressionsAfterCompilation, ResultNoLoweredNamesBeforeCompilation} {
		if err := (&Error{Op: "Compile", Code: code, Err: sentinels[code]}); !errors.Is(err, cuda.ErrInvalidValue) || !errors.Is(err, code) {
			t.Errorf("an error of %v matches ErrInvalidValue %v, %v %v", code, errors.Is(err, cuda.ErrInvalidValue), code, errors.Is(err, code))
		}
	}
}

package cudnn_test

import (
	"testing"

	"github.com/gocuda/cuda/cudnn"
)

// TestAllowedNotes: an engine that converts its inputs down never runs a
// call (float32 with TF32 and the halves included); the tensor cores run
// float32 only with TF32 allowed.
func TestAllowedNotes(t *testing.T) {
	const tensorCore, downConvert, reducedPrecision = 0, 1, 2 // CUDNN_NUMERICAL_NOTE_*
	for _, c := range []struct {
		name   string
		notes  []int32
		strict bool
		want   bool
	}{
		{"no notes, strict", nil, true, true},
		{"no notes", nil, false, true},
		{"tensor cores, strict", []int32{tensorCore}, true, false},
		{"tensor cores", []int32{tensorCore}, false, true},
		{"down-converting, strict", []int32{downConvert}, true, false},
		{"down-converting", []int32{downConvert}, false, false},
		{"tensor cores and down-converting", []int32{tensorCore, downConvert}, false, false},
		{"reduced-precision reduction, strict", []int32{reducedPrecision}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := cudnn.AllowedNotes(c.notes, c.strict); got != c.want {
				t.Errorf("AllowedNotes(%v, strict %v) = %v, want %v", c.notes, c.strict, got, c.want)
			}
		})
	}
}

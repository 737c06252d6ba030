package cusparse

import (
	"errors"
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cusparse"
)

// TestCheck: what a generated function returns becomes this package's
// error: nothing for success, the code and its sentinel, or a function the
// library opened lacks ("PATH has no NAME").
func TestCheck(t *testing.T) {
	if err := check("Op", "cusparseSpMV", clib.Success); err != nil {
		t.Errorf("check of success = %v", err)
	}
	for _, tt := range []struct {
		r    clib.Result
		want error
	}{
		{clib.InvalidValue, cuda.ErrInvalidValue},
		{clib.AllocFailed, cuda.ErrOutOfMemory},
		{clib.NotSupported, cuda.ErrNotSupported},
		{clib.MatrixTypeNotSupported, cuda.ErrNotSupported},
	} {
		err := check("Op", "cusparseSpMV", tt.r)
		if e := (*Error)(nil); !errors.As(err, &e) || e.Code != Result(tt.r) || e.Call != "cusparseSpMV" || !errors.Is(err, Result(tt.r)) || !errors.Is(err, tt.want) {
			t.Errorf("check of %v = %#v, want the code, its call and %v", tt.r, err, tt.want)
		}
	}
	err := check("Op", "cusparseSpMV", clib.Missing)
	if e := (*Error)(nil); !errors.As(err, &e) || e.Code != 0 || !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(e.Detail, " has no cusparseSpMV") {
		t.Errorf("check of a missing function = %#v, want cuda.ErrNotSupported saying the library has no cusparseSpMV", err)
	}
}

// TestSortCompressed: each slice's indices sorted with their values (what
// cuSPARSE's DenseToSparse leaves out of order), and what cannot be a
// matrix's arrays refused, never a panic.
func TestSortCompressed(t *testing.T) {
	off, ind, val := []int32{0, 3, 3, 5}, []int32{2, 0, 1, 4, 3}, []float64{20, 0, 10, 41, 31}
	sorted, err := sortCompressed(off, ind, val, 5)
	if err != nil || sorted {
		t.Fatalf("sortCompressed of unsorted rows = %v, %v; want false, nil", sorted, err)
	}
	if want := []int32{0, 1, 2, 3, 4}; !slices.Equal(ind, want) || !slices.Equal(val, []float64{0, 10, 20, 31, 41}) {
		t.Errorf("sorted to %v %v, want %v with the values following", ind, val, want)
	}
	if sorted, err := sortCompressed(off, ind, val, 5); err != nil || !sorted {
		t.Errorf("sortCompressed of sorted rows = %v, %v; want true, nil", sorted, err)
	}
	for _, tt := range []struct {
		name     string
		off, ind []int32
		want     string
	}{
		{"no offsets", nil, nil, "offsets from"},
		{"first offset", []int32{1, 2}, []int32{0, 1}, "offsets from"},
		{"last offset", []int32{0, 1}, []int32{0, 1}, "offsets from"},
		{"decreasing", []int32{0, 2, 1, 2}, []int32{0, 1}, "offsets 2 and 1"},
		{"index range", []int32{0, 2}, []int32{1, 5}, "outside [0, 5)"},
		{"negative index", []int32{0, 2}, []int32{-1, 0}, "outside [0, 5)"},
		{"repeated", []int32{0, 3}, []int32{3, 1, 3}, "twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sortCompressed(tt.off, tt.ind, make([]float32, len(tt.ind)), 5)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("sortCompressed = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

package nd_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
)

// TestSpan: a view's memory is the slice of its base from its first
// element to its last, with the view's strides; what Span cannot give is
// an error that says why.
func TestSpan(t *testing.T) {
	ctx := cudatest.Contexts(t, 1)[0]
	s := cudatest.Stream(t, ctx)
	buf := cudatest.Upload(t, ctx, make([]float32, 60))
	a := must(nd.FromBuffer(s, buf, 3, 4, 5))(t)
	for _, tc := range []struct {
		name    string
		view    func(t *testing.T) *nd.Array[float32]
		lo, n   int // the slice, in buf's elements (lo -1: an empty one anywhere)
		strides []int
	}{
		{"whole", func(t *testing.T) *nd.Array[float32] { return a }, 0, 60, []int{20, 5, 1}},
		{"transposed", func(t *testing.T) *nd.Array[float32] { return a.T() }, 0, 60, []int{1, 5, 20}},
		{"column", func(t *testing.T) *nd.Array[float32] { return must(a.Index(2, 3))(t) }, 3, 56, []int{20, 5}},
		{"stepped middle", func(t *testing.T) *nd.Array[float32] { return must(must(a.Slice(1, 1, 4, 2))(t).Index(0, 1))(t) }, 25, 15, []int{10, 1}},
		{"broadcast", func(t *testing.T) *nd.Array[float32] {
			return must(must(must(a.Index(0, 2))(t).Index(0, 1))(t).BroadcastTo(2, 5))(t)
		}, 45, 5, []int{0, 1}},
		{"empty", func(t *testing.T) *nd.Array[float32] { return must(a.Slice(0, 3, 3, 1))(t) }, -1, 0, []int{20, 5, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, strides, err := tc.view(t).Span()
			if err != nil {
				t.Fatal(err)
			}
			at := (int(b.Ptr()) - int(buf.Ptr())) / 4
			if tc.lo == -1 {
				at = -1
			}
			if at != tc.lo || b.Len() != tc.n || !slices.Equal(strides, tc.strides) {
				t.Errorf("Span = elements %d+%d, strides %v; want %d+%d, %v", at, b.Len(), strides, tc.lo, tc.n, tc.strides)
			}
		})
	}
	freed := must(nd.Zeros[float32](s, 4))(t)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		a        *nd.Array[float32]
		sentinel error
		words    string
	}{
		{"negative stride", must(a.Slice(1, nd.None, nd.None, -1))(t), cuda.ErrInvalidValue, "negative stride"},
		{"scalar", nd.Scalar[float32](1), cuda.ErrInvalidValue, "Scalar"},
		{"zero", new(nd.Array[float32]), cuda.ErrInvalidValue, "zero Array"},
		{"nil", nil, cuda.ErrInvalidValue, "nil"},
		{"freed", freed, cuda.ErrClosed, "Span"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, strides, err := tc.a.Span()
			if b != nil || strides != nil || !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.words) {
				t.Errorf("Span = %v, %v, %v; want an error wrapping %v that says %q", b, strides, err, tc.sentinel, tc.words)
			}
		})
	}
}

package cusparse_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/internal/cudatest"
)

// closedOver returns a buffer of n elements over b's memory, freed: a
// freed buffer whose address is b's now (b a matrix's array, which
// cannot be made at a chosen address).
func closedOver(t testing.TB, b *cuda.DeviceBuffer[float64], n int) *cuda.DeviceBuffer[float64] {
	t.Helper()
	c := must(cuda.FromRaw[float64](b.Context(), b.Ptr(), n))(t)
	if err := c.Free(); err != nil {
		t.Fatal(err)
	}
	return c
}

// span is the elements from off of a block of memory (cudatest.FreedAt).
func span(off, n int) cudatest.Span { return cudatest.Span{Off: off, N: n} }

// TestOverlapFreed: a call whose output or input was freed, while
// another of its buffers (a matrix's array, too) names memory at the
// freed one's address, returns cuda.ErrClosed naming the freed one, not
// the overlap a comparison of addresses alone finds (as cuda's copies
// do: TestCopyFromFreedBuffer).
func TestOverlapFreed(t *testing.T) {
	ctx, s, h := handle(t)
	// The other operands, live, made first: memory freed later is not
	// theirs.
	coo := free(t, must(cusparse.NewCOO(s, 2, 2, []int32{0, 1}, []int32{0, 1}, []float64{1, 1}))(t))
	_, _, values, err := coo.Arrays()
	if err != nil {
		t.Fatal(err)
	}
	x2 := upload(t, ctx, []float64{1, 2})
	dense := func(b *cuda.DeviceBuffer[float64]) cusparse.Dense[float64] { return cusparse.NewDense(b, 2, b.Len()/2) }
	// Each call writes out and reads in, named so in its errors, over the
	// spans of one block of memory given.
	for _, tc := range []struct {
		name, out, in string
		outAt, inAt   cudatest.Span
		call          func(out, in *cuda.DeviceBuffer[float64]) error
	}{
		{"SpMV y and x", "y", "x", span(1, 2), span(0, 2), func(y, x *cuda.DeviceBuffer[float64]) error {
			return cusparse.SpMV(h, cusparse.NoTrans, 1, coo, x, 0, y)
		}},
		{"SpMM c and b", "c", "b", span(0, 4), span(2, 4), func(c, b *cuda.DeviceBuffer[float64]) error {
			return cusparse.SpMM(h, cusparse.NoTrans, 1, coo, dense(b), 0, dense(c))
		}},
	} {
		for _, freed := range []string{tc.out, tc.in} {
			t.Run(tc.name+"/"+freed+" freed", func(t *testing.T) {
				var out, in *cuda.DeviceBuffer[float64]
				if freed == tc.out {
					out, in = cudatest.FreedAt[float64](t, ctx, tc.outAt, tc.inAt)
				} else {
					in, out = cudatest.FreedAt[float64](t, ctx, tc.inAt, tc.outAt)
				}
				wantClosed(t, tc.call(out, in), tc.name, freed)
			})
		}
	}
	// An output of n elements freed, at the address of a's values: a's
	// arrays are the matrix's, held while the call checks them.
	for _, tc := range []struct {
		name, out string
		n         int
		call      func(out *cuda.DeviceBuffer[float64]) error
	}{
		{"SpMV", "y", 2, func(y *cuda.DeviceBuffer[float64]) error { return cusparse.SpMV(h, cusparse.NoTrans, 1, coo, x2, 0, y) }},
		{"SpMM", "c", 2, func(c *cuda.DeviceBuffer[float64]) error {
			return cusparse.SpMM(h, cusparse.NoTrans, 1, coo, cusparse.NewDense(x2, 2, 1), 0, dense(c))
		}},
		{"SpSV", "y", 2, func(y *cuda.DeviceBuffer[float64]) error {
			return cusparse.SpSV(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, coo, x2, y)
		}},
		{"SpSM", "c", 2, func(c *cuda.DeviceBuffer[float64]) error {
			return cusparse.SpSM(h, cusparse.NoTrans, cusparse.Lower, cusparse.NonUnit, 1, coo, cusparse.NewDense(x2, 2, 1), dense(c))
		}},
		{"ToDense", "d", 4, func(d *cuda.DeviceBuffer[float64]) error { return cusparse.ToDense(h, coo, dense(d)) }},
	} {
		t.Run(tc.name+"/"+tc.out+" freed over a's values", func(t *testing.T) {
			wantClosed(t, tc.call(closedOver(t, values, tc.n)), tc.name, tc.out)
		})
	}
}

// wantClosed fails t unless err is cuda.ErrClosed saying that freed is
// closed.
func wantClosed(t testing.TB, err error, name, freed string) {
	t.Helper()
	if want := freed + " is closed"; !errors.Is(err, cuda.ErrClosed) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s with %s freed and its memory another buffer's: %v; want cuda.ErrClosed saying %q", name, freed, err, want)
	}
}

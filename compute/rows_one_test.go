package compute_test

import (
	"fmt"
	"math"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestRowsOfOne: the rows of a matrix of one column, and the columns of
// a matrix of one row (the same elements), each reduce to their element:
// SumAxis, MaxAxis and MeanAxis give 0 + x, x and (0 + x) / 1 bit for bit
// (a NaN a NaN, -0 summed +0), for counts around the vectors of 16 bytes
// a thread takes (1 to 70001) from aligned buffers and views one to
// three elements in, into outputs between sentinels that stay as they
// were (a thread's vector of rows does not write past the last row).
func TestRowsOfOne(t *testing.T) {
	e := gpu(t)
	for _, n := range []int{1, 3, 4, 5, 8, 9, 1023, 1025, 70001} {
		for off := range 4 {
			t.Run(fmt.Sprintf("%d/+%d", n, off), func(t *testing.T) {
				x := randoms[float32](n+off, -100, 100)
				x[off] = float32(math.NaN())
				if n > 1 {
					x[off+1] = float32(math.Copysign(0, -1))
				}
				if n > 2 {
					x[off+n-1] = float32(math.Inf(-1))
				}
				base := cudatest.Upload(t, e.ctx, x)
				src := must(base.Slice(off, n))(t)
				const sentinel = float32(-12345)
				for _, op := range []struct {
					name string
					f    func(dst, src *cuda.DeviceBuffer[float32], sh compute.Shape, axis compute.Axis, s *cuda.Stream) error
					want func(v float32) float32
				}{
					{"SumAxis", compute.SumAxis[float32], func(v float32) float32 { return 0 + v }},
					{"MaxAxis", compute.MaxAxis[float32], func(v float32) float32 { return v }},
					{"MeanAxis", compute.MeanAxis[float32], func(v float32) float32 { return (0 + v) / 1 }},
				} {
					for _, c := range []struct {
						sh   compute.Shape
						axis compute.Axis
					}{{compute.Shape{Rows: n, Cols: 1}, compute.PerRow}, {compute.Shape{Rows: 1, Cols: n}, compute.PerColumn}} {
						fill := make([]float32, n+2)
						for i := range fill {
							fill[i] = sentinel
						}
						out := cudatest.Upload(t, e.ctx, fill)
						dst := must(out.Slice(1, n))(t)
						if err := op.f(dst, src, c.sh, c.axis, e.s); err != nil {
							t.Fatalf("%s %v: %v", op.name, c.sh, err)
						}
						got := cudatest.Download(t, out)
						for i, g := range got {
							want := sentinel
							if i >= 1 && i <= n {
								want = op.want(x[off+i-1])
							}
							if math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
								t.Fatalf("%s %v: element %d of the output's buffer = %v, want %v", op.name, c.sh, i, g, want)
							}
						}
						out.Free()
					}
				}
			})
		}
	}
}

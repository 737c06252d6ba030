package nd_test

import (
	"fmt"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// TestConcatWidths: contiguous arrays join in one kernel for each 8 of
// them, which copies 16 bytes a thread where every part's row and address
// allow, and fewer where not (8, 4, 2 or 1: a part's row of an odd byte
// count, a view whose first element is past the start of its buffer).
// Each case checks the bits against Go's join and that its kernels ran,
// of the widths it names, in both index forms (32-bit, and 64-bit as past
// 2^31 vectors).
func TestConcatWidths(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	for _, tc := range []struct {
		name   string
		size   int // bytes of an element: 1 (uint8), 4 (float32) or 8 (float64)
		axis   int
		parts  []concatPart
		widths []int // a kernel's for each 8 parts
	}{
		{"f32 rows of 16 bytes", 4, 1, []concatPart{{5, 4, 0}, {5, 8, 0}}, []int{16}},
		{"f32 one row each", 4, 0, []concatPart{{1, 1024, 0}, {3, 1024, 0}}, []int{16}},
		{"f32 three parts of 16 bytes", 4, 1, []concatPart{{7, 4, 0}, {7, 12, 0}, {7, 4, 0}}, []int{16}},
		{"f32 rows of 8 bytes", 4, 1, []concatPart{{9, 2, 0}, {9, 6, 0}}, []int{8}},
		{"f32 rows of 33", 4, 1, []concatPart{{4097, 33, 0}, {4097, 33, 0}}, []int{4}},
		{"f32 a view 4 bytes in", 4, 0, []concatPart{{2, 64, 1}, {2, 64, 0}}, []int{4}},
		{"f32 a view 8 bytes in", 4, 0, []concatPart{{2, 64, 0}, {2, 64, 2}}, []int{8}},
		{"f64 rows of 16 bytes", 8, 1, []concatPart{{3, 2, 0}, {3, 4, 0}}, []int{16}},
		{"f64 rows of 8 bytes", 8, 1, []concatPart{{3, 1, 0}, {3, 3, 0}}, []int{8}},
		{"u8 rows of 16 bytes", 1, 1, []concatPart{{6, 16, 0}, {6, 32, 0}}, []int{16}},
		{"u8 rows of 3", 1, 1, []concatPart{{6, 3, 0}, {6, 16, 0}}, []int{1}},
		{"u8 rows of 2", 1, 1, []concatPart{{6, 2, 0}, {6, 4, 0}, {6, 6, 0}}, []int{2}},
		{"eight parts", 4, 1, []concatPart{{3, 4, 0}, {3, 4, 0}, {3, 8, 0}, {3, 4, 0}, {3, 4, 0}, {3, 12, 0}, {3, 4, 0}, {3, 4, 0}}, []int{16}},
		{"ten parts, two kernels", 4, 1, []concatPart{{3, 4, 0}, {3, 4, 0}, {3, 8, 0}, {3, 4, 0}, {3, 4, 0}, {3, 12, 0}, {3, 4, 0}, {3, 4, 0}, {3, 8, 1}, {3, 4, 0}}, []int{16, 4}},
		{"seventeen parts along 0, three kernels", 8, 0, []concatPart{{1, 2, 0}, {2, 2, 0}, {1, 2, 0}, {3, 2, 0}, {1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {2, 2, 0}}, []int{16, 16, 16}},
	} {
		for _, wide := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/wide=%v", tc.name, wide), func(t *testing.T) {
				if wide {
					defer nd.SetConcatNarrow(0)()
				}
				switch tc.size {
				case 1:
					concatWidthCase[uint8](t, s, tc.axis, tc.parts, tc.widths)
				case 4:
					concatWidthCase[float32](t, s, tc.axis, tc.parts, tc.widths)
				default:
					concatWidthCase[float64](t, s, tc.axis, tc.parts, tc.widths)
				}
			})
		}
	}
}

// concatPart is a part of a TestConcatWidths case: a rows×cols array,
// skip elements into a bigger one (a view at an offset).
type concatPart struct{ rows, cols, skip int }

func concatWidthCase[T uint8 | float32 | float64](t *testing.T, s *cuda.Stream, axis int, parts []concatPart, widths []int) {
	t.Helper()
	var arrays []*nd.Array[T]
	var rows [][][]T // each part's rows
	for j, p := range parts {
		data := make([]T, p.skip+p.rows*p.cols)
		for x := range data {
			data[x] = T(j*50 + x%199)
		}
		whole := free(t, must(nd.FromSlice(s, data, len(data)))(t))
		a := must(must(whole.Slice(0, p.skip, len(data), 1))(t).Reshape(p.rows, p.cols))(t)
		arrays = append(arrays, a)
		var r [][]T
		for i := range p.rows {
			r = append(r, data[p.skip+i*p.cols:p.skip+(i+1)*p.cols])
		}
		rows = append(rows, r)
	}
	var want []T
	if axis == 0 {
		for _, r := range rows {
			want = slices.Concat(append([][]T{want}, r...)...)
		}
	} else {
		for i := range parts[0].rows {
			for _, r := range rows {
				want = append(want, r[i]...)
			}
		}
	}
	var seen []int
	defer nd.SetConcatSeen(func(parts, width int) { seen = append(seen, parts, width) })()
	got := hostOf(t, free(t, must(nd.Concat(arrays, axis))(t)))
	if !slices.Equal(got.data, want) {
		t.Errorf("Concat along %d: %v\nwant %v", axis, got.data, want)
	}
	var launches []int // a kernel for each 8 parts
	for g := 0; g < len(parts); g += 8 {
		launches = append(launches, min(8, len(parts)-g), widths[g/8])
	}
	if !slices.Equal(seen, launches) {
		t.Errorf("Concat along %d launched (parts, width) %v; want %v", axis, seen, launches)
	}
}

// TestConcatIntoView: ConcatInto a contiguous view whose first element is
// past a 16-byte boundary (4 and 8 bytes into its buffer) joins in one
// kernel of the width that address allows, and writes nothing outside
// the view.
func TestConcatIntoView(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	for _, tc := range []struct {
		skip, width int
	}{{0, 16}, {1, 4}, {2, 8}, {3, 4}} {
		t.Run(fmt.Sprint("skip ", tc.skip), func(t *testing.T) {
			a := free(t, must(nd.FromSlice(s, []float32{1, 2, 3, 4, 5, 6, 7, 8}, 2, 4))(t))
			b := free(t, must(nd.FromSlice(s, []float32{10, 20, 30, 40, 50, 60, 70, 80}, 2, 4))(t))
			const sentinel = -1
			whole := make([]float32, tc.skip+16+3)
			for i := range whole {
				whole[i] = sentinel
			}
			buf := free(t, must(nd.FromSlice(s, whole, len(whole)))(t))
			dst := must(must(buf.Slice(0, tc.skip, tc.skip+16, 1))(t).Reshape(2, 8))(t)
			var seen []int
			defer nd.SetConcatSeen(func(parts, width int) { seen = append(seen, parts, width) })()
			if err := nd.ConcatInto(dst, []*nd.Array[float32]{a, b}, 1); err != nil {
				t.Fatal(err)
			}
			want := slices.Repeat([]float32{sentinel}, len(whole))
			copy(want[tc.skip:], []float32{1, 2, 3, 4, 10, 20, 30, 40, 5, 6, 7, 8, 50, 60, 70, 80})
			if got := must(buf.ToSlice())(t); !slices.Equal(got, want) {
				t.Errorf("ConcatInto a view %d elements in: the buffer holds %v; want %v", tc.skip, got, want)
			}
			if !slices.Equal(seen, []int{2, tc.width}) {
				t.Errorf("ConcatInto a view %d elements in launched (parts, width) %v; want 2 parts of %d bytes a thread", tc.skip, seen, tc.width)
			}
		})
	}
}

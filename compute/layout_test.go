package compute

import (
	"fmt"
	"testing"
)

// h200 is the H200's size: 132 multiprocessors of 2048 threads.
var h200 = deviceSize{sms: 132, resident: 132 * 8}

// TestPlanRows: each kind of row gets its layout on the H200, and every
// layout of a sweep of shapes is one the kernels can run: every element in
// a chunk, chunks a multiple of the vectors, blocks of whole warps.
func TestPlanRows(t *testing.T) {
	for _, tc := range []struct {
		rows, cols int
		want       string
	}{
		{1, 0, "lanes 1"}, {1048576, 1, "lanes 1"}, {1048576, 5, "lanes 1"}, {65536, 32, "lanes 4"}, {65536, 128, "lanes 16"},
		{4096, 1000, "lanes 32"}, {4096, 2048, "lanes 32"}, {4096, 2049, "block 256"}, {8192, 8192, "block 256"},
		{132, 65536, "block 1024"}, {264, 65537, "block 256"}, {66, 32768, "block 1024"}, {66, 32769, "chunks"}, {1, 65536, "chunks"},
		{1, 1048576, "chunks"}, {7, 1048576, "chunks"}, {67, 1048576, "block 1024"},
	} {
		t.Run(fmt.Sprintf("%dx%d", tc.rows, tc.cols), func(t *testing.T) {
			l := planRows(h200, tc.rows, tc.cols, 4)
			got := "chunks"
			switch {
			case l.chunks > 1:
			case l.group > 0:
				got = fmt.Sprintf("lanes %d", l.group)
			default:
				got = fmt.Sprintf("block %d", l.threads)
			}
			if got != tc.want {
				t.Errorf("layout %s (%+v), want %s", got, l, tc.want)
			}
		})
	}
	for _, d := range []deviceSize{h200, {sms: 4, resident: 32}, {sms: 1, resident: 1}} {
		for _, rows := range []int{1, 2, 3, 7, 66, 67, 1000} {
			for _, cols := range []int{0, 1, 31, 2048, 2049, 32768, 32769, 65536, 65537, 100003, 1 << 22} {
				for _, width := range []int{1, 2, 4, 8, 16} {
					l := planRows(d, rows, cols, width)
					switch {
					case l.threads%32 != 0 || l.threads > 1024 || l.blocks < 1:
						t.Errorf("%+v %dx%d: %+v: blocks of whole warps, at most 1024 threads", d, rows, cols, l)
					case l.chunks > 1 && (l.chunk%width != 0 || l.chunks*l.chunk < cols || (l.chunks-1)*l.chunk >= cols || l.blocks != l.chunks*rows):
						t.Errorf("%+v %dx%d width %d: %+v: chunks miss elements, or one is empty", d, rows, cols, width, l)
					case l.chunks <= 1 && l.group > 0 && (l.group > 32 || l.threads%l.group != 0):
						t.Errorf("%+v %dx%d: %+v: lanes must divide a block", d, rows, cols, l)
					}
				}
			}
		}
	}
}

// TestPlanCols: narrow matrices read whole rows, in one block where it
// takes 32 steps or fewer; a few rows are read down each column; taller
// ones are cut into chunks of rows past 256 rows, where the columns do not
// fill the device (4 blocks a multiprocessor). A thread of _cols takes one
// float32 column, in as few lanes of columns as take them; of _colsv
// (fewer than 128 columns, 256 rows or fewer whose blocks fill the
// device, or float16's of more than 256 rows) 16 bytes of
// columns, rows in at most 256 chunks where the columns are fewer than
// 128, folded by their last block.
func TestPlanCols(t *testing.T) {
	for _, tc := range []struct {
		rows, cols, width int
		want              colLayout
	}{
		{1048576, 5, 4, colLayout{kind: "_narrow", gx: 264, gy: 1, chunks: 264, last: true}},
		{6528, 5, 4, colLayout{kind: "_narrow", gx: 1, gy: 1, chunks: 1, last: true}},
		{6529, 5, 4, colLayout{kind: "_narrow", gx: 5, gy: 1, chunks: 5, last: true}},
		{7, 5, 4, colLayout{kind: "_narrow", gx: 1, gy: 1, chunks: 1, last: true}},
		{7, 1048576, 4, colLayout{kind: "_short", gx: 1024, gy: 1, chunks: 1, last: true}},
		{32, 1000, 4, colLayout{kind: "_short", gx: 1, gy: 1, chunks: 1, last: true}},
		{33, 1000, 4, colLayout{kind: "_cols", gx: 32, gy: 1, chunks: 1, lanes: 32, last: true}},
		// 16 bytes of float32 columns a thread up to passRows rows, chunks of
		// 8 rows a lane or more where the columns leave room.
		{132, 1000, 4, colLayout{kind: "_cols", gx: 32, gy: 1, chunks: 1, lanes: 32, last: true}},
		{132, 65536, 4, colLayout{kind: "_colsv", gx: 512, gy: 1, chunks: 1, lanes: 32, last: true}},
		{132, 65536, 2, colLayout{kind: "_colsv", gx: 1024, gy: 1, chunks: 1, lanes: 32, last: true}},
		{256, 8192, 4, colLayout{kind: "_cols", gx: 256, gy: 1, chunks: 1, lanes: 32, last: true}},
		{257, 8192, 4, colLayout{kind: "_cols", gx: 256, gy: 2, chunks: 2, lanes: 32, last: true}},
		{65536, 128, 4, colLayout{kind: "_cols", gx: 4, gy: 132, chunks: 132, lanes: 32}},
		{8192, 256, 4, colLayout{kind: "_cols", gx: 8, gy: 66, chunks: 66, lanes: 32, last: true}},
		{65536, 32, 4, colLayout{kind: "_colsv", gx: 1, gy: 256, chunks: 256, lanes: 8, last: true}},
		{4096, 65536, 4, colLayout{kind: "_cols", gx: 2048, gy: 1, chunks: 1, lanes: 32, last: true}},
		{65536, 32, 2, colLayout{kind: "_colsv", gx: 1, gy: 256, chunks: 256, lanes: 16, last: true}},
		// float16 (and bfloat16): 8 columns a thread, folded by the last
		// block where the chunks are 64 or fewer.
		{4096, 8192, 8, colLayout{kind: "_colsv", gx: 32, gy: 16, chunks: 16, lanes: 32, last: true}},
		{4096, 128, 8, colLayout{kind: "_colsv", gx: 1, gy: 32, chunks: 32, lanes: 16, last: true}},
		{65536, 1000, 8, colLayout{kind: "_colsv", gx: 4, gy: 132, chunks: 132, lanes: 32}},
		{1048576, 32, 8, colLayout{kind: "_colsv", gx: 1, gy: 256, chunks: 256, lanes: 4, last: true}},
		{65536, 32, 8, colLayout{kind: "_colsv", gx: 1, gy: 128, chunks: 128, lanes: 4, last: true}},
		{8192, 32, 8, colLayout{kind: "_colsv", gx: 1, gy: 16, chunks: 16, lanes: 4, last: true}},
		{33, 33, 8, colLayout{kind: "_colsv", gx: 1, gy: 1, chunks: 1, lanes: 8, last: true}},
		{65536, 128, 8, colLayout{kind: "_colsv", gx: 1, gy: 512, chunks: 512, lanes: 16}},
		{65536, 127, 4, colLayout{kind: "_colsv", gx: 1, gy: 256, chunks: 256, lanes: 32, last: true}},
		{33, 1001, 8, colLayout{kind: "_cols", gx: 8, gy: 1, chunks: 1, lanes: 32, last: true}},
		// int8: 8 columns a thread.
		{33, 32, 16, colLayout{kind: "_cols", gx: 1, gy: 1, chunks: 1, lanes: 4, last: true}},
	} {
		if got := planCols(h200, tc.rows, tc.cols, tc.width); got != tc.want {
			t.Errorf("%dx%d of width %d: %+v, want %+v", tc.rows, tc.cols, tc.width, got, tc.want)
		}
	}
}

// TestColVector: 8 bytes of columns a thread of _cols where elements are
// narrower than 4 bytes, else one.
func TestColVector(t *testing.T) {
	for _, tc := range []struct{ width, want int }{{16, 8}, {8, 4}, {4, 1}, {2, 1}} {
		if got := colVector(tc.width); got != tc.want {
			t.Errorf("colVector(%d) = %d, want %d", tc.width, got, tc.want)
		}
	}
}

// TestPlanRegs: every row that lanes of a warp take (2 to 32 of them) is
// held in registers, of 16-byte vectors and of single elements, but
// float64's past 1024 elements (more than 32 doubles a lane); each lane's
// share fits its N vectors, and every case has its kernel.
func TestPlanRegs(t *testing.T) {
	for _, size := range []int{2, 4, 8} {
		value := max(size, 4)
		kernels := regKernels(size, value)
		has := map[regKernel]bool{}
		for _, ks := range kernels {
			for _, k := range ks {
				has[k] = true
			}
		}
		vector := 16 / size
		for cols := 1; cols <= groupCols+1; cols++ {
			g := rowGroup(cols, vector)
			for _, wide := range []bool{true, false} {
				n := planRegs(cols, vector, value, wide)
				want := cols <= groupCols && g > 1 && (!wide || cols%vector == 0) && (size < 8 || cols <= 1024)
				if (n > 0) != want {
					t.Fatalf("size %d, %d columns, wide %v: planRegs %d", size, cols, wide, n)
				}
				if n == 0 {
					continue
				}
				width := 1
				if wide {
					width = vector
				}
				if g*n*width < cols || n*width*value > regBytes || !has[regKernel{wide, g, n}] {
					t.Fatalf("size %d, %d columns, wide %v: %d lanes of %d vectors of %d (kernel %v)", size, cols, wide, g, n, width, has[regKernel{wide, g, n}])
				}
			}
		}
	}
}

// TestPlanStaged: every row planRows gives a thread (group 1) has a case
// of NAME_staged (32 bytes of elements or fewer), and its span is whole
// blocks of rows, at least 16 bytes a thread, a multiple of 16 bytes
// (every span as far past a 16-byte boundary as the first) within the
// 48 KiB a block has without asking, its grid covering the rows.
func TestPlanStaged(t *testing.T) {
	for _, size := range []int{2, 4, 8} {
		width := 16 / size
		for cols := 1; cols <= 4*width; cols++ {
			for _, rows := range []int{1, 255, 256, 257, 4097, 1 << 20} {
				l := planRows(h200, rows, cols, width)
				if l.group != 1 {
					continue
				}
				if cols*size > 32 {
					t.Fatalf("size %d, %dx%d: a thread a row of %d bytes: NAME_staged has no case for it", size, rows, cols, cols*size)
				}
				span, blocks := planStaged(rows, cols, size)
				bytes := span * cols * size
				if span%blockSize != 0 || bytes/blockSize < 16 || bytes%16 != 0 || bytes+16 > 48<<10 || blocks*span < rows || (blocks-1)*span >= rows {
					t.Fatalf("size %d, %dx%d: span %d rows (%d bytes), %d blocks", size, rows, cols, span, bytes, blocks)
				}
			}
		}
	}
}

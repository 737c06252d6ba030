package compute

import "testing"

// fakeSize is the fake driver's device: 4 multiprocessors of 8 blocks.
var fakeSize = deviceSize{sms: 4, resident: 32}

// TestColsFoldLayouts: colsFoldShapes (cols_fold_test.go) take the
// layouts that test means them to on the fake: a few chunks, folded by
// the last block, in _colsv and _cols.
func TestColsFoldLayouts(t *testing.T) {
	for _, tc := range []struct {
		rows, cols, width int
		want              colLayout
	}{
		{1000, 100, 4, colLayout{kind: "_colsv", gx: 1, gy: 16, chunks: 16, lanes: 32, last: true}},
		{300, 520, 8, colLayout{kind: "_colsv", gx: 3, gy: 5, chunks: 5, lanes: 32, last: true}},
		{600, 130, 4, colLayout{kind: "_cols", gx: 5, gy: 3, chunks: 3, lanes: 32, last: true}},
		{1000, 100, 2, colLayout{kind: "_colsv", gx: 2, gy: 8, chunks: 8, lanes: 32, last: true}},
		{600, 130, 2, colLayout{kind: "_cols", gx: 5, gy: 3, chunks: 3, lanes: 32, last: true}},
	} {
		if got := planCols(fakeSize, tc.rows, tc.cols, tc.width); got != tc.want {
			t.Errorf("%dx%d of width %d: %+v, want %+v", tc.rows, tc.cols, tc.width, got, tc.want)
		}
	}
}

// TestArgGrid: ArgMax's first pass takes a block per 16 KiB, at most
// argBlocks a multiprocessor: one wave whatever its registers.
func TestArgGrid(t *testing.T) {
	for _, tc := range []struct{ n, size, want int }{
		{1 << 28, 4, 132 * argBlocks},
		{1 << 24, 4, 132 * argBlocks},
		{65536, 4, 16},
		{32769, 1, 3},
	} {
		if got := argGrid(h200, tc.n, tc.size); got != tc.want {
			t.Errorf("%d elements of %d bytes: %d blocks, want %d", tc.n, tc.size, got, tc.want)
		}
	}
}

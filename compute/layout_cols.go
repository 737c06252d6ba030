package compute

// The column kernels' occupancy and their last block's fold (planCols).

const (
	// colsBlocks is the blocks of _cols and _colsv (blockSize threads
	// each) a multiprocessor holds at once, which their
	// __launch_bounds__ promise (64 registers a thread at most), and
	// planCols sizes their chunks of rows by: not the 8 blocks of
	// blockSize a multiprocessor's threads allow, where 56 registers
	// had left room for 4 (the 16 chunks of 4096×8192 float16 were 1.3
	// waves, 132×65536 float32's 2048 blocks nearly 4). 5 (48
	// registers) made ptxas spill 100 bytes of bfloat16's and the
	// integers' (NVRTC 11.2, sm_90); 4 blocks of 16-byte loads, four in
	// flight a thread, are 64 KiB in flight a multiprocessor.
	colsBlocks = 4
	// foldBatch is the columns a warp of _cols' and _colsv's last block
	// folds at once where they have foldBatchChunks chunks or fewer: a
	// read or two a lane, which a warp folding one column at a time had
	// in flight alone (4096×128 float16, 64 chunks: 16 columns a warp,
	// one after another).
	foldBatch = 8
	// foldBatch8 is foldBatch of 8-byte values: one column at a time,
	// as before, since 2 or 4 made ptxas spill registers of float64's
	// kernels under their __launch_bounds__ (NVRTC 11.2, sm_90).
	foldBatch8 = 1
	// foldBatchChunks is the most chunks the last block folds foldBatch
	// columns at a time for (a read a lane each), and the most it folds
	// at all past lastChunks chunks of 32 columns: 64 chunks of 256
	// columns, 4096×1000 float16's, took 17.4 µs folded by the last
	// block, 10.3 by a second kernel's many warps (PyTorch 15.0, on an
	// H100); bfloat16 17.1 and 12.1 (PyTorch 12.1).
	foldBatchChunks = 32
	// argBlocks is the blocks of 256 threads a multiprocessor takes of
	// ArgMax and ArgMin: as many as it holds at once whatever their
	// registers (at most 64 a thread, their __launch_bounds__), so that
	// they are one wave. 8 a multiprocessor, of which 40 registers left
	// room for 6, were 1.33 waves (256 Mi float32: 414 µs, PyTorch 357).
	argBlocks = 4
)

// colsKind returns the column kernel of rows×cols (more than shortRows
// rows, 32 columns or more) on d and the columns each of its threads
// takes, of vectors of width elements: _colsv's whole 16 bytes, so that a
// thread has 4 loads of 16 bytes in flight, where they are more than
// _cols' colVector and
//   - the columns are fewer than fewCols (a block of few columns);
//   - the elements are narrower than 4 bytes and the rows more than
//     passRows (8 bytes a load: 4096×8192 float16 at 0.72 of PyTorch's
//     speed, 0.92 with _colsv; 4096×128 12.3 → 9.3 µs; 65536×1000 58.5
//     µs against _cols' 74.0 on one H100);
//   - the rows are passRows or fewer (one pass, no chunks) of 4 or 8 bytes
//     and their blocks alone fill the multiprocessors (132×65536 float32
//     at 0.6, 4 bytes a load; 1.1 with _colsv). Fewer blocks (132×8192
//     float32) and the halves of few rows keep _cols' layout, with more
//     blocks: _colsv's, cut into chunks of rows that a last block folded,
//     made them slower (float16 132×65536 6.6 → 13.9 µs on the H100).
//
// Else _cols (float32 and float64 of many rows and columns ran near
// PyTorch's speed there, and the fake's stand-in tests take float32's
// 500×140 through _cols). most is the most chunks of rows: fewChunks
// where _colsv's last block folds them however many (fewer than fewCols
// columns), else as _cols'.
func colsKind(d deviceSize, rows, cols, width int) (kind string, vec, most int) {
	cv := colsVector(width)
	if cv > colVector(width) {
		switch {
		case cols < fewCols:
			return "_colsv", cv, fewChunks
		case rows > passRows && width > 4,
			rows <= passRows && width <= 4 && ceilDiv(cols, 32*cv) >= d.sms:
			return "_colsv", cv, 65535
		}
	}
	return "_cols", colVector(width), 65535
}

// foldBatchOf returns foldBatch for values of size bytes.
func foldBatchOf(size int) int {
	if size > 4 {
		return foldBatch8
	}
	return foldBatch
}

// colsUnroll returns the rows a thread of _cols or _colsv, taking v
// columns of vectors of width elements, has loads in flight for: 8 where
// a row's load is 8 bytes or fewer (_cols), 4 of 16 bytes (_colsv), so
// that the bytes in flight are alike and the loaded values fit the 64
// registers of the kernels' __launch_bounds__. A thread of 132 rows by 8
// lanes takes 17 rows: unrolled by four, with the remainder's one after
// another, that was five trips to memory; now three.
func colsUnroll(v, width int) int {
	if 16/width*v > 8 {
		return 4
	}
	return 8
}

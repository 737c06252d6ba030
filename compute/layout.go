package compute

// How the reductions and Softmax lay a matrix's rows and columns over the
// device. A layout depends on the shape, the element width and the
// device's size only, so that the same call folds in the same tree every
// time (deterministic), and each kind of shape gets the threads it can
// use:
//
//   - short rows (groupCols elements or fewer): lanes of a warp per row, G
//     of them (a power of two, 1 to 32) so that each lane takes about two
//     16-byte loads, several rows a block, every row its own lanes: a
//     1,048,576×5 matrix runs 4096 blocks of 256 rows; Softmax keeps
//     such a row in its lanes' registers (planRegs), or stages a thread's
//     rows through shared memory, several a thread (planStaged);
//   - longer rows: a block per row, of 1024 threads where the rows are
//     too few to fill the device with blocks of blockSize;
//   - a few very long rows (at most half the multiprocessors, each
//     longer than splitCols): each row cut into chunks of at least
//     minChunk elements, a block per chunk, the chunks' partial results
//     folded in order by the last block of the row to finish (in the
//     stream's scratch memory; in a graph capture, by a second kernel,
//     _chunks); Softmax's chunks, up to maxCluster of them on a device
//     with thread block clusters, are the blocks of a cluster that join
//     their statistics through each other's shared memory (_cluster),
//     else two kernels (_stats, _apply);
//   - columns of a single row or a single column are the rows of the
//     transposed shape (the same elements, the same index i);
//   - fewer than 32 columns (narrow): a block reads whole rows at once,
//     each thread one column, in one block where each thread takes 32
//     rows or fewer;
//   - 32 rows or fewer (short): a thread down a column, or down a vector's
//     width of them;
//   - fewer than fewCols columns, or many of a few rows, or halves of many
//     rows (_colsv, colsKind has the cases): as below, each thread 16
//     bytes of columns a row, at most fewChunks chunks of rows (of 8 rows
//     a lane or more, as the columns leave room for), folded by their
//     last block where they are few (foldBatchChunks);
//   - else blocks of 256 threads: lanes of columns, each taking vec
//     adjacent columns (colVector: one column of 4-byte and wider types,
//     8 bytes of narrower ones), by lanes of rows, 32 by 8 where the
//     columns are many; past 256 rows the rows cut into chunks where the
//     columns alone do not fill the device (colsBlocks blocks a
//     multiprocessor).
//
// The thresholds are the H200's measurements (docs/compute-grid.md); any
// device gets a correct result from any layout.

const (
	// groupCols is the longest row lanes of a warp take (64 elements a
	// lane at 32 lanes); a longer one gets a block.
	groupCols = 2048
	// splitCols is the longest row a few rows are not cut into chunks
	// for: up to it, a block per row finishes about as soon as a cut
	// row's blocks and their fold. A row of 65,536 was a block's (H100:
	// LogSoftmax float16 1x65536 12.8 µs, 0.79x PyTorch's, where one row
	// of 1,048,576 cut into chunks took 8.6): now cut, into 8.
	splitCols = 32768
	// minChunk is the fewest elements of a chunk of a cut row.
	minChunk = 8192
	// bigBlock is the threads of a block per row where rows are few.
	bigBlock = 1024
)

// rowLayout is the layout of a fold of each row of rows×cols.
type rowLayout struct {
	group   int // lanes per row, 1 to 32; 0: a block per row
	threads int // a block's threads
	blocks  int // the grid (of the rows kernel)
	chunks  int // more than 1: rows cut into chunks of chunk elements, a block each
	chunk   int // a multiple of the vector width
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// planRows lays out rows of cols elements, vectors of width elements.
func planRows(d deviceSize, rows, cols, width int) rowLayout {
	if rows <= d.sms/2 && cols > splitCols {
		chunks := min(ceilDiv(d.resident, rows), ceilDiv(cols, minChunk))
		chunk := ceilDiv(ceilDiv(cols, chunks), width) * width
		if chunks = ceilDiv(cols, chunk); chunks > 1 {
			return rowLayout{threads: blockSize, blocks: chunks * rows, chunks: chunks, chunk: chunk}
		}
	}
	if cols <= groupCols {
		g := rowGroup(cols, width)
		perBlock := blockSize / g
		return rowLayout{group: g, threads: blockSize, blocks: min(ceilDiv(rows, perBlock), maxGrid)}
	}
	threads := blockSize
	if rows < 2*d.sms {
		threads = bigBlock
	}
	return rowLayout{threads: threads, blocks: min(rows, maxGrid)}
}

// planStaged returns the rows a block of Softmax's NAME_staged (a thread
// a row, planRows' group 1) stages through shared memory at a time, and
// its grid, for rows of cols elements of size bytes: blockSize threads,
// each taking as many rows as make 16 bytes or more, so that the block's
// span is read and written by at least a 16-byte vector a thread (a
// thread's single row of one float16 was 2 bytes: 1048576x1 ran at a
// third of PyTorch's speed) and every span is as far past a 16-byte
// boundary as the first (blockSize·k·cols·size bytes apart).
func planStaged(rows, cols, size int) (span, blocks int) {
	span = blockSize * ceilDiv(16, cols*size)
	return span, min(ceilDiv(rows, span), maxGrid)
}

// rowGroup returns the lanes of a warp that take a row of cols elements
// (groupCols or fewer), vectors of width: the fewest, a power of two up to
// 32, that leave each lane about two vectors.
func rowGroup(cols, width int) int {
	g := 1
	for g < 32 && 2*g*width < cols {
		g *= 2
	}
	return g
}

// regBytes is the most bytes of values a lane of Softmax keeps of its row
// in registers (64 floats, 32 doubles): more would spill to local memory,
// which is device memory, and undo the gain.
const regBytes = 256

// planRegs returns the vectors each lane of a row's group keeps in
// registers where Softmax holds a row of cols elements (groupCols or
// fewer) in them (_regs): N, a power of two, of vectors of the width
// elements the kernel loads (wide: 16 bytes, vector elements; else one),
// each value of value bytes; 0 where the row is not held so (a thread a
// row, whose rows are staged; a lane's share past regBytes). Lanes of
// fewer than 32 take N = 2 vectors of 16 bytes, or 2·vector elements one
// at a time, the most rowGroup leaves them, so that each group has one
// kernel.
func planRegs(cols, vector, value int, wide bool) int {
	g := rowGroup(cols, vector)
	if cols > groupCols || g == 1 || wide && cols%vector != 0 {
		return 0
	}
	width := 1
	if wide {
		width = vector
	}
	n := 2 * vector / width // g < 32: ceilDiv(cols, g*width) <= n
	if g == 32 {
		n = 1
		for n < ceilDiv(cols, g*width) {
			n *= 2
		}
	}
	if n*width*value > regBytes {
		return 0
	}
	return n
}

// colLayout is the layout of a fold of each column of rows×cols with at
// least two of each (planCols sends the others to planRows).
type colLayout struct {
	kind   string // the kernel: _narrow (fewer than 32 columns), _short (few rows), _colsv (fewer than fewCols), _cols
	gx, gy int    // the grid: for _cols, column blocks by chunks of rows; else gx blocks
	chunks int    // the partial results per column (1: posted directly)
	// lanes is, for _cols, the block's threads across columns (blockDim.x,
	// a power of two up to 32, each taking colVector columns); the rest of
	// its blockSize threads are lanes of rows (blockDim.y).
	lanes int
	// last says the last block of a result's may fold its chunks (in
	// the stream's scratch): not where a block would fold more than
	// foldBatchChunks chunks and more than lastChunks chunks of 32
	// columns (or as many partial results of other columns), which a
	// second kernel's many warps fold faster (65536×32 float32: 24 µs in
	// the last block, 12 in two kernels, on the H200), but for _colsv's
	// fewer than fewCols columns.
	last bool
}

// lastChunks is the most chunks of 32 columns the last block of _cols
// folds itself.
const lastChunks = 128

// colBytes is the bytes of adjacent columns a thread of _cols takes in
// one load where elements are narrower than 4 bytes: one 2-byte element
// a thread made 64-byte rows a warp, and too few bytes in flight, so
// float16 columns ran at a third of PyTorch's speed (4096×8192: 107.8
// µs, PyTorch 28.6, on the H200) where float32 ran near it.
const colBytes = 8

// colVector returns the columns a thread of _cols takes, of vectors of
// width elements (16 bytes of the widest input): colBytes of elements
// narrower than 4 bytes, else one, as float32's and float64's columns run
// near memory speed that way.
func colVector(width int) int {
	if widest := 16 / width; widest < 4 {
		return colBytes / widest
	}
	return 1
}

// colsVector returns the columns a thread of _colsv takes, of vectors of
// width elements: the whole vector (16 bytes), at most 8 elements (the
// block's shared memory holds 8 partial results a thread).
func colsVector(width int) int { return min(width, 8) }

const (
	// fewCols is the fewest columns _cols takes where rows are many
	// (more than shortRows): fewer (32 to fewCols - 1) are _colsv's, whose
	// threads load 16 bytes of columns a row, not 4 or 8, so that a block
	// of few columns has as many bytes in flight as a block of many.
	fewCols = 128
	// fewChunks is the most chunks of rows _colsv cuts rows into: its last
	// block folds them (a lane's 8 reads, all in flight at once, a
	// column), one launch and no stream-ordered memory; 65536×32 float32
	// were 1024 chunks, folded by a second kernel.
	fewChunks = 256
	// shortRows is the most rows _short takes, a thread down each
	// column (a few of them with vectors).
	shortRows = 32
	// passRows is the most rows _cols folds in one pass; more are cut
	// into chunks where the columns do not fill the device.
	passRows = 256
	// narrowSteps is the most rows a thread of a single _narrow block
	// takes; more get blocks of at least 8 steps each.
	narrowSteps = 32
)

// planCols lays out the columns of rows×cols (rows, cols >= 2), vectors of
// width elements.
func planCols(d deviceSize, rows, cols, width int) colLayout {
	switch {
	case cols < 32:
		per := bigBlock / cols
		blocks := 1
		if ceilDiv(rows, per) > narrowSteps {
			blocks = max(1, min(ceilDiv(rows, 8*per), d.resident*blockSize/bigBlock))
		}
		return colLayout{kind: "_narrow", gx: blocks, gy: 1, chunks: blocks, last: true}
	case rows <= shortRows:
		return colLayout{kind: "_short", gx: min(ceilDiv(ceilDiv(cols, width), blockSize), maxGrid), gy: 1, chunks: 1, last: true}
	}
	// The fewest lanes of columns (a power of two, 32 at most) that take
	// the columns, so that narrow ones leave none idle: 32 float16 columns
	// are 8 lanes of 4 by 32 lanes of rows, a warp reading 4 whole rows.
	kind, vec, most := colsKind(d, rows, cols, width)
	lanes := 32
	for lanes > 1 && lanes/2*vec >= cols {
		lanes /= 2
	}
	span := lanes * vec // the columns of a block
	gx := min(ceilDiv(cols, span), maxGrid)
	chunks := 1
	// At least 8 rows a lane of rows. passRows rows or fewer are one pass
	// but in _colsv's own domain (fewer than fewCols columns): chunks
	// that a last block folds cost more than they gave there (colsKind).
	if rows > passRows || kind == "_colsv" && cols < fewCols {
		chunks = max(1, min(min(d.resident, d.sms*colsBlocks)/gx, ceilDiv(rows, 8*blockSize/lanes), most))
	}
	last := kind == "_colsv" && cols < fewCols || chunks <= foldBatchChunks || chunks*span <= lastChunks*32
	return colLayout{kind: kind, gx: gx, gy: chunks, chunks: chunks, lanes: lanes, last: last}
}

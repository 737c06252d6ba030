package nd

// SetMiddleHooks sets middle.go's hooks for a test: noScratch sends every
// middle fold of several chunks through stream-ordered memory and a
// second launch; sms, where positive, lays folds out for a device of that
// many multiprocessors. It returns the function that restores them.
func SetMiddleHooks(noScratch bool, sms int) (restore func()) {
	n, m := middleNoScratch, middleSMs
	middleNoScratch, middleSMs = noScratch, sms
	return func() { middleNoScratch, middleSMs = n, m }
}

// MiddleLayout returns the layout of a middle fold of outer×mid×inner
// elements of size bytes, at aligned addresses, on sms multiprocessors:
// its vector width, block, tiles (0: flat), blocks across and chunks.
func MiddleLayout(sms, size, outer, mid, inner int) (v, tx, ty, tiles, gx, chunks int) {
	p := planMiddle(sms, size, outer, mid, inner, 0)
	return p.v, p.tx, p.ty, p.tiles, p.gx, p.chunks
}

// SetTakeSmall sets the most elements a Take's result has for its
// kernel's 32-bit arithmetic (-1: none, every Take the 64-bit form) and
// returns the function that restores it.
func SetTakeSmall(n int) (restore func()) {
	old := takeSmall
	takeSmall = n
	return func() { takeSmall = old }
}

// SetConcatNarrow sets one past the most vectors a concat kernel indexes
// in 32 bits (0: none, every concat the 64-bit form) and returns the
// function that restores it.
func SetConcatNarrow(n int64) (restore func()) {
	old := concatNarrow
	concatNarrow = n
	return func() { concatNarrow = old }
}

// SetConcatSeen has f told each concat kernel's count of parts and width
// as it is launched, and returns the function that restores the last.
func SetConcatSeen(f func(parts, width int)) (restore func()) {
	old := concatSeen
	concatSeen = f
	return func() { concatSeen = old }
}

// SetLines sets the fewest lines of a Softmax or Cumsum along an axis
// but the last for its thread-a-line kernel, has seen, where not nil, told each line
// kernel's dim, post and lines as it is launched, and returns the
// function that restores both.
func SetLines(min int, seen func(dim, post, lines int)) (restore func()) {
	m, f := linesMin, linesSeen
	linesMin, linesSeen = min, seen
	return func() { linesMin, linesSeen = m, f }
}

// SetTileSeen has f told each tiled elementwise launch's rows, columns
// and tile, and returns the function that restores the last.
func SetTileSeen(f func(rows, cols, tileRows, tileCols int)) (restore func()) {
	old := tileSeen
	tileSeen = f
	return func() { tileSeen = old }
}

// SetTileGridMax sets the most blocks a tiled launch has along y and z
// and returns the function that restores it.
func SetTileGridMax(n int) (restore func()) {
	old := maxGridY
	maxGridY = n
	return func() { maxGridY = old }
}

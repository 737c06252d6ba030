package nn

// SetAttnPath forces attention's kernel for the tests ("scalar", "tc", or
// "" to let it choose) and returns a function that restores the choice.
func SetAttnPath(path string) (restore func()) {
	old, _ := attnPath.Load().(string)
	attnPath.Store(path)
	return func() { attnPath.Store(old) }
}

// SetAttnTiles sets the tensor-core kernel's tiles (warps a block, m-tiles
// of 16 rows a warp, keys a tile; all 0 for the defaults), for the
// benchmarks' search; it returns a function that restores them.
func SetAttnTiles(nw, mt, bn int) (restore func()) {
	old, _ := attnTune.Load().(attnTiles)
	attnTune.Store(attnTiles{NW: nw, MT: mt, BN: bn})
	return func() { attnTune.Store(old) }
}

// AttnTCShared is the tensor-core kernel's shared memory for D and its
// default tiles.
func AttnTCShared(d int) int { return attnTCShared(d, attnDefaultTiles(d)) }

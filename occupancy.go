package cuda

import (
	"math"

	"github.com/gocuda/cuda/internal/driver"
)

// Occupancy is a launch shape that keeps a kernel's device busiest: the
// block size whose blocks, as many as a multiprocessor holds at once, hold
// the most threads, and the grid that puts that many blocks on every
// multiprocessor.
type Occupancy struct {
	BlockSize int // threads per block
	// MinGridSize is the blocks that fill the device: BlocksPerSM times
	// the multiprocessors. A grid-stride kernel needs no more.
	MinGridSize int
	BlocksPerSM int // blocks of BlockSize threads a multiprocessor holds at once
}

// MaxActiveBlocks returns how many blocks of blockSize threads, each with
// dynamicSharedMem bytes of dynamic shared memory, one multiprocessor runs
// at once (cuOccupancyMaxActiveBlocksPerMultiprocessor), from the kernel's
// registers, shared memory and the device's limits: 0 when such a block
// does not fit at all.
func (f *Function) MaxActiveBlocks(blockSize, dynamicSharedMem int) (int, error) {
	const op = "Function.MaxActiveBlocks"
	if err := f.valid(op); err != nil {
		return 0, err
	}
	if err := checkOccupancyArgs(op, blockSize, dynamicSharedMem); err != nil {
		return 0, err
	}
	if err := f.mod.enter(op); err != nil {
		return 0, err
	}
	defer f.mod.leave()
	return f.maxActiveBlocks(op, blockSize, dynamicSharedMem)
}

// maxActiveBlocks is MaxActiveBlocks for a caller inside the module.
func (f *Function) maxActiveBlocks(op string, blockSize, dynamicSharedMem int) (int, error) {
	var n int32
	if err := check(op, driver.OccupancyMaxActiveBlocksPerMultiprocessorWithFlags(f.mod.ctx.handle, &n, f.handle,
		int32(blockSize), uintptr(dynamicSharedMem), 0)); err != nil {
		return 0, err
	}
	return int(n), nil
}

func checkOccupancyArgs(op string, blockSize, sharedMem int) error {
	switch {
	case blockSize <= 0 || blockSize > math.MaxInt32:
		return errorf(op, ErrInvalidValue, "block size %d: want a positive number of threads", blockSize)
	case sharedMem < 0 || sharedMem > math.MaxInt32:
		return errorf(op, ErrInvalidValue, "dynamic shared memory %d bytes out of range", sharedMem)
	}
	return nil
}

// SuggestBlockSize returns the block size, of at most maxBlockSize threads
// (0: as many as the kernel and the device allow), that keeps the most of
// the kernel's threads resident when each block has dynamicSharedMem
// bytes of dynamic shared memory (cuOccupancyMaxPotentialBlockSize). Where
// no block fits with that much, it is the zero Occupancy, without error.
func (f *Function) SuggestBlockSize(dynamicSharedMem, maxBlockSize int) (Occupancy, error) {
	const op = "Function.SuggestBlockSize"
	if err := f.valid(op); err != nil {
		return Occupancy{}, err
	}
	if maxBlockSize < 0 || maxBlockSize > math.MaxInt32 {
		return Occupancy{}, errorf(op, ErrInvalidValue, "block size limit %d: want 0 (none) to %d", maxBlockSize, math.MaxInt32)
	}
	if err := checkOccupancyArgs(op, max(maxBlockSize, 1), dynamicSharedMem); err != nil {
		return Occupancy{}, err
	}
	if err := f.mod.enter(op); err != nil {
		return Occupancy{}, err
	}
	defer f.mod.leave()
	var grid, block int32
	if err := check(op, driver.OccupancyMaxPotentialBlockSizeWithFlags(f.mod.ctx.handle, &grid, &block, f.handle, nil,
		uintptr(dynamicSharedMem), int32(maxBlockSize), 0)); err != nil {
		return Occupancy{}, err
	}
	o := Occupancy{BlockSize: int(block), MinGridSize: int(grid)}
	if block > 0 {
		sms, err := f.mod.ctx.dev.MultiprocessorCount()
		if err != nil {
			return Occupancy{}, err
		}
		o.BlocksPerSM = o.MinGridSize / max(sms, 1)
	}
	return o, nil
}

// SuggestBlockSizeFunc is SuggestBlockSize for a kernel whose dynamic
// shared memory depends on its block size: sharedMem(n) bytes for a block
// of n threads. The driver's form of it calls back into the program from
// C; this one asks MaxActiveBlocks of each candidate as the driver does:
// block sizes from the limit down by the warp size, the first of the most
// resident threads kept, stopping early at the multiprocessor's limit. For
// a sharedMem that returns one size it gives what SuggestBlockSize gives.
func (f *Function) SuggestBlockSizeFunc(sharedMem func(blockSize int) int, maxBlockSize int) (Occupancy, error) {
	const op = "Function.SuggestBlockSizeFunc"
	if err := f.valid(op); err != nil {
		return Occupancy{}, err
	}
	switch {
	case sharedMem == nil:
		return Occupancy{}, errorf(op, ErrInvalidValue, "nil sharedMem function: use SuggestBlockSize for a size that does not depend on the block")
	case maxBlockSize < 0:
		return Occupancy{}, errorf(op, ErrInvalidValue, "block size limit %d: want 0 (none) or more", maxBlockSize)
	}
	if err := f.mod.enter(op); err != nil {
		return Occupancy{}, err
	}
	defer f.mod.leave()
	dev := f.mod.ctx.dev
	var limits [4]int
	for i, a := range []Attribute{AttrMaxThreadsPerBlock, AttrWarpSize, AttrMaxThreadsPerMultiprocessor, AttrMultiprocessorCount} {
		v, err := dev.Attribute(a)
		if err != nil {
			return Occupancy{}, err
		}
		limits[i] = v
	}
	perBlock, warp, perSM, sms := limits[0], max(limits[1], 1), limits[2], limits[3]
	var funcLimit int32
	if err := check(op, driver.FuncGetAttribute(f.mod.ctx.handle, &funcLimit, driver.FunctionAttribute(FuncMaxThreadsPerBlock), f.handle)); err != nil {
		return Occupancy{}, err
	}
	limit := min(perBlock, int(funcLimit))
	if maxBlockSize > 0 {
		limit = min(limit, maxBlockSize)
	}
	var best Occupancy
	bestThreads := 0
	for aligned := (limit + warp - 1) / warp * warp; aligned > 0; aligned -= warp {
		size := min(limit, aligned)
		smem := sharedMem(size)
		if smem < 0 || smem > math.MaxInt32 {
			return Occupancy{}, errorf(op, ErrInvalidValue, "sharedMem(%d) = %d bytes: out of range", size, smem)
		}
		blocks, err := f.maxActiveBlocks(op, size, smem)
		if err != nil {
			return Occupancy{}, err
		}
		if threads := blocks * size; threads > bestThreads {
			best, bestThreads = Occupancy{BlockSize: size, BlocksPerSM: blocks, MinGridSize: blocks * sms}, threads
		}
		if bestThreads == perSM {
			break
		}
	}
	return best, nil
}

// AvailableDynamicSharedMem returns the most dynamic shared memory a block
// of blockSize threads may have for blocksPerSM of them to run at once on
// a multiprocessor (cuOccupancyAvailableDynamicSMemPerBlock), no more than
// the kernel may have (FuncMaxDynamicSharedSize). It is the driver's
// estimate: on the H200 its room for 5 blocks of 128 threads holds 4 by
// MaxActiveBlocks, which counts the memory the driver sets aside for each
// block. Blocks that cannot fit at all are an error.
func (f *Function) AvailableDynamicSharedMem(blocksPerSM, blockSize int) (int, error) {
	const op = "Function.AvailableDynamicSharedMem"
	if err := f.valid(op); err != nil {
		return 0, err
	}
	if err := checkOccupancyArgs(op, blockSize, 0); err != nil {
		return 0, err
	}
	if blocksPerSM <= 0 || blocksPerSM > math.MaxInt32 {
		return 0, errorf(op, ErrInvalidValue, "%d blocks per multiprocessor: want a positive number", blocksPerSM)
	}
	if err := f.mod.enter(op); err != nil {
		return 0, err
	}
	defer f.mod.leave()
	var n uintptr
	if err := check(op, driver.OccupancyAvailableDynamicSMemPerBlock(f.mod.ctx.handle, &n, f.handle, int32(blocksPerSM), int32(blockSize))); err != nil {
		return 0, err
	}
	return int(n), nil
}

package compute

import (
	"sync"

	cuda "github.com/gocuda/cuda"
)

// blockSize is the threads of a block of the generated kernels.
const blockSize = 256

// maxGrid is the most blocks a launch of the package gives a grid's X.
const maxGrid = 1<<31 - 1

// residentBlocks are, by device ordinal, the blocks of blockSize threads
// the device runs at once: a grid-stride loop needs no more.
var residentBlocks sync.Map // int -> int

// linearConfig returns the launch of a grid-stride kernel over n elements
// on s: a block per blockSize elements, at most as many as the device runs
// at once (from its multiprocessors and their threads).
func linearConfig(s *cuda.Stream, n int) (cuda.LaunchConfig, error) {
	dev := s.Context().Device()
	v, ok := residentBlocks.Load(dev.Ordinal())
	if !ok {
		sms, err := dev.MultiprocessorCount()
		if err != nil {
			return cuda.LaunchConfig{}, err
		}
		threads, err := dev.Attribute(cuda.AttrMaxThreadsPerMultiprocessor)
		if err != nil {
			return cuda.LaunchConfig{}, err
		}
		v = max(1, sms*max(1, threads/blockSize))
		residentBlocks.Store(dev.Ordinal(), v)
	}
	blocks := min((n+blockSize-1)/blockSize, v.(int))
	return cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: blockSize}, Stream: s}, nil
}

// elementwiseConfig returns the launch of an Elementwise's kernel over n
// elements taken width at a time: a block of blockSize threads per
// blockSize vectors, every vector a thread of its own (the grid-stride loop
// only matters past 2^31 blocks). On the H200 a float32 add of 256 MiB
// takes 188 us so against 207 us with the grid capped at the blocks the
// device holds at once (bench/cref/elementwise.cu).
func elementwiseConfig(s *cuda.Stream, n, width int) cuda.LaunchConfig {
	vectors := (n + width - 1) / width
	blocks := min((vectors+blockSize-1)/blockSize, maxGrid)
	return cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: blockSize}, Stream: s}
}

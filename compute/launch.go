package compute

import (
	"sync"

	cuda "github.com/gocuda/cuda"
)

// blockSize is the threads of a block of the generated kernels, where a
// layout does not say otherwise.
const blockSize = 256

// maxGrid is the most blocks a launch of the package gives a grid's X.
const maxGrid = 1<<31 - 1

// deviceSize is what a layout needs of a device: its multiprocessors, and
// the blocks of blockSize threads they run at once (a grid-stride loop
// needs no more).
type deviceSize struct{ sms, resident int }

// deviceSizes are the devices' sizes by ordinal.
var deviceSizes sync.Map // int -> deviceSize

// sizeOf returns the size of s's device.
func sizeOf(s *cuda.Stream) (deviceSize, error) {
	dev := s.Context().Device()
	if v, ok := deviceSizes.Load(dev.Ordinal()); ok {
		return v.(deviceSize), nil
	}
	sms, err := dev.MultiprocessorCount()
	if err != nil {
		return deviceSize{}, err
	}
	threads, err := dev.Attribute(cuda.AttrMaxThreadsPerMultiprocessor)
	if err != nil {
		return deviceSize{}, err
	}
	d := deviceSize{sms: max(1, sms), resident: max(1, sms*max(1, threads/blockSize))}
	deviceSizes.Store(dev.Ordinal(), d)
	return d, nil
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

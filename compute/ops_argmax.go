package compute

import cuda "github.com/gocuda/cuda"

// argSource is the two kernels of ArgMax (or ArgMin) of T: each thread
// keeps the best value of its run of elements and its index, then a block's
// threads, then the blocks', in fixed trees. A NaN beats every number, and
// of equals the first wins, as NumPy's argmax: deterministic.
func argSource(t dtype, name string, maximum bool) string {
	cmp := "<"
	if maximum {
		cmp = ">"
	}
	return prelude + render("argmax", argText{
		KernelName:        name,
		Value:             t.value,
		Storage:           t.storage,
		Compare:           cmp,
		LoadElement:       t.load("src[i]"),
		LoadVectorElement: t.load("xs[u].v[k]"),
	})
}

// argText is the fields of templates/argmax.cu.tmpl.
type argText struct {
	KernelName        string // the kernels' stem: NAME_partial, NAME_final
	Value, Storage    string // the C types of a value and of an element in memory
	Compare           string // > for ArgMax, < for ArgMin
	LoadElement       string // element i of src, as a Value
	LoadVectorElement string // element k of vector xs[u], as a Value
}

// ArgMax sets dst, one int64, to the index of src's largest element: the
// first of equals, or the first NaN if src has one (as NumPy's argmax).
// src may not be empty.
func ArgMax[T cuda.Number](dst *cuda.DeviceBuffer[int64], src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return argBest("ArgMax", dst, src, s, true)
}

// ArgMin sets dst, one int64, to the index of src's smallest element (the
// first of equals, or the first NaN).
func ArgMin[T cuda.Number](dst *cuda.DeviceBuffer[int64], src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	return argBest("ArgMin", dst, src, s, false)
}

func argBest[T cuda.Number](op string, dst *cuda.DeviceBuffer[int64], src *cuda.DeviceBuffer[T], s *cuda.Stream, maximum bool) error {
	as := [2]arg{bufArg("dst", dst), bufArg("src", src)}
	if err := checkBuffers(op, s, as[:]); err != nil {
		return err
	}
	switch {
	case dst.Len() != 1:
		return errorf(op, cuda.ErrInvalidValue, "dst has %d elements, want 1", dst.Len())
	case src.Len() == 0:
		return errorf(op, cuda.ErrInvalidValue, "src is empty: an empty buffer has no largest or smallest element")
	}
	t := dtypePtr[T]()
	name := "argmin_" + t.name
	if maximum {
		name = "argmax_" + t.name
	}
	v := namedVariant(name, func() string { return argSource(*t, name, maximum) })
	partial, err := kernel(op, s, v, name+"_partial", as[:])
	if err != nil {
		return err
	}
	final, err := kernel(op, s, v, name+"_final", as[:])
	if err != nil {
		return err
	}
	// A small src in one block, which writes dst itself; a larger one
	// in a block per 16 KiB or so, at most argBlocks a multiprocessor
	// (one wave), then a block folding theirs.
	n := src.Len()
	if n <= argSmall {
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: bigBlock}, Stream: s}
		return launchError(op, partial.Launch(cfg, src, int64(n), cuda.DevicePtr(0), dst, cuda.DevicePtr(0), dst), as[:], name)
	}
	d, err := sizeOf(s)
	if err != nil {
		return wrap(op, err, "sizing the launch")
	}
	blocks := argGrid(d, n, int(t.goType.Size()))
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: blockSize}, Stream: s}
	// The blocks' indices, then their values (8-byte aligned either way):
	// in the stream's scratch, where the last block folds them, or in
	// memory of the call's own, folded by _final.
	counter, scratch, ok, err := streamScratch(op, s, 1, 16*blocks)
	if err != nil {
		return err
	}
	if ok {
		pv := scratch + cuda.DevicePtr(8*blocks)
		return launchError(op, partial.Launch(cfg, src, int64(n), pv, scratch, counter, dst), as[:], name)
	}
	return withScratch(op, name, s, as[:], 2*blocks, func(scratch *cuda.DeviceBuffer[int64]) error {
		pi, _ := scratch.Slice(0, blocks)
		pv, _ := scratch.Slice(blocks, blocks)
		if err := partial.Launch(cfg, src, int64(n), pv, pi, cuda.DevicePtr(0), dst); err != nil {
			return err
		}
		return final.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: blockSize}, Stream: s}, pv, pi, int64(blocks), dst)
	})
}

// argGrid returns the blocks of ArgMax's and ArgMin's first pass over n
// elements of size bytes (more than argSmall): one per 16 KiB or so, at
// most argBlocks a multiprocessor.
func argGrid(d deviceSize, n, size int) int {
	return max(1, min(ceilDiv(n*size, 16<<10), min(d.resident, d.sms*argBlocks)))
}

// argSmall is the most elements ArgMax and ArgMin take in one block.
const argSmall = 32768

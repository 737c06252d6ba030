package compute

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"weak"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/attach"
)

// checkMatrix checks the buffers of a matrix operation, as checkBuffers,
// and that each has shape's elements.
func checkMatrix(op string, s *cuda.Stream, shape Shape, as []arg) error {
	if err := checkBuffers(op, s, as); err != nil {
		return err
	}
	if err := checkShape(op, shape); err != nil {
		return err
	}
	for _, a := range as {
		if a.n != shape.Rows*shape.Cols {
			return errorf(op, cuda.ErrInvalidValue, "%s has %d elements, want %d: a %d×%d matrix", a.name, a.n, shape.Rows*shape.Cols, shape.Rows, shape.Cols)
		}
	}
	return nil
}

// overlap reports whether buffers a and b, each of one length (more than
// none), share memory: views of one allocation whose element ranges meet.
func overlap[T any](a, b *cuda.DeviceBuffer[T]) bool {
	lo, hi := a.Ptr(), b.Ptr()
	if hi < lo {
		lo, hi = hi, lo
	}
	return uint64(hi-lo) < uint64(a.ByteSize())
}

// softmaxSource is the kernels of Softmax and LogSoftmax over rows of T,
// laid out as planRows says (layout.go). One pass finds a row's largest
// element and the sum of the exponentials of the differences from it
// together (each thread keeps its largest so far and rescales its sum when
// that grows, then the threads' pairs join in a fixed tree), a second
// writes the results. A block per row keeps the row in shared memory
// when the launch gives it room (cached), so that the row is read from
// device memory once; short rows are taken by lanes of a warp, which keep
// the row in registers (NAME_regsE, as planRegs says: read once, one
// exponential an element), or, past what registers hold, in three passes
// (gocuda_short); rows of a few elements a thread are staged through
// shared memory by 16-byte vectors (NAME_staged, planStaged); a few very
// long rows are cut into chunks (NAME_stats, then NAME_apply, which joins
// a row's chunks in order; or NAME_cluster, the chunks a cluster's
// blocks in one launch, with the same bits). The passes take 16 bytes of
// a row at a time when its length and both matrices allow. Computed in T's value type
// (float for the halves, double for float64); for the halves, e^x by
// __expf and Softmax's quotients as products by the sum's reciprocal, in
// every kernel alike (the template's gocuda_exp and gocuda_post say why).
func softmaxSource(t dtype, name string, logarithm bool) string {
	staged := make([]int, 32/int(t.goType.Size()))
	for c := range staged {
		staged[c] = c + 1
	}
	return prelude + render("softmax", softmaxText{
		KernelName:         name,
		Value:              t.value,
		Storage:            t.storage,
		Half:               t.half,
		Logarithm:          logarithm,
		LoadElement:        t.load("row[c]"),
		StoreElement:       t.store("y"),
		StoreVectorElement: t.store("f[k]"),
		Staged:             staged,
		StagedBlocks:       stagedBlocks(int(t.goType.Size())),
		Regs:               regsKernels(t),
	})
}

// softmaxText is the fields of templates/rows.cu.tmpl's "softmax". The
// paths over registers keep e^(x - m) for Softmax and take the log of the
// sum once for LogSoftmax (Logarithm): the same values as the other
// paths'.
type softmaxText struct {
	KernelName         string // the kernels' stem: NAME, NAME_staged, NAME_stats, NAME_apply, NAME_regsE
	Value, Storage     string // the C types of a value and of an element in memory
	Half               string // the prelude's name of a half type ("f16", "bf16"), converted a vector at a time; empty for the others
	Logarithm          bool   // LogSoftmax
	LoadElement        string // element c of row, in memory, as a Value
	StoreElement       string // y, a Value, as an element in memory
	StoreVectorElement string // f[k] as an element in memory
	Staged             []int  // the row lengths of NAME_staged's cases: 1 to 32 bytes of elements
	StagedBlocks       int    // NAME_staged's blocks a multiprocessor, for its launch bounds: stagedBlocks
	Regs               []regsText
}

// stagedBlocks is the blocks of 256 threads a multiprocessor holds of
// NAME_staged of elements of size bytes, which its launch bounds ask
// ptxas for: the most whose registers (65536 a multiprocessor) leave it
// no spill (NVRTC 11.8, sm_80 and sm_90; TestSoftmaxRegsCompile): 8 of
// float32 (32 registers), 6 of the halves (40: their conversions), 3 of
// float64 (ptxas takes about 62 for double's exp; held to 64, it
// spilled on sm_90). Left to itself ptxas gave the halves 49 to 58
// registers, 4 blocks: too few bytes in flight.
func stagedBlocks(size int) int {
	switch size {
	case 2:
		return 6
	case 4:
		return 8
	}
	return 3
}

// regKernel is one case of gocuda_regs: G lanes a row, N vectors a lane,
// each of 16 bytes (wide) or a single element.
type regKernel struct {
	wide bool
	g, n int
}

// regKernels returns the cases of gocuda_regs for elements of size bytes,
// computed in values of value bytes, by the values a lane keeps (N times
// the vector's elements): those planRegs gives every row that planRows
// gives to lanes of a warp, both of 16-byte vectors and of single
// elements.
func regKernels(size, value int) map[int][]regKernel {
	out := map[int][]regKernel{}
	seen := map[regKernel]bool{}
	for _, wide := range []bool{true, false} {
		for cols := 1; cols <= groupCols; cols++ {
			if n := planRegs(cols, 16/size, value, wide); n > 0 {
				k := regKernel{wide, rowGroup(cols, 16/size), n}
				if !seen[k] {
					seen[k] = true
					e := n
					if wide {
						e *= 16 / size
					}
					out[e] = append(out[e], k)
				}
			}
		}
	}
	return out
}

// regsKernels is the kernels that hold rows in registers, NAME_regsE for
// each count E of values a lane keeps: a kernel for each, so that each
// has the registers of its own rows (a kernel's count is its greatest
// case's, and every launch of it is held to that), each under launch
// bounds of a block of 256 threads, which leave a thread up to 255
// registers. Each takes G lanes a row (group), of 16-byte vectors where
// the buffers are aligned for them (GOCUDA_WIDE; the caller knows which:
// regsLaunch), else single elements.
func regsKernels(t dtype) []regsText {
	size := int(t.goType.Size())
	ks := regKernels(size, valueSize(size))
	es := make([]int, 0, len(ks))
	for e := range ks {
		es = append(es, e)
	}
	slices.Sort(es)
	out := make([]regsText, 0, len(es))
	for _, e := range es {
		k := regsText{Values: e, Blocks: regsBlocks(t, e)}
		for _, c := range ks[e] {
			if c.wide {
				k.Wide = append(k.Wide, regCase{c.g, c.n})
			} else {
				k.Narrow = append(k.Narrow, regCase{c.g, c.n})
			}
		}
		out = append(out, k)
	}
	return out
}

// regsText is a kernel of templates/rows.cu.tmpl's "softmax_regs":
// NAME_regsE of Values values a lane, its cases of 16-byte vectors (Wide)
// and of single elements (Narrow), under launch bounds of Blocks blocks
// a multiprocessor (regsBlocks).
type regsText struct {
	Values       int
	Blocks       int
	Wide, Narrow []regCase
}

// regsBlocks is the blocks of 256 threads a multiprocessor holds of
// NAME_regsE of t keeping values values a lane, which its launch bounds
// ask ptxas for (each block's threads get 65536 / (256·blocks) registers
// at most). float64 keeps 1: all the registers ptxas takes. The halves'
// kernels, whose values are floats converted from half the bytes, took
// 97 to 101 registers at 32 values (2 blocks: 512 threads to hide a
// row's read, where softmax float16 65536x1000 ran at 0.64x PyTorch on
// the H100) and 199 at 64 (1 block); float32's took 76 to 80 at 32
// values (3 blocks: 4096x1000's 512 blocks of 8 rows were a wave of 396
// and a tail of 116, 0.92x to 0.94x PyTorch on the H100) and 140 at 64
// (1 block). Held to 4 and 2 blocks (64 and 128 registers) ptxas spills
// none (NVRTC 11.8, sm_80 and sm_90; TestSoftmaxRegsCompile).
func regsBlocks(t dtype, values int) int {
	switch {
	case t.half == "" && t.goType.Size() != 4:
		return 1
	case values <= 32:
		return 4
	}
	return 2
}

// regCase is a case of a regsText's kernel: Group lanes a row, N vectors
// a lane.
type regCase struct{ Group, N int }

// Softmax sets each row of dst to the softmax of src's row: e^(x-max) over
// the row's sum of them. src and dst are row-major matrices of shape (dst
// may be src, or memory apart from it; a dst that overlaps part of src is
// an error). A row holding a NaN is all NaN, as is a row of only -Inf; a
// row whose largest is +Inf is NaN where +Inf and 0 elsewhere (+Inf -
// +Inf is NaN, as in PyTorch).
func Softmax[T cuda.AnyFloat](dst, src *cuda.DeviceBuffer[T], shape Shape, s *cuda.Stream) error {
	return softmax("Softmax", dst, src, shape, s, false)
}

// LogSoftmax sets each row of dst to the log of the softmax of src's row,
// computed as x - max - log(sum of e^(x-max)): finite where Softmax
// underflows to 0, -Inf where x is -Inf (and, in a row whose largest is
// +Inf, where x is not +Inf), NaN where Softmax is NaN.
func LogSoftmax[T cuda.AnyFloat](dst, src *cuda.DeviceBuffer[T], shape Shape, s *cuda.Stream) error {
	return softmax("LogSoftmax", dst, src, shape, s, true)
}

// valueSize is the bytes of the type Softmax computes an element of size
// bytes in: float for the halves, the type itself otherwise.
func valueSize(size int) int { return max(size, 4) }

// softmaxCache is the longest row, in bytes, Softmax keeps in shared
// memory: 48 KiB (what a block may have without asking), less the kernel's
// own 512 bytes (11264 float32, 5632 float64).
const softmaxCache = 44 << 10

// maxCluster is the most blocks of a thread block cluster every device
// with clusters runs (more need the kernel's
// FuncNonPortableClusterSizeAllowed and a device with room for them):
// Softmax's chunks of a row are a cluster up to it.
const maxCluster = 8

// softmaxOwn is the shared memory Softmax's kernel has of its own (512
// bytes), and a margin, left out of what a row may be kept in.
const softmaxOwn = 1 << 10

// softmaxRoom is the shared memory a block of Softmax may keep its row in
// on device d where the kernel opts in to it: the device's (tests set
// another).
var softmaxRoom = func(d deviceSize) int { return d.optin }

// sharedAllowed is the dynamic shared memory each kernel was allowed past
// 48 KiB (FuncMaxDynamicSharedSize), by kernel: always the most the
// device allows (softmaxRoom less softmaxOwn), so that two calls setting
// it at once set the same.
var sharedAllowed sync.Map // weak.Pointer[cuda.Function] -> int

// allowShared reports whether f may be launched with n bytes of dynamic
// shared memory, allowing it once where it was not; false where the
// driver refuses (the launch then keeps no row).
func allowShared(f *cuda.Function, n int) bool {
	k := weak.Make(f)
	if v, ok := sharedAllowed.Load(k); ok && v.(int) >= n {
		return true
	}
	if f.SetAttribute(cuda.FuncMaxDynamicSharedSize, n) != nil {
		return false
	}
	sharedAllowed.Store(k, n)
	return true
}

// softmaxName is the kernel's name of Softmax (LogSoftmax where
// logarithm) of the type named: a constant for every float type, so that
// a launch makes no string.
func softmaxName(t string, logarithm bool) string {
	var name string
	switch t {
	case "float32":
		name = "softmax_float32"
	case "float64":
		name = "softmax_float64"
	case "float16":
		name = "softmax_float16"
	case "bfloat16":
		name = "softmax_bfloat16"
	default:
		name = "softmax_" + t
	}
	if !logarithm {
		return name
	}
	switch t {
	case "float32":
		return "logsoftmax_float32"
	case "float64":
		return "logsoftmax_float64"
	case "float16":
		return "logsoftmax_float16"
	case "bfloat16":
		return "logsoftmax_bfloat16"
	}
	return "log" + name
}

// shapeNames are the names of the Softmax kernels a launch picks by its
// shape, by their variant's name: the staged kernel's, the chunks' two
// (a few long rows), and those that hold rows in registers by the log2
// of the values a lane keeps (1 to 64). Made once, not at every launch, and looked up by the name alone,
// as namedVariant looks up the variant.
var shapeNames sync.Map // string -> *softmaxNames

type softmaxNames struct {
	staged, stats, apply, cluster string
	regs                          [7]string
}

func namesOf(name string) *softmaxNames {
	names, ok := shapeNames.Load(name)
	if !ok {
		made := softmaxNames{staged: name + "_staged", stats: name + "_stats", apply: name + "_apply", cluster: name + "_cluster"}
		for k := range made.regs {
			made.regs[k] = fmt.Sprintf("%s_regs%d", name, 1<<k)
		}
		names, _ = shapeNames.LoadOrStore(name, &made)
	}
	return names.(*softmaxNames)
}

func regsName(name string, values int) string {
	return namesOf(name).regs[bits.TrailingZeros(uint(values))]
}

func softmax[T cuda.AnyFloat](op string, dst, src *cuda.DeviceBuffer[T], shape Shape, s *cuda.Stream, logarithm bool) error {
	as := [2]arg{bufArg("dst", dst), bufArg("src", src)}
	if err := checkMatrix(op, s, shape, as[:]); err != nil {
		return err
	}
	if shape.Rows*shape.Cols > 0 && dst.Ptr() != src.Ptr() && overlap(dst, src) {
		if err := closedArg(op, as[:]); err != nil {
			return err // freed, and its address another's now
		}
		return errorf(op, cuda.ErrInvalidValue, "dst overlaps src: dst may be src itself, or memory apart from it, not part of it")
	}
	if shape.Rows == 0 || shape.Cols == 0 {
		return nil
	}
	t := dtypePtr[T]()
	name := softmaxName(t.name, logarithm)
	v := namedVariant(name, func() string { return softmaxSource(*t, name, logarithm) })
	d, err := sizeOf(s)
	if err != nil {
		return wrap(op, err, "sizing the launch of %s", name)
	}
	size := int(t.goType.Size())
	l := planRows(d, shape.Rows, shape.Cols, 16/size)
	rows, cols := int64(shape.Rows), int64(shape.Cols)
	if l.chunks <= 1 && l.group > 1 {
		// A row held in registers, by vectors of 16 bytes where both
		// buffers and the rows are aligned for them (as the kernel's
		// GOCUDA_WIDE finds), else by elements.
		vector := 16 / size
		wide := shape.Cols%vector == 0 && uint64(src.Ptr())%16 == 0 && uint64(dst.Ptr())%16 == 0
		if n := planRegs(shape.Cols, vector, valueSize(size), wide); n > 0 {
			if wide {
				n *= vector
			}
			f, err := kernel(op, s, v, regsName(name, n), as[:])
			if err != nil {
				return err
			}
			cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.blocks}, Block: cuda.Dim3{X: l.threads}, Stream: s}
			return launchError(op, f.Launch(cfg, src, dst, boxInt64(rows), boxInt64(cols), int32(l.group)), as[:], name)
		}
	}
	if l.chunks <= 1 && l.group == 1 {
		// A thread a row: span rows a block at a time, staged through
		// shared memory by 16-byte vectors (and 16 bytes more, the span's
		// offset past a 16-byte boundary).
		f, err := kernel(op, s, v, namesOf(name).staged, as[:])
		if err != nil {
			return err
		}
		span, blocks := planStaged(shape.Rows, shape.Cols, size)
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: blocks}, Block: cuda.Dim3{X: blockSize}, SharedMemBytes: span*shape.Cols*size + 16, Stream: s}
		return launchError(op, f.Launch(cfg, src, dst, boxInt64(rows), boxInt64(cols), boxInt64(int64(span))), as[:], name)
	}
	if l.chunks <= 1 {
		f, err := kernel(op, s, v, name, as[:])
		if err != nil {
			return err
		}
		// A block per row has room for its row in shared memory where the
		// row fits in what every device gives a block without asking.
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.blocks}, Block: cuda.Dim3{X: l.threads}, Stream: s}
		cached := int32(0)
		switch bytes := shape.Cols * size; {
		case l.group == 0 && bytes <= softmaxCache:
			cfg.SharedMemBytes, cached = (bytes+15)/16*16, 1
		case l.group == 0 && l.threads == bigBlock && bytes+softmaxOwn <= softmaxRoom(d) && allowShared(f, softmaxRoom(d)-softmaxOwn):
			// A few long rows, a block of 1024 threads each (a
			// multiprocessor holds at most two): the row kept in the
			// shared memory the kernel opts in to, read once, not twice.
			cfg.SharedMemBytes, cached = (bytes+15)/16*16, 1
		}
		return launchError(op, f.Launch(cfg, src, dst, boxInt64(rows), boxInt64(cols), int32(l.group), cached), as[:], name)
	}
	if d.clusters && l.chunks <= maxCluster {
		// A row's chunks are the blocks of a thread block cluster, which
		// join their statistics through each other's shared memory: one
		// launch, no memory of the stream's (logsoftmax float16
		// 1x65536 on an H100: 7.17 µs, the two kernels 12.0, PyTorch's
		// one 11.5). A chunk is kept in shared memory where it fits in
		// what a block has without asking.
		f, err := kernel(op, s, v, namesOf(name).cluster, as[:])
		if err != nil {
			return err
		}
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.chunks, Y: shape.Rows}, Cluster: cuda.Dim3{X: l.chunks, Y: 1, Z: 1}, Block: cuda.Dim3{X: l.threads}, SharedMemBytes: 16, Stream: s}
		cached := int32(0)
		if bytes := (l.chunk*size + 15) / 16 * 16; 16+bytes <= softmaxCache {
			cfg.SharedMemBytes, cached = 16+bytes, 1
		}
		return launchError(op, f.Launch(cfg, src, dst, boxInt64(rows), boxInt64(cols), boxInt64(int64(l.chunk)), cached), as[:], name)
	}
	stats, err := kernel(op, s, v, namesOf(name).stats, as[:])
	if err != nil {
		return err
	}
	apply, err := kernel(op, s, v, namesOf(name).apply, as[:])
	if err != nil {
		return err
	}
	// The chunks' statistics are in the stream's sequence memory, whose
	// lock keeps another goroutine's call on the same stream from queuing
	// its kernels between this call's two (TestOpsConcurrentOnOneStream):
	// no stream-ordered allocation (logsoftmax float16 7x65536: 11.9 µs
	// that way, 18.3 with one, PyTorch 10.3, on an H100). _apply is
	// _stats' programmatic dependent where the device has them (its
	// blocks start while _stats' run, and wait for their results: 12.6
	// → 9.96 µs, PyTorch 10.5, in one run on an H100), but not in a
	// capture. In a capture, or where they do not fit, memory of
	// the call's own.
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.chunks, Y: shape.Rows}, Block: cuda.Dim3{X: l.threads}, Stream: s}
	chunk, chunks := boxInt64(int64(l.chunk)), boxInt64(int64(l.chunks))
	queue := func(scratch any, dependent bool) error {
		if err := stats.Launch(cfg, src, scratch, boxInt64(rows), boxInt64(cols), chunk); err != nil {
			return err
		}
		next := cfg
		next.ProgrammaticDependent = dependent
		return apply.Launch(next, src, dst, scratch, boxInt64(rows), boxInt64(cols), chunk, chunks)
	}
	bytes := 2 * l.chunks * shape.Rows * valueSize(size)
	queued := false
	err = attach.StreamSequence(s, func(addr uintptr, room int) error {
		if addr == 0 || bytes > room {
			return nil
		}
		queued = true
		return queue(cuda.DevicePtr(addr), d.pdl)
	})
	switch {
	case queued:
		return launchError(op, err, as[:], name)
	case err != nil:
		return wrap(op, err, "taking the stream's sequence memory")
	}
	return withScratch(op, name, s, as[:], bytes, func(scratch *cuda.DeviceBuffer[byte]) error { return queue(scratch, false) })
}

// transposeSource is the kernels of Transpose: tiles of 32×32 elements
// read by rows and written by columns through shared memory, so that both
// the reads and the writes are coalesced; and, for a matrix of fewer than
// skinny rows or columns, whose tiles would be nearly empty, tiles of all
// the short side by skinnySpan elements of the long one (NAME_skinny),
// staged in shared memory so that they too are read and written in runs.
func transposeSource(t dtype, name string) string {
	return render("transpose", transposeText{KernelName: name, Storage: t.storage})
}

// transposeText is the fields of templates/rows.cu.tmpl's "transpose".
type transposeText struct {
	KernelName string // the kernels' stem: NAME, NAME_skinny
	Storage    string // the C type of an element in memory
}

// skinny is the fewest rows and columns Transpose moves in tiles of
// 32×32; a matrix of fewer rows or columns is NAME_skinny's.
const skinny = 8

// skinnySpan is the elements of the long side a block of NAME_skinny
// takes at a time, of elements of size bytes: 4 a thread, 2 of 8-byte
// elements (the template's P), so that a tile of 7 of them is 28 KiB at
// most.
func skinnySpan(size int) int {
	if size > 4 {
		return 2 * blockSize
	}
	return 4 * blockSize
}

// Transpose sets dst, a row-major matrix of shape.Cols rows of shape.Rows
// elements, to the transpose of src, of shape. dst may not be src, nor
// overlap it.
func Transpose[T cuda.Number](dst, src *cuda.DeviceBuffer[T], shape Shape, s *cuda.Stream) error {
	const op = "Transpose"
	as := [2]arg{bufArg("dst", dst), bufArg("src", src)}
	if err := checkMatrix(op, s, shape, as[:]); err != nil {
		return err
	}
	if shape.Rows*shape.Cols > 0 && dst.Ptr() == src.Ptr() {
		if err := closedArg(op, as[:]); err != nil {
			return err // freed, and its address another's now
		}
		return errorf(op, cuda.ErrInvalidValue, "dst is src: a transpose cannot be made in place")
	}
	if shape.Rows*shape.Cols > 0 && overlap(dst, src) {
		if err := closedArg(op, as[:]); err != nil {
			return err
		}
		return errorf(op, cuda.ErrInvalidValue, "dst overlaps src: a transpose cannot be made in place, nor into part of its source")
	}
	if shape.Rows == 0 || shape.Cols == 0 {
		return nil
	}
	t := dtypePtr[T]()
	name := "transpose_" + t.name
	v := namedVariant(name, func() string { return transposeSource(*t, name) })
	if shape.Rows < skinny || shape.Cols < skinny {
		f, err := kernel(op, s, v, name+"_skinny", as[:])
		if err != nil {
			return err
		}
		k, n, fewRows := shape.Rows, shape.Cols, int32(1)
		if k >= skinny {
			k, n, fewRows = shape.Cols, shape.Rows, 0
		}
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: min(ceilDiv(n, skinnySpan(int(t.goType.Size()))), maxGrid)}, Block: cuda.Dim3{X: blockSize}, Stream: s}
		return launchError(op, f.Launch(cfg, src, dst, boxInt64(int64(n)), int32(k), fewRows), as[:], name)
	}
	f, err := kernel(op, s, v, name, as[:])
	if err != nil {
		return err
	}
	gx, gy := min((shape.Cols+31)/32, 65535), min((shape.Rows+31)/32, 65535)
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: gx, Y: gy}, Block: cuda.Dim3{X: 32, Y: 8}, Stream: s}
	return launchError(op, f.Launch(cfg, src, dst, int64(shape.Rows), int64(shape.Cols)), as[:], name)
}

package compute

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"weak"

	cuda "github.com/gocuda/cuda"
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
// (gocuda_short); rows of a few elements a thread are staged; a few very
// long rows are cut into chunks (NAME_stats, then NAME_apply, which joins
// a row's chunks in order). The passes take 16 bytes of a row at a time
// when its length and both matrices allow. Computed in T's value type
// (float for the halves, double for float64).
func softmaxSource(t dtype, name string, logarithm bool) string {
	out := "exp(x - m) / sum"
	if logarithm {
		out = "x - m - log(sum)"
	}
	return prelude + render("softmax", softmaxText{
		KernelName:         name,
		Value:              t.value,
		Storage:            t.storage,
		Half:               t.half,
		Logarithm:          logarithm,
		Result:             out,
		StoreResult:        t.store(out),
		LoadVectorElement:  t.load("xs.v[k]"),
		LoadElement:        t.load("in[e]"),
		StoreStaged:        t.store("st[e]"),
		StoreVectorElement: t.store("f[k]"),
		Regs:               regsKernels(t),
	})
}

// softmaxText is the fields of templates/rows.cu.tmpl's "softmax". The
// paths over registers keep e^(x - m) for Softmax and take the log of the
// sum once for LogSoftmax (Logarithm): the same values as Result's.
type softmaxText struct {
	KernelName         string // the kernels' stem: NAME, NAME_stats, NAME_apply, NAME_regsE
	Value, Storage     string // the C types of a value and of an element in memory
	Half               string // the prelude's name of a half type ("f16", "bf16"), converted a vector at a time; empty for the others
	Logarithm          bool   // LogSoftmax
	Result             string // an element's result, of x, m (the row's largest) and sum
	StoreResult        string // Result as an element in memory
	LoadVectorElement  string // element k of vector xs, as a Value
	LoadElement        string // element e of in, as a Value
	StoreStaged        string // st[e] as an element in memory
	StoreVectorElement string // f[k] as an element in memory
	Regs               []regsText
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
		k := regsText{Values: e}
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
// and of single elements (Narrow).
type regsText struct {
	Values       int
	Wide, Narrow []regCase
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

// regsNames are the names of the Softmax kernels that hold rows in
// registers, by their variant's name, each by the log2 of the values a
// lane keeps (1 to 64): made once, not at every launch, and looked up by
// the name alone, as namedVariant looks up the variant.
var regsNames sync.Map // string -> *[7]string

func regsName(name string, values int) string {
	names, ok := regsNames.Load(name)
	if !ok {
		var made [7]string
		for k := range made {
			made[k] = fmt.Sprintf("%s_regs%d", name, 1<<k)
		}
		names, _ = regsNames.LoadOrStore(name, &made)
	}
	return names.(*[7]string)[bits.TrailingZeros(uint(values))]
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
		case l.group == 1: // a thread a row: the block's rows staged, in the value type
			cfg.SharedMemBytes, cached = l.threads*shape.Cols*valueSize(size), 1
		}
		return launchError(op, f.Launch(cfg, src, dst, boxInt64(rows), boxInt64(cols), int32(l.group), cached), as[:], name)
	}
	stats, err := kernel(op, s, v, name+"_stats", as[:])
	if err != nil {
		return err
	}
	apply, err := kernel(op, s, v, name+"_apply", as[:])
	if err != nil {
		return err
	}
	return withScratch(op, name, s, as[:], 2*l.chunks*shape.Rows*valueSize(size), func(scratch *cuda.DeviceBuffer[byte]) error {
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.chunks, Y: shape.Rows}, Block: cuda.Dim3{X: l.threads}, Stream: s}
		if err := stats.Launch(cfg, src, scratch, rows, cols, int64(l.chunk)); err != nil {
			return err
		}
		return apply.Launch(cfg, src, dst, scratch, rows, cols, int64(l.chunk), int64(l.chunks))
	})
}

// transposeSource is the kernels of Transpose: tiles of 32×32 elements
// read by rows and written by columns through shared memory, so that both
// the reads and the writes are coalesced; and, for a matrix of fewer than
// skinny rows or columns, whose tiles would be nearly empty, a thread per
// element of dst (NAME_skinny), its reads few runs of src that the cache
// holds.
func transposeSource(t dtype, name string) string {
	return render("transpose", transposeText{KernelName: name, Storage: t.storage})
}

// transposeText is the fields of templates/rows.cu.tmpl's "transpose".
type transposeText struct {
	KernelName string // the kernels' stem: NAME, NAME_skinny
	Storage    string // the C type of an element in memory
}

// skinny is the fewest rows and columns Transpose moves in tiles.
const skinny = 8

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
		cfg := elementwiseConfig(s, shape.Rows*shape.Cols, 1)
		return launchError(op, f.Launch(cfg, src, dst, uint64(shape.Rows), uint64(shape.Cols)), as[:], name)
	}
	f, err := kernel(op, s, v, name, as[:])
	if err != nil {
		return err
	}
	gx, gy := min((shape.Cols+31)/32, 65535), min((shape.Rows+31)/32, 65535)
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: gx, Y: gy}, Block: cuda.Dim3{X: 32, Y: 8}, Stream: s}
	return launchError(op, f.Launch(cfg, src, dst, int64(shape.Rows), int64(shape.Cols)), as[:], name)
}

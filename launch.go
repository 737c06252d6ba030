package cuda

import (
	"fmt"
	"math"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
)

// Function is a kernel of a Module. It is valid until the module is closed.
// The zero Function is not usable: its methods return ErrInvalidValue.
type Function struct {
	mod    *Module
	handle driver.Function
	name   string

	// params is what is known of the kernel's parameters, read at the
	// first launch that succeeds in reading it (a failure is not kept):
	// the count and sizes from the driver (CUDA 12.4 and later) or the
	// PTX text, and the types from the PTX text. paramsRead is set, under
	// paramsMu, once the fields after it are final: a launch that sees it
	// set reads them without the lock, which concurrent launches of one
	// kernel would otherwise all take.
	paramsMu   sync.Mutex
	paramsRead atomic.Bool
	params     []paramInfo
	paramsKnown,
	typesKnown bool
}

// paramInfo is one kernel parameter: its size in bytes, and from PTX its
// type's class ('u', 's', 'b' or 'f') and width (0 where unknown).
type paramInfo struct {
	size  uintptr
	class byte
	width int
}

// FunctionAttribute is a kernel attribute (CUfunction_attribute). The
// constants are in zenums.go, generated from internal/driver/enums.txt.
type FunctionAttribute int

// String returns the attribute's name without its "Func" prefix.
func (a FunctionAttribute) String() string {
	if s, ok := functionAttributeNames[a]; ok {
		return s
	}
	return fmt.Sprintf("FunctionAttribute(%d)", int(a))
}

// Name returns the kernel's name.
func (f *Function) Name() string {
	if f == nil {
		return ""
	}
	return f.name
}

// Attribute returns one of the kernel's attributes.
func (f *Function) Attribute(a FunctionAttribute) (int, error) {
	const op = "Function.Attribute"
	if err := f.valid(op); err != nil {
		return 0, err
	}
	if err := checkFuncAttr(op, a); err != nil {
		return 0, err
	}
	if err := f.mod.enter(op); err != nil {
		return 0, err
	}
	defer f.mod.leave()
	var v int32
	if err := check(op, driver.FuncGetAttribute(f.mod.ctx.handle, &v, driver.FunctionAttribute(a), f.handle)); err != nil {
		err.(*Error).Detail = fmt.Sprintf("kernel %s, attribute %v", f.name, a)
		return 0, err
	}
	return int(v), nil
}

// SetAttribute sets one of the kernel's settable attributes, such as
// FuncMaxDynamicSharedSize to launch with more than 48 KiB of dynamic
// shared memory. Values are from 0, except FuncPreferredSharedCarveout's
// -1: no preference (CU_SHAREDMEM_CARVEOUT_DEFAULT).
func (f *Function) SetAttribute(a FunctionAttribute, value int) error {
	const op = "Function.SetAttribute"
	if err := f.valid(op); err != nil {
		return err
	}
	if err := checkFuncAttr(op, a); err != nil {
		return err
	}
	if (value < 0 && !(a == FuncPreferredSharedCarveout && value == -1)) || value > math.MaxInt32 {
		return errorf(op, ErrInvalidValue, "kernel %s, attribute %v: value %d out of range", f.name, a, value)
	}
	if err := f.mod.enter(op); err != nil {
		return err
	}
	defer f.mod.leave()
	if err := check(op, driver.FuncSetAttribute(f.mod.ctx.handle, f.handle, driver.FunctionAttribute(a), int32(value))); err != nil {
		err.(*Error).Detail = fmt.Sprintf("kernel %s, attribute %v = %d", f.name, a, value)
		return err
	}
	return nil
}

// checkFuncAttr refuses a negative attribute, which the driver does not
// check (cuFuncSetAttribute of -1 crashed the process on an H100, driver
// 580), and one past int32, which the driver's int32 would make another.
func checkFuncAttr(op string, a FunctionAttribute) error {
	if a < 0 || a > math.MaxInt32 {
		return errorf(op, ErrInvalidValue, "attribute %v does not exist", a)
	}
	return nil
}

// valid returns the error for a nil or zero Function.
func (f *Function) valid(op string) error {
	switch {
	case f == nil:
		return errorf(op, ErrInvalidValue, "nil *Function")
	case f.mod == nil:
		return errorf(op, ErrInvalidValue, "a zero Function: get one with Module.Function")
	}
	return nil
}

// Dim3 is a grid or block shape. Y and Z of zero mean 1.
type Dim3 struct{ X, Y, Z int }

// norm returns d with a Y or Z of zero made 1, as documented.
func (d Dim3) norm() Dim3 {
	if d.Y == 0 {
		d.Y = 1
	}
	if d.Z == 0 {
		d.Z = 1
	}
	return d
}

// LinearBlock is the block size LaunchConfigFor uses.
const LinearBlock = 256

// LaunchConfigFor returns the configuration of a one-dimensional launch
// over n elements on s: blocks of LinearBlock threads, and enough of them
// to cover all n, the last block partly (so the kernel checks its index
// against n). A plain Grid of n/LinearBlock would drop the tail. For n of
// zero the grid has no blocks, and Launch queues nothing.
func LaunchConfigFor(n int, s *Stream) LaunchConfig {
	blocks := 0
	if n > 0 {
		blocks = (n-1)/LinearBlock + 1 // n+LinearBlock-1 would wrap past math.MaxInt-255
	}
	return LaunchConfig{Grid: Dim3{X: blocks}, Block: Dim3{X: LinearBlock}, Stream: s}
}

// LaunchConfig says how to launch a kernel. The fields after Stream ask
// for a launch with attributes (cuLaunchKernelEx, CUDA 12.0 and later);
// their zero values ask for none, and such a launch is a plain
// cuLaunchKernel.
type LaunchConfig struct {
	Grid, Block    Dim3
	SharedMemBytes int     // dynamic shared memory per block
	Stream         *Stream // required: the launch is queued on it

	// Cooperative launches the grid with every block resident at once, as
	// a kernel that waits for the whole grid (a grid-wide barrier) needs.
	// Launch refuses a grid larger than the device holds at once, with
	// both numbers (see Function.MaxCooperativeBlocks), and a device
	// without cooperative launches (AttrCooperativeLaunch).
	Cooperative bool

	// Cluster groups the grid's blocks into thread block clusters of this
	// shape (compute capability 9.0 and later), whose blocks run together
	// and read and write each other's shared memory. Each dimension of
	// Grid must be a multiple of Cluster's. The zero Dim3 asks for no
	// clusters; Y or Z of zero mean 1 when X is set. A cluster of more
	// than 8 blocks needs the kernel's FuncNonPortableClusterSizeAllowed
	// set, and a device with room for it (Function.MaxActiveClusters).
	Cluster Dim3
	// ClusterPolicy is how the clusters are spread over the device; the
	// zero value leaves it to the driver. Only with Cluster.
	ClusterPolicy ClusterPolicy

	// Priority is the launch's priority, within Context.StreamPriorityRange
	// (lower numbers run first), in place of the stream's; 0 keeps the
	// stream's.
	Priority int

	// ProgrammaticDependent lets the kernel start before the kernel queued
	// before it on the stream has finished (programmatic dependent launch,
	// compute capability 9.0 and later): from when every block of that
	// kernel has executed griddepcontrol.launch_dependents
	// (cudaTriggerProgrammaticLaunchCompletion in CUDA C), or ended. The
	// kernel must execute griddepcontrol.wait (cudaGridDependencySynchronize)
	// before it reads anything the previous kernel writes: the wait returns
	// once that kernel has finished and its memory is visible. What it
	// saves is the gap between two short kernels, a few microseconds each;
	// a kernel that never waits races with the one before it. Captured
	// into a graph, the dependency becomes a programmatic edge.
	ProgrammaticDependent bool
}

// dims checks cfg's grid, block and dynamic shared memory and returns
// the grid's and the block's sizes as the driver takes them, a zero Y or Z
// made 1.
func (cfg *LaunchConfig) dims(op string) (dims [6]uint32, err error) {
	grid, block := cfg.Grid.norm(), cfg.Block.norm()
	all := [6]int{grid.X, grid.Y, grid.Z, block.X, block.Y, block.Z}
	for i, d := range all {
		if d < 0 || d > math.MaxUint32 || d == 0 && i != 0 {
			return dims, errorf(op, ErrInvalidValue, "grid %v, block %v: every dimension must be from 1 to %d (a grid's X may be 0: no launch)", grid, block, uint32(math.MaxUint32))
		}
		dims[i] = uint32(d)
	}
	if cfg.SharedMemBytes < 0 || cfg.SharedMemBytes > math.MaxUint32 {
		return dims, errorf(op, ErrInvalidValue, "dynamic shared memory %d bytes out of range", cfg.SharedMemBytes)
	}
	return dims, nil
}

// maxParamBytes is the kernel parameter space the driver guarantees on
// every device.
const maxParamBytes = 4096

// paramBlock holds one launch's arguments: their bytes, and the array of
// their addresses the driver takes. It is heap memory, reused: the driver
// copies the arguments during the launch call, and the address array holds
// numbers, not Go pointers, so no C code keeps a Go pointer.
type paramBlock struct {
	ptrs [maxParamBytes / 4]uintptr
	data [maxParamBytes]byte
	// ex and attrs are a launch with attributes' configuration; ex
	// holds attrs' address as a number (see driver.LaunchConfig).
	ex    driver.LaunchConfig
	attrs [maxLaunchAttributes]driver.LaunchAttribute
}

var paramBlocks = sync.Pool{New: func() any { return new(paramBlock) }}

// Launch queues the kernel on cfg.Stream with the given arguments, in the
// order of the kernel's parameters:
//
//   - a *DeviceBuffer[T] passes its device address (a T* parameter);
//   - DevicePtr passes itself;
//   - int8 to int64, uint8 to uint64, float32 and float64, and types
//     defined from them, pass their value;
//   - arrays and structs of numbers pass by value, laid out as Go lays them
//     out, which matches C for the same fields in the same order.
//
// Go's int, uint and uintptr have no fixed C counterpart and are refused,
// in arrays and structs too: use int32 or int64.
//
// What is checked before anything is launched (ErrInvalidValue otherwise):
// the count of arguments and each one's size, where the driver describes
// the kernel's parameters (CUDA 12.4 and later) or the module was loaded
// from PTX; and, for a module loaded from PTX, each one's kind, from the
// type on the kernel's .entry line: a float32 or float64 only for a .f32
// or .f64 parameter, an integer, DevicePtr or buffer only for an integer
// (.u, .s or .b) one. Each buffer must belong to the kernel's context. A
// cubin or fatbin on a driver older than 12.4 cannot be described: there
// the count is the caller's duty, and a launch with too few arguments
// reads zeros, never memory beyond the arguments.
//
// Launch returns the driver's launch error; errors in the kernel itself
// surface at the next synchronize, as cuda.Error with the code's name.
func (f *Function) Launch(cfg LaunchConfig, args ...any) error {
	const op = "Function.Launch"
	var l launchShape
	if err := f.checkLaunch(op, &cfg, &l); err != nil {
		return err
	}
	// Launch, launchHeld and launchBound are split so that each has
	// few returns beside its defer: the compiler then inlines the
	// deferred calls, where a function with many returns pays for a
	// deferred record at each call (a capture's launches run back to
	// back).
	pb := paramBlocks.Get().(*paramBlock)
	defer paramBlocks.Put(pb)
	// Hold the module, the stream and every buffer passed, so that none
	// is closed or freed under the launch. A small array keeps the common
	// launch free of allocations.
	var heldArray [8]heldLife
	held := append(heldArray[:0], heldLife{&f.mod.life, "the kernel's module"}, heldLife{&cfg.Stream.life, "the stream"})
	// The buffers among the arguments, found once by marshalArgs: a
	// second pass over args would assert each to Memory again.
	var memArray [6]*allocation
	held, mems, err := f.marshalArgs(op, pb, args, held, memArray[:0])
	if err != nil {
		return err
	}
	if held, err = holdAll(op, held); err != nil {
		return err
	}
	defer releaseAll(held)
	return f.launchHeld(op, &cfg, &l, pb, args, mems)
}

// launchShape is a launch's checked shape: the grid and block as the six
// numbers the driver takes, and the cluster (zero for none).
type launchShape struct {
	dims    [6]uint32
	cluster Dim3
	ex      bool // the launch has attributes: cuLaunchKernelEx
}

func (l *launchShape) grid() Dim3 {
	return Dim3{int(l.dims[0]), int(l.dims[1]), int(l.dims[2])}
}

func (l *launchShape) block() Dim3 {
	return Dim3{int(l.dims[3]), int(l.dims[4]), int(l.dims[5])}
}

// checkLaunch checks what Launch can without holding anything, into l.
func (f *Function) checkLaunch(op string, cfg *LaunchConfig, l *launchShape) error {
	if err := f.valid(op); err != nil {
		return err
	}
	s := cfg.Stream
	if s == nil {
		return errorf(op, ErrInvalidValue, "no stream in the launch configuration")
	}
	if err := s.valid(op); err != nil {
		return err
	}
	if s.ctx != f.mod.ctx {
		return errorf(op, ErrInvalidValue, "the stream belongs to another context than the kernel's module")
	}
	var err error
	if l.dims, err = cfg.dims(op); err != nil {
		return err
	}
	if l.ex = cfg.hasAttributes(); l.ex {
		if l.cluster, err = cfg.checkShape(op, l.grid()); err != nil {
			return err
		}
	}
	return nil
}

// launchHeld is Launch with the module, the stream and the buffers held:
// mems are the buffers among args, in order.
func (f *Function) launchHeld(op string, cfg *LaunchConfig, l *launchShape, pb *paramBlock, args []any, mems []*allocation) error {
	s := cfg.Stream
	if cs := s.captureOf(); cs != nil {
		cs.capturedModule(f.mod)
	}
	for _, m := range mems {
		if m.graphOnly {
			return errorf(op, ErrInvalidValue, "argument %d is a graph's memory (Graph.AddAlloc), which exists only while the graph runs: pass it to the graph's nodes", argIndex(args, m))
		}
	}
	if len(mems) > 0 {
		if err := s.use(op, mems...); err != nil {
			return err
		}
	}
	if l.dims[0] == 0 && !l.ex {
		// No blocks: nothing to run, as for an empty buffer. The holds
		// taken do not see a closed context, and the parameters may be
		// known already, so that nothing else here asked it: after
		// Context.Close every method returns ErrClosed.
		return f.mod.ctx.open(op)
	}
	if err := f.mod.ctx.bind(op); err != nil {
		return err
	}
	defer f.mod.ctx.unbind()
	if l.dims[0] == 0 {
		// A bad configuration is an error whatever the grid, so that it
		// shows before the data grows.
		return f.checkAttributes(op, cfg, l.grid(), l.block())
	}
	return f.launchBound(op, cfg, l, pb, len(args) > 0)
}

// argIndex returns the index of the first buffer among args over m's
// memory, for an error.
func argIndex(args []any, m *allocation) int {
	for i, a := range args {
		if v, ok := a.(Memory); ok {
			if _, am := v.deviceMemory(); am == m {
				return i
			}
		}
	}
	return -1
}

// launchBound makes the driver's call, with the context bound.
func (f *Function) launchBound(op string, cfg *LaunchConfig, l *launchShape, pb *paramBlock, hasArgs bool) error {
	s := cfg.Stream
	if err := s.willQueue(op); err != nil {
		return err
	}
	// A kernel known to take no parameters gets no parameter array, as C
	// passes it: the driver then has nothing to read.
	var params unsafe.Pointer
	if hasArgs || !f.paramsKnown {
		params = unsafe.Pointer(&pb.ptrs[0])
	}
	var r driver.Status
	if l.ex {
		if err := f.checkAttributes(op, cfg, l.grid(), l.block()); err != nil {
			return err
		}
		r = driver.LaunchKernelEx(f.mod.ctx.handle, pb.launchConfig(cfg, l.dims, l.cluster), f.handle, params, nil)
	} else {
		d := &l.dims
		r = driver.LaunchKernel(f.mod.ctx.handle, f.handle, d[0], d[1], d[2], d[3], d[4], d[5],
			uint32(cfg.SharedMemBytes), s.handle, params, nil)
	}
	if err := check(op, r); err != nil {
		err.(*Error).Detail = fmt.Sprintf("kernel %s, grid %v, block %v, %d bytes of dynamic shared memory%s", f.name, cfg.Grid, cfg.Block, cfg.SharedMemBytes, cfg.attributeText())
		return err
	}
	return nil
}

// marshal lays out args in pb and appends the allocations of the buffers
// among them to held.
func (f *Function) marshal(op string, pb *paramBlock, args []any, held []heldLife) ([]heldLife, error) {
	held, _, err := f.marshalArgs(op, pb, args, held, nil)
	return held, err
}

// marshalArgs is marshal that also appends the buffers' allocations to
// mems, in order, unless mems is nil (marshal's callers need none).
func (f *Function) marshalArgs(op string, pb *paramBlock, args []any, held []heldLife, mems []*allocation) ([]heldLife, []*allocation, error) {
	if err := f.readParams(op); err != nil {
		return nil, nil, err
	}
	if f.paramsKnown && len(args) != len(f.params) {
		return nil, nil, errorf(op, ErrInvalidValue, "kernel %s takes %d arguments, %d given", f.name, len(f.params), len(args))
	}
	if len(args) > len(pb.ptrs) {
		return nil, nil, errorf(op, ErrInvalidValue, "%d arguments; at most %d", len(args), len(pb.ptrs))
	}
	if !f.paramsKnown {
		// The count is unknown: whatever the kernel reads past the
		// arguments given is zeros, not whatever lies beyond them.
		for i := len(args); i < len(pb.ptrs); i++ {
			pb.ptrs[i] = uintptr(unsafe.Pointer(&zeroParams[0]))
		}
	}
	off := uintptr(0)
	for i, a := range args {
		var err error
		switch v := a.(type) {
		case Memory:
			ptr, mem := v.deviceMemory()
			if mem == nil {
				return nil, nil, errorf(op, ErrInvalidValue, "argument %d is a nil *DeviceBuffer, or a zero DeviceBuffer", i)
			}
			if mem.ctx != f.mod.ctx {
				return nil, nil, errorf(op, ErrInvalidValue, "argument %d is a device buffer of another context than the kernel's module (%v, the kernel's %v)", i, mem.ctx.Device(), f.mod.ctx.Device())
			}
			held = append(held, heldLife{&mem.life, "a device buffer passed to the kernel"})
			if mems != nil {
				mems = append(mems, mem)
			}
			err = put(f, pb, &off, i, ptr)
		case DevicePtr:
			err = put(f, pb, &off, i, v)
		case int8:
			err = put(f, pb, &off, i, v)
		case int16:
			err = put(f, pb, &off, i, v)
		case int32:
			err = put(f, pb, &off, i, v)
		case int64:
			err = put(f, pb, &off, i, v)
		case uint8:
			err = put(f, pb, &off, i, v)
		case uint16:
			err = put(f, pb, &off, i, v)
		case uint32:
			err = put(f, pb, &off, i, v)
		case uint64:
			err = put(f, pb, &off, i, v)
		case float32:
			err = put(f, pb, &off, i, v)
		case float64:
			err = put(f, pb, &off, i, v)
		case int, uint, uintptr:
			return nil, nil, errorf(op, ErrInvalidValue, "argument %d is a Go %T, which has no fixed C counterpart: pass an int32 or int64", i, a)
		case nil:
			return nil, nil, errorf(op, ErrInvalidValue, "argument %d is nil", i)
		default:
			b, align, perr := plainBytes(a)
			if perr != nil {
				return nil, nil, errorf(op, ErrInvalidValue, "argument %d: %v", i, perr)
			}
			if err = putBytes(f, pb, &off, i, b, align); err == nil {
				err = f.checkNamedKind(i, a) // a number of a named type
			}
		}
		if err != nil {
			return nil, nil, errorf(op, ErrInvalidValue, "argument %d (%T): %v", i, a, err)
		}
	}
	return held, mems, nil
}

// zeroParams is what a kernel of unknown parameter count reads past the
// arguments it was given.
var zeroParams [maxParamBytes]byte

// put writes argument i, v, at the next offset aligned for it.
func put[T any](f *Function, pb *paramBlock, off *uintptr, i int, v T) error {
	size, align := unsafe.Sizeof(v), unsafe.Alignof(v)
	at := (*off + align - 1) &^ (align - 1)
	if err := f.checkParam(i, size, at); err != nil {
		return err
	}
	if err := f.checkKind(i, isFloat(v)); err != nil {
		return err
	}
	*(*T)(unsafe.Pointer(&pb.data[at])) = v
	pb.ptrs[i] = uintptr(unsafe.Pointer(&pb.data[at]))
	*off = at + size
	return nil
}

// putBytes is put for a value given as its bytes.
func putBytes(f *Function, pb *paramBlock, off *uintptr, i int, b []byte, align uintptr) error {
	at := (*off + align - 1) &^ (align - 1)
	if err := f.checkParam(i, uintptr(len(b)), at); err != nil {
		return err
	}
	copy(pb.data[at:], b)
	pb.ptrs[i] = uintptr(unsafe.Pointer(&pb.data[at]))
	*off = at + uintptr(len(b))
	return nil
}

// checkParam checks argument i, of size bytes at offset at, against what
// is known of the kernel, and against the parameter space.
func (f *Function) checkParam(i int, size, at uintptr) error {
	if f.paramsKnown && f.params[i].size != size {
		return fmt.Errorf("%d bytes, where kernel %s takes %d", size, f.name, f.params[i].size)
	}
	if at+size > maxParamBytes {
		return fmt.Errorf("the arguments exceed %d bytes", maxParamBytes)
	}
	return nil
}

// checkKind checks that a number argument i, a float or not, matches the
// type PTX gave parameter i.
func (f *Function) checkKind(i int, float bool) error {
	if !f.typesKnown {
		return nil
	}
	p := f.params[i]
	switch {
	case float && p.class != 'f' && p.class != 'b':
		return fmt.Errorf("a floating-point value, where kernel %s takes .%c%d (an integer or pointer)", f.name, p.class, p.width)
	case !float && p.class == 'f':
		return fmt.Errorf("an integer or pointer, where kernel %s takes .f%d (floating point)", f.name, p.width)
	}
	return nil
}

// checkNamedKind is checkKind for an argument of a named number type,
// such as a type T float32; a struct or array is not checked, nor a
// Float16 or BFloat16 (a float's bits in a uint16, which PTX may declare
// .f16, .b16 or .u16).
func (f *Function) checkNamedKind(i int, a any) error {
	switch a.(type) {
	case Float16, BFloat16:
		return nil
	}
	switch reflect.TypeOf(a).Kind() {
	case reflect.Float32, reflect.Float64:
		return f.checkKind(i, true)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return f.checkKind(i, false)
	}
	return nil
}

func isFloat(v any) bool {
	switch v.(type) {
	case float32, float64:
		return true
	}
	return false
}

// readParams learns the kernel's parameters, once it succeeds: their
// count and sizes from the driver (cuFuncGetParamCount and
// cuFuncGetParamInfo), or, from a driver too old to say, from the PTX the
// module was loaded from; their types from that PTX. A failure is returned
// and not kept: the next launch asks again.
func (f *Function) readParams(op string) error {
	if f.paramsRead.Load() {
		return nil
	}
	f.paramsMu.Lock()
	defer f.paramsMu.Unlock()
	if f.paramsRead.Load() {
		return nil
	}
	if err := f.mod.enter(op); err != nil {
		return err
	}
	defer f.mod.leave()
	ptx, fromPTX := f.mod.params[f.name]
	params, known, err := f.driverParams(op)
	if err != nil {
		return err
	}
	switch {
	case known && fromPTX && len(ptx) == len(params):
		for i := range params {
			params[i].class, params[i].width = ptx[i].class, ptx[i].width
		}
		f.typesKnown = true
	case !known && fromPTX:
		params, known = make([]paramInfo, len(ptx)), true
		for i, p := range ptx {
			params[i] = paramInfo{size: p.size, class: p.class, width: p.width}
		}
		f.typesKnown = true
	}
	f.params, f.paramsKnown = params, known
	f.paramsRead.Store(true)
	return nil
}

// driverParams asks the driver for the kernel's parameters; known is false
// where the driver cannot say (older than CUDA 12.4).
func (f *Function) driverParams(op string) (params []paramInfo, known bool, err error) {
	ctx := f.mod.ctx.handle
	var n uintptr
	r := driver.FuncGetParamCount(ctx, f.handle, &n)
	switch {
	case r.Code == driver.ResultMissingSymbol || r.Code == driver.ErrorNotSupported:
		// A driver without cuFuncGetParamCount (the H200 machine's 580
		// has none): where PTX gives the count, ask for just those
		// parameters, every failure a failure. Otherwise the list ends
		// where cuFuncGetParamInfo says CUDA_ERROR_INVALID_VALUE, which
		// cannot be told from a failure (and which compute-sanitizer
		// reports as an API error).
		if ptx, ok := f.mod.params[f.name]; ok {
			params = make([]paramInfo, len(ptx))
			for i := range params {
				var off uintptr
				switch r := driver.FuncGetParamInfo(ctx, f.handle, uintptr(i), &off, &params[i].size); r.Code {
				case driver.Success:
				case driver.ResultMissingSymbol, driver.ErrorNotSupported:
					return nil, false, nil
				default:
					return nil, false, paramErr(op, r, f.name)
				}
			}
			return params, true, nil
		}
		for i := uintptr(0); ; i++ {
			var off, size uintptr
			switch r := driver.FuncGetParamInfo(ctx, f.handle, i, &off, &size); r.Code {
			case driver.Success:
				params = append(params, paramInfo{size: size})
			case driver.ErrorInvalidValue:
				return params, true, nil
			case driver.ResultMissingSymbol, driver.ErrorNotSupported:
				return nil, false, nil
			default:
				return nil, false, paramErr(op, r, f.name)
			}
		}
	case !r.OK():
		return nil, false, paramErr(op, r, f.name)
	}
	if n > maxParamBytes {
		return nil, false, errorf(op, ErrInvalidValue, "kernel %s: the driver says it takes %d parameters", f.name, n)
	}
	params = make([]paramInfo, n)
	for i := range params {
		var off uintptr
		if r := driver.FuncGetParamInfo(ctx, f.handle, uintptr(i), &off, &params[i].size); !r.OK() {
			return nil, false, paramErr(op, r, f.name)
		}
	}
	return params, true, nil
}

func paramErr(op string, r driver.Status, kernel string) error {
	err := check(op, r).(*Error)
	err.Detail = "reading the parameters of kernel " + kernel + " (nothing was launched)"
	return err
}

// unsized says where an array or struct holds a Go int, uint or uintptr,
// refused as an argument is ("" where none).
func unsized(t reflect.Type, path string) string {
	switch t.Kind() {
	case reflect.Int, reflect.Uint, reflect.Uintptr:
		return fmt.Sprintf("%s is a Go %s, which has no fixed C counterpart: use a sized integer", path, t.Kind())
	case reflect.Array:
		return unsized(t.Elem(), path+"[0]")
	case reflect.Struct:
		for i := range t.NumField() {
			if why := unsized(t.Field(i).Type, path+"."+t.Field(i).Name); why != "" {
				return why
			}
		}
	}
	return ""
}

// plainBytes returns the bytes and alignment of a number, or of an array or
// struct of numbers, passed by value.
func plainBytes(a any) ([]byte, uintptr, error) {
	v := reflect.ValueOf(a)
	t := v.Type()
	switch t.Kind() {
	case reflect.Int, reflect.Uint, reflect.Uintptr:
		return nil, 0, fmt.Errorf("%s has no fixed C counterpart: use a sized integer", t)
	case reflect.Bool:
		return nil, 0, fmt.Errorf("bool: pass a uint8 or int32, as the kernel declares it")
	}
	if why := whyNotPlain(t, t.String(), false); why != "" {
		return nil, 0, fmt.Errorf("%s", why)
	}
	if why := unsized(t, t.String()); why != "" {
		return nil, 0, fmt.Errorf("%s", why)
	}
	if t.Size() == 0 {
		return nil, 0, fmt.Errorf("%s has size zero", t)
	}
	p := reflect.New(t)
	p.Elem().Set(v)
	return unsafe.Slice((*byte)(p.UnsafePointer()), t.Size()), uintptr(t.Align()), nil
}

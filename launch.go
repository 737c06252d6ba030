package cuda

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
)

// Function is a kernel of a Module. It is valid until the module is closed.
type Function struct {
	mod    *Module
	handle driver.Function
	name   string

	// params is what the driver says of the kernel's parameters (CUDA
	// 12.4 and later), read at the first launch; paramsKnown is false
	// where the driver cannot say.
	paramsOnce  sync.Once
	params      []paramInfo
	paramsKnown bool
}

type paramInfo struct{ offset, size uintptr }

// FunctionAttribute is a kernel attribute (CUfunction_attribute).
type FunctionAttribute int

// Kernel attributes.
const (
	FuncMaxThreadsPerBlock      FunctionAttribute = 0 // the most threads a block of this kernel may have
	FuncSharedSizeBytes         FunctionAttribute = 1 // static shared memory per block
	FuncConstSizeBytes          FunctionAttribute = 2
	FuncLocalSizeBytes          FunctionAttribute = 3 // local memory per thread
	FuncNumRegs                 FunctionAttribute = 4 // registers per thread
	FuncPTXVersion              FunctionAttribute = 5
	FuncBinaryVersion           FunctionAttribute = 6
	FuncMaxDynamicSharedSize    FunctionAttribute = 8 // settable: the most dynamic shared memory a launch may ask for
	FuncPreferredSharedCarveout FunctionAttribute = 9 // settable: percent of L1 to give shared memory
)

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
	if f == nil {
		return 0, errorf(op, ErrInvalidValue, "nil *Function")
	}
	if err := f.mod.enter(op); err != nil {
		return 0, err
	}
	defer f.mod.leave()
	var v int32
	if err := check(op, "cuFuncGetAttribute", driver.FuncGetAttribute(f.mod.ctx.handle, &v, driver.FunctionAttribute(a), f.handle)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// SetAttribute sets one of the kernel's settable attributes, such as
// FuncMaxDynamicSharedSize to launch with more than 48 KiB of dynamic
// shared memory.
func (f *Function) SetAttribute(a FunctionAttribute, value int) error {
	const op = "Function.SetAttribute"
	if f == nil {
		return errorf(op, ErrInvalidValue, "nil *Function")
	}
	if value < 0 || value > math.MaxInt32 {
		return errorf(op, ErrInvalidValue, "value %d out of range", value)
	}
	if err := f.mod.enter(op); err != nil {
		return err
	}
	defer f.mod.leave()
	return check(op, "cuFuncSetAttribute", driver.FuncSetAttribute(f.mod.ctx.handle, f.handle, driver.FunctionAttribute(a), int32(value)))
}

// Dim3 is a grid or block shape. Y and Z of zero mean 1.
type Dim3 struct{ X, Y, Z int }

// LaunchConfig says how to launch a kernel.
type LaunchConfig struct {
	Grid, Block    Dim3
	SharedMemBytes int     // dynamic shared memory per block
	Stream         *Stream // required: the launch is queued on it
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
}

var paramBlocks = sync.Pool{New: func() any { return new(paramBlock) }}

// Launch queues the kernel on cfg.Stream with the given arguments, in the
// order of the kernel's parameters:
//
//   - a *DeviceBuffer[T] passes its device address (a T* parameter);
//   - DevicePtr passes itself;
//   - int8 to int64, uint8 to uint64, float32 and float64 pass their value;
//   - arrays and structs of numbers pass by value, laid out as Go lays them
//     out, which matches C for the same fields in the same order.
//
// Go's int, uint and uintptr have no fixed C counterpart and are refused:
// use int32 or int64. Where the driver can describe the kernel's parameters
// (CUDA 12.4 and later), a wrong count or size is ErrInvalidValue before
// anything is launched; with older drivers that is the caller's duty.
//
// Launch returns the driver's launch error; errors in the kernel itself
// surface at the next synchronize, as cuda.Error with the code's name.
func (f *Function) Launch(cfg LaunchConfig, args ...any) error {
	const op = "Function.Launch"
	if f == nil {
		return errorf(op, ErrInvalidValue, "nil *Function")
	}
	s := cfg.Stream
	if s == nil {
		return errorf(op, ErrInvalidValue, "no stream in the launch configuration")
	}
	if s.ctx != f.mod.ctx {
		return errorf(op, ErrInvalidValue, "the stream belongs to another context than the kernel's module")
	}
	var dims [6]uint32
	for i, d := range []int{cfg.Grid.X, cfg.Grid.Y, cfg.Grid.Z, cfg.Block.X, cfg.Block.Y, cfg.Block.Z} {
		if i%3 != 0 && d == 0 {
			d = 1
		}
		if d < 1 || d > math.MaxUint32 {
			return errorf(op, ErrInvalidValue, "grid %v, block %v: every dimension must be from 1 to %d", cfg.Grid, cfg.Block, uint32(math.MaxUint32))
		}
		dims[i] = uint32(d)
	}
	if cfg.SharedMemBytes < 0 || cfg.SharedMemBytes > math.MaxUint32 {
		return errorf(op, ErrInvalidValue, "dynamic shared memory %d bytes out of range", cfg.SharedMemBytes)
	}

	pb := paramBlocks.Get().(*paramBlock)
	defer paramBlocks.Put(pb)
	// Hold the module, the stream and every buffer passed, in creation
	// order, so that none is closed or freed under the launch. A small
	// array keeps the common launch free of allocations.
	var heldArray [8]heldLife
	held := append(heldArray[:0], heldLife{&f.mod.life, "the kernel's module"}, heldLife{&s.life, "the stream"})
	held, err := f.marshal(op, pb, args, held)
	if err != nil {
		return err
	}
	if held, err = holdAll(op, held); err != nil {
		return err
	}
	defer releaseAll(held)
	if err := f.mod.ctx.bind(op); err != nil {
		return err
	}
	defer f.mod.ctx.unbind()
	if err := s.willQueue(op); err != nil {
		return err
	}
	// A kernel without parameters gets no parameter array, as C passes it:
	// the driver then has nothing to read.
	var params unsafe.Pointer
	if len(args) > 0 {
		params = unsafe.Pointer(&pb.ptrs[0])
	}
	r := driver.LaunchKernel(f.mod.ctx.handle, f.handle, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
		uint32(cfg.SharedMemBytes), s.handle, params, nil)
	if err := check(op, "cuLaunchKernel", r); err != nil {
		err.(*Error).Detail = fmt.Sprintf("kernel %s, grid %v, block %v, %d bytes of dynamic shared memory", f.name, cfg.Grid, cfg.Block, cfg.SharedMemBytes)
		return err
	}
	return nil
}

// marshal lays out args in pb and appends the allocations of the buffers
// among them to held.
func (f *Function) marshal(op string, pb *paramBlock, args []any, held []heldLife) ([]heldLife, error) {
	f.paramsOnce.Do(f.readParams)
	if f.paramsKnown && len(args) != len(f.params) {
		return nil, errorf(op, ErrInvalidValue, "kernel %s takes %d arguments, %d given", f.name, len(f.params), len(args))
	}
	if len(args) > len(pb.ptrs) {
		return nil, errorf(op, ErrInvalidValue, "%d arguments; at most %d", len(args), len(pb.ptrs))
	}
	off := uintptr(0)
	for i, a := range args {
		var err error
		switch v := a.(type) {
		case Memory:
			ptr, mem := v.deviceMemory()
			if mem == nil {
				return nil, errorf(op, ErrInvalidValue, "argument %d is a nil *DeviceBuffer", i)
			}
			held = append(held, heldLife{&mem.life, "a device buffer passed to the kernel"})
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
			return nil, errorf(op, ErrInvalidValue, "argument %d is a Go %T, which has no fixed C counterpart: pass an int32 or int64", i, a)
		case nil:
			return nil, errorf(op, ErrInvalidValue, "argument %d is nil", i)
		default:
			b, align, perr := plainBytes(a)
			if perr != nil {
				return nil, errorf(op, ErrInvalidValue, "argument %d: %v", i, perr)
			}
			err = putBytes(f, pb, &off, i, b, align)
		}
		if err != nil {
			return nil, errorf(op, ErrInvalidValue, "argument %d (%T): %v", i, a, err)
		}
	}
	return held, nil
}

// put writes argument i, v, at the next offset aligned for it.
func put[T any](f *Function, pb *paramBlock, off *uintptr, i int, v T) error {
	size, align := unsafe.Sizeof(v), unsafe.Alignof(v)
	at := (*off + align - 1) &^ (align - 1)
	if err := f.checkParam(i, size, at); err != nil {
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
// the driver says of the kernel, and against the parameter space.
func (f *Function) checkParam(i int, size, at uintptr) error {
	if f.paramsKnown && f.params[i].size != size {
		return fmt.Errorf("%d bytes, where kernel %s takes %d", size, f.name, f.params[i].size)
	}
	if at+size > maxParamBytes {
		return fmt.Errorf("the arguments exceed %d bytes", maxParamBytes)
	}
	return nil
}

// readParams asks the driver for the kernel's parameters, where it can say
// (cuFuncGetParamInfo, CUDA 12.4 and later).
func (f *Function) readParams() {
	if f.mod.enter("Function.Launch") != nil {
		return
	}
	defer f.mod.leave()
	for i := uintptr(0); ; i++ {
		var p paramInfo
		switch r := driver.FuncGetParamInfo(f.mod.ctx.handle, f.handle, i, &p.offset, &p.size); r {
		case driver.Success:
			f.params = append(f.params, p)
		case driver.ErrorInvalidValue: // past the last parameter
			f.paramsKnown = true
			return
		default: // an older driver: the caller's duty
			f.params = nil
			return
		}
	}
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
	if t.Size() == 0 {
		return nil, 0, fmt.Errorf("%s has size zero", t)
	}
	p := reflect.New(t)
	p.Elem().Set(v)
	return unsafe.Slice((*byte)(p.UnsafePointer()), t.Size()), uintptr(t.Align()), nil
}

type heldLife struct {
	l    *life
	what string
}

// holdAll holds each life, in creation order, once, and returns the lives
// held, for releaseAll.
func holdAll(op string, lives []heldLife) ([]heldLife, error) {
	slices.SortFunc(lives, func(a, b heldLife) int { return cmp.Compare(a.l.id, b.l.id) })
	lives = slices.CompactFunc(lives, func(a, b heldLife) bool { return a.l == b.l })
	for i, h := range lives {
		if err := h.l.hold(op, h.what); err != nil {
			releaseAll(lives[:i])
			return nil, err
		}
	}
	return lives, nil
}

func releaseAll(lives []heldLife) {
	for _, h := range lives {
		h.l.release()
	}
}

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
	if err := check(op, "cuFuncGetAttribute", driver.FuncGetAttribute(&v, driver.FunctionAttribute(a), f.handle)); err != nil {
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
	return check(op, "cuFuncSetAttribute", driver.FuncSetAttribute(f.handle, driver.FunctionAttribute(a), int32(value)))
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

// kernelArg is what a *DeviceBuffer passes to a kernel: its address.
type kernelArg interface {
	kernelArg() (driver.DevicePtr, *allocation)
}

func (b *DeviceBuffer[T]) kernelArg() (driver.DevicePtr, *allocation) {
	if b == nil {
		return 0, nil
	}
	return b.ptr, b.mem
}

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
	mems, err := f.marshal(op, pb, args)
	if err != nil {
		return err
	}
	// Hold the module, the stream and every buffer passed, in creation
	// order, so that none is closed or freed under the launch.
	held := []heldLife{{&f.mod.life, "the kernel's module"}, {&s.life, "the stream"}}
	for _, m := range mems {
		held = append(held, heldLife{&m.life, "a device buffer passed to the kernel"})
	}
	release, err := holdAll(op, held)
	if err != nil {
		return err
	}
	defer release()
	if err := f.mod.ctx.bind(op); err != nil {
		return err
	}
	defer f.mod.ctx.unbind()
	if err := s.willQueue(op); err != nil {
		return err
	}
	r := driver.LaunchKernel(f.handle, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
		uint32(cfg.SharedMemBytes), s.handle, unsafe.Pointer(&pb.ptrs[0]), nil)
	if err := check(op, "cuLaunchKernel", r); err != nil {
		err.(*Error).Detail = fmt.Sprintf("kernel %s, grid %v, block %v, %d bytes of dynamic shared memory", f.name, cfg.Grid, cfg.Block, cfg.SharedMemBytes)
		return err
	}
	return nil
}

// marshal lays out args in pb and returns the allocations of the buffers
// among them.
func (f *Function) marshal(op string, pb *paramBlock, args []any) ([]*allocation, error) {
	f.paramsOnce.Do(f.readParams)
	if f.paramsKnown && len(args) != len(f.params) {
		return nil, errorf(op, ErrInvalidValue, "kernel %s takes %d arguments, %d given", f.name, len(f.params), len(args))
	}
	if len(args) > len(pb.ptrs) {
		return nil, errorf(op, ErrInvalidValue, "%d arguments; at most %d", len(args), len(pb.ptrs))
	}
	var mems []*allocation
	off := uintptr(0)
	for i, a := range args {
		var b []byte
		var align uintptr
		switch v := a.(type) {
		case kernelArg:
			ptr, mem := v.kernelArg()
			if mem == nil {
				return nil, errorf(op, ErrInvalidValue, "argument %d is a nil *DeviceBuffer", i)
			}
			if !slices.Contains(mems, mem) {
				mems = append(mems, mem)
			}
			b, align = valueBytes(&ptr), 8
		case DevicePtr:
			b, align = valueBytes(&v), 8
		case int, uint, uintptr:
			return nil, errorf(op, ErrInvalidValue, "argument %d is a Go %T, which has no fixed C counterpart: pass an int32 or int64", i, a)
		case nil:
			return nil, errorf(op, ErrInvalidValue, "argument %d is nil", i)
		default:
			var err error
			if b, align, err = plainBytes(a); err != nil {
				return nil, errorf(op, ErrInvalidValue, "argument %d: %v", i, err)
			}
		}
		off = (off + align - 1) &^ (align - 1)
		if f.paramsKnown {
			if p := f.params[i]; p.size != uintptr(len(b)) {
				return nil, errorf(op, ErrInvalidValue, "argument %d of kernel %s is %d bytes (%T); the kernel's parameter is %d bytes", i, f.name, len(b), a, p.size)
			}
		}
		if off+uintptr(len(b)) > maxParamBytes {
			return nil, errorf(op, ErrInvalidValue, "the arguments exceed %d bytes", maxParamBytes)
		}
		copy(pb.data[off:], b)
		pb.ptrs[i] = uintptr(unsafe.Pointer(&pb.data[off]))
		off += uintptr(len(b))
	}
	return mems, nil
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
		switch r := driver.FuncGetParamInfo(f.handle, i, &p.offset, &p.size); r {
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

// valueBytes views a value's memory.
func valueBytes[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
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

// holdAll holds each life, in creation order, once, and returns the
// function that releases them.
func holdAll(op string, lives []heldLife) (func(), error) {
	slices.SortFunc(lives, func(a, b heldLife) int { return cmp.Compare(a.l.id, b.l.id) })
	lives = slices.CompactFunc(lives, func(a, b heldLife) bool { return a.l == b.l })
	for i, h := range lives {
		if err := h.l.hold(op, h.what); err != nil {
			for _, done := range lives[:i] {
				done.l.release()
			}
			return nil, err
		}
	}
	return func() {
		for _, h := range lives {
			h.l.release()
		}
	}, nil
}

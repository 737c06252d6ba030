package cudnn

import (
	"fmt"
	"math"
	"reflect"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cudnn"
)

// Element is the element types of the tensors: float32 (and types defined
// on it) and the two half types. cuDNN computes in float32 for all three.
type Element interface {
	~float32 | cuda.Float16 | cuda.BFloat16
}

// Layout is the order of a 4-D tensor's elements in memory.
type Layout int

const (
	// NCHW: each channel's image whole, row by row (PyTorch's default,
	// cuDNN's CUDNN_TENSOR_NCHW). For a filter: K, C, R, S.
	NCHW Layout = iota
	// NHWC: the channels of each pixel together (PyTorch's
	// channels_last, CUDNN_TENSOR_NHWC), what tensor cores read fastest.
	// For a filter: K, R, S, C.
	NHWC
)

// String returns "NCHW" or "NHWC".
func (l Layout) String() string {
	switch l {
	case NCHW:
		return "NCHW"
	case NHWC:
		return "NHWC"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// Shape is a 4-D tensor's sizes: a batch of N images of C channels, H rows
// and W columns. A filter's is K (its output channels), C (the input
// channels of a group), R and S (its height and width).
type Shape struct{ N, C, H, W int }

// Len returns the number of elements, N·C·H·W.
func (s Shape) Len() int { return s.N * s.C * s.H * s.W }

// String returns the shape as "N×C×H×W".
func (s Shape) String() string { return fmt.Sprintf("%d×%d×%d×%d", s.N, s.C, s.H, s.W) }

// check says what is wrong with s for cuDNN: every size at least 1, and
// fewer than 2³¹ elements.
func (s Shape) check() string {
	if s.N < 1 || s.C < 1 || s.H < 1 || s.W < 1 {
		return fmt.Sprintf("shape %v has a size below 1", s)
	}
	if float64(s.N)*float64(s.C)*float64(s.H)*float64(s.W) > math.MaxInt32 {
		return fmt.Sprintf("shape %v has 2³¹ elements or more", s)
	}
	return ""
}

// Tensor is a 4-D tensor in device memory: Data holds exactly Shape.Len()
// elements, in Layout's order. It owns nothing: its buffer is the
// caller's.
type Tensor[T Element] struct {
	Data   *cuda.DeviceBuffer[T]
	Shape  Shape
	Layout Layout
}

// checkTensor says what is wrong with t, named name.
func checkTensor[T Element](op, name string, t Tensor[T]) error {
	switch {
	case t.Data == nil:
		return errorf(op, cuda.ErrInvalidValue, "%s.Data is nil", name)
	case t.Layout != NCHW && t.Layout != NHWC:
		return errorf(op, cuda.ErrInvalidValue, "%s.Layout is %v: want NCHW or NHWC", name, t.Layout)
	}
	if why := t.Shape.check(); why != "" {
		return errorf(op, cuda.ErrInvalidValue, "%s: %s", name, why)
	}
	if t.Data.Len() != t.Shape.Len() {
		return errorf(op, cuda.ErrInvalidValue, "len(%s.Data) is %d: want %d (%v)", name, t.Data.Len(), t.Shape.Len(), t.Shape)
	}
	return nil
}

// cudnnDataType_t values.
const (
	dataFloat   = 0  // CUDNN_DATA_FLOAT
	dataHalf    = 2  // CUDNN_DATA_HALF
	dataInt32   = 4  // CUDNN_DATA_INT32
	dataBFloat  = 9  // CUDNN_DATA_BFLOAT16
	dataBoolean = 11 // CUDNN_DATA_BOOLEAN
)

// dataType returns cuDNN's data type for T: the kind says float32 (types
// defined on it too); the half types, both uint16 underneath, are told
// apart by name.
func dataType[T Element]() int32 {
	switch t := reflect.TypeFor[T](); {
	case t.Kind() == reflect.Float32:
		return dataFloat
	case t == reflect.TypeFor[cuda.Float16]():
		return dataHalf
	}
	return dataBFloat
}

// tensorDesc makes a tensor descriptor of shape s in layout l, added to d.
func (d *descs) tensor(s Shape, l Layout, dt int32) (clib.TensorDescriptor, error) {
	var t clib.TensorDescriptor
	if err := check(d.op, "cudnnCreateTensorDescriptor", clib.CreateTensorDescriptor(&t)); err != nil {
		return 0, err
	}
	d.tensors = append(d.tensors, t)
	return t, check(d.op, "cudnnSetTensor4dDescriptor", clib.SetTensor4dDescriptor(t, int32(l), dt, int32(s.N), int32(s.C), int32(s.H), int32(s.W)))
}

// filter makes a filter descriptor of shape s (K, C, R, S) in layout l,
// added to d.
func (d *descs) filter(s Shape, l Layout, dt int32) (clib.FilterDescriptor, error) {
	var f clib.FilterDescriptor
	if err := check(d.op, "cudnnCreateFilterDescriptor", clib.CreateFilterDescriptor(&f)); err != nil {
		return 0, err
	}
	d.filters = append(d.filters, f)
	return f, check(d.op, "cudnnSetFilter4dDescriptor", clib.SetFilter4dDescriptor(f, dt, int32(l), int32(s.N), int32(s.C), int32(s.H), int32(s.W)))
}

// descs are the descriptors a call or a plan made, destroyed together.
type descs struct {
	op      string
	tensors []clib.TensorDescriptor
	filters []clib.FilterDescriptor
	convs   []clib.ConvolutionDescriptor
	acts    []clib.ActivationDescriptor
	pools   []clib.PoolingDescriptor
}

// release destroys them all, inside the call's Stream.Do, into *err where
// it holds no error yet.
func (d *descs) release(err *error) {
	if derr := d.destroy(d.op); *err == nil {
		*err = derr
	}
}

// destroy destroys them all; the first failure is the error, and what
// failed stays for a later destroy.
func (d *descs) destroy(op string) error {
	var first error
	keep := func(err error) bool {
		if err != nil && first == nil {
			first = err
		}
		return err != nil
	}
	d.tensors = destroyAll(d.tensors, func(t clib.TensorDescriptor) bool {
		return keep(check(op, "cudnnDestroyTensorDescriptor", clib.DestroyTensorDescriptor(t)))
	})
	d.filters = destroyAll(d.filters, func(f clib.FilterDescriptor) bool {
		return keep(check(op, "cudnnDestroyFilterDescriptor", clib.DestroyFilterDescriptor(f)))
	})
	d.convs = destroyAll(d.convs, func(c clib.ConvolutionDescriptor) bool {
		return keep(check(op, "cudnnDestroyConvolutionDescriptor", clib.DestroyConvolutionDescriptor(c)))
	})
	d.acts = destroyAll(d.acts, func(a clib.ActivationDescriptor) bool {
		return keep(check(op, "cudnnDestroyActivationDescriptor", clib.DestroyActivationDescriptor(a)))
	})
	d.pools = destroyAll(d.pools, func(p clib.PoolingDescriptor) bool {
		return keep(check(op, "cudnnDestroyPoolingDescriptor", clib.DestroyPoolingDescriptor(p)))
	})
	return first
}

// destroyAll destroys each of ds, each failure tried once more, and
// returns those that failed twice.
func destroyAll[D any](ds []D, destroy func(D) bool) []D {
	var left []D
	for _, d := range ds {
		if failed := destroy(d); failed {
			if failed = destroy(d); failed {
				left = append(left, d)
			}
		}
	}
	return left
}

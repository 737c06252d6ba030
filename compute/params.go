package compute

import (
	"reflect"
	"strings"

	cuda "github.com/gocuda/cuda"
)

// param is one declared parameter: "float32 x".
type param struct {
	t    dtype
	name string
}

// declaration checks a kernel's name and parses its parameter lists.
func declaration(op, name, in, out string) (ins, outs []param, err error) {
	if !ident(name) {
		return nil, nil, errorf(op, cuda.ErrInvalidValue, "%q is not a kernel name (a C identifier, not starting with _ or gocuda)", name)
	}
	if ins, err = parseParams(op, "inputs", in); err != nil {
		return nil, nil, err
	}
	if outs, err = parseParams(op, "outputs", out); err != nil {
		return nil, nil, err
	}
	return ins, outs, nil
}

// parseParams parses a parameter list such as "float32 x, float32 y"; what
// names the list in errors ("inputs").
func parseParams(op, what, list string) ([]param, error) {
	var out []param
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	for _, p := range strings.Split(list, ",") {
		f := strings.Fields(p)
		if len(f) != 2 {
			return nil, errorf(op, cuda.ErrInvalidValue, "%s: %q is not a type and a name, such as \"float32 x\"", what, strings.TrimSpace(p))
		}
		t, ok := dtypeNamed(f[0])
		if !ok {
			return nil, errorf(op, cuda.ErrInvalidValue, "%s: unknown type %q (want one of %s)", what, f[0], typeNames())
		}
		if !ident(f[1]) {
			return nil, errorf(op, cuda.ErrInvalidValue, "%s: %q is not a name a parameter may have (a C identifier, not starting with _ or gocuda)", what, f[1])
		}
		out = append(out, param{t, f[1]})
	}
	return out, nil
}

func typeNames() string {
	var names []string
	for _, d := range dtypes {
		names = append(names, d.name)
	}
	return strings.Join(names, ", ")
}

// arg is an argument given for a parameter: a device buffer or a scalar.
// It is small, so that a launch keeps its arguments on the stack.
type arg struct {
	buffer bool
	half   bool       // a Float16 or BFloat16 scalar: passed as its bits
	n      int        // a buffer's length
	mem    bufferInfo // a buffer
	scalar any        // a scalar, of its parameter's Go type
}

// bufferInfo is what every *cuda.DeviceBuffer[T] tells, whatever T.
type bufferInfo interface {
	cuda.Memory
	Len() int
	Ptr() cuda.DevicePtr
	Context() *cuda.Context
}

// classify checks that v may be passed for p: a *cuda.DeviceBuffer of p's
// type, or (if scalarOK) a value of it.
func classify(op string, p param, v any, scalarOK bool) (arg, error) {
	if v == nil {
		return arg{}, errorf(op, cuda.ErrInvalidValue, "%s is nil", p.name)
	}
	if b, t, ok := asBuffer(v); t != nil {
		switch {
		case !ok:
			return arg{}, errorf(op, cuda.ErrInvalidValue, "%s is a nil *DeviceBuffer", p.name)
		case t.name != p.t.name:
			return arg{}, errorf(op, cuda.ErrInvalidValue, "%s is declared %s, and a buffer of %s was given", p.name, p.t.name, t.name)
		case b.Context() == nil:
			return arg{}, errorf(op, cuda.ErrInvalidValue, "%s is a zero DeviceBuffer: make one with cuda.Alloc", p.name)
		}
		return arg{buffer: true, n: b.Len(), mem: b}, nil
	}
	if !scalarOK {
		return arg{}, errorf(op, cuda.ErrInvalidValue, "%s is an output: it must be a *cuda.DeviceBuffer[%v], not a %T", p.name, p.t.goType, v)
	}
	if reflect.TypeOf(v) != p.t.goType {
		return arg{}, errorf(op, cuda.ErrInvalidValue, "%s is declared %s (a Go %v, or a buffer of it), and a %T was given", p.name, p.t.name, p.t.goType, v)
	}
	return arg{half: p.t.half != "", scalar: v}, nil
}

// asBuffer returns v as a device buffer and its element type, if it is a
// *cuda.DeviceBuffer of one of Number's types (ok false for a nil one);
// a nil type otherwise.
func asBuffer(v any) (bufferInfo, *dtype, bool) {
	switch b := v.(type) {
	case *cuda.DeviceBuffer[int8]:
		return b, dtypePtr[int8](), b != nil
	case *cuda.DeviceBuffer[int16]:
		return b, dtypePtr[int16](), b != nil
	case *cuda.DeviceBuffer[int32]:
		return b, dtypePtr[int32](), b != nil
	case *cuda.DeviceBuffer[int64]:
		return b, dtypePtr[int64](), b != nil
	case *cuda.DeviceBuffer[uint8]:
		return b, dtypePtr[uint8](), b != nil
	case *cuda.DeviceBuffer[uint16]:
		return b, dtypePtr[uint16](), b != nil
	case *cuda.DeviceBuffer[uint32]:
		return b, dtypePtr[uint32](), b != nil
	case *cuda.DeviceBuffer[uint64]:
		return b, dtypePtr[uint64](), b != nil
	case *cuda.DeviceBuffer[float32]:
		return b, dtypePtr[float32](), b != nil
	case *cuda.DeviceBuffer[float64]:
		return b, dtypePtr[float64](), b != nil
	case *cuda.DeviceBuffer[cuda.Float16]:
		return b, dtypePtr[cuda.Float16](), b != nil
	case *cuda.DeviceBuffer[cuda.BFloat16]:
		return b, dtypePtr[cuda.BFloat16](), b != nil
	}
	return nil, nil, false
}

// launchValues appends the kernel arguments of as to vals: a buffer as
// itself, a Float16 or BFloat16 scalar as its bits (the kernel takes
// unsigned short), any other scalar as it is.
func launchValues(vals []any, as []arg) []any {
	for _, a := range as {
		switch {
		case a.buffer:
			vals = append(vals, a.mem)
		case a.half:
			vals = append(vals, halfBits(a.scalar))
		default:
			vals = append(vals, a.scalar)
		}
	}
	return vals
}

// stackArgs is how many arguments a launch keeps on the stack (more
// spill to the heap).
const stackArgs = 8

// halfBits returns a Float16's or BFloat16's bits.
func halfBits(v any) uint16 {
	switch h := v.(type) {
	case cuda.Float16:
		return uint16(h)
	case cuda.BFloat16:
		return uint16(h)
	}
	panic("compute: not a half") // only called for the halves
}

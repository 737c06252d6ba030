package compute

import (
	"errors"
	"reflect"
	"strings"

	cuda "github.com/gocuda/cuda"
)

// param is one declared parameter: "float32 x", or "raw float32 x", which
// an elementwise kernel does not index but hands its operation whole.
type param struct {
	t    dtype
	name string
	raw  bool
}

// declaration checks a kernel's name and parses its parameter lists, each
// error naming the field of the declaration that was wrong. A raw
// parameter is an error: only Elementwise takes them (rawDeclaration), and
// a reduction would otherwise index one as any other.
func declaration(op, name, in, out string) (ins, outs []param, err error) {
	if ins, outs, err = rawDeclaration(op, name, in, out); err != nil {
		return nil, nil, err
	}
	for j, p := range append(append([]param(nil), ins...), outs...) {
		if p.raw {
			field := map[bool]string{true: "InParams", false: "OutParams"}[j < len(ins)]
			return nil, nil, errorf(op, cuda.ErrInvalidValue, "%s: %s is raw: only an Elementwise takes raw parameters", field, p.name)
		}
	}
	return ins, outs, nil
}

// rawDeclaration is declaration, with raw parameters taken.
func rawDeclaration(op, name, in, out string) (ins, outs []param, err error) {
	switch {
	case strings.TrimSpace(name) == "":
		return nil, nil, errorf(op, cuda.ErrInvalidValue, "Name is empty: a kernel needs a name (a C identifier)")
	case !ident(name):
		return nil, nil, errorf(op, cuda.ErrInvalidValue, "Name %q is not a kernel name: want a C identifier, not a keyword, not starting with _ or gocuda", name)
	}
	if ins, err = parseParams(op, "InParams", in); err != nil {
		return nil, nil, err
	}
	if outs, err = parseParams(op, "OutParams", out); err != nil {
		return nil, nil, err
	}
	return ins, outs, nil
}

// parseParams parses a parameter list such as "raw float32 x, float32 y";
// field names the list in errors ("InParams"). raw is a keyword only
// before a type, as in CuPy: a parameter may still be named raw.
func parseParams(op, field, list string) ([]param, error) {
	var out []param
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	for _, p := range strings.Split(list, ",") {
		f := strings.Fields(p)
		raw := len(f) == 3 && f[0] == "raw"
		if raw {
			f = f[1:]
		}
		switch {
		case len(f) == 2 && f[0] == "raw":
			return nil, errorf(op, cuda.ErrInvalidValue, "%s: %q is not raw, a type and a name, such as \"raw float32 x\"", field, strings.TrimSpace(p))
		case len(f) == 3 && f[1] == "raw":
			return nil, errorf(op, cuda.ErrInvalidValue, "%s: %q is not a type and a name: raw comes before the type, as in \"raw float32 x\"", field, strings.TrimSpace(p))
		case len(f) != 2:
			return nil, errorf(op, cuda.ErrInvalidValue, "%s: %q is not a type and a name, such as \"float32 x\" (or \"raw float32 x\")", field, strings.TrimSpace(p))
		}
		t, ok := dtypeNamed(f[0])
		if !ok {
			return nil, errorf(op, cuda.ErrInvalidValue, "%s: %q is not a type: want one of %s", field, f[0], typeNames())
		}
		if !ident(f[1]) {
			return nil, errorf(op, cuda.ErrInvalidValue, "%s: %q is not a name a parameter may have: want a C identifier, not a keyword, not starting with _ or gocuda", field, f[1])
		}
		out = append(out, param{t: t, name: f[1], raw: raw})
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
	name   string     // what errors call it: the parameter's name in the user's call
	buffer bool       // a buffer (mem nil for a nil one), not a scalar
	n      int        // a buffer's length
	mem    bufferInfo // a buffer
	open   liveness   // tells whether mem is closed
	scalar any        // a scalar, as the kernel takes it: of its parameter's Go type, the halves as their bits
}

// bufferInfo is what every *cuda.DeviceBuffer[T] tells, whatever T.
type bufferInfo interface {
	cuda.Memory
	Len() int
	Ptr() cuda.DevicePtr
	Context() *cuda.Context
}

// liveness tells whether a buffer is closed (freed, or its context closed):
// nothing in bufferInfo does, and DeviceBuffer.Slice, which does, returns
// the buffer's own type.
type liveness interface{ closed(bufferInfo) error }

// typedLiveness is liveness of a *cuda.DeviceBuffer[T]. A zero-sized value
// in an interface costs no allocation.
type typedLiveness[T any] struct{}

func (typedLiveness[T]) closed(m bufferInfo) error {
	_, err := m.(*cuda.DeviceBuffer[T]).Slice(0, 0)
	return err
}

// reflectLiveness is liveness of a buffer found by reflection (asBuffer).
type reflectLiveness struct{}

func (reflectLiveness) closed(m bufferInfo) error {
	out := reflect.ValueOf(m).MethodByName("Slice").Call([]reflect.Value{reflect.ValueOf(0), reflect.ValueOf(0)})
	err, _ := out[1].Interface().(error)
	return err
}

// bufArg is buffer b as the argument the user's call names name.
func bufArg[T any](name string, b *cuda.DeviceBuffer[T]) arg {
	a := arg{name: name, buffer: true, open: typedLiveness[T]{}}
	if b != nil {
		a.mem, a.n = b, b.Len()
	}
	return a
}

// scalarArg is v as the scalar argument the user's call names name: of
// T's dtype's Go type (a type defined on float32 passed as a float32), a
// Float16 or BFloat16 as its bits.
func scalarArg[T cuda.Number](name string, v T) arg {
	a := arg{name: name}
	d := dtypePtr[T]()
	if d.half != "" {
		a.scalar = uint16(v)
		return a
	}
	switch d.goType.Kind() {
	case reflect.Int8:
		a.scalar = int8(v)
	case reflect.Int16:
		a.scalar = int16(v)
	case reflect.Int32:
		a.scalar = int32(v)
	case reflect.Int64:
		a.scalar = int64(v)
	case reflect.Uint8:
		a.scalar = uint8(v)
	case reflect.Uint16:
		a.scalar = uint16(v)
	case reflect.Uint32:
		a.scalar = uint32(v)
	case reflect.Uint64:
		a.scalar = uint64(v)
	case reflect.Float32:
		a.scalar = float32(v)
	default:
		a.scalar = float64(v)
	}
	return a
}

// classify checks that v may be passed for p: a *cuda.DeviceBuffer of p's
// type, or (if scalarOK, and p is not raw) a value of it. A type defined
// on p's (type Celsius float32 for float32) is p's; Float16 and BFloat16
// are only float16's and bfloat16's.
func classify(op string, p param, v any, scalarOK bool) (arg, error) {
	if v == nil {
		return arg{}, errorf(op, cuda.ErrInvalidValue, "%s is nil", p.name)
	}
	if b, t, open, ok := asBuffer(v); t != nil {
		a := arg{name: p.name, buffer: true, open: open}
		if ok {
			a.mem, a.n = b, b.Len()
		}
		if t.name != p.t.name {
			return arg{}, errorf(op, cuda.ErrInvalidValue, "%s is declared %s, and a buffer of %s was given", p.name, p.t.name, t.name)
		}
		return a, nil
	}
	switch {
	case p.raw:
		return arg{}, errorf(op, cuda.ErrInvalidValue, "%s is raw: it must be a *cuda.DeviceBuffer[%v], not a %T", p.name, p.t.goType, v)
	case !scalarOK:
		return arg{}, errorf(op, cuda.ErrInvalidValue, "%s is an output: it must be a *cuda.DeviceBuffer[%v], not a %T", p.name, p.t.goType, v)
	}
	vt := reflect.TypeOf(v)
	switch d, ok := dtypeFor(vt); {
	case vt == p.t.goType && p.t.half != "":
		return arg{name: p.name, scalar: uint16(reflect.ValueOf(v).Uint())}, nil
	case vt == p.t.goType:
		return arg{name: p.name, scalar: v}, nil
	case ok && d.name == p.t.name && vt.ConvertibleTo(p.t.goType):
		return arg{name: p.name, scalar: reflect.ValueOf(v).Convert(p.t.goType).Interface()}, nil
	}
	return arg{}, errorf(op, cuda.ErrInvalidValue, "%s is declared %s (a Go %v, or a buffer of it), and a %T was given", p.name, p.t.name, p.t.goType, v)
}

// asBuffer returns v as a device buffer, its element type and how to tell
// whether it is closed, if it is a *cuda.DeviceBuffer of one of
// cuda.Number's types (ok false for a nil one); a nil type otherwise.
func asBuffer(v any) (bufferInfo, *dtype, liveness, bool) {
	switch b := v.(type) {
	case *cuda.DeviceBuffer[int8]:
		return b, dtypePtr[int8](), typedLiveness[int8]{}, b != nil
	case *cuda.DeviceBuffer[int16]:
		return b, dtypePtr[int16](), typedLiveness[int16]{}, b != nil
	case *cuda.DeviceBuffer[int32]:
		return b, dtypePtr[int32](), typedLiveness[int32]{}, b != nil
	case *cuda.DeviceBuffer[int64]:
		return b, dtypePtr[int64](), typedLiveness[int64]{}, b != nil
	case *cuda.DeviceBuffer[uint8]:
		return b, dtypePtr[uint8](), typedLiveness[uint8]{}, b != nil
	case *cuda.DeviceBuffer[uint16]:
		return b, dtypePtr[uint16](), typedLiveness[uint16]{}, b != nil
	case *cuda.DeviceBuffer[uint32]:
		return b, dtypePtr[uint32](), typedLiveness[uint32]{}, b != nil
	case *cuda.DeviceBuffer[uint64]:
		return b, dtypePtr[uint64](), typedLiveness[uint64]{}, b != nil
	case *cuda.DeviceBuffer[float32]:
		return b, dtypePtr[float32](), typedLiveness[float32]{}, b != nil
	case *cuda.DeviceBuffer[float64]:
		return b, dtypePtr[float64](), typedLiveness[float64]{}, b != nil
	case *cuda.DeviceBuffer[cuda.Float16]:
		return b, dtypePtr[cuda.Float16](), typedLiveness[cuda.Float16]{}, b != nil
	case *cuda.DeviceBuffer[cuda.BFloat16]:
		return b, dtypePtr[cuda.BFloat16](), typedLiveness[cuda.BFloat16]{}, b != nil
	}
	// A buffer of a type defined on one of Go's numbers: Go has no type
	// switch over every T, and reflect does not give a generic type's
	// arguments, but DeviceBuffer[T].CopyToHost takes a []T.
	t := reflect.TypeOf(v)
	if t.Kind() != reflect.Pointer || t.Elem().PkgPath() != cudaPath || !strings.HasPrefix(t.Elem().Name(), "DeviceBuffer[") {
		return nil, nil, nil, false
	}
	m, ok := t.MethodByName("CopyToHost")
	if !ok {
		return nil, nil, nil, false
	}
	d, ok := dtypeFor(m.Type.In(1).Elem())
	b, isBuffer := v.(bufferInfo)
	if !ok || !isBuffer {
		return nil, nil, nil, false
	}
	return b, d, reflectLiveness{}, !reflect.ValueOf(v).IsNil()
}

// cudaPath is package cuda's import path, DeviceBuffer's PkgPath.
var cudaPath = reflect.TypeFor[cuda.DeviceBuffer[byte]]().PkgPath()

// checkStream returns the error for a nil or zero stream, the parameter s
// of every call of the package that queues work.
func checkStream(op string, s *cuda.Stream) error {
	switch {
	case s == nil:
		return errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	case s.Context() == nil:
		return errorf(op, cuda.ErrInvalidValue, "s is a zero cuda.Stream: make one with cuda.Open or Context.NewStream")
	}
	return nil
}

// checkBuffers checks s and the buffers among as, each named as the caller's
// call names it: none nil or zero, each of s's context.
func checkBuffers(op string, s *cuda.Stream, as []arg) error {
	if err := checkStream(op, s); err != nil {
		return err
	}
	for i := range as {
		if !as[i].buffer {
			continue // a scalar
		}
		if err := checkBuffer(op, s, &as[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkBuffer returns the error for a buffer argument that is nil, zero,
// or of another context than s.
func checkBuffer(op string, s *cuda.Stream, a *arg) error {
	switch {
	case a.mem == nil:
		return errorf(op, cuda.ErrInvalidValue, "%s is a nil *cuda.DeviceBuffer", a.name)
	case a.mem.Context() == nil:
		return errorf(op, cuda.ErrInvalidValue, "%s is a zero cuda.DeviceBuffer: make one with cuda.Alloc", a.name)
	case a.mem.Context() != s.Context():
		return errorf(op, cuda.ErrInvalidValue, "%s belongs to another context than s", a.name)
	}
	return nil
}

// closedArg returns the error naming the first of as that is a closed
// buffer, nil if none is. It is asked before a kernel is compiled or
// loaded (whose errors, or a missing NVRTC, would otherwise be all the
// caller heard) and after a launch failed with cuda.ErrClosed; not on
// every launch, which checks the buffers itself.
func closedArg(op string, as []arg) error {
	for i := range as {
		a := &as[i]
		if !a.buffer || a.mem == nil {
			continue
		}
		if err := a.open.closed(a.mem); errors.Is(err, cuda.ErrClosed) {
			return &Error{Op: op, Err: cuda.ErrClosed, Detail: a.name + " is closed (freed, or its context closed)"}
		}
	}
	return nil
}

// launchValues appends the kernel arguments of as to vals: a buffer as
// itself, a scalar as the kernel takes it.
func launchValues(vals []any, as []arg) []any {
	for _, a := range as {
		if a.buffer {
			vals = append(vals, a.mem)
		} else {
			vals = append(vals, a.scalar)
		}
	}
	return vals
}

// stackArgs is how many arguments a launch keeps on the stack (more
// spill to the heap): nd's strided kernels take a dozen or more (the
// buffers, then each one's offset, the dimensions and each one's
// strides).
const stackArgs = 24

// overlapError returns the error for w, a buffer a launch writes of
// elements of wSize bytes, sharing memory with b, another buffer of the
// launch (of bSize bytes an element), where it may not: nil where they
// are apart, or where inPlace and w is b itself (the same address, length
// and element size: each element read, then written, by one thread). why
// says what may be. A closed buffer, whose address may be another's now,
// is its own error (closedArg's of as).
func overlapError(op string, as []arg, w, b *arg, wSize, bSize uintptr, inPlace bool, why string) error {
	if !w.buffer || !b.buffer || w.mem == nil || b.mem == nil || w.n == 0 || b.n == 0 {
		return nil
	}
	wLo, bLo := uint64(w.mem.Ptr()), uint64(b.mem.Ptr())
	wHi, bHi := wLo+uint64(w.n)*uint64(wSize), bLo+uint64(b.n)*uint64(bSize)
	switch {
	case wLo >= bHi || bLo >= wHi:
		return nil
	case inPlace && wLo == bLo && w.n == b.n && wSize == bSize:
		return nil
	}
	if err := closedArg(op, as); err != nil {
		return err
	}
	return errorf(op, cuda.ErrInvalidValue, "%s overlaps %s: %s", w.name, b.name, why)
}

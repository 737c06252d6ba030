package compute

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	cuda "github.com/gocuda/cuda"
)

// ElementwiseSpec declares an elementwise kernel, a field for each of CuPy's
// ElementwiseKernel arguments (in_params, out_params, operation, name), so
// that a port in any order of them means what it says.
type ElementwiseSpec struct {
	// Name is the kernel's name: a C identifier, not starting with _ or
	// gocuda (CuPy's name).
	Name string
	// InParams are the inputs, such as "float32 a, float32 x" (in_params):
	// each a type (float32, float64, float16, bfloat16, int8 ... uint64)
	// and a name, after the keyword raw for a buffer the operation indexes
	// itself ("raw float32 x": see Elementwise).
	InParams string
	// OutParams are the outputs, such as "float32 y" (out_params): at least
	// one, raw or not. An output named as an input is that input, read and
	// then written (in place), raw in both lists or neither; it is given
	// once at Launch.
	OutParams string
	// Operation is the CUDA C run for each element (operation): statements
	// that set the outputs, the last with or without its semicolon, as
	// CuPy takes them.
	Operation string
}

// Elementwise is a kernel applied to every element of its buffers, made
// from a parameter list and a CUDA C operation, as CuPy's
// ElementwiseKernel:
//
//	axpy, err := compute.NewElementwise(compute.ElementwiseSpec{
//		Name:      "axpy",
//		InParams:  "float32 a, float32 x, float32 y",
//		OutParams: "float32 y",
//		Operation: "y = a * x + y",
//	})
//	err = axpy.Launch(s, float32(2), x, y)
//
// Each parameter is given at Launch as a *cuda.DeviceBuffer of its type (or
// of a type defined on it: type Celsius float32 for float32), or an input
// as a value of it (a scalar, the same for every element). The operation
// sees, for element i, each input as a value of its type (Float16 and
// BFloat16 as float), and each output as a variable of it, which it sets;
// an output also among the inputs (by name) starts with the buffer's value,
// others start undefined. A buffer given for an output that is not raw
// may be given for an input too (in place: the same view, of the same
// element type), or be apart from the other buffers not raw; one that
// overlaps part of another is an error. The variable i (long long) is the
// element's index and n the element count. gocuda writes the kernel
// around the operation (a grid-stride loop with 64-bit indices, taking 16
// bytes of each buffer at a time where every buffer is aligned for it,
// then the elements left one by one), compiles it with NVRTC for the
// device, once per argument pattern (which parameters are buffers), keeps
// it (package docs: the kernel cache) and launches it on the stream.
//
// # Raw parameters
//
// A parameter declared raw ("raw float32 x", as CuPy's) is not indexed
// for the operation: it sees the whole buffer, a pointer it indexes as it
// likes (x[i + 1], x[idx]), so that a gather, a scatter or a stencil is an
// elementwise kernel. A gather of x by an index buffer, y[i] = x[idx[i]]:
//
//	gather, err := compute.NewElementwise(compute.ElementwiseSpec{
//		Name:      "gather",
//		InParams:  "raw float32 x, int64 idx",
//		OutParams: "float32 y",
//		Operation: "y = x[idx]",
//	})
//	err = gather.Launch(s, x, idx, y) // len(idx) == len(y) elements; x any length
//
// and a 3-point stencil, its ends checked against n:
//
//	blur, err := compute.NewElementwise(compute.ElementwiseSpec{
//		Name:      "blur",
//		InParams:  "raw float32 x, float32 w",
//		OutParams: "float32 y",
//		Operation: `const float l = i > 0 ? x[i - 1] : x[i];
//			const float r = i + 1 < n ? x[i + 1] : x[i];
//			y = w * l + (1 - 2 * w) * x[i] + w * r`,
//	})
//	err = blur.Launch(s, x, float32(0.25), y) // len(x) == len(y): n is y's
//
// A raw input is a const T* for the integers, float32 and float64 (a
// raw output, written freely, y[j] = v, a T*), named as declared.
// Float16 and BFloat16, stored as 16 bits, are given as a small accessor
// instead, so that a raw half is indexed as a raw float32 is: x[j] is
// element j as a float, and y[j] = v (or +=, -=, *=, /=) stores v rounded
// to the half (a raw half is no pointer: x + j and &x[j] do not compile).
// A raw parameter must be given a buffer, of any length, and takes no
// part in the element count: every buffer not raw has n elements, and a
// kernel needs one at Launch, or the count given with LaunchN (CuPy's size
// argument), where every parameter may be raw. The operation still runs
// once per element i < n, in the vector loop too, where the buffers not
// raw are aligned for it: bounds are the operation's to check, against n
// or a length it is given. A raw output is the buffer itself: elements
// the operation does not set keep their values, and two elements setting
// one are a race. A raw input is read through a restricted pointer: a
// buffer the launch writes (an output's) must not be given for it; read
// and write one buffer through a raw parameter both input and output.
//
// An Elementwise is safe for use by many goroutines.
type Elementwise struct {
	name     string
	in, out  []param
	inplace  map[string]bool // outputs that are inputs too
	ps       []param         // the parameters in argument order (params)
	readOnly []bool          // by parameter: an input only, which may be a scalar unless raw
	body     string
	mu       sync.Mutex
	variants map[uint64]*variant            // the source of each argument pattern (bit j: parameter j is a buffer)
	first    atomic.Pointer[patternVariant] // the first pattern launched, found without mu
}

// patternVariant is an Elementwise's variant of an argument pattern.
type patternVariant struct {
	key uint64
	v   *variant
}

// maxParams is the most parameters a kernel may have (a launch's pattern
// of buffers and scalars is a bit each of a uint64).
const maxParams = 64

// NewElementwise checks a kernel's declaration, each field of spec on its
// own: an error names the field. Nothing is compiled until the first
// Launch; an operation that does not compile is an error of that Launch,
// with NVRTC's log.
func NewElementwise(spec ElementwiseSpec) (*Elementwise, error) {
	const op = "NewElementwise"
	ins, outs, err := rawDeclaration(op, spec.Name, spec.InParams, spec.OutParams)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, p := range ins {
		switch {
		case p.name == "i" || p.name == "n":
			return nil, errorf(op, cuda.ErrInvalidValue, "InParams: %q is reserved: i is the element's index and n the element count", p.name)
		case seen[p.name]:
			return nil, errorf(op, cuda.ErrInvalidValue, "InParams declares %q twice", p.name)
		}
		seen[p.name] = true
	}
	if len(outs) == 0 {
		return nil, errorf(op, cuda.ErrInvalidValue, "OutParams is empty: a kernel needs an output")
	}
	k := &Elementwise{name: spec.Name, in: ins, out: outs, inplace: map[string]bool{}, variants: map[uint64]*variant{}}
	for _, p := range outs {
		switch {
		case p.name == "i" || p.name == "n":
			return nil, errorf(op, cuda.ErrInvalidValue, "OutParams: %q is reserved: i is the element's index and n the element count", p.name)
		case k.inplace[p.name] || seen[p.name] && !k.isInput(p.name):
			return nil, errorf(op, cuda.ErrInvalidValue, "OutParams declares %q twice", p.name)
		case seen[p.name]:
			for _, q := range ins {
				switch {
				case q.name != p.name:
				case q.t.name != p.t.name:
					return nil, errorf(op, cuda.ErrInvalidValue, "OutParams: %s is an input of type %s and an output of type %s", p.name, q.t.name, p.t.name)
				case q.raw != p.raw:
					// One buffer cannot be both indexed for the operation
					// and handed to it whole.
					return nil, errorf(op, cuda.ErrInvalidValue, "OutParams: %s is raw in one list and not in the other: a parameter both input and output is raw in both or neither", p.name)
				}
			}
			k.inplace[p.name] = true
		}
		seen[p.name] = true
	}
	if strings.TrimSpace(spec.Operation) == "" {
		return nil, errorf(op, cuda.ErrInvalidValue, "Operation is empty: a kernel needs statements that set its outputs")
	}
	k.body = spec.Operation
	k.ps = k.params()
	for _, p := range k.ps {
		k.readOnly = append(k.readOnly, k.isInput(p.name) && !k.inplace[p.name])
	}
	if len(k.ps) > maxParams {
		return nil, errorf(op, cuda.ErrInvalidValue, "InParams and OutParams declare %d parameters: at most %d", len(k.ps), maxParams)
	}
	return k, nil
}

func (k *Elementwise) isInput(name string) bool {
	for _, p := range k.in {
		if p.name == name {
			return true
		}
	}
	return false
}

// params returns the kernel's parameters in argument order: the inputs,
// then the outputs that are not inputs.
func (k *Elementwise) params() []param {
	ps := append([]param(nil), k.in...)
	for _, p := range k.out {
		if !k.inplace[p.name] {
			ps = append(ps, p)
		}
	}
	return ps
}

// vectorWidth is the elements a thread of a variant loads and stores at
// once: 16 bytes of the widest buffer's type (4 float32, 8 bfloat16). A
// raw buffer is not loaded with the others (the operation indexes it
// itself) and does not count.
func (k *Elementwise) vectorWidth(buffer []bool) int {
	widest := 0
	for j, p := range k.ps {
		if buffer[j] && !p.raw {
			widest = max(widest, int(p.t.goType.Size()))
		}
	}
	if widest == 0 {
		// No buffer is read or written by vectors (every one raw, or
		// none given): a thread an element. Vectors of 16 made each
		// thread take 16 elements one after another, with a sixteenth
		// of the threads: a kernel whose element is a whole line of
		// loads (nd's softmax along a middle axis, its cumulative sums)
		// ran its lines 16 deep, 16,384 threads for 262,144 lines.
		return 1
	}
	return 16 / widest
}

// source writes the kernel for an argument pattern: buffer[j] says whether
// parameter j (in params' order) is a buffer. The operation becomes a
// function of the element's values, followed by a semicolon on a line of
// its own: an operation may end without one (as CuPy's do) or in a //
// comment, and after one that has it, an empty statement is nothing. The
// kernel calls it in a grid-stride loop over vectors of vectorWidth
// elements when every buffer is aligned to its vector's size (each buffer
// read and written 16 bytes or fewer at a time), then over the elements
// left (all of them when a buffer is not aligned, as a view into another
// may not be), with 64-bit indices. A raw parameter is no part of the
// vectors: the function gets its pointer (rawArg) for every element, with
// the element's i, in either loop. The text is
// templates/elementwise.cu.tmpl's.
func (k *Elementwise) source(buffer []bool) string {
	ps := k.ps
	width := k.vectorWidth(buffer)
	text := elementwiseText{KernelName: k.name, Operation: k.body, Width: width}
	for _, p := range ps {
		if p.raw && p.t.half != "" {
			text.RawHalves = true // only where used: other kernels' sources, and so cache keys, stay as they were
			break
		}
	}
	// The body, over values: inputs by value, outputs by reference, raw
	// parameters as pointers (or their accessors).
	var decl, call []string
	for j, p := range ps {
		switch {
		case p.raw:
			decl = append(decl, k.rawType(j)+" "+p.name)
			call = append(call, k.rawArg(j))
			continue
		case k.readOnly[j]:
			decl = append(decl, "const "+p.t.value+" "+p.name)
		default:
			decl = append(decl, p.t.value+"& "+p.name)
		}
		call = append(call, p.name)
	}
	text.BodyParams = strings.Join(decl, ", ")
	text.Call = "gocuda_body(" + strings.Join(call, ", ") + ", i, n);"

	var params strings.Builder
	for j, p := range ps {
		switch {
		case !buffer[j]:
			params.WriteString(p.t.storage + " gocudap_" + p.name + ", ")
		case k.readOnly[j]:
			params.WriteString("const " + p.t.storage + "* __restrict__ gocudap_" + p.name + ", ")
		default:
			params.WriteString(p.t.storage + "* gocudap_" + p.name + ", ")
		}
	}
	text.Params = params.String()

	// The vector loop, over the buffers not raw (a kernel has one). A
	// vector of halves is converted whole, to floats (gocudaf_) before
	// the operation's loop and back after it, so that the prelude's vector
	// conversions test it for NaNs once, not each element. Conversions
	// have no effects: the one loop still runs the operation once per
	// element, however a vector converts.
	vec := func(p param) string { return "gocuda_vec<" + p.t.storage + ", " + strconv.Itoa(width) + ">" }
	var aligned []string
	for j, p := range ps {
		if buffer[j] && !p.raw {
			aligned = append(aligned, "(unsigned long long)gocudap_"+p.name+" % sizeof("+vec(p)+") == 0")
			text.Vectors = append(text.Vectors, elementwiseVector{Name: p.name, Vec: vec(p), Input: k.readOnly[j],
				InPlace: !k.readOnly[j] && k.inplace[p.name], Half: p.t.half})
		}
	}
	if len(aligned) == 0 {
		// Every buffer is raw (LaunchN): only the scalar loop.
		aligned = append(aligned, "false")
	}
	text.Aligned = strings.Join(aligned, " && ")
	text.VectorValues = k.values(buffer, func(p param) string {
		if p.t.half != "" {
			return "gocudaf_" + p.name + "[gocuda_k]"
		}
		return "gocudav_" + p.name + ".v[gocuda_k]"
	})
	for _, p := range k.out {
		if !p.raw {
			text.Outs = append(text.Outs, elementwiseVector{Name: p.name, Vec: vec(p), Half: p.t.half, Store: p.t.store(p.name)})
		}
	}
	// The scalar loop: the tail, or every element.
	text.ScalarValues = k.values(buffer, func(p param) string { return p.t.load("gocudap_" + p.name + "[i]") })
	return prelude + render("elementwise", text)
}

// elementwiseText is the fields of templates/elementwise.cu.tmpl's
// "elementwise", which says what each is.
type elementwiseText struct {
	RawHalves                  bool
	KernelName                 string
	BodyParams, Operation      string
	Call                       string
	Params                     string
	Aligned                    string
	Width                      int
	Vectors                    []elementwiseVector
	VectorValues, ScalarValues []string
	Outs                       []elementwiseVector
}

// elementwiseVector is a buffer of elementwise.cu.tmpl's vector loop: a
// parameter's (Vectors) or an output's (Outs).
type elementwiseVector struct {
	Name, Vec      string // the parameter's name, and the C type of its vectors
	Input, InPlace bool   // an input only; an input and output
	Half           string // the prelude's name of a half type ("f16", "bf16"); empty for the others
	Store          string // an output's value as an element in memory
}

// rawType is the C type the operation sees raw parameter j as: a pointer
// to its elements, const for an input only; for Float16 and BFloat16,
// stored as unsigned short, an accessor (elementwise.cu.tmpl's
// "elementwise_raw_halves") whose elements read, and for an output are
// set, as floats, as the operation sees every other half.
func (k *Elementwise) rawType(j int) string {
	p := k.ps[j]
	switch {
	case p.t.half == "" && k.readOnly[j]:
		return "const " + p.t.storage + "*"
	case p.t.half == "":
		return p.t.storage + "*"
	case k.readOnly[j]:
		return fmt.Sprintf("const gocuda_raw_in<%t>", p.t.half == "bf16")
	default:
		return fmt.Sprintf("const gocuda_raw_out<%t>", p.t.half == "bf16")
	}
}

// rawArg is raw parameter j as the kernel passes it to the operation.
func (k *Elementwise) rawArg(j int) string {
	p := k.ps[j]
	if p.t.half == "" {
		return "gocudap_" + p.name
	}
	t := strings.TrimPrefix(k.rawType(j), "const ")
	return fmt.Sprintf("%s{gocudap_%s}", t, p.name)
}

// values returns the declarations of each parameter's value for element
// i: a buffer's element (element says how to read it, converted to the
// type the operation computes in), a scalar's value, an output's variable
// (an in-place one holding the buffer's element). A raw parameter has
// none: the operation gets its pointer.
func (k *Elementwise) values(buffer []bool, element func(p param) string) []string {
	var out []string
	for j, p := range k.ps {
		if p.raw {
			continue
		}
		v := p.t.load("gocudap_" + p.name)
		if buffer[j] {
			v = element(p)
		}
		switch {
		case k.readOnly[j]:
			out = append(out, "const "+p.t.value+" "+p.name+" = "+v+";")
		case k.inplace[p.name]:
			out = append(out, p.t.value+" "+p.name+" = "+v+";")
		default:
			out = append(out, p.t.value+" "+p.name+";")
		}
	}
	return out
}

// Launch runs the kernel on s over every element: each parameter's
// argument in declaration order, inputs then outputs (an output that is an
// input is given once, as the input). Every buffer must have the same
// length, the element count, and belong to s's context; the outputs are
// buffers. A raw parameter is a buffer of any length (of s's context too),
// and there must be a buffer not raw, whose length is the count (else
// LaunchN). Zero elements launch nothing.
func (k *Elementwise) Launch(s *cuda.Stream, args ...any) error {
	return k.launchArgs("Elementwise.Launch", s, -1, args)
}

// LaunchN runs the kernel on s over n elements, i from 0 to n-1, as Launch
// does, for a kernel whose parameters may all be raw (CuPy's size
// argument): a strided or broadcast operation that computes every
// buffer's index from i itself. Buffers not raw, if any, must have n
// elements.
func (k *Elementwise) LaunchN(s *cuda.Stream, n int, args ...any) error {
	const op = "Elementwise.LaunchN"
	if n < 0 {
		return errorf(op, cuda.ErrInvalidValue, "n is %d: the element count cannot be negative", n)
	}
	return k.launchArgs(op, s, n, args)
}

// launchArgs is Launch (n < 0: the count is the buffers') and LaunchN.
func (k *Elementwise) launchArgs(op string, s *cuda.Stream, n int, args []any) error {
	if k == nil || k.variants == nil {
		return errorf(op, cuda.ErrInvalidValue, "nil or zero *Elementwise: make one with NewElementwise")
	}
	if err := checkStream(op, s); err != nil {
		return err
	}
	ps := k.ps
	if len(args) != len(ps) {
		return errorf(op, cuda.ErrInvalidValue, "kernel %s takes %d arguments (%s), %d given", k.name, len(ps), paramList(ps), len(args))
	}
	var buf [stackArgs]arg
	as := append(buf[:0], make([]arg, len(ps))...)
	for j, p := range ps {
		a, err := classify(op, p, args[j], k.readOnly[j])
		if err != nil {
			return err
		}
		as[j] = a
	}
	return k.run(op, s, as, n)
}

// run checks the arguments' buffers, each named as the caller's call names
// it, and launches over n elements (n < 0: as many as the buffers not raw
// have): Launch's arguments, or a standard operation's.
func (k *Elementwise) run(op string, s *cuda.Stream, as []arg, n int) error {
	if err := checkBuffers(op, s, as); err != nil {
		return err
	}
	first := -1
	for j := range as {
		switch {
		case !as[j].buffer || k.ps[j].raw: // a raw buffer is any length
		case first < 0:
			first = j
		case as[j].n != as[first].n:
			return errorf(op, cuda.ErrInvalidValue, "%s has %d elements, and %s %d: every buffer must have as many%s", as[j].name, as[j].n, as[first].name, as[first].n, k.rawAside())
		}
	}
	switch {
	case n >= 0 && first >= 0 && as[first].n != n:
		return errorf(op, cuda.ErrInvalidValue, "%s has %d elements, and n is %d: every buffer not raw must have n", as[first].name, as[first].n, n)
	case n >= 0:
	case first < 0:
		// Only raw buffers: nothing says how many elements there are
		// (CuPy asks for a size then).
		if k.unraw() == "" {
			return errorf(op, cuda.ErrInvalidValue, "every parameter is raw: give the element count with LaunchN")
		}
		return errorf(op, cuda.ErrInvalidValue, "every buffer given is raw: the element count n is the length of the buffers that are not raw; give one (%s) as a buffer, or the count with LaunchN", k.unraw())
	default:
		n = as[first].n
	}
	if err := k.overlaps(op, as); err != nil {
		return err
	}
	return k.launch(op, s, as, n)
}

// overlaps returns the error for a buffer the launch writes that shares
// memory with another of its buffers where it may not: an output may be
// an input itself (in place) or apart from it, not part of it nor of
// another element size at its address, whose elements another thread
// reads. Raw parameters are the operation's to index, and their buffers
// its to keep apart (Elementwise).
func (k *Elementwise) overlaps(op string, as []arg) error {
	for j := range as {
		if k.readOnly[j] || k.ps[j].raw {
			continue
		}
		for i := range as {
			if i == j || k.ps[i].raw {
				continue
			}
			why := "an output may be an input itself (in place), of its element type, or memory apart from it, not part of it"
			if err := overlapError(op, as, &as[j], &as[i], k.ps[j].t.goType.Size(), k.ps[i].t.goType.Size(), true, why); err != nil {
				return err
			}
		}
	}
	return nil
}

// rawAside is what the length check says of a kernel with raw parameters.
func (k *Elementwise) rawAside() string {
	for _, p := range k.ps {
		if p.raw {
			return ", raw ones aside"
		}
	}
	return ""
}

// unraw names the parameters that are not raw.
func (k *Elementwise) unraw() string {
	var ps []param
	for _, p := range k.ps {
		if !p.raw {
			ps = append(ps, p)
		}
	}
	return paramList(ps)
}

func paramList(ps []param) string {
	var names []string
	for _, p := range ps {
		if p.raw {
			names = append(names, "raw "+p.t.name+" "+p.name)
			continue
		}
		names = append(names, p.t.name+" "+p.name)
	}
	return strings.Join(names, ", ")
}

// launch runs the variant for the arguments' pattern over n elements.
func (k *Elementwise) launch(op string, s *cuda.Stream, as []arg, n int) error {
	if n == 0 {
		return nil
	}
	var key uint64
	for j, a := range as {
		if a.buffer {
			key |= 1 << j
		}
	}
	var v *variant
	if pv := k.first.Load(); pv != nil && pv.key == key {
		v = pv.v
	} else {
		k.mu.Lock()
		var ok bool
		v, ok = k.variants[key]
		if !ok {
			pattern := make([]bool, len(as))
			for j, a := range as {
				pattern[j] = a.buffer
			}
			v = &variant{src: k.source(pattern), width: k.vectorWidth(pattern)}
			k.variants[key] = v
		}
		k.mu.Unlock()
		if pv == nil {
			k.first.CompareAndSwap(nil, &patternVariant{key, v})
		}
	}
	f, err := kernel(op, s, v, k.name, as)
	if err != nil {
		return err
	}
	var buf [stackArgs + 1]any
	vals := append(launchValues(buf[:0], as), boxInt64(int64(n)))
	return launchError(op, f.Launch(elementwiseConfig(s, n, v.width), vals...), as, k.name)
}

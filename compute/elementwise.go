package compute

import (
	"fmt"
	"strings"
	"sync"

	cuda "github.com/gocuda/cuda"
)

// Elementwise is a kernel applied to every element of its buffers, made
// from a parameter list and a CUDA C body, as CuPy's ElementwiseKernel:
//
//	axpy, err := compute.NewElementwise("axpy", "float32 a, float32 x, float32 y", "float32 y", "y = a * x + y")
//	err = axpy.Launch(s, float32(2), x, y)
//
// Each parameter is given at Launch as a *cuda.DeviceBuffer of its type, or
// an input as a value of it (a scalar, the same for every element). The
// body sees, for element i, each input as a value of its type (Float16 and
// BFloat16 as float), and each output as a variable of it, which it sets;
// an output also among the inputs (by name) starts with the buffer's value,
// others start undefined. The variable i (long long) is the element's
// index and n the element count. gocuda writes the kernel around the body
// (a grid-stride loop with 64-bit indices, taking 16 bytes of each buffer
// at a time where every buffer is aligned for it, then the elements left
// one by one), compiles it with NVRTC for the device, once per argument pattern (which parameters are buffers), keeps
// it (package docs: the kernel cache) and launches it on the stream.
//
// An Elementwise is safe for use by many goroutines.
type Elementwise struct {
	name     string
	in, out  []param
	inplace  map[string]bool // outputs that are inputs too
	ps       []param         // the parameters in argument order (params)
	readOnly []bool          // by parameter: an input only, which may be a scalar
	body     string
	mu       sync.Mutex
	variants map[uint64]*variant // the source of each argument pattern (bit j: parameter j is a buffer)
}

// maxParams is the most parameters a kernel may have (a launch's pattern
// of buffers and scalars is a bit each of a uint64).
const maxParams = 64

// NewElementwise checks a kernel's declaration: its name (a C identifier),
// its inputs and outputs ("float32 x, int64 y": types of Number's, by the
// names float32, float64, float16, bfloat16, int8 ... uint64) and its body.
// Nothing is compiled until the first Launch; a body that does not compile
// is an error of that Launch, with NVRTC's log.
func NewElementwise(name, in, out, body string) (*Elementwise, error) {
	const op = "NewElementwise"
	ins, outs, err := declaration(op, name, in, out)
	if err != nil {
		return nil, err
	}
	if len(outs) == 0 {
		return nil, errorf(op, cuda.ErrInvalidValue, "kernel %s has no outputs", name)
	}
	if strings.TrimSpace(body) == "" {
		return nil, errorf(op, cuda.ErrInvalidValue, "kernel %s has an empty body", name)
	}
	k := &Elementwise{name: name, in: ins, out: outs, body: body, inplace: map[string]bool{}, variants: map[uint64]*variant{}}
	seen := map[string]bool{"i": true, "n": true}
	for _, p := range ins {
		if seen[p.name] {
			return nil, errorf(op, cuda.ErrInvalidValue, "kernel %s: %q is declared twice, or is i or n", name, p.name)
		}
		seen[p.name] = true
	}
	for _, p := range outs {
		if seen[p.name] {
			for _, q := range ins {
				if q.name == p.name && q.t.name != p.t.name {
					return nil, errorf(op, cuda.ErrInvalidValue, "kernel %s: %s is an input of type %s and an output of type %s", name, p.name, q.t.name, p.t.name)
				}
			}
			if !k.isInput(p.name) || k.inplace[p.name] {
				return nil, errorf(op, cuda.ErrInvalidValue, "kernel %s: output %q is declared twice, or is i or n", name, p.name)
			}
			k.inplace[p.name] = true
			continue
		}
		seen[p.name] = true
	}
	k.ps = k.params()
	for _, p := range k.ps {
		k.readOnly = append(k.readOnly, k.isInput(p.name) && !k.inplace[p.name])
	}
	if len(k.ps) > maxParams {
		return nil, errorf(op, cuda.ErrInvalidValue, "kernel %s has %d parameters: at most %d", name, len(k.ps), maxParams)
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
// once: 16 bytes of the widest buffer's type (4 float32, 8 bfloat16).
func (k *Elementwise) vectorWidth(buffer []bool) int {
	widest := 1
	for j, p := range k.ps {
		if buffer[j] {
			widest = max(widest, int(p.t.goType.Size()))
		}
	}
	return 16 / widest
}

// source writes the kernel for an argument pattern: buffer[j] says whether
// parameter j (in params' order) is a buffer. The body becomes a function
// of the element's values; the kernel calls it in a grid-stride loop over
// vectors of vectorWidth elements when every buffer is aligned to its
// vector's size (each buffer read and written 16 bytes or fewer at a
// time), then over the elements left (all of them when a buffer is not
// aligned, as a view into another may not be), with 64-bit indices.
func (k *Elementwise) source(buffer []bool) string {
	var b strings.Builder
	b.WriteString(prelude)
	ps := k.ps
	// The body, over values: inputs by value, outputs by reference.
	var decl, call []string
	for j, p := range ps {
		if k.readOnly[j] {
			decl = append(decl, fmt.Sprintf("const %s %s", p.t.value, p.name))
		} else {
			decl = append(decl, fmt.Sprintf("%s& %s", p.t.value, p.name))
		}
		call = append(call, p.name)
	}
	fmt.Fprintf(&b, "\n__device__ __forceinline__ void gocuda_body(%s, const long long i, const long long n) {\n%s\n}\n",
		strings.Join(decl, ", "), k.body)
	body := fmt.Sprintf("gocuda_body(%s, i, n);", strings.Join(call, ", "))

	fmt.Fprintf(&b, "extern \"C\" __global__ void %s(", k.name)
	for j, p := range ps {
		switch {
		case !buffer[j]:
			fmt.Fprintf(&b, "%s gocudap_%s, ", p.t.storage, p.name)
		case k.readOnly[j]:
			fmt.Fprintf(&b, "const %s* __restrict__ gocudap_%s, ", p.t.storage, p.name)
		default:
			fmt.Fprintf(&b, "%s* gocudap_%s, ", p.t.storage, p.name)
		}
	}
	b.WriteString("long long n) {\n")
	b.WriteString("\tconst long long gocuda_stride = (long long)blockDim.x * gridDim.x;\n\tlong long gocuda_start = 0;\n")

	// The vector loop.
	width := k.vectorWidth(buffer)
	vec := func(p param) string { return fmt.Sprintf("gocuda_vec<%s, %d>", p.t.storage, width) }
	var aligned []string
	for j, p := range ps {
		if buffer[j] {
			aligned = append(aligned, fmt.Sprintf("(unsigned long long)gocudap_%s %% sizeof(%s) == 0", p.name, vec(p)))
		}
	}
	fmt.Fprintf(&b, "\tif (%s) {\n", strings.Join(aligned, " && "))
	fmt.Fprintf(&b, "\t\tconst long long gocuda_vectors = n / %d;\n", width)
	b.WriteString("\t\tfor (long long gocuda_j = (long long)blockIdx.x * blockDim.x + threadIdx.x; gocuda_j < gocuda_vectors; gocuda_j += gocuda_stride) {\n")
	for j, p := range ps {
		switch {
		case !buffer[j]:
		case k.readOnly[j]:
			fmt.Fprintf(&b, "\t\t\tconst %[1]s gocudav_%[2]s = ((const %[1]s*)gocudap_%[2]s)[gocuda_j];\n", vec(p), p.name)
		case k.inplace[p.name]:
			fmt.Fprintf(&b, "\t\t\t%[1]s gocudav_%[2]s = ((%[1]s*)gocudap_%[2]s)[gocuda_j];\n", vec(p), p.name)
		default:
			fmt.Fprintf(&b, "\t\t\t%s gocudav_%s;\n", vec(p), p.name)
		}
	}
	fmt.Fprintf(&b, "\t\t\t#pragma unroll\n\t\t\tfor (int gocuda_k = 0; gocuda_k < %d; gocuda_k++) {\n", width)
	fmt.Fprintf(&b, "\t\t\t\tconst long long i = gocuda_j * %d + gocuda_k;\n", width)
	k.values(&b, "\t\t\t\t", buffer, "gocudav_%s.v[gocuda_k]")
	fmt.Fprintf(&b, "\t\t\t\t%s\n", body)
	for _, p := range k.out {
		fmt.Fprintf(&b, "\t\t\t\tgocudav_%s.v[gocuda_k] = %s;\n", p.name, p.t.store(p.name))
	}
	b.WriteString("\t\t\t}\n")
	for _, p := range k.out {
		fmt.Fprintf(&b, "\t\t\t((%[1]s*)gocudap_%[2]s)[gocuda_j] = gocudav_%[2]s;\n", vec(p), p.name)
	}
	fmt.Fprintf(&b, "\t\t}\n\t\tgocuda_start = gocuda_vectors * %d;\n\t}\n", width)

	// The scalar loop: the tail, or every element.
	b.WriteString("\tfor (long long i = gocuda_start + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gocuda_stride) {\n")
	k.values(&b, "\t\t", buffer, "gocudap_%s[i]")
	fmt.Fprintf(&b, "\t\t%s\n", body)
	for _, p := range k.out {
		fmt.Fprintf(&b, "\t\tgocudap_%s[i] = %s;\n", p.name, p.t.store(p.name))
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// values declares each parameter's value for element i: a buffer's element
// (element, a format of the parameter's name, says where it is), a
// scalar's value, an output's variable (an in-place one holding the
// buffer's element).
func (k *Elementwise) values(b *strings.Builder, indent string, buffer []bool, element string) {
	for j, p := range k.ps {
		v := "gocudap_" + p.name
		if buffer[j] {
			v = fmt.Sprintf(element, p.name)
		}
		switch {
		case k.readOnly[j]:
			fmt.Fprintf(b, "%sconst %s %s = %s;\n", indent, p.t.value, p.name, p.t.load(v))
		case k.inplace[p.name]:
			fmt.Fprintf(b, "%s%s %s = %s;\n", indent, p.t.value, p.name, p.t.load(v))
		default:
			fmt.Fprintf(b, "%s%s %s;\n", indent, p.t.value, p.name)
		}
	}
}

// Launch runs the kernel on s over every element: each parameter's
// argument in declaration order, inputs then outputs (an output that is an
// input is given once, as the input). Every buffer must have the same
// length, the element count, and belong to s's context; at least one
// argument is a buffer (the outputs are). Zero elements launch nothing.
func (k *Elementwise) Launch(s *cuda.Stream, args ...any) error {
	const op = "Elementwise.Launch"
	if k == nil || k.variants == nil {
		return errorf(op, cuda.ErrInvalidValue, "nil or zero *Elementwise: make one with NewElementwise")
	}
	if s == nil || s.Context() == nil {
		return errorf(op, cuda.ErrInvalidValue, "nil or zero *cuda.Stream")
	}
	ps := k.ps
	if len(args) != len(ps) {
		return errorf(op, cuda.ErrInvalidValue, "kernel %s takes %d arguments (%s), %d given", k.name, len(ps), paramList(ps), len(args))
	}
	var buf [stackArgs]arg
	as := append(buf[:0], make([]arg, len(ps))...)
	n := -1
	for j, p := range ps {
		a, err := classify(op, p, args[j], k.readOnly[j])
		if err != nil {
			return err
		}
		if a.buffer {
			if a.mem.Context() != s.Context() {
				return errorf(op, cuda.ErrInvalidValue, "%s belongs to another context than the stream", p.name)
			}
			if n >= 0 && a.n != n {
				return errorf(op, cuda.ErrInvalidValue, "%s has %d elements, and %s %d: every buffer must have as many", p.name, a.n, firstBuffer(ps, as[:j]), n)
			}
			n = a.n
		}
		as[j] = a
	}
	return k.launch(op, s, as, n)
}

func firstBuffer(ps []param, as []arg) string {
	for j, a := range as {
		if a.buffer {
			return ps[j].name
		}
	}
	return ""
}

func paramList(ps []param) string {
	var names []string
	for _, p := range ps {
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
	k.mu.Lock()
	v, ok := k.variants[key]
	if !ok {
		pattern := make([]bool, len(as))
		for j, a := range as {
			pattern[j] = a.buffer
		}
		v = &variant{src: k.source(pattern), width: k.vectorWidth(pattern)}
		k.variants[key] = v
	}
	k.mu.Unlock()
	f, err := function(op, s.Context(), v, k.name)
	if err != nil {
		return err
	}
	var buf [stackArgs + 1]any
	vals := append(launchValues(buf[:0], as), int64(n))
	if err := f.Launch(elementwiseConfig(s, n, v.width), vals...); err != nil {
		return wrap(op, err, "launching %s", k.name)
	}
	return nil
}

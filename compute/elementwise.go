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
// (a grid-stride loop with 64-bit indices), compiles it with NVRTC for the
// device, once per argument pattern (which parameters are buffers), keeps
// it (package docs: the kernel cache) and launches it on the stream.
//
// An Elementwise is safe for use by many goroutines.
type Elementwise struct {
	name     string
	in, out  []param
	inplace  map[string]bool // outputs that are inputs too
	ps       []param         // the parameters in argument order (params)
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

// source writes the kernel for an argument pattern: buffer[j] says whether
// parameter j (in params' order) is a buffer.
func (k *Elementwise) source(buffer []bool) string {
	var b strings.Builder
	b.WriteString(prelude)
	fmt.Fprintf(&b, "\nextern \"C\" __global__ void %s(", k.name)
	ps := k.ps
	for j, p := range ps {
		if buffer[j] {
			if k.isInput(p.name) && !k.inplace[p.name] {
				fmt.Fprintf(&b, "const %s* __restrict__ gocuda_%s, ", p.t.storage, p.name)
			} else {
				fmt.Fprintf(&b, "%s* gocuda_%s, ", p.t.storage, p.name)
			}
		} else {
			fmt.Fprintf(&b, "%s gocuda_%s, ", p.t.storage, p.name)
		}
	}
	b.WriteString("long long n) {\n")
	b.WriteString("\tfor (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {\n")
	for j, p := range ps {
		v := "gocuda_" + p.name
		if buffer[j] {
			v += "[i]"
		}
		switch {
		case k.isInput(p.name) && !k.inplace[p.name]:
			fmt.Fprintf(&b, "\t\tconst %s %s = %s;\n", p.t.value, p.name, p.t.load(v))
		case k.inplace[p.name]:
			fmt.Fprintf(&b, "\t\t%s %s = %s;\n", p.t.value, p.name, p.t.load(v))
		default:
			fmt.Fprintf(&b, "\t\t%s %s;\n", p.t.value, p.name)
		}
	}
	fmt.Fprintf(&b, "\t\t{\n%s\n\t\t}\n", k.body)
	for _, p := range k.out {
		fmt.Fprintf(&b, "\t\tgocuda_%s[i] = %s;\n", p.name, p.t.store(p.name))
	}
	b.WriteString("\t}\n}\n")
	return b.String()
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
	as := make([]arg, len(ps))
	n := -1
	for j, p := range ps {
		a, err := classify(op, p, args[j], k.isInput(p.name) && !k.inplace[p.name])
		if err != nil {
			return err
		}
		if a.buffer {
			if a.ctx != s.Context() {
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
		v = &variant{src: k.source(pattern)}
		k.variants[key] = v
	}
	k.mu.Unlock()
	f, err := function(op, s.Context(), v, k.name)
	if err != nil {
		return err
	}
	vals := append(launchValues(as, 1), int64(n))
	cfg, err := linearConfig(s, n)
	if err != nil {
		return wrap(op, err, "sizing the launch of %s", k.name)
	}
	return wrap(op, f.Launch(cfg, vals...), "launching %s", k.name)
}

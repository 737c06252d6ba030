package nd

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
)

// Softmax, LogSoftmax and Cumsum along an axis that is not the last, of
// many lines: a thread a line, reading its elements post apart (post, the
// elements of the axes after axis), so that neighbouring threads read
// neighbouring elements. Along the rows the axis is made the last of a
// permuted copy, computed, and copied back in a's order: three passes
// over the whole array more than the operation's own, which for many
// short lines (the first axis of 16×262144: 16 elements a line, 262,144
// lines) cost more than the softmax. Few lines leave the device short of
// threads, each reading a long line alone: those keep the rows.

// linesMin is the fewest lines an array has for the thread-a-line
// kernels (tests lower it to check that kernel on small arrays). 16,384
// threads are a few per core of an H100's or H200's 132 multiprocessors.
var linesMin = 16384

// linesSeen, where a test sets it, is told each line kernel's dim, post
// and lines as it is launched.
var linesSeen func(dim, post, lines int)

// lineFunc computes lines of dim elements, post apart, of src into dst
// (both contiguous, of the same shape): lines of them on s.
type lineFunc[T Elem] func(dst, src *cuda.DeviceBuffer[T], dim, post, lines int, s *cuda.Stream) error

// alongLines computes f along axis of a, a thread a line, into dst or a
// new array, where a and dst are operands rowwise would take without an
// error, axis is not the last, and a has linesMin lines or more; ok is
// false, and nothing done, where not (rowwise then reports what is wrong,
// or computes the rows).
func alongLines[T Elem](op string, a *Array[T], axis int, dst *Array[T], f lineFunc[T]) (result *Array[T], ok bool, err error) {
	if a.check(op, "a") != nil || a.scalar || a.layout.Size() == 0 {
		return nil, false, nil
	}
	n := a.layout.Ndim()
	ax, err := axisOf(op, axis, n)
	if err != nil || ax == n-1 {
		return nil, false, nil
	}
	dim := a.layout.Dim(ax)
	lines := a.layout.Size() / dim
	if lines < linesMin {
		return nil, false, nil
	}
	if dst != nil && (writable(op, "dst", dst) != nil || !sameShape(dst.layout, a.layout) || dst.s != a.s) {
		return nil, false, nil
	}
	post := 1
	for d := ax + 1; d < n; d++ {
		post *= a.layout.Dim(d)
	}
	src := a
	if !a.layout.IsContiguous() {
		if src, err = contiguous(op, a); err != nil {
			return nil, true, err
		}
		defer freedTemp(&err, src, a)
	}
	// Into a contiguous dst that shares no memory with a, the kernel
	// writes dst itself: no result to allocate and copy.
	out := dst
	if dst == nil || !dst.layout.IsContiguous() || overlapping(op, dst, a) {
		if out, err = empty[T](op, a.s, a.layout.Shape()); err != nil {
			return nil, true, err
		}
	}
	if linesSeen != nil {
		linesSeen(dim, post, lines)
	}
	if err := lineLaunch(op, out, src, dim, post, lines, f); err != nil {
		if out != dst {
			out.Free()
		}
		return nil, true, err
	}
	if dst == nil {
		return out, true, nil
	}
	if out != dst {
		defer freed(&err, out)
		return nil, true, copyInto(op, dst, out)
	}
	return nil, true, nil
}

// lineLaunch runs f over the contiguous arrays' buffers.
func lineLaunch[T Elem](op string, out, src *Array[T], dim, post, lines int, f lineFunc[T]) error {
	in, err := src.Buffer()
	if err != nil {
		return wrap(op, err)
	}
	o, err := out.Buffer()
	if err != nil {
		return wrap(op, err)
	}
	return wrap(op, f(o, in, dim, post, lines, src.s))
}

// softmaxLines returns Softmax's (LogSoftmax's where log) lineFunc: a
// line's three passes as compute's rows take them (the largest, a NaN its
// own largest; the sum of e^(x - m), 1 where x is m; the results), in
// T's arithmetic type, with compute's exponential (__expf for the halves,
// whose rounding hides its error) and its forms of the results, so that
// a line's results are a row's but for the order of the sum's terms.
func softmaxLines[T cuda.AnyFloat](log bool) lineFunc[T] {
	return func(dst, src *cuda.DeviceBuffer[T], dim, post, lines int, s *cuda.Stream) error {
		t := ctypeOf[T]()
		name, sub := "softmax", "lines"
		if log {
			name = "logsoftmax"
		}
		k, err := rowKernel(name, sub, t, func() compute.ElementwiseSpec {
			v, exp := t.value, "exp"
			if t.half {
				exp = "__expf"
			}
			// d, of the sum, and a result, of x, m and d.
			d, kept := "sum", fmt.Sprintf("%s(x - m) / d", exp)
			switch {
			case log:
				d, kept = "log(sum)", "x - m - d"
			case t.half:
				d, kept = "1 / sum", fmt.Sprintf("%s(x - m) * d", exp)
			}
			return compute.ElementwiseSpec{Name: "nd_" + name + "_lines_" + t.name,
				InParams: fmt.Sprintf("raw %s src, int64 dim, int64 post", t.name), OutParams: fmt.Sprintf("raw %s dst", t.name),
				Operation: fmt.Sprintf(`const long long p = i / post, base = p * dim * post + (i - p * post);
%[1]s m = src[base];
#pragma unroll 4
for (long long k = 1; k < dim; k++) { const %[1]s x = src[base + k * post]; m = (x != x || x > m) ? x : m; }
%[1]s sum = 0;
#pragma unroll 4
for (long long k = 0; k < dim; k++) { const %[1]s x = src[base + k * post]; sum += x == m ? (%[1]s)1 : %[2]s(x - m); }
const %[1]s d = %[3]s;
#pragma unroll 4
for (long long k = 0; k < dim; k++) { const long long j = base + k * post; const %[1]s x = src[j]; dst[j] = %[4]s; }`, v, exp, d, kept)}
		})
		if err != nil {
			return err
		}
		return k.LaunchN(s, lines, src, int64(dim), int64(post), dst)
	}
}

// cumsumLines is Cumsum's lineFunc: each line's running sum, folded in
// order by its thread (in 64 bits for integers, float32 for the halves,
// as Sum; of Bools, true from the first true on: as a byte, 256 trues
// would wrap to a false), the same bits as along the rows.
func cumsumLines[T Elem](dst, src *cuda.DeviceBuffer[T], dim, post, lines int, s *cuda.Stream) error {
	t := ctypeOf[T]()
	name, sub, conv := "nd_cumsum_"+t.name, "", fmt.Sprintf("(%s)acc", t.value)
	if isBool[T]() {
		name, sub, conv = "nd_cumsum_bool", "bool", "(acc != 0)"
	}
	k, err := rowKernel("cumsum", sub, t, func() compute.ElementwiseSpec {
		acc := map[string]string{"float32": "float", "float64": "double", "int64": "long long", "uint64": "unsigned long long"}[accOf(t)]
		return compute.ElementwiseSpec{Name: name, InParams: fmt.Sprintf("raw %s x, int64 dim, int64 post", t.name), OutParams: fmt.Sprintf("raw %s y", t.name),
			Operation: fmt.Sprintf(`const long long p = i / post, base = p * dim * post + (i - p * post);
%s acc = 0;
for (long long k = 0; k < dim; k++) { const long long j = base + k * post; acc += x[j]; y[j] = %s; }`, acc, conv)}
	})
	if err != nil {
		return err
	}
	return k.LaunchN(s, lines, src, int64(dim), int64(post), dst)
}

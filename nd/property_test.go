package nd_test

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// Property tests: random arrays (any shape of up to 6 axes, zero-size and
// size-1 axes, random element types) seen through random chains of views
// (permutes, slices of any step, indexes, unsqueezes and squeezes,
// broadcasts, reshapes that view or copy), and the operations on them
// checked against a reference computed in Go on the host. The reference
// keeps its own strides and offset for every view (ref below): it does
// not use internal/ndshape, so that the tests check ndshape's arithmetic
// too, not only the kernels.
//
// Each case draws from its own generator, seeded by the run's seed and the
// case's number, so that one failing case replays alone:
//
//	go test ./nd -run '^TestPropertyBinary$' -nd.seed=S -nd.case=I
//
// The seed is 1 unless -nd.seed or $GOCUDA_ND_SEED gives another, or
// "random" for a fresh one (printed where a case fails): a fixed seed
// keeps the suite deterministic, and quick where the kernels it compiles
// for the host are cached (internal/hostcc), while a random one explores.
// -nd.cases or $GOCUDA_ND_CASES sets the number of cases of every
// property. The defaults keep the file to a few seconds on the fake driver
// once the kernels of the seed's cases are in hostcc's cache; compiling
// them all for the host the first time takes a few minutes on two cores.

var (
	ndSeed  = flag.String("nd.seed", "", `the nd property tests' seed: a number, or "random" ("": $GOCUDA_ND_SEED, else 1)`)
	ndCase  = flag.Int("nd.case", -1, "run only this case of each nd property test (with -nd.seed, to replay a failure)")
	ndCases = flag.Int("nd.cases", 0, "cases per nd property test (0: $GOCUDA_ND_CASES, else each test's default)")
)

// propSeed is the run's seed, chosen once.
var propSeed = sync.OnceValues(func() (uint64, error) {
	v := *ndSeed
	if v == "" {
		v = os.Getenv("GOCUDA_ND_SEED")
	}
	switch v {
	case "":
		return 1, nil
	case "random":
		return uint64(time.Now().UnixNano()), nil
	}
	return strconv.ParseUint(v, 10, 64)
})

// propStream is the stream of a property test. (The properties do not
// run in parallel: the tests' leak checks count the fake driver's
// resources, all tests' together.)
func propStream(t *testing.T) *cuda.Stream {
	t.Helper()
	requireKernels(t)
	return stream(t)
}

// forCases runs f for n cases (or as many as the flag or the environment
// say), each a subtest with a generator of its own, stopping at the first
// that fails with the command that replays it. A panic fails the case
// rather than the run: the operations must return errors, never panic.
func forCases(t *testing.T, n int, f func(t *testing.T, rng *rand.Rand)) {
	t.Helper()
	if *ndCases > 0 {
		n = *ndCases
	} else if v, err := strconv.Atoi(os.Getenv("GOCUDA_ND_CASES")); err == nil && v > 0 {
		n = v
	}
	seed, err := propSeed()
	if err != nil {
		t.Fatalf("-nd.seed or $GOCUDA_ND_SEED: %v", err)
	}
	for i := range n {
		if *ndCase >= 0 && i != *ndCase {
			continue
		}
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		ok := t.Run(strconv.Itoa(i), func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panic: %v\n%s", p, debug.Stack())
				}
			}()
			f(t, rng)
		})
		if !ok {
			t.Fatalf("case %d failed; replay it: go test ./nd -run '^%s$' -nd.seed=%d -nd.case=%d", i, t.Name(), seed, i)
		}
	}
}

// oneOf calls one of fs, drawn at random: the property at a random
// element type (Go has no generic function values).
func oneOf(rng *rand.Rand, fs ...func()) { fs[rng.IntN(len(fs))]() }

// ---- Element values ----

// valueKind says which values an array holds: small integers or halves
// (sums and products of a few stay exact in every type), values whose
// products stay powers of two, nonnegative ones, or masks.
type valueKind int

const (
	smallValues  valueKind = 0 // (iota is the tests' helper here)
	prodValues   valueKind = 1
	nonnegValues valueKind = 2
	maskValues   valueKind = 3
)

func isFloat[T nd.Elem]() bool {
	switch any(*new(T)).(type) {
	case float32, float64, cuda.Float16, cuda.BFloat16:
		return true
	}
	return false
}

func isUnsigned[T nd.Elem]() bool {
	var z T
	z--
	return !isFloat[T]() && z > 0
}

// fromF converts v to T as Go converts: the halves rounded to nearest,
// integers through int64, wrapping as Go's conversions of integers do.
func fromF[T nd.Elem](v float64) T {
	var z T
	switch p := any(&z).(type) {
	case *cuda.Float16:
		*p = cuda.NewFloat16(float32(v))
	case *cuda.BFloat16:
		*p = cuda.NewBFloat16(float32(v))
	case *float32:
		*p = float32(v)
	case *float64:
		*p = v
	default:
		z = T(int64(v))
	}
	return z
}

// roundTo rounds v to T's values (integers wrapping), as a float64.
func roundTo[T nd.Elem](v float64) float64 {
	if !isFloat[T]() && (math.IsNaN(v) || math.IsInf(v, 0)) {
		return v
	}
	return toF64(fromF[T](v))
}

// value draws one value of the kind for T.
func value[T nd.Elem](rng *rand.Rand, kind valueKind) float64 {
	fl, un := isFloat[T](), isUnsigned[T]()
	switch kind {
	case prodValues:
		if un {
			return float64(1 + rng.IntN(3)*rng.IntN(2)) // 1, 2, 3
		}
		return []float64{-1, 1, 1, 1, -1, 1, 1, 2}[rng.IntN(8)]
	case nonnegValues:
		if fl {
			return float64(rng.IntN(17)) / 2
		}
		return float64(rng.IntN(9))
	case maskValues:
		return float64(rng.IntN(2) * (1 + rng.IntN(2))) // 0, 1 or 2: any nonzero byte is true
	}
	switch {
	case fl:
		return float64(rng.IntN(33)-16) / 2
	case un:
		return float64(rng.IntN(17))
	}
	return float64(rng.IntN(17) - 8)
}

func values[T nd.Elem](rng *rand.Rand, n int, kind valueKind) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = fromF[T](value[T](rng, kind))
	}
	return out
}

// ---- Shapes ----

func size(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// randomDim is mostly 1-4, sometimes 0 or larger.
func randomDim(rng *rand.Rand) int {
	switch p := rng.IntN(100); {
	case p < 6:
		return 0
	case p < 14:
		return 5 + rng.IntN(3)
	}
	return 1 + rng.IntN(4)
}

// randomShape has up to maxRank axes and at most 4096 elements.
func randomShape(rng *rand.Rand, maxRank int) []int {
	shape := make([]int, rng.IntN(maxRank+1))
	for i := range shape {
		shape[i] = randomDim(rng)
	}
	for size(shape) > 4096 {
		i := slices.Index(shape, slices.Max(shape))
		shape[i] /= 2
	}
	return shape
}

// derive returns a shape that broadcasts with shape to shape itself:
// leading axes dropped, some axes set to 1.
func derive(rng *rand.Rand, shape []int) []int {
	out := slices.Clone(shape[rng.IntN(len(shape)+1):])
	for i := range out {
		if rng.IntN(3) == 0 {
			out[i] = 1
		}
	}
	return out
}

// factor returns a random shape of n elements (of up to 6 axes).
func factor(rng *rand.Rand, n int) []int {
	if n == 0 {
		shape := make([]int, 1+rng.IntN(4))
		for i := range shape {
			shape[i] = rng.IntN(5)
		}
		shape[rng.IntN(len(shape))] = 0
		return shape
	}
	shape := make([]int, rng.IntN(7))
	if len(shape) == 0 && n != 1 {
		shape = make([]int, 1+rng.IntN(6))
	}
	for i := range shape {
		shape[i] = 1
	}
	for p := 2; n > 1; {
		if n%p != 0 {
			p++
			continue
		}
		shape[rng.IntN(len(shape))] *= p
		n /= p
	}
	return shape
}

// broadcastHost is NumPy's broadcast of shapes, and false where they
// disagree (written here, not taken from ndshape).
func broadcastHost(shapes ...[]int) ([]int, bool) {
	for i, a := range shapes {
		for _, b := range shapes[i+1:] {
			for k := 1; k <= min(len(a), len(b)); k++ {
				x, y := a[len(a)-k], b[len(b)-k]
				if x != y && x != 1 && y != 1 {
					return nil, false
				}
			}
		}
	}
	return broadcastShape(shapes...), true
}

// ---- The host's views ----

// ref is the host's mirror of a device array: the elements of the memory
// it views (its base's, in order) and its own shape, strides and offset,
// computed by the view functions below as NumPy defines them.
type ref[T any] struct {
	base     []T
	shape    []int
	strides  []int
	offset   int
	detached bool // a Reshape copied: base mirrors the copy, not the device base
}

func contiguousRef[T any](data []T, shape []int) ref[T] {
	st := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = n
		n *= shape[i]
	}
	return ref[T]{base: data, shape: slices.Clone(shape), strides: st}
}

func (r ref[T]) pos(idx []int) int {
	p := r.offset
	for i, v := range idx {
		p += v * r.strides[i]
	}
	return p
}

func (r ref[T]) elems() []T {
	out := []T{}
	each(r.shape, func(idx []int) { out = append(out, r.base[r.pos(idx)]) })
	return out
}

func (r ref[T]) host() host[T] { return host[T]{r.elems(), slices.Clone(r.shape)} }

// overlaps reports whether two of r's indices reach one element (a
// broadcast axis): such a view cannot be written.
func (r ref[T]) overlaps() bool {
	seen := map[int]bool{}
	dup := false
	each(r.shape, func(idx []int) {
		p := r.pos(idx)
		dup = dup || seen[p]
		seen[p] = true
	})
	return dup
}

func (r ref[T]) with(shape, strides []int, offset int) ref[T] {
	r.shape, r.strides, r.offset = shape, strides, offset
	return r
}

func (r ref[T]) permute(axes []int) ref[T] {
	n := len(r.shape)
	shape, strides := make([]int, n), make([]int, n)
	for i, a := range axes {
		a = (a + n) % n
		shape[i], strides[i] = r.shape[a], r.strides[a]
	}
	return r.with(shape, strides, r.offset)
}

func (r ref[T]) transpose() ref[T] {
	axes := make([]int, len(r.shape))
	for i := range axes {
		axes[i] = len(axes) - 1 - i
	}
	return r.permute(axes)
}

// pySlice is Python's slice(start, stop, step).indices(n): the first
// index and the count (nd.None an omitted bound).
func pySlice(n, start, stop, step int) (first, count int) {
	lo, hi := 0, n
	if step < 0 {
		lo, hi = -1, n-1
	}
	norm := func(x, omitted int) int {
		if x == nd.None {
			return omitted
		}
		if x < 0 {
			x += n
		}
		return min(max(x, lo), hi)
	}
	if step > 0 {
		b, e := norm(start, 0), norm(stop, n)
		if e > b {
			count = (e - b + step - 1) / step
		}
		return b, count
	}
	b, e := norm(start, n-1), norm(stop, -1)
	if b > e {
		count = (b - e - step - 1) / -step
	}
	return b, count
}

func (r ref[T]) slice(axis, start, stop, step int) ref[T] {
	n := len(r.shape)
	axis = (axis + n) % n
	first, count := pySlice(r.shape[axis], start, stop, step)
	shape, strides := slices.Clone(r.shape), slices.Clone(r.strides)
	off := r.offset
	if count > 0 {
		off += first * r.strides[axis]
	}
	shape[axis], strides[axis] = count, r.strides[axis]*step
	return r.with(shape, strides, off)
}

func (r ref[T]) index(axis, i int) ref[T] {
	n := len(r.shape)
	axis = (axis + n) % n
	if i < 0 {
		i += r.shape[axis]
	}
	return r.with(slices.Delete(slices.Clone(r.shape), axis, axis+1), slices.Delete(slices.Clone(r.strides), axis, axis+1), r.offset+i*r.strides[axis])
}

func (r ref[T]) unsqueeze(axis int) ref[T] {
	if axis < 0 {
		axis += len(r.shape) + 1
	}
	return r.with(slices.Insert(slices.Clone(r.shape), axis, 1), slices.Insert(slices.Clone(r.strides), axis, 0), r.offset)
}

func (r ref[T]) squeeze(axes []int) ref[T] {
	n := len(r.shape)
	drop := make([]bool, n)
	for _, a := range axes {
		drop[(a+n)%n] = true
	}
	var shape, strides []int
	for i, d := range r.shape {
		if drop[i] || len(axes) == 0 && d == 1 {
			continue
		}
		shape, strides = append(shape, d), append(strides, r.strides[i])
	}
	return r.with(shape, strides, r.offset)
}

func (r ref[T]) broadcastTo(shape []int) ref[T] {
	k := len(shape) - len(r.shape)
	strides := make([]int, len(shape))
	for i := range shape {
		if j := i - k; j >= 0 && r.shape[j] == shape[i] {
			strides[i] = r.strides[j]
		}
	}
	return r.with(slices.Clone(shape), strides, r.offset)
}

// nocopy is NumPy's _attempt_nocopy_reshape: the strides of r's elements
// in newShape where no copy is needed, else false. r has elements.
func nocopy(shape, strides, newShape []int) ([]int, bool) {
	var od, os []int
	for i, d := range shape {
		if d != 1 {
			od, os = append(od, d), append(os, strides[i])
		}
	}
	ns := make([]int, len(newShape))
	oi, oj, ni, nj := 0, 1, 0, 1
	for ni < len(newShape) && oi < len(od) {
		np, op := newShape[ni], od[oi]
		for np != op {
			if np < op {
				np *= newShape[nj]
				nj++
			} else {
				op *= od[oj]
				oj++
			}
		}
		for k := oi; k < oj-1; k++ {
			if os[k] != od[k+1]*os[k+1] {
				return nil, false
			}
		}
		ns[nj-1] = os[oj-1]
		for k := nj - 1; k > ni; k-- {
			ns[k-1] = ns[k] * newShape[k]
		}
		ni, nj = nj, nj+1
		oi, oj = oj, oj+1
	}
	last := 1
	if ni >= 1 {
		last = ns[ni-1]
	}
	for k := ni; k < len(newShape); k++ {
		ns[k] = last
	}
	return ns, true
}

// reshape returns r in newShape (no -1) and whether NumPy makes it a view.
func (r ref[T]) reshape(newShape []int) (ref[T], bool) {
	if size(r.shape) == 0 {
		return r.with(slices.Clone(newShape), contiguousRef[T](nil, newShape).strides, r.offset), true
	}
	if st, ok := nocopy(r.shape, r.strides, newShape); ok {
		return r.with(slices.Clone(newShape), st, r.offset), true
	}
	c := contiguousRef(r.elems(), newShape)
	c.detached = true
	return c, false
}

// ---- Device views with their mirrors ----

// view is a device array and its host mirror, with the calls that made
// it, printed in failures.
type view[T nd.Elem] struct {
	t     *testing.T
	dev   *nd.Array[T]
	ref   ref[T]
	base  *nd.Array[T] // the device array whose memory ref.base mirrors
	steps []string
}

func (v *view[T]) String() string { return strings.Join(v.steps, " → ") }

func (v *view[T]) shape() []int { return slices.Clone(v.ref.shape) }

// writable reports whether the view can be written through to its base,
// as the host mirrors it: no broadcast axis, no copy between.
func (v *view[T]) writable() bool { return !v.ref.detached && !v.ref.overlaps() }

// newBase uploads a random array of the shape, sometimes as a Reshape of
// a 1-d upload (a view of it).
func newBase[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand, shape []int, kind valueKind) *view[T] {
	t.Helper()
	data := values[T](rng, size(shape), kind)
	v := &view[T]{t: t, ref: contiguousRef(data, shape)}
	if rng.IntN(4) == 0 && len(shape) != 1 {
		v.base = free(t, must(nd.FromSlice(s, data, len(data)))(t))
		v.dev = must(v.base.Reshape(shape...))(t)
		v.steps = []string{fmt.Sprintf("FromSlice[%s](%d).Reshape%v", v.base.Dtype(), len(data), shape)}
		return v
	}
	v.base = free(t, must(nd.FromSlice(s, data, shape...))(t))
	v.dev = v.base
	v.steps = []string{fmt.Sprintf("FromSlice[%s]%v", v.base.Dtype(), shape)}
	return v
}

// step applies one view call to the device array and the host's mirror,
// and checks the device's shape, and its strides on the axes where they
// mean something (more than one element), against the mirror's.
func (v *view[T]) step(name string, dev func(a *nd.Array[T]) (*nd.Array[T], error), want ref[T]) {
	v.t.Helper()
	v.steps = append(v.steps, name)
	got, err := dev(v.dev)
	if err != nil {
		v.t.Fatalf("%v: %v", v, err)
	}
	free(v.t, got) // a Reshape may copy: a view's Free does nothing
	v.dev = got
	v.ref = want
	if !slices.Equal(got.Shape(), want.shape) && !(len(got.Shape()) == 0 && len(want.shape) == 0) {
		v.t.Fatalf("%v: shape %v, want %v", v, got.Shape(), want.shape)
	}
	if size(want.shape) > 0 {
		st := got.Strides()
		for i, d := range want.shape {
			if d > 1 && st[i] != want.strides[i] {
				v.t.Fatalf("%v: strides %v, want %v (axis %d)", v, st, want.strides, i)
			}
		}
	}
}

func (v *view[T]) permute(axes ...int) {
	v.step(fmt.Sprintf("Permute%v", axes), func(a *nd.Array[T]) (*nd.Array[T], error) { return a.Permute(axes...) }, v.ref.permute(axes))
}

func (v *view[T]) transpose() {
	v.step("T()", func(a *nd.Array[T]) (*nd.Array[T], error) { return a.T(), nil }, v.ref.transpose())
}

func bound(x int) string {
	if x == nd.None {
		return "None"
	}
	return strconv.Itoa(x)
}

func (v *view[T]) slice(axis, start, stop, step int) {
	v.step(fmt.Sprintf("Slice(%d, %s, %s, %d)", axis, bound(start), bound(stop), step), func(a *nd.Array[T]) (*nd.Array[T], error) { return a.Slice(axis, start, stop, step) }, v.ref.slice(axis, start, stop, step))
}

func (v *view[T]) index(axis, i int) {
	v.step(fmt.Sprintf("Index(%d, %d)", axis, i), func(a *nd.Array[T]) (*nd.Array[T], error) { return a.Index(axis, i) }, v.ref.index(axis, i))
}

func (v *view[T]) at(idx []int) {
	want := v.ref
	for range idx {
		want = want.index(0, idx[len(idx)-len(want.shape)])
	}
	v.step(fmt.Sprintf("At%v", idx), func(a *nd.Array[T]) (*nd.Array[T], error) { return a.At(idx...) }, want)
}

func (v *view[T]) unsqueeze(axis int) {
	v.step(fmt.Sprintf("Unsqueeze(%d)", axis), func(a *nd.Array[T]) (*nd.Array[T], error) { return a.Unsqueeze(axis) }, v.ref.unsqueeze(axis))
}

func (v *view[T]) squeeze(axes ...int) {
	v.step(fmt.Sprintf("Squeeze%v", axes), func(a *nd.Array[T]) (*nd.Array[T], error) { return a.Squeeze(axes...) }, v.ref.squeeze(axes))
}

func (v *view[T]) broadcastTo(shape ...int) {
	v.step(fmt.Sprintf("BroadcastTo%v", shape), func(a *nd.Array[T]) (*nd.Array[T], error) { return a.BroadcastTo(shape...) }, v.ref.broadcastTo(shape))
}

// reshape reshapes to shape (which may hold a -1) and checks that the
// device makes a view exactly where NumPy does.
func (v *view[T]) reshape(shape ...int) {
	v.t.Helper()
	full := slices.Clone(shape)
	if i := slices.Index(full, -1); i >= 0 {
		full[i] = 1
		full[i] = size(v.ref.shape) / size(full)
	}
	want, isView := v.ref.reshape(full)
	wasView := v.dev.IsView()
	v.step(fmt.Sprintf("Reshape%v", shape), func(a *nd.Array[T]) (*nd.Array[T], error) { return a.Reshape(shape...) }, want)
	if size(full) > 0 && v.dev.IsView() != isView && (wasView || isView) {
		v.t.Fatalf("%v: IsView %v after the Reshape; NumPy's reshape makes a view: %v", v, v.dev.IsView(), isView)
	}
}

// randomStep applies a random view call that is valid for v.
func (v *view[T]) randomStep(rng *rand.Rand) {
	v.t.Helper()
	shape := v.ref.shape
	n := len(shape)
	axis := func() int { return rng.IntN(n) - n*rng.IntN(2) } // negative half the time
	switch rng.IntN(11) {
	case 0:
		if n >= 2 {
			axes := rng.Perm(n)
			for i := range axes {
				if rng.IntN(3) == 0 {
					axes[i] -= n
				}
			}
			v.permute(axes...)
			return
		}
		v.transpose()
	case 1:
		v.transpose()
	case 2, 3:
		if n == 0 {
			v.unsqueeze(0)
			return
		}
		ax := axis()
		d := shape[(ax+n)%n]
		b := func() int {
			if rng.IntN(4) == 0 {
				return nd.None
			}
			return rng.IntN(2*d+5) - d - 2 // in [-d-2, d+2]
		}
		v.slice(ax, b(), b(), []int{1, 1, 2, 3, -1, -1, -2, -3}[rng.IntN(8)])
	case 4:
		var axes []int
		for i, d := range shape {
			if d > 0 {
				axes = append(axes, i)
			}
		}
		if len(axes) == 0 {
			v.transpose()
			return
		}
		ax := axes[rng.IntN(len(axes))]
		d := shape[ax]
		v.index(ax-n*rng.IntN(2), rng.IntN(2*d)-d)
	case 5:
		if size(shape) > 0 && rng.IntN(3) == 0 {
			idx := make([]int, n)
			for i, d := range shape {
				idx[i] = rng.IntN(d)
			}
			v.at(idx)
			return
		}
		if n < 6 {
			v.unsqueeze(rng.IntN(2*n+2) - n - 1)
		}
	case 6:
		var ones []int
		for i, d := range shape {
			if d == 1 {
				ones = append(ones, i)
			}
		}
		if len(ones) > 0 && rng.IntN(2) == 0 {
			v.squeeze(ones[rng.IntN(len(ones))])
			return
		}
		v.squeeze()
	case 7, 8:
		target := slices.Clone(shape)
		for i, d := range target {
			if d == 1 && rng.IntN(2) == 0 {
				target[i] = 2 + rng.IntN(3)
			}
		}
		for len(target) < 6 && rng.IntN(3) == 0 {
			target = slices.Insert(target, 0, 1+rng.IntN(3))
		}
		if size(target) <= 8192 {
			v.broadcastTo(target...)
		}
	default:
		target := factor(rng, size(shape))
		if len(target) > 0 && size(shape) > 0 && rng.IntN(3) == 0 {
			target[rng.IntN(len(target))] = -1
		}
		v.reshape(target...)
	}
}

// randomView is a random array of T seen through a random chain of up to
// 6 view calls.
func randomView[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand, kind valueKind) *view[T] {
	t.Helper()
	v := newBase[T](t, s, rng, randomShape(rng, 6), kind)
	for range rng.IntN(7) {
		v.randomStep(rng)
	}
	return v
}

// viewOf is a random view of exactly the shape: a larger base of
// permuted axes, some indexed away, sliced with random steps (negative
// among them) to the shape's lengths, permuted back, with calls that
// change nothing between (T twice, Unsqueeze then Squeeze, splitting and
// merging an axis), and broadcast where bcast allows.
func viewOf[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand, shape []int, bcast bool, kind valueKind) *view[T] {
	t.Helper()
	pre := slices.Clone(shape)
	if bcast {
		for i := range pre {
			if rng.IntN(4) == 0 {
				pre[i] = 1
			}
		}
		k := 0
		for k < len(pre) && pre[k] == 1 && rng.IntN(2) == 0 {
			k++
		}
		pre = pre[k:]
	}
	// The base's axes: pre's (dims 0..len(pre)-1) and extra ones to index
	// away (len(pre)...), in a random order.
	extra := 0
	for len(pre)+extra < 6 && rng.IntN(4) == 0 {
		extra++
	}
	order := rng.Perm(len(pre) + extra) // base axis j is logical axis order[j]
	baseShape := make([]int, len(order))
	type cut struct{ start, stop, step int }
	cuts := make([]cut, len(pre))
	for j, a := range order {
		if a >= len(pre) {
			baseShape[j] = 1 + rng.IntN(3)
			continue
		}
		d := pre[a]
		st := []int{1, 1, 1, 2, 3, -1, -1, -2}[rng.IntN(8)]
		slack := rng.IntN(3)
		if d == 0 {
			b := rng.IntN(3)
			baseShape[j] = b + slack
			cuts[a] = cut{b, b, st} // start = stop: nothing, whichever the step
			continue
		}
		span := (d-1)*abs(st) + 1
		lo := rng.IntN(slack + 1)
		baseShape[j] = span + slack
		B := baseShape[j]
		if st > 0 {
			c := cut{lo, lo + span, st}
			if c.stop == B && rng.IntN(2) == 0 {
				c.stop = nd.None
			}
			cuts[a] = c
		} else {
			c := cut{lo + span - 1, lo - 1, st}
			if c.stop < 0 {
				c.stop = nd.None
			}
			cuts[a] = c
		}
		if rng.IntN(3) == 0 && cuts[a].start != nd.None {
			cuts[a].start -= B // the same bound, counted from the end
		}
	}
	if size(baseShape) > 16384 {
		return viewOf[T](t, s, rng, shape, bcast, kind) // too big: draw again
	}
	v := newBase[T](t, s, rng, baseShape, kind)
	// Slice each of pre's axes where it lies in the base, in random order.
	for _, j := range rng.Perm(len(order)) {
		if a := order[j]; a < len(pre) {
			c := cuts[a]
			v.slice(j, c.start, c.stop, c.step)
		}
	}
	// Index the extra axes away, the last first so that the others keep
	// their places.
	var rest []int // the logical axes that remain, in base order
	for j := len(order) - 1; j >= 0; j-- {
		if order[j] >= len(pre) {
			d := baseShape[j]
			v.index(j, rng.IntN(2*d)-d)
		}
	}
	for _, a := range order {
		if a < len(pre) {
			rest = append(rest, a)
		}
	}
	// Permute to pre's order.
	perm := make([]int, len(rest))
	for i := range perm {
		perm[i] = slices.Index(rest, i)
	}
	if len(perm) > 0 {
		v.permute(perm...)
	}
	v.neutral(rng)
	if bcast && !slices.Equal(v.ref.shape, shape) {
		v.broadcastTo(shape...)
	}
	if !slices.Equal(v.ref.shape, shape) && !(len(shape) == 0 && len(v.ref.shape) == 0) {
		t.Fatalf("viewOf made shape %v, want %v (%v)", v.ref.shape, shape, v)
	}
	return v
}

func abs(x int) int { return max(x, -x) }

// neutral applies view calls that leave the elements as they are: T
// twice, Unsqueeze then Squeeze, an axis split in two and merged back
// (both views, as NumPy's), a reverse twice.
func (v *view[T]) neutral(rng *rand.Rand) {
	v.t.Helper()
	n := len(v.ref.shape)
	switch rng.IntN(6) {
	case 0:
		v.transpose()
		v.transpose()
	case 1:
		if n < 6 {
			ax := rng.IntN(n + 1)
			v.unsqueeze(ax)
			v.squeeze(ax)
		}
	case 2:
		for i, d := range v.ref.shape {
			if d >= 4 && d%2 == 0 && n < 6 {
				sh := slices.Clone(v.ref.shape)
				split := slices.Clone(sh)
				split[i] = d / 2
				split = slices.Insert(split, i, 2)
				v.reshape(split...)
				v.reshape(sh...)
				break
			}
		}
	case 3:
		if n > 0 {
			ax := rng.IntN(n)
			v.slice(ax, nd.None, nd.None, -1)
			v.slice(ax, nd.None, nd.None, -1)
		}
	}
}

// ---- Checking ----

// hostF64 is h's elements as float64.
func hostF64[T nd.Elem](r ref[T]) host[float64] { return toHostAny(r.host()) }

// match checks that a holds want's shape and elements, exactly (NaNs
// equal) or within the relative tolerance, saying where they differ.
func match[U nd.Elem](t testing.TB, what fmt.Stringer, a *nd.Array[U], want host[float64], tol float64) {
	t.Helper()
	if !slices.Equal(a.Shape(), want.shape) && !(len(a.Shape()) == 0 && len(want.shape) == 0) {
		t.Fatalf("%v: shape %v, want %v", what, a.Shape(), want.shape)
	}
	got, err := toSlice(a)
	if err != nil {
		t.Fatalf("%v: ToSlice: %v (shape %v, strides %v)", what, err, a.Shape(), a.Strides())
	}
	if len(got) != len(want.data) {
		t.Fatalf("%v: %d elements, want %d", what, len(got), len(want.data))
	}
	bad, first := 0, -1
	for i, g := range got {
		gf, w := toF64(g), want.data[i]
		if gf == w || math.IsNaN(gf) && math.IsNaN(w) || tol > 0 && math.Abs(gf-w) <= tol*math.Max(1, math.Abs(w)) {
			continue
		}
		if bad++; first < 0 {
			first = i
		}
	}
	if bad > 0 {
		idx := unravel(first, want.shape)
		msg := fmt.Sprintf("%v: %d of %d elements differ; the first, [%d] at %v, is %v, want %v", what, bad, len(got), first, idx, toF64(got[first]), want.data[first])
		if len(got) <= 64 {
			msg += fmt.Sprintf("\ngot  %v\nwant %v", got, want.data)
		}
		t.Fatal(msg)
	}
}

// toSlice is a.ToSlice, a panic returned as an error (a defect to report
// with the case, not to end the run).
func toSlice[U nd.Elem](a *nd.Array[U]) (out []U, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return a.ToSlice()
}

func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		if shape[k] > 0 {
			idx[k] = i % shape[k]
			i /= shape[k]
		}
	}
	return idx
}

// desc is a description of a case, printed by match where it fails.
type desc func() string

func (d desc) String() string { return d() }

func describe(format string, args ...any) desc {
	return func() string { return fmt.Sprintf(format, args...) }
}

// written checks that writing want (of v's shape) through v left v
// holding want and v's base holding want exactly where v reaches it, the
// rest as it was; the mirror takes the new values.
func written[T nd.Elem](t *testing.T, what fmt.Stringer, v *view[T], want host[float64]) {
	t.Helper()
	match(t, what, v.dev, want, 0)
	if v.ref.detached {
		return
	}
	k := 0
	each(v.ref.shape, func(idx []int) {
		v.ref.base[v.ref.pos(idx)] = fromF[T](want.data[k])
		k++
	})
	match(t, describe("%v: the base", what), v.base, host[float64]{toHostAny(host[T]{v.ref.base, nil}).data, v.base.Shape()}, 0)
}

// atBroadcastF is h's element at an index of a shape h broadcasts to.
func atBroadcastF(h host[float64], idx []int) float64 {
	if len(h.shape) == 0 {
		return h.data[0]
	}
	return h.atBroadcast(idx)
}

// ---- Properties ----

// TestPropertyViews: a random chain of views reads (ToSlice) what the
// host's mirror of it holds, its Contiguous and Copy hold it too, and
// CopyInto it (or into another writable view of its shape) writes through
// to the base exactly where the mirror says, and nowhere else.
func TestPropertyViews(t *testing.T) {
	s := propStream(t)
	forCases(t, 300, func(t *testing.T, rng *rand.Rand) {
		oneOf(rng,
			func() { viewCase[float32](t, s, rng) }, func() { viewCase[float64](t, s, rng) },
			func() { viewCase[int32](t, s, rng) }, func() { viewCase[int64](t, s, rng) },
			func() { viewCase[uint8](t, s, rng) }, func() { viewCase[cuda.Float16](t, s, rng) },
			func() { viewCase[cuda.BFloat16](t, s, rng) })
	})
}

func viewCase[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand) {
	v := randomView[T](t, s, rng, smallValues)
	want := hostF64(v.ref)
	match(t, v, v.dev, want, 0)
	c := free(t, must(v.dev.Contiguous())(t))
	if !c.IsContiguous() {
		t.Fatalf("%v: Contiguous gave strides %v for shape %v", v, c.Strides(), c.Shape())
	}
	match(t, describe("%v → Contiguous()", v), c, want, 0)
	cp := free(t, must(v.dev.Copy())(t))
	if cp.IsView() || !cp.IsContiguous() {
		t.Fatalf("%v: Copy is a view %v, contiguous %v", v, cp.IsView(), cp.IsContiguous())
	}
	match(t, describe("%v → Copy()", v), cp, want, 0)

	dst := v
	if !v.writable() || rng.IntN(3) == 0 {
		dst = viewOf[T](t, s, rng, v.shape(), false, smallValues)
	}
	var src *nd.Array[T]
	var srcHost host[float64]
	what := describe("CopyInto(%v, Scalar)", dst)
	if rng.IntN(4) == 0 {
		x := fromF[T](value[T](rng, smallValues))
		src, srcHost = nd.Scalar(x), host[float64]{[]float64{toF64(x)}, []int{}}
	} else {
		sv := viewOf[T](t, s, rng, derive(rng, dst.shape()), true, smallValues)
		src, srcHost = sv.dev, hostF64(sv.ref)
		what = describe("CopyInto(%v, %v)", dst, sv)
	}
	if err := nd.CopyInto(dst.dev, src); err != nil {
		t.Fatalf("%v: %v", what, err)
	}
	written(t, what, dst, broadcastOf(srcHost, dst.shape()))
}

// broadcastOf is src broadcast to shape.
func broadcastOf(src host[float64], shape []int) host[float64] {
	out := host[float64]{data: []float64{}, shape: shape}
	each(shape, func(idx []int) { out.data = append(out.data, atBroadcastF(src, idx)) })
	return out
}

// binaryOp is an elementwise operation of two operands and its reference.
type binaryOp[T nd.Elem] struct {
	name string
	f    func(a, b *nd.Array[T]) (*nd.Array[T], error)
	into func(dst, a, b *nd.Array[T]) error
	ref  func(a, b float64) float64
}

func binaryOps[T nd.Elem]() []binaryOp[T] {
	return []binaryOp[T]{
		{"Add", nd.Add[T], nd.AddInto[T], func(a, b float64) float64 { return a + b }},
		{"Sub", nd.Sub[T], nd.SubInto[T], func(a, b float64) float64 { return a - b }},
		{"Mul", nd.Mul[T], nd.MulInto[T], func(a, b float64) float64 { return a * b }},
		{"Maximum", nd.Maximum[T], nd.MaximumInto[T], math.Max},
		{"Minimum", nd.Minimum[T], nd.MinimumInto[T], math.Min},
	}
}

// compareOps are the comparisons, by CompareInto's names.
var compareOps = map[string]func(a, b float64) bool{
	"==": func(a, b float64) bool { return a == b }, "!=": func(a, b float64) bool { return a != b },
	"<": func(a, b float64) bool { return a < b }, "<=": func(a, b float64) bool { return a <= b },
	">": func(a, b float64) bool { return a > b }, ">=": func(a, b float64) bool { return a >= b },
}

func compareFunc[T nd.Elem](cmp string) func(a, b *nd.Array[T]) (*nd.Array[nd.Bool], error) {
	return map[string]func(a, b *nd.Array[T]) (*nd.Array[nd.Bool], error){
		"==": nd.Equal[T], "!=": nd.NotEqual[T], "<": nd.Less[T], "<=": nd.LessEqual[T], ">": nd.Greater[T], ">=": nd.GreaterEqual[T],
	}[cmp]
}

func bool64(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// operand is an operand of an operation: a random view, or a Scalar.
type operand[T nd.Elem] struct {
	v    *view[T] // nil for a Scalar
	dev  *nd.Array[T]
	host host[float64]
}

func (o operand[T]) String() string {
	if o.v == nil {
		return fmt.Sprintf("Scalar(%v)", o.host.data[0])
	}
	return o.v.String()
}

// operandOf is a random view of the shape, or a Scalar (where scalar
// allows) a fifth of the time.
func operandOf[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand, shape []int, scalar bool, kind valueKind) operand[T] {
	t.Helper()
	if scalar && rng.IntN(5) == 0 {
		x := fromF[T](value[T](rng, kind))
		return operand[T]{dev: nd.Scalar(x), host: host[float64]{[]float64{toF64(x)}, []int{}}}
	}
	v := viewOf[T](t, s, rng, shape, true, kind)
	return operand[T]{v: v, dev: v.dev, host: hostF64(v.ref)}
}

// intoTarget is a writable view of the shape for an Into form: a fresh
// one, or (where it may) the operand itself when it is writable and of
// the shape, so that the output overlaps an input.
func intoTarget[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand, shape []int, operands ...operand[T]) *view[T] {
	t.Helper()
	for _, o := range operands {
		if o.v != nil && rng.IntN(3) == 0 && o.v.writable() && slices.Equal(o.v.ref.shape, shape) {
			return o.v
		}
	}
	return viewOf[T](t, s, rng, shape, false, smallValues)
}

// TestPropertyBinary: the binary elementwise operations, comparisons and
// Where over random views whose shapes broadcast (one derived from the
// other by dropping leading axes and setting axes to 1), and Scalars:
// the result has NumPy's broadcast shape and the host's elements, and
// the Into forms write the same into a random view (sometimes an
// operand's own memory).
func TestPropertyBinary(t *testing.T) {
	s := propStream(t)
	forCases(t, 100, func(t *testing.T, rng *rand.Rand) {
		oneOf(rng,
			func() { binaryCase[float32](t, s, rng) }, func() { binaryCase[float64](t, s, rng) },
			func() { binaryCase[int32](t, s, rng) }, func() { binaryCase[int64](t, s, rng) },
			func() { binaryCase[uint8](t, s, rng) }, func() { binaryCase[cuda.Float16](t, s, rng) },
			func() { binaryCase[cuda.BFloat16](t, s, rng) })
	})
}

func binaryCase[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand) {
	a := randomView[T](t, s, rng, smallValues)
	x := operand[T]{v: a, dev: a.dev, host: hostF64(a.ref)}
	y := operandOf[T](t, s, rng, derive(rng, a.shape()), true, smallValues)
	if rng.IntN(2) == 0 {
		x, y = y, x
	}
	shape, _ := broadcastHost(x.host.shape, y.host.shape)
	switch k := rng.IntN(12); {
	case k < 5:
		op := binaryOps[T]()[k]
		what := describe("%s(%v, %v)", op.name, x, y)
		want := mapHost(func(xs []float64) float64 { return roundTo[T](op.ref(xs[0], xs[1])) }, x.host, y.host)
		got, err := op.f(x.dev, y.dev)
		if err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		match(t, what, free(t, got), want, 0)
		dst := intoTarget(t, s, rng, shape, x, y)
		what = describe("%sInto(%v, %v, %v)", op.name, dst, x, y)
		if err := op.into(dst.dev, x.dev, y.dev); err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		written(t, what, dst, want)
	case k < 11:
		cmp := []string{"==", "!=", "<", "<=", ">", ">="}[k-5]
		what := describe("%q(%v, %v)", cmp, x, y)
		want := mapHost(func(xs []float64) float64 { return bool64(compareOps[cmp](xs[0], xs[1])) }, x.host, y.host)
		got, err := compareFunc[T](cmp)(x.dev, y.dev)
		if err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		match(t, what, free(t, got), want, 0)
		dst := viewOf[nd.Bool](t, s, rng, shape, false, maskValues)
		what = describe("CompareInto(%v, %v, %v, %q)", dst, x, y, cmp)
		if err := nd.CompareInto(dst.dev, x.dev, y.dev, cmp); err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		written(t, what, dst, want)
	default:
		m := viewOf[nd.Bool](t, s, rng, derive(rng, shape), true, maskValues)
		mh := hostF64(m.ref)
		if rng.IntN(2) == 0 {
			// The mask of the full shape, the operands derived.
			m = viewOf[nd.Bool](t, s, rng, shape, true, maskValues)
			mh = hostF64(m.ref)
		}
		shape, _ = broadcastHost(mh.shape, shape)
		what := describe("Where(%v, %v, %v)", m, x, y)
		want := mapHost(func(xs []float64) float64 {
			if xs[0] != 0 {
				return xs[1]
			}
			return xs[2]
		}, mh, x.host, y.host)
		got, err := nd.Where(m.dev, x.dev, y.dev)
		if err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		match(t, what, free(t, got), want, 0)
		dst := intoTarget(t, s, rng, shape, x, y)
		what = describe("WhereInto(%v, %v, %v, %v)", dst, m, x, y)
		if err := nd.WhereInto(dst.dev, m.dev, x.dev, y.dev); err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		written(t, what, dst, want)
	}
}

// TestPropertyBroadcastErrors: shapes that cannot broadcast (one axis of
// each not 1 and different) give an error wrapping cuda.ErrInvalidValue
// that prints both shapes, from every binary operation and from an Into
// form; and an Into form's dst of another shape than the broadcast's is
// refused, printing both.
func TestPropertyBroadcastErrors(t *testing.T) {
	s := propStream(t)
	forCases(t, 100, func(t *testing.T, rng *rand.Rand) {
		oneOf(rng, func() { broadcastErrorCase[float32](t, s, rng) }, func() { broadcastErrorCase[int64](t, s, rng) }, func() { broadcastErrorCase[cuda.BFloat16](t, s, rng) })
	})
}

// badShape returns a shape that cannot broadcast with shape (nil where
// none can: every axis 1).
func badShape(rng *rand.Rand, shape []int) []int {
	var axes []int
	for i, d := range shape {
		if d != 1 {
			axes = append(axes, i)
		}
	}
	if len(axes) == 0 {
		return nil
	}
	ax := axes[rng.IntN(len(axes))]
	out := slices.Clone(shape[ax:]) // aligned from the end with shape's axis ax
	for i := 1; i < len(out); i++ {
		if rng.IntN(3) == 0 {
			out[i] = 1
		}
	}
	for out[0] == shape[ax] || out[0] == 1 {
		out[0] = rng.IntN(6)
	}
	if rng.IntN(2) == 0 {
		out = append(slices.Clone(shape[:ax]), out...)
	}
	return out
}

func wantShapeError(t *testing.T, what fmt.Stringer, err error, shapes ...[]int) {
	t.Helper()
	if !errors.Is(err, cuda.ErrInvalidValue) {
		t.Fatalf("%v: %v, want an error wrapping ErrInvalidValue", what, err)
	}
	for _, sh := range shapes {
		if !strings.Contains(err.Error(), fmt.Sprint(sh)) {
			t.Fatalf("%v: %q does not print the shape %v", what, err, sh)
		}
	}
}

func broadcastErrorCase[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand) {
	var sa []int
	for sa == nil || badShape(rng, sa) == nil {
		sa = randomShape(rng, 6)
	}
	sb := badShape(rng, sa)
	if _, ok := broadcastHost(sa, sb); ok {
		t.Fatalf("badShape(%v) = %v broadcasts", sa, sb)
	}
	a := viewOf[T](t, s, rng, sa, true, smallValues)
	b := viewOf[T](t, s, rng, sb, true, smallValues)
	x, y := a, b
	if rng.IntN(2) == 0 {
		x, y = b, a
	}
	what := describe("(%v, %v)", x, y)
	for _, op := range binaryOps[T]() {
		r, err := op.f(x.dev, y.dev)
		free(t, r)
		wantShapeError(t, describe("%s%v", op.name, what), err, sa, sb)
	}
	r, err := nd.Less(x.dev, y.dev)
	free(t, r)
	wantShapeError(t, describe("Less%v", what), err, sa, sb)
	dst := viewOf[T](t, s, rng, sa, false, smallValues)
	wantShapeError(t, describe("AddInto%v", what), nd.AddInto(dst.dev, x.dev, y.dev), sa, sb)
	// A dst of the wrong shape for operands that broadcast.
	c := viewOf[T](t, s, rng, derive(rng, sa), true, smallValues)
	wrong := sb
	wd := viewOf[T](t, s, rng, wrong, false, smallValues)
	full, _ := broadcastHost(sa, c.ref.shape)
	wantShapeError(t, describe("MulInto(%v, %v, %v)", wd, a, c), nd.MulInto(wd.dev, a.dev, c.dev), wrong, full)
}

// TestPropertyUnary: the unary operations of every type (Neg, Abs, Sign,
// Relu) exactly, the floats' (Exp, Log, Sqrt, Sin, Cos, Tanh, Sigmoid,
// Floor, Ceil, Round) within a tolerance, their Into forms, and Cast
// between any two of the types, as Go's conversions convert.
func TestPropertyUnary(t *testing.T) {
	s := propStream(t)
	forCases(t, 100, func(t *testing.T, rng *rand.Rand) {
		if rng.IntN(2) == 0 {
			oneOf(rng,
				func() { castFrom[float32](t, s, rng) }, func() { castFrom[float64](t, s, rng) },
				func() { castFrom[int32](t, s, rng) }, func() { castFrom[int64](t, s, rng) },
				func() { castFrom[uint8](t, s, rng) }, func() { castFrom[cuda.Float16](t, s, rng) },
				func() { castFrom[cuda.BFloat16](t, s, rng) })
			return
		}
		oneOf(rng,
			func() { unaryFloatCase[float32](t, s, rng) }, func() { unaryFloatCase[float64](t, s, rng) },
			func() { unaryCase[int32](t, s, rng) }, func() { unaryCase[int64](t, s, rng) },
			func() { unaryCase[uint8](t, s, rng) }, func() { unaryFloatCase[cuda.Float16](t, s, rng) },
			func() { unaryFloatCase[cuda.BFloat16](t, s, rng) })
	})
}

type unaryOp[T nd.Elem] struct {
	name string
	f    func(a *nd.Array[T]) (*nd.Array[T], error)
	into func(dst, a *nd.Array[T]) error
	ref  func(x float64) float64
	tol  bool // transcendental: within a tolerance
}

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return x
}

func intUnaryOps[T nd.Elem]() []unaryOp[T] {
	return []unaryOp[T]{
		{"Neg", nd.Neg[T], nd.NegInto[T], func(x float64) float64 { return -x }, false},
		{"Abs", nd.Abs[T], nd.AbsInto[T], math.Abs, false},
		{"Sign", nd.Sign[T], nd.SignInto[T], sign, false},
		{"Relu", nd.Relu[T], nd.ReluInto[T], func(x float64) float64 { return math.Max(x, 0) }, false},
	}
}

func floatUnaryOps[T cuda.AnyFloat]() []unaryOp[T] {
	return append(intUnaryOps[T](),
		unaryOp[T]{"Exp", nd.Exp[T], nd.ExpInto[T], math.Exp, true},
		unaryOp[T]{"Log", nd.Log[T], nd.LogInto[T], math.Log, true},
		unaryOp[T]{"Sqrt", nd.Sqrt[T], nd.SqrtInto[T], math.Sqrt, true},
		unaryOp[T]{"Sin", nd.Sin[T], nd.SinInto[T], math.Sin, true},
		unaryOp[T]{"Cos", nd.Cos[T], nd.CosInto[T], math.Cos, true},
		unaryOp[T]{"Tanh", nd.Tanh[T], nd.TanhInto[T], math.Tanh, true},
		unaryOp[T]{"Sigmoid", nd.Sigmoid[T], nd.SigmoidInto[T], func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, true},
		unaryOp[T]{"Floor", nd.Floor[T], nd.FloorInto[T], math.Floor, false},
		unaryOp[T]{"Ceil", nd.Ceil[T], nd.CeilInto[T], math.Ceil, false},
		unaryOp[T]{"Round", nd.Round[T], nd.RoundInto[T], math.RoundToEven, false},
	)
}

// floatTol is the tolerance of a transcendental function of T, computed
// in T's arithmetic type and rounded to T.
func floatTol[T nd.Elem]() float64 {
	switch any(*new(T)).(type) {
	case cuda.Float16, cuda.BFloat16:
		return 1e-2
	}
	return 1e-5
}

func unaryCase[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand) {
	ops := intUnaryOps[T]()
	unaryWith(t, s, rng, ops[rng.IntN(len(ops))])
}

func unaryFloatCase[T cuda.AnyFloat](t *testing.T, s *cuda.Stream, rng *rand.Rand) {
	ops := floatUnaryOps[T]()
	unaryWith(t, s, rng, ops[rng.IntN(len(ops))])
}

func unaryWith[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand, op unaryOp[T]) {
	a := randomView[T](t, s, rng, smallValues)
	x := operand[T]{v: a, dev: a.dev, host: hostF64(a.ref)}
	tol := 0.0
	if op.tol {
		tol = floatTol[T]()
	}
	want := mapHost(func(xs []float64) float64 { return roundTo[T](op.ref(xs[0])) }, x.host)
	what := describe("%s(%v)", op.name, a)
	got, err := op.f(a.dev)
	if err != nil {
		t.Fatalf("%v: %v", what, err)
	}
	match(t, what, free(t, got), want, tol)
	dst := intoTarget(t, s, rng, a.shape(), x)
	what = describe("%sInto(%v, %v)", op.name, dst, a)
	if err := op.into(dst.dev, a.dev); err != nil {
		t.Fatalf("%v: %v", what, err)
	}
	if tol == 0 {
		written(t, what, dst, want)
	} else {
		match(t, what, dst.dev, want, tol)
	}
}

// castFrom casts a random view of T to a random type.
func castFrom[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand) {
	oneOf(rng,
		func() { castCase[float32, T](t, s, rng) }, func() { castCase[float64, T](t, s, rng) },
		func() { castCase[int32, T](t, s, rng) }, func() { castCase[int64, T](t, s, rng) },
		func() { castCase[uint8, T](t, s, rng) }, func() { castCase[cuda.Float16, T](t, s, rng) },
		func() { castCase[cuda.BFloat16, T](t, s, rng) })
}

// castCase checks Cast[U] of a random view of T against Go's conversion:
// a float truncated toward zero to an integer, integers wrapping, the
// halves rounded to nearest (values a float to unsigned conversion
// defines: nonnegative).
func castCase[U, T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand) {
	kind := smallValues
	if isUnsigned[U]() && isFloat[T]() {
		kind = nonnegValues
	}
	a := randomView[T](t, s, rng, kind)
	conv := func(x float64) float64 {
		if !isFloat[U]() {
			x = math.Trunc(x)
		}
		return roundTo[U](x)
	}
	want := mapHost(func(xs []float64) float64 { return conv(xs[0]) }, hostF64(a.ref))
	what := describe("Cast[%s](%v)", (&nd.Array[U]{}).Dtype(), a)
	got, err := nd.Cast[U](a.dev)
	if err != nil {
		t.Fatalf("%v: %v", what, err)
	}
	match(t, what, free(t, got), want, 0)
	if rng.IntN(2) == 0 {
		dst := viewOf[U](t, s, rng, a.shape(), false, smallValues)
		what = describe("CastInto(%v, %v)", dst, a)
		if err := nd.CastInto(dst.dev, a.dev); err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		written(t, what, dst, want)
	}
}

// TestPropertyReductions: Sum, Prod (of values whose products are powers
// of two), Max, Min, Mean, All and Any over a random set of axes of a
// random view (or all of them), with and without KeepDims, against the
// host's fold: an empty fold gives the identity (Sum 0, Prod 1, All true,
// Any false, Mean NaN) or, for Max and Min, an error.
func TestPropertyReductions(t *testing.T) {
	s := propStream(t)
	forCases(t, 150, func(t *testing.T, rng *rand.Rand) {
		oneOf(rng,
			func() { reduceCase[float32](t, s, rng, meanOf[float32]) }, func() { reduceCase[float64](t, s, rng, meanOf[float64]) },
			func() { reduceCase[int32](t, s, rng, nil) }, func() { reduceCase[int64](t, s, rng, nil) },
			func() { reduceCase[uint8](t, s, rng, nil) }, func() { reduceCase[cuda.Float16](t, s, rng, meanOf[cuda.Float16]) },
			func() { reduceCase[cuda.BFloat16](t, s, rng, meanOf[cuda.BFloat16]) })
	})
}

func meanOf[T cuda.AnyFloat](a *nd.Array[T], x nd.Axes) (*nd.Array[T], error) { return nd.Mean(a, x) }

// randomAxes is a random nonempty set of a's axes (negative half the time,
// in any order) or all of them, the axes as the host's fold takes them
// (nil: all), and the Axes.
func randomAxes(rng *rand.Rand, n int) ([]int, nd.Axes) {
	if n == 0 || rng.IntN(4) == 0 {
		return nil, nd.Along()
	}
	var axes, named []int
	for _, a := range rng.Perm(n)[:1+rng.IntN(n)] {
		axes = append(axes, a)
		named = append(named, a-n*rng.IntN(2))
	}
	return axes, nd.Along(named...)
}

func reduceCase[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand, mean func(*nd.Array[T], nd.Axes) (*nd.Array[T], error)) {
	op := []string{"Sum", "Prod", "Max", "Min", "Mean", "All", "Any"}[rng.IntN(7)]
	if op == "Mean" && mean == nil {
		op = "Sum"
	}
	kind := smallValues
	switch op {
	case "Prod":
		kind = prodValues
	case "All", "Any":
		kind = maskValues
		if rng.IntN(2) == 0 {
			kind = smallValues
		}
	}
	a := randomView[T](t, s, rng, kind)
	axes, x := randomAxes(rng, len(a.ref.shape))
	keep := rng.IntN(2) == 0
	if keep {
		x = x.KeepDims()
	}
	fl := isFloat[T]()
	folds := map[string]func([]float64) float64{
		"Sum": func(xs []float64) float64 { return roundTo[T](sum(xs)) },
		"Prod": func(xs []float64) float64 {
			if fl {
				p := 1.0
				for _, v := range xs {
					p *= v
				}
				return roundTo[T](p)
			}
			p := int64(1) // wrapping, as the integers' products do
			for _, v := range xs {
				p *= int64(v)
			}
			return toF64(T(p))
		},
		"Max":  func(xs []float64) float64 { return slices.Max(xs) },
		"Min":  func(xs []float64) float64 { return slices.Min(xs) },
		"Mean": func(xs []float64) float64 { return roundTo[T](sum(xs) / float64(len(xs))) },
		"All": func(xs []float64) float64 {
			return bool64(!slices.ContainsFunc(xs, func(v float64) bool { return v == 0 }))
		},
		"Any": func(xs []float64) float64 {
			return bool64(slices.ContainsFunc(xs, func(v float64) bool { return v != 0 }))
		},
	}
	what := describe("%s(%v, %v)", op, a, x)
	// The fold's count and the result's size, for the empty folds.
	count, rest := 1, 1
	for i, d := range a.ref.shape {
		if axes == nil || slices.Contains(axes, i) {
			count *= d
		} else {
			rest *= d
		}
	}
	if (op == "Max" || op == "Min") && count == 0 {
		var err error
		if op == "Max" {
			r, e := nd.Max(a.dev, x)
			free(t, r)
			err = e
		} else {
			r, e := nd.Min(a.dev, x)
			free(t, r)
			err = e
		}
		if rest > 0 && !errors.Is(err, cuda.ErrInvalidValue) {
			t.Fatalf("%v: %v, want an error wrapping ErrInvalidValue (an empty fold)", what, err)
		}
		return
	}
	want := foldHost(hostF64(a.ref), axes, keep, folds[op])
	tol := 0.0
	if op == "Mean" {
		tol = floatTol[T]()
	}
	var got *nd.Array[T]
	var mask *nd.Array[nd.Bool]
	var err error
	switch op {
	case "Sum":
		got, err = nd.Sum(a.dev, x)
	case "Prod":
		got, err = nd.Prod(a.dev, x)
	case "Max":
		got, err = nd.Max(a.dev, x)
	case "Min":
		got, err = nd.Min(a.dev, x)
	case "Mean":
		got, err = mean(a.dev, x)
	case "All":
		mask, err = nd.All(a.dev, x)
	case "Any":
		mask, err = nd.Any(a.dev, x)
	}
	if err != nil {
		t.Fatalf("%v: %v", what, err)
	}
	if mask != nil {
		match(t, what, free(t, mask), want, 0)
	} else {
		match(t, what, free(t, got), want, tol)
	}
	// The Into forms of Sum and Max, into a random view of the result's
	// shape.
	if (op == "Sum" || op == "Max") && rng.IntN(2) == 0 {
		dst := viewOf[T](t, s, rng, want.shape, false, smallValues)
		into := nd.SumInto[T]
		if op == "Max" {
			into = nd.MaxInto[T]
		}
		what = describe("%sInto(%v, %v, %v)", op, dst, a, x)
		err := into(dst.dev, a.dev, x)
		if err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		written(t, what, dst, want)
	}
}

// TestPropertyAxisOps: Softmax and LogSoftmax (floats), Cumsum and
// ArgMax/ArgMin (every type) along a random axis of a random view; an
// empty line has no ArgMax (an error).
func TestPropertyAxisOps(t *testing.T) {
	s := propStream(t)
	forCases(t, 150, func(t *testing.T, rng *rand.Rand) {
		oneOf(rng,
			func() { axisCase[float32](t, s, rng, softmaxOf[float32]) }, func() { axisCase[float64](t, s, rng, softmaxOf[float64]) },
			func() { axisCase[int32](t, s, rng, nil) }, func() { axisCase[int64](t, s, rng, nil) },
			func() { axisCase[uint8](t, s, rng, nil) }, func() { axisCase[cuda.Float16](t, s, rng, softmaxOf[cuda.Float16]) },
			func() { axisCase[cuda.BFloat16](t, s, rng, softmaxOf[cuda.BFloat16]) })
	})
}

func softmaxOf[T cuda.AnyFloat](a *nd.Array[T], axis int, log bool) (*nd.Array[T], error) {
	if log {
		return nd.LogSoftmax(a, axis)
	}
	return nd.Softmax(a, axis)
}

func axisCase[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand, softmax func(*nd.Array[T], int, bool) (*nd.Array[T], error)) {
	var a *view[T]
	for a == nil || len(a.ref.shape) == 0 {
		a = randomView[T](t, s, rng, smallValues)
	}
	n := len(a.ref.shape)
	axis := rng.IntN(n) - n*rng.IntN(2)
	h := hostF64(a.ref)
	op := []string{"Softmax", "LogSoftmax", "Cumsum", "ArgMax", "ArgMin"}[rng.IntN(5)]
	if softmax == nil && op[0] == 'S' || softmax == nil && op[0] == 'L' {
		op = "Cumsum"
	}
	what := describe("%s(%v, %d)", op, a, axis)
	switch op {
	case "Softmax", "LogSoftmax":
		log := op == "LogSoftmax"
		want := lineMap(h, axis, func(xs []float64) []float64 {
			if len(xs) == 0 {
				return nil
			}
			m := slices.Max(xs)
			z := 0.0
			for _, x := range xs {
				z += math.Exp(x - m)
			}
			out := make([]float64, len(xs))
			for i, x := range xs {
				if log {
					out[i] = roundTo[T](x - m - math.Log(z))
				} else {
					out[i] = roundTo[T](math.Exp(x-m) / z)
				}
			}
			return out
		})
		got, err := softmax(a.dev, axis, log)
		if err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		match(t, what, free(t, got), want, floatTol[T]())
	case "Cumsum":
		want := lineMap(h, axis, func(xs []float64) []float64 {
			out := make([]float64, len(xs))
			acc := 0.0
			for i, x := range xs {
				acc += x
				out[i] = roundTo[T](acc)
			}
			return out
		})
		got, err := nd.Cumsum(a.dev, axis)
		if err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		match(t, what, free(t, got), want, 0)
	default:
		better := func(x, y float64) bool { return x > y }
		f := nd.ArgMax[T]
		if op == "ArgMin" {
			better = func(x, y float64) bool { return x < y }
			f = nd.ArgMin[T]
		}
		got, err := f(a.dev, axis)
		if a.ref.shape[(axis+n)%n] == 0 {
			free(t, got)
			if !errors.Is(err, cuda.ErrInvalidValue) {
				t.Fatalf("%v: %v, want an error wrapping ErrInvalidValue (an empty line)", what, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		match(t, what, free(t, got), foldHost(h, []int{(axis + n) % n}, false, argExtreme(better)), 0)
	}
}

// TestPropertyGather: Take along a random axis of a random view, by
// random indices of 0-2 axes (negative ones counting from the end, those
// out of range giving 0); Concat of 2-3 random views whose shapes agree
// but on the axis (and ConcatInto a view); Split at random cuts.
func TestPropertyGather(t *testing.T) {
	s := propStream(t)
	forCases(t, 200, func(t *testing.T, rng *rand.Rand) {
		oneOf(rng,
			func() { gatherCase[float32](t, s, rng) }, func() { gatherCase[float64](t, s, rng) },
			func() { gatherCase[int32](t, s, rng) }, func() { gatherCase[int64](t, s, rng) },
			func() { gatherCase[uint8](t, s, rng) }, func() { gatherCase[cuda.Float16](t, s, rng) },
			func() { gatherCase[cuda.BFloat16](t, s, rng) })
	})
}

func gatherCase[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand) {
	switch rng.IntN(3) {
	case 0:
		takeCase[T](t, s, rng)
	case 1:
		concatCase[T](t, s, rng)
	default:
		splitCase[T](t, s, rng)
	}
}

func takeCase[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand) {
	var a *view[T]
	for a == nil || len(a.ref.shape) == 0 {
		a = randomView[T](t, s, rng, smallValues)
	}
	n := len(a.ref.shape)
	axis := rng.IntN(n) - n*rng.IntN(2)
	ax := (axis + n) % n
	d := a.ref.shape[ax]
	ishape := randomShape(rng, 2)
	for size(ishape) > 64 {
		ishape = randomShape(rng, 2)
	}
	ind := newBase[int64](t, s, rng, ishape, smallValues)
	for i := range ind.ref.base {
		ind.ref.base[i] = int64(rng.IntN(2*d+5) - d - 2) // in [-d-2, d+2]
	}
	ind.base = free(t, must(nd.FromSlice(s, ind.ref.base, ishape...))(t))
	ind.dev = ind.base
	if len(ishape) >= 2 && rng.IntN(2) == 0 {
		ind.transpose()
	}
	ih := ind.ref.host()
	outShape := append(append(slices.Clone(a.ref.shape[:ax]), ih.shape...), a.ref.shape[ax+1:]...)
	h := hostF64(a.ref)
	want := host[float64]{data: []float64{}, shape: outShape}
	each(outShape, func(idx []int) {
		k := len(ih.shape)
		j := ih.data[0]
		if k > 0 {
			j = ih.at(idx[ax : ax+k])
		}
		if j < 0 {
			j += int64(d)
		}
		if j < 0 || j >= int64(d) {
			want.data = append(want.data, 0)
			return
		}
		src := append(append(slices.Clone(idx[:ax]), int(j)), idx[ax+k:]...)
		want.data = append(want.data, h.at(src))
	})
	what := describe("Take(%v, %v = %v, %d)", a, ind, ih.data, axis)
	got, err := nd.Take(a.dev, ind.dev, axis)
	if err != nil {
		t.Fatalf("%v: %v", what, err)
	}
	match(t, what, free(t, got), want, 0)
}

func concatCase[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand) {
	shape := randomShape(rng, 6)
	for len(shape) == 0 {
		shape = randomShape(rng, 6)
	}
	n := len(shape)
	axis := rng.IntN(n) - n*rng.IntN(2)
	ax := (axis + n) % n
	var parts []*view[T]
	var devs []*nd.Array[T]
	var names []string
	for range 2 + rng.IntN(2) {
		sh := slices.Clone(shape)
		sh[ax] = rng.IntN(5)
		p := viewOf[T](t, s, rng, sh, true, smallValues)
		parts, devs, names = append(parts, p), append(devs, p.dev), append(names, p.String())
	}
	outShape := slices.Clone(shape)
	outShape[ax] = 0
	for _, p := range parts {
		outShape[ax] += p.ref.shape[ax]
	}
	want := host[float64]{data: []float64{}, shape: outShape}
	each(outShape, func(idx []int) {
		j := idx[ax]
		for _, p := range parts {
			if j < p.ref.shape[ax] {
				at := slices.Clone(idx)
				at[ax] = j
				want.data = append(want.data, toF64(p.ref.base[p.ref.pos(at)]))
				return
			}
			j -= p.ref.shape[ax]
		}
	})
	what := describe("Concat([%s], %d)", strings.Join(names, ", "), axis)
	got, err := nd.Concat(devs, axis)
	if err != nil {
		t.Fatalf("%v: %v", what, err)
	}
	match(t, what, free(t, got), want, 0)
	if rng.IntN(2) == 0 {
		dst := viewOf[T](t, s, rng, outShape, false, smallValues)
		what = describe("ConcatInto(%v, [%s], %d)", dst, strings.Join(names, ", "), axis)
		if err := nd.ConcatInto(dst.dev, devs, axis); err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		written(t, what, dst, want)
	}
}

func splitCase[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand) {
	var a *view[T]
	for a == nil || len(a.ref.shape) == 0 {
		a = randomView[T](t, s, rng, smallValues)
	}
	n := len(a.ref.shape)
	axis := rng.IntN(n) - n*rng.IntN(2)
	d := a.ref.shape[(axis+n)%n]
	cuts := make([]int, rng.IntN(4))
	for i := range cuts {
		cuts[i] = rng.IntN(d + 3)
	}
	slices.Sort(cuts)
	what := describe("Split(%v, %v, %d)", a, cuts, axis)
	got, err := nd.Split(a.dev, cuts, axis)
	if err != nil {
		t.Fatalf("%v: %v", what, err)
	}
	if len(got) != len(cuts)+1 {
		t.Fatalf("%v: %d parts, want %d", what, len(got), len(cuts)+1)
	}
	bounds := append(append([]int{0}, cuts...), d)
	for i, p := range got {
		free(t, p)
		lo := min(bounds[i], d)
		hi := max(min(bounds[i+1], d), lo)
		match(t, describe("%v: part %d", what, i), p, hostF64(a.ref.slice(axis, lo, hi, 1)), 0)
	}
}

// TestPropertyMatmul: Matmul of random float32 views (1-d, 2-d, batches
// of up to 2 axes broadcast together; transposed, stepped and broadcast
// views among them) against the host's product, and MatmulInto a view.
func TestPropertyMatmul(t *testing.T) {
	s := propStream(t)
	forCases(t, 100, func(t *testing.T, rng *rand.Rand) {
		dim := func() int { return []int{0, 1, 2, 3, 4, 5, 7}[rng.IntN(7)] }
		m, k, n := dim(), dim(), dim()
		batch := make([]int, rng.IntN(3))
		for i := range batch {
			batch[i] = 1 + rng.IntN(3)
		}
		sa := append(slices.Clone(batch), m, k)
		sb := append(derive(rng, batch), k, n)
		if rng.IntN(2) == 0 {
			sa, sb = append(derive(rng, batch), m, k), append(slices.Clone(batch), k, n)
		}
		switch rng.IntN(8) {
		case 0:
			sa = []int{k}
		case 1:
			sb = []int{k}
		}
		a := viewOf[float32](t, s, rng, sa, true, smallValues)
		b := viewOf[float32](t, s, rng, sb, true, smallValues)
		if rng.IntN(2) == 0 && len(sa) >= 2 {
			// A transposed view: read by cuBLAS as its transposed operand.
			at := viewOf[float32](t, s, rng, append(slices.Clone(sa[:len(sa)-2]), k, m), true, smallValues)
			p := make([]int, len(sa))
			for i := range p {
				p[i] = i
			}
			p[len(p)-2], p[len(p)-1] = p[len(p)-1], p[len(p)-2]
			at.permute(p...)
			a = at
		}
		want := matmulHost(hostF64(a.ref), hostF64(b.ref))
		what := describe("Matmul(%v, %v)", a, b)
		got, err := nd.Matmul(a.dev, b.dev)
		if err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		match(t, what, free(t, got), want, 1e-5)
		if rng.IntN(2) == 0 {
			dst := viewOf[float32](t, s, rng, want.shape, false, smallValues)
			what = describe("MatmulInto(%v, %v, %v)", dst, a, b)
			if err := nd.MatmulInto(dst.dev, a.dev, b.dev); err != nil {
				t.Fatalf("%v: %v", what, err)
			}
			match(t, what, dst.dev, want, 1e-5)
		}
	})
}

// TestPropertyFused: a random Expr of 2-5 operations over 2-3 random
// views whose shapes broadcast (and constants) equals the same computed
// step by step on the host in float32 (its intermediates stay float32),
// within a tolerance; EvalInto a view too.
func TestPropertyFused(t *testing.T) {
	s := propStream(t)
	forCases(t, 40, func(t *testing.T, rng *rand.Rand) {
		a := randomView[float32](t, s, rng, smallValues)
		leaves := []operand[float32]{{v: a, dev: a.dev, host: hostF64(a.ref)}}
		for range 1 + rng.IntN(2) {
			leaves = append(leaves, operandOf[float32](t, s, rng, derive(rng, a.shape()), false, smallValues))
		}
		if rng.IntN(2) == 0 {
			leaves[0], leaves[1] = leaves[1], leaves[0]
		}
		type node struct {
			e    nd.Expr[float32]
			h    host[float64] // float32 values
			name string
		}
		leaf := func() node {
			if rng.IntN(5) == 0 {
				c := float32(value[float32](rng, smallValues))
				return node{nd.Const(c), host[float64]{[]float64{float64(c)}, []int{}}, fmt.Sprint(c)}
			}
			i := rng.IntN(len(leaves))
			return node{nd.Lazy(leaves[i].dev), leaves[i].host, fmt.Sprintf("a%d", i)}
		}
		f32 := func(f func(x float64) float64) func(xs []float64) float64 {
			return func(xs []float64) float64 { return float64(float32(f(xs[0]))) }
		}
		f32b := func(f func(x, y float32) float32) func(xs []float64) float64 {
			return func(xs []float64) float64 { return float64(f(float32(xs[0]), float32(xs[1]))) }
		}
		cur := node{nd.Lazy(leaves[0].dev), leaves[0].host, "a0"}
		for range 2 + rng.IntN(4) {
			switch k := rng.IntN(11); k {
			case 0, 1, 2, 3, 4, 5:
				other := leaf()
				x, y := cur, other
				if rng.IntN(2) == 0 {
					x, y = other, cur
				}
				name := []string{"Add", "Sub", "Mul", "Maximum", "Minimum", "Div"}[k]
				fn := []func(a, b float32) float32{
					func(a, b float32) float32 { return a + b }, func(a, b float32) float32 { return a - b },
					func(a, b float32) float32 { return a * b },
					func(a, b float32) float32 { return float32(math.Max(float64(a), float64(b))) },
					func(a, b float32) float32 { return float32(math.Min(float64(a), float64(b))) },
					func(a, b float32) float32 { return a / b },
				}[k]
				var e nd.Expr[float32]
				switch k {
				case 0:
					e = x.e.Add(y.e)
				case 1:
					e = x.e.Sub(y.e)
				case 2:
					e = x.e.Mul(y.e)
				case 3:
					e = x.e.Maximum(y.e)
				case 4:
					e = x.e.Minimum(y.e)
				default:
					e = x.e.Div(y.e)
				}
				cur = node{e, mapHost(f32b(fn), x.h, y.h), fmt.Sprintf("%s(%s, %s)", name, x.name, y.name)}
			case 6:
				cur = node{cur.e.Relu(), mapHost(f32(func(x float64) float64 { return math.Max(x, 0) }), cur.h), "Relu(" + cur.name + ")"}
			case 7:
				cur = node{cur.e.Tanh(), mapHost(f32(math.Tanh), cur.h), "Tanh(" + cur.name + ")"}
			case 8:
				cur = node{cur.e.Neg(), mapHost(f32(func(x float64) float64 { return -x }), cur.h), "Neg(" + cur.name + ")"}
			case 9:
				cur = node{cur.e.Clip(-3, 5), mapHost(f32(func(x float64) float64 {
					if math.IsNaN(x) {
						return x
					}
					return min(max(x, -3), 5)
				}), cur.h), "Clip(" + cur.name + ", -3, 5)"}
			default:
				cur = node{cur.e.Abs().Sqrt(), mapHost(f32(func(x float64) float64 { return math.Sqrt(float64(float32(math.Abs(x)))) }), cur.h), "Sqrt(Abs(" + cur.name + "))"}
			}
		}
		var names []string
		for i, l := range leaves {
			names = append(names, fmt.Sprintf("a%d = %v", i, l))
		}
		what := describe("%s (%s) = %v", cur.name, strings.Join(names, "; "), cur.e)
		got, err := cur.e.Eval()
		if err != nil {
			t.Fatalf("%v: %v", what, err)
		}
		match(t, what, free(t, got), cur.h, 1e-4)
		if rng.IntN(2) == 0 {
			dst := viewOf[float32](t, s, rng, cur.h.shape, false, smallValues)
			what = describe("EvalInto(%v): %v", dst, what)
			if err := cur.e.EvalInto(dst.dev); err != nil {
				t.Fatalf("%v: %v", what, err)
			}
			match(t, what, dst.dev, cur.h, 1e-4)
		}
	})
}

// TestPropertyBadArgs: calls with a bad argument drawn at random (an axis
// out of range, a Reshape to another size, a Permute that is no
// permutation, an Index out of range, a step of 0, a Squeeze of an axis
// not 1, a BroadcastTo or CopyInto of an incompatible shape, a Concat
// that disagrees, a Matmul of inner dimensions that differ) on random
// views: always an error wrapping cuda.ErrInvalidValue, never a panic.
func TestPropertyBadArgs(t *testing.T) {
	s := propStream(t)
	forCases(t, 200, func(t *testing.T, rng *rand.Rand) {
		a := randomView[float32](t, s, rng, smallValues)
		shape := a.shape()
		n := len(shape)
		out := func() int { // an axis out of range
			if rng.IntN(2) == 0 {
				return n + rng.IntN(3)
			}
			return -n - 1 - rng.IntN(3)
		}
		var what desc
		var err error
		keep := func(r *nd.Array[float32], e error) { free(t, r); err = e }
		switch k := rng.IntN(16); k {
		case 0:
			x := out()
			what, err = describe("Sum(%v, Along(%d))", a, x), second(nd.Sum(a.dev, nd.Along(x)))
		case 1:
			x := out()
			what = describe("Softmax(%v, %d)", a, x)
			keep(nd.Softmax(a.dev, x))
		case 2:
			x := out()
			what = describe("Cumsum(%v, %d)", a, x)
			keep(nd.Cumsum(a.dev, x))
		case 3:
			target := factor(rng, size(shape)+1+rng.IntN(5))
			what = describe("%v.Reshape%v", a, target)
			keep(a.dev.Reshape(target...))
		case 4:
			p := rng.Perm(n + 1)
			if n > 0 && rng.IntN(2) == 0 {
				p = rng.Perm(n)
				p[0] = p[len(p)-1] // a repeat
				if n == 1 {
					p[0] = 1
				}
			}
			what = describe("%v.Permute%v", a, p)
			keep(a.dev.Permute(p...))
		case 5:
			if n == 0 {
				what = describe("%v.Index(0, 0)", a)
				keep(a.dev.Index(0, 0))
				break
			}
			ax := rng.IntN(n)
			i := shape[ax] + rng.IntN(3)
			if rng.IntN(2) == 0 {
				i = -shape[ax] - 1 - rng.IntN(3)
			}
			what = describe("%v.Index(%d, %d)", a, ax, i)
			keep(a.dev.Index(ax, i))
		case 6:
			x := out()
			what = describe("%v.Slice(%d, 0, 1, 1)", a, x)
			keep(a.dev.Slice(x, 0, 1, 1))
			if n > 0 && rng.IntN(2) == 0 {
				what = describe("%v.Slice(0, 0, 1, 0)", a)
				keep(a.dev.Slice(0, 0, 1, 0))
			}
		case 7:
			i := slices.IndexFunc(shape, func(d int) bool { return d != 1 })
			if i < 0 {
				x := out()
				what = describe("%v.Squeeze(%d)", a, x)
				keep(a.dev.Squeeze(x))
				break
			}
			what = describe("%v.Squeeze(%d)", a, i)
			keep(a.dev.Squeeze(i))
		case 8:
			bad := badShape(rng, shape)
			if bad == nil || len(bad) < n {
				x := n + 1 + rng.IntN(2) // Unsqueeze takes [-n-1, n]
				if rng.IntN(2) == 0 {
					x = -n - 2 - rng.IntN(2)
				}
				what = describe("%v.Unsqueeze(%d)", a, x)
				keep(a.dev.Unsqueeze(x))
				break
			}
			what = describe("%v.BroadcastTo%v", a, bad)
			keep(a.dev.BroadcastTo(bad...))
		case 9:
			bad := badShape(rng, shape)
			if bad == nil {
				bad = append(slices.Clone(shape), 0)
				bad[len(bad)-1] = 2
				bad = bad[len(bad)-1:]
				bad = append(bad, 3)
				if n > 0 {
					bad = []int{shape[0] + 2}
				}
				if n == 0 {
					what = describe("CopyInto(%v, [2])", a)
					src := viewOf[float32](t, s, rng, []int{2}, false, smallValues)
					err = nd.CopyInto(a.dev, src.dev)
					break
				}
			}
			src := viewOf[float32](t, s, rng, bad, false, smallValues)
			what = describe("CopyInto(%v, %v)", a, src)
			err = nd.CopyInto(a.dev, src.dev)
			if _, ok := broadcastHost(shape, bad); ok && len(bad) <= n {
				// It broadcast after all (shape has no axis that is not 1).
				return
			}
		case 10:
			if n == 0 {
				what = describe("Concat([%v, %v], 0)", a, a)
				keep(nd.Concat([]*nd.Array[float32]{a.dev, a.dev}, 0))
				break
			}
			other := slices.Clone(shape)
			if n >= 2 && rng.IntN(2) == 0 {
				i := rng.IntN(n - 1)
				other[i+1] += 1 + rng.IntN(2) // disagrees on an axis that is not the one joined
				b := viewOf[float32](t, s, rng, other, true, smallValues)
				what = describe("Concat([%v, %v], %d)", a, b, i)
				keep(nd.Concat([]*nd.Array[float32]{a.dev, b.dev}, i))
				break
			}
			other = append(other, 2) // another number of axes
			b := viewOf[float32](t, s, rng, other, true, smallValues)
			what = describe("Concat([%v, %v], 0)", a, b)
			keep(nd.Concat([]*nd.Array[float32]{a.dev, b.dev}, 0))
		case 11:
			m, kk := 1+rng.IntN(3), 1+rng.IntN(3)
			x := viewOf[float32](t, s, rng, []int{m, kk}, true, smallValues)
			y := viewOf[float32](t, s, rng, []int{kk + 1 + rng.IntN(2), 2}, true, smallValues)
			what = describe("Matmul(%v, %v)", x, y)
			keep(nd.Matmul(x.dev, y.dev))
		case 12:
			x := out()
			what = describe("ArgMax(%v, %d)", a, x)
			r, e := nd.ArgMax(a.dev, x)
			free(t, r)
			err = e
		case 13:
			x := out()
			ind := free(t, must(nd.FromSlice(s, []int64{0}))(t))
			what = describe("Take(%v, [0], %d)", a, x)
			keep(nd.Take(a.dev, ind, x))
		case 14:
			target := slices.Clone(shape)
			target = append(target, -1, -1)
			what = describe("%v.Reshape%v", a, target)
			keep(a.dev.Reshape(target...))
		default:
			x := out()
			what = describe("Max(%v, Along(0, %d).KeepDims())", a, x)
			if n > 0 {
				keep(nd.Max(a.dev, nd.Along(0, x).KeepDims()))
			} else {
				keep(nd.Max(a.dev, nd.Along(x).KeepDims()))
			}
		}
		if !errors.Is(err, cuda.ErrInvalidValue) {
			t.Fatalf("%v: %v, want an error wrapping ErrInvalidValue", what, err)
		}
	})
}

// TestPropertyRegressions: the defects the properties found, each shrunk
// to its smallest case (both fixed in 2026-12-05's stop).
func TestPropertyRegressions(t *testing.T) {
	s := stream(t)
	t.Run("EmptyViewToSlice", func(t *testing.T) {
		// A view of an empty array at a nonzero offset: [2 0] from a [3 0]
		// array's rows 1 and 2 (offset 1). Its span holds no element;
		// ToSlice sliced its empty copy at the offset (a panic).
		z := free(t, must(nd.Zeros[float32](s, 3, 0))(t))
		v := must(z.Slice(0, 1, 3, 1))(t)
		got, err := toSlice(v)
		if err != nil || len(got) != 0 {
			t.Fatalf("ToSlice of an empty view: %v, %v; want [], nil", got, err)
		}
	})
	t.Run("MiddleMaxMin", func(t *testing.T) {
		// Max and Min over a middle axis of a contiguous array of int8,
		// int16, int32, uint16 or uint32 (nd/middle.go): middleFold took
		// T itself as the accumulator, which allocAcc had no buffer of.
		requireKernels(t)
		a := free(t, must(nd.FromSlice(s, iota[int32](8), 2, 2, 2))(t))
		got, err := nd.Max(a, nd.Along(1))
		free(t, got)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, got, host[int32]{[]int32{2, 3, 6, 7}, []int{2, 2}})
	})
}

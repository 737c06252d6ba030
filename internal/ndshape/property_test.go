package ndshape

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// ref is the brute-force reference: an n-d array of element offsets stored
// in row-major order of its shape, each view computed from nested index
// tuples with NumPy's semantics, never from strides.
type ref struct {
	shape []int
	offs  []int
}

func refSize(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// tuples lists every index tuple of shape in row-major order.
func tuples(shape []int) [][]int {
	var out [][]int
	var rec func(prefix []int)
	rec = func(prefix []int) {
		if len(prefix) == len(shape) {
			out = append(out, slices.Clone(prefix))
			return
		}
		for i := range shape[len(prefix)] {
			rec(append(prefix, i))
		}
	}
	rec(make([]int, 0, len(shape)))
	return out
}

func (r ref) at(idx []int) int {
	flat := 0
	for i, x := range idx {
		flat = flat*r.shape[i] + x
	}
	return r.offs[flat]
}

// view builds the array of shape whose element at idx is r's at src(idx).
func (r ref) view(shape []int, src func(idx []int) []int) ref {
	out := ref{shape: slices.Clone(shape), offs: []int{}}
	for _, idx := range tuples(shape) {
		out.offs = append(out.offs, r.at(src(idx)))
	}
	return out
}

// refLayout materializes a layout's offsets directly: offset + Σ idx·stride
// for every index tuple.
func refLayout(shape, strides []int, offset int) ref {
	r := ref{shape: slices.Clone(shape), offs: []int{}}
	for _, idx := range tuples(shape) {
		o := offset
		for i, x := range idx {
			o += x * strides[i]
		}
		r.offs = append(r.offs, o)
	}
	return r
}

// refSlice lists range(n)[start:stop:step] by walking the range.
func refSlice(n, start, stop, step int) []int {
	var out []int
	if step > 0 {
		s, e := 0, n
		if start != None {
			if start < 0 {
				s = max(start+n, 0)
			} else {
				s = min(start, n)
			}
		}
		if stop != None {
			if stop < 0 {
				e = max(stop+n, 0)
			} else {
				e = min(stop, n)
			}
		}
		for i := s; i < e; i += step {
			out = append(out, i)
		}
		return out
	}
	s, e := n-1, -1
	if start != None {
		if start < 0 {
			s = max(start+n, -1)
		} else {
			s = min(start, n-1)
		}
	}
	if stop != None {
		if stop < 0 {
			e = max(stop+n, -1)
		} else {
			e = min(stop, n-1)
		}
	}
	for i := s; i > e; i += step {
		out = append(out, i)
	}
	return out
}

// refBroadcast broadcasts shapes axis by axis: the set of dimensions other
// than 1 on an axis has at most one member.
func refBroadcast(shapes ...[]int) ([]int, bool) {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
	}
	out := make([]int, n)
	for i := range n {
		set := map[int]bool{}
		for _, s := range shapes {
			j := i - (n - len(s))
			if j >= 0 && s[j] != 1 {
				set[s[j]] = true
			}
		}
		if len(set) > 1 {
			return nil, false
		}
		out[i] = 1
		for d := range set {
			out[i] = d
		}
	}
	return out, true
}

// viewable reports whether some strides give shape the element order of r
// (the brute-force answer to "can reshape be a view").
func viewable(r ref, shape []int) bool {
	if len(r.offs) == 0 {
		return true
	}
	strides := make([]int, len(shape))
	for i, d := range shape {
		if d > 1 {
			idx := make([]int, len(shape))
			idx[i] = 1
			flat := 0
			for k, x := range idx {
				flat = flat*shape[k] + x
			}
			strides[i] = r.offs[flat] - r.offs[0]
		}
	}
	return slices.Equal(refLayout(shape, strides, r.offs[0]).offs, r.offs)
}

func randShape(rng *rand.Rand, maxDims, maxDim int) []int {
	s := make([]int, rng.IntN(maxDims+1))
	for i := range s {
		s[i] = rng.IntN(maxDim + 1)
	}
	return s
}

func randBound(rng *rand.Rand) int {
	if rng.IntN(5) == 0 {
		return None
	}
	return rng.IntN(13) - 6
}

// randReshape returns a shape of the same size: the dims factored and
// regrouped at random, sometimes with a -1.
func randReshape(rng *rand.Rand, shape []int) []int {
	size := refSize(shape)
	var out []int
	if size == 0 {
		out = randShape(rng, 4, 3)
		out = append(out, 0)
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	var factors []int
	for n, p := size, 2; n > 1; {
		if n%p == 0 {
			factors = append(factors, p)
			n /= p
		} else {
			p++
		}
	}
	rng.Shuffle(len(factors), func(i, j int) { factors[i], factors[j] = factors[j], factors[i] })
	for len(factors) > 0 {
		k := 1 + rng.IntN(len(factors))
		d := 1
		for _, f := range factors[:k] {
			d *= f
		}
		factors = factors[k:]
		out = append(out, d)
		if rng.IntN(4) == 0 {
			out = append(out, 1)
		}
	}
	if rng.IntN(3) == 0 && len(out) > 0 {
		out[rng.IntN(len(out))] = -1
	}
	return out
}

// step applies one random view to both l and r, checking that they agree
// on whether it is valid; it returns the new pair and a description.
func step(t *testing.T, rng *rand.Rand, l Layout, r ref) (Layout, ref, string) {
	t.Helper()
	n := len(r.shape)
	randAxis := func() int { return rng.IntN(2*n+3) - n - 1 } // sometimes out of range
	norm := func(a, k int) (int, bool) {
		if a < -k || a >= k {
			return 0, false
		}
		return (a + k) % max(k, 1), true
	}
	var (
		m    Layout
		err  error
		want ref
		ok   bool
		desc string
	)
	switch op := rng.IntN(8); op {
	case 0: // slice
		axis, start, stop, st := randAxis(), randBound(rng), randBound(rng), rng.IntN(9)-4
		desc = fmt.Sprintf("Slice(%d, %d, %d, %d)", axis, start, stop, st)
		m, err = l.Slice(axis, start, stop, st)
		var a int
		a, ok = norm(axis, n)
		ok = ok && st != 0
		if ok {
			sel := refSlice(r.shape[a], start, stop, st)
			shape := slices.Clone(r.shape)
			shape[a] = len(sel)
			want = r.view(shape, func(idx []int) []int {
				src := slices.Clone(idx)
				src[a] = sel[idx[a]]
				return src
			})
		}
	case 1: // index
		axis := randAxis()
		i := rng.IntN(9) - 4
		desc = fmt.Sprintf("Index(%d, %d)", axis, i)
		m, err = l.Index(axis, i)
		var a, j int
		if a, ok = norm(axis, n); ok {
			j, ok = norm(i, r.shape[a])
		}
		if ok {
			shape := slices.Delete(slices.Clone(r.shape), a, a+1)
			want = r.view(shape, func(idx []int) []int {
				return slices.Insert(slices.Clone(idx), a, j)
			})
		}
	case 2: // permute
		axes := rng.Perm(n)
		for i := range axes {
			if rng.IntN(2) == 0 {
				axes[i] -= n
			}
		}
		if rng.IntN(8) == 0 && n > 1 {
			axes[0] = axes[1]
		}
		desc = fmt.Sprintf("Permute(%v)", axes)
		m, err = l.Permute(axes...)
		seen := map[int]bool{}
		ok = true
		for _, a := range axes {
			seen[(a+n)%n] = true
		}
		ok = len(seen) == n
		if ok {
			shape := make([]int, n)
			for i, a := range axes {
				shape[i] = r.shape[(a+n)%n]
			}
			want = r.view(shape, func(idx []int) []int {
				src := make([]int, n)
				for i, a := range axes {
					src[(a+n)%n] = idx[i]
				}
				return src
			})
		}
	case 3: // broadcast_to
		to := slices.Clone(r.shape)
		for i := range to {
			if to[i] == 1 && rng.IntN(2) == 0 {
				to[i] = rng.IntN(4)
			} else if rng.IntN(10) == 0 {
				to[i] = rng.IntN(4)
			}
		}
		for range rng.IntN(3) {
			if len(to) < 6 {
				to = slices.Insert(to, 0, 1+rng.IntN(3))
			}
		}
		desc = fmt.Sprintf("BroadcastTo(%v)", to)
		m, err = l.BroadcastTo(to)
		var b []int
		b, ok = refBroadcast(r.shape, to)
		ok = ok && slices.Equal(b, to)
		if ok {
			k := len(to) - n
			want = r.view(to, func(idx []int) []int {
				src := slices.Clone(idx[k:])
				for i := range src {
					if r.shape[i] == 1 {
						src[i] = 0
					}
				}
				return src
			})
		}
	case 4: // squeeze
		var axes []int
		if rng.IntN(2) == 0 && n > 0 {
			axes = []int{randAxis()}
		}
		desc = fmt.Sprintf("Squeeze(%v)", axes)
		m, err = l.Squeeze(axes...)
		drop := make([]bool, n)
		ok = true
		if axes == nil {
			for i, d := range r.shape {
				drop[i] = d == 1
			}
		} else {
			var a int
			a, ok = norm(axes[0], n)
			ok = ok && r.shape[a] == 1
			if ok {
				drop[a] = true
			}
		}
		if ok {
			var shape []int
			for i, d := range r.shape {
				if !drop[i] {
					shape = append(shape, d)
				}
			}
			want = r.view(shape, func(idx []int) []int {
				src := make([]int, 0, n)
				k := 0
				for i := range n {
					if drop[i] {
						src = append(src, 0)
					} else {
						src = append(src, idx[k])
						k++
					}
				}
				return src
			})
		}
	case 5: // unsqueeze
		if n >= 6 {
			return l, r, "none"
		}
		axis := rng.IntN(2*n+5) - n - 2
		desc = fmt.Sprintf("Unsqueeze(%d)", axis)
		m, err = l.Unsqueeze(axis)
		var a int
		if a, ok = norm(axis, n+1); ok {
			shape := slices.Insert(slices.Clone(r.shape), a, 1)
			want = r.view(shape, func(idx []int) []int {
				return slices.Delete(slices.Clone(idx), a, a+1)
			})
		}
	case 6: // transpose
		desc = "Transpose()"
		m, ok = l.Transpose(), true
		shape := slices.Clone(r.shape)
		slices.Reverse(shape)
		want = r.view(shape, func(idx []int) []int {
			src := slices.Clone(idx)
			slices.Reverse(src)
			return src
		})
	case 7: // reshape: a view, or a copy (a fresh contiguous layout)
		to := randReshape(rng, r.shape)
		desc = fmt.Sprintf("Reshape(%v)", to)
		var view bool
		m, view, err = l.Reshape(to)
		if err != nil {
			t.Fatalf("%s of %v: %v", desc, l, err)
		}
		shape := slices.Clone(to)
		if i := slices.Index(shape, -1); i >= 0 {
			shape[i] = 1
			shape[i] = refSize(r.shape) / refSize(shape)
		}
		if v := viewable(r, shape); v != view {
			t.Fatalf("%s of %v: view %v, brute force says %v", desc, l, view, v)
		}
		ok = true
		want = ref{shape: shape, offs: r.offs}
		if !view {
			m, err = Contiguous(shape)
			want = refLayout(shape, m.Strides(), 0)
		}
	}
	if (err == nil) != ok {
		t.Fatalf("%s of %v: error %v, reference valid %v", desc, l, err, ok)
	}
	if !ok {
		return l, r, desc + " (refused)"
	}
	return m, want, desc
}

// check compares l with r in every way the package answers.
func check(t *testing.T, l Layout, r ref, hist []string) {
	t.Helper()
	fail := func(f string, args ...any) {
		t.Helper()
		t.Fatalf("after %v: %v: %s", hist, l, fmt.Sprintf(f, args...))
	}
	if !slices.Equal(l.Shape(), r.shape) && !(len(r.shape) == 0 && l.Ndim() == 0) {
		fail("shape, want %v", r.shape)
	}
	got := offsets(l)
	if !slices.Equal(got, r.offs) {
		fail("offsets %v, want %v", got, r.offs)
	}
	if l.Size() != len(r.offs) {
		fail("size %d, want %d", l.Size(), len(r.offs))
	}
	lo, hi := l.Span()
	if len(got) == 0 {
		if lo != 0 || hi != -1 {
			fail("span %d %d", lo, hi)
		}
	} else if lo != slices.Min(got) || hi != slices.Max(got) {
		fail("span %d %d, want %d %d", lo, hi, slices.Min(got), slices.Max(got))
	}
	contig := true
	for i, o := range got {
		if o != got[0]+i {
			contig = false
		}
	}
	if l.IsContiguous() != contig {
		fail("IsContiguous %v", !contig)
	}
	for k, idx := range tuples(r.shape) {
		if k%7 != 0 {
			continue
		}
		neg := slices.Clone(idx)
		for i := range neg {
			if k%2 == 0 {
				neg[i] -= r.shape[i]
			}
		}
		if o, err := l.At(neg...); err != nil || o != r.offs[k] {
			fail("At(%v) = %d %v, want %d", neg, o, err, r.offs[k])
		}
	}
	s := l.Simplify()
	if !slices.Equal(offsets(s), got) {
		fail("Simplify %v: offsets %v", s, offsets(s))
	}
	if s.Ndim() > l.Ndim() && !(l.Size() == 0 && s.Ndim() == 1) || slices.Contains(s.Shape(), 1) {
		fail("Simplify %v", s)
	}
	for i := 0; i+1 < s.Ndim(); i++ {
		if s.strides[i] == s.shape[i+1]*s.strides[i+1] {
			fail("Simplify %v left mergeable axes", s)
		}
	}
}

func randLayout(rng *rand.Rand) (Layout, ref) {
	shape := randShape(rng, 6, 3)
	if rng.IntN(3) == 0 {
		l, _ := Contiguous(shape)
		return l, refLayout(shape, l.Strides(), 0)
	}
	strides := make([]int, len(shape))
	for i := range strides {
		strides[i] = rng.IntN(21) - 10
	}
	off := rng.IntN(100) - 50
	l, err := New(shape, strides, off)
	if err != nil {
		panic(err)
	}
	return l, refLayout(shape, strides, off)
}

func TestViewChains(t *testing.T) {
	rng := rand.New(rand.NewPCG(50, 1))
	chains := 3000
	if testing.Short() {
		chains = 300
	}
	ops := 0
	for range chains {
		l, r := randLayout(rng)
		hist := []string{l.String()}
		check(t, l, r, hist)
		for range 1 + rng.IntN(8) {
			var d string
			l, r, d = step(t, rng, l, r)
			hist = append(hist, d)
			check(t, l, r, hist)
			ops++
		}
	}
	t.Logf("%d chains, %d views checked", chains, ops)
}

func TestBroadcastProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(50, 2))
	for range 5000 {
		// Dims in {0,1,2,3} and few axes, so that broadcasts often succeed.
		a, b, c := randShape(rng, 4, 3), randShape(rng, 4, 3), randShape(rng, 4, 3)
		if rng.IntN(2) == 0 {
			for i := range a {
				if rng.IntN(2) == 0 {
					a[i] = 1
				}
			}
		}
		ab, errAB := Broadcast(a, b)
		ba, errBA := Broadcast(b, a)
		want, ok := refBroadcast(a, b)
		if (errAB == nil) != ok || (errBA == nil) != ok {
			t.Fatalf("Broadcast(%v, %v): %v / %v, reference %v", a, b, errAB, errBA, ok)
		}
		if ok && (!slices.Equal(ab, want) || !slices.Equal(ba, want)) {
			t.Fatalf("Broadcast(%v, %v) = %v / %v, want %v", a, b, ab, ba, want)
		}
		abc, errABC := Broadcast(a, b, c)
		want3, ok3 := refBroadcast(a, b, c)
		if (errABC == nil) != ok3 || ok3 && !slices.Equal(abc, want3) {
			t.Fatalf("Broadcast(%v, %v, %v) = %v %v, want %v", a, b, c, abc, errABC, want3)
		}
		// Associative where defined; pairwise agrees with n-ary.
		bc, errBC := Broadcast(b, c)
		if errAB == nil {
			l, err := Broadcast(ab, c)
			if (err == nil) != ok3 || ok3 && !slices.Equal(l, abc) {
				t.Fatalf("(%v %v) %v: %v %v, want %v", a, b, c, l, err, abc)
			}
		}
		if errBC == nil {
			r, err := Broadcast(a, bc)
			if (err == nil) != ok3 || ok3 && !slices.Equal(r, abc) {
				t.Fatalf("%v (%v %v): %v %v, want %v", a, b, c, r, err, abc)
			}
		}
		if !ok3 {
			continue
		}
		// Each operand broadcast to the result: element idx is the
		// operand's element at idx with the repeated axes at 0.
		off := rng.IntN(100) - 50
		ls := make([]Layout, 3)
		rs := make([]ref, 3)
		for i, s := range [][]int{a, b, c} {
			strides := make([]int, len(s))
			for k := range strides {
				strides[k] = rng.IntN(11) - 5
			}
			ls[i], _ = New(s, strides, off)
			rs[i] = refLayout(s, strides, off)
		}
		bl, err := BroadcastLayouts(ls...)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range bl {
			src := rs[i]
			k := len(abc) - len(src.shape)
			want := src.view(abc, func(idx []int) []int {
				s := slices.Clone(idx[k:])
				for j := range s {
					if src.shape[j] == 1 {
						s[j] = 0
					}
				}
				return s
			})
			if !slices.Equal(offsets(l), want.offs) {
				t.Fatalf("BroadcastLayouts %v: operand %d %v gives %v, want %v", [][]int{a, b, c}, i, l, offsets(l), want.offs)
			}
		}
		// Coalescing them together keeps the correspondence.
		cl, err := Coalesce(bl...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range cl {
			if !slices.Equal(offsets(cl[i]), offsets(bl[i])) || cl[i].Ndim() > max(len(abc), 1) {
				t.Fatalf("Coalesce %v: operand %d %v", bl, i, cl[i])
			}
		}
	}
}

// TestReshapeOrder: a reshape that is a view reaches the elements in the
// order a copy would hold them, for random strided layouts.
func TestReshapeOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(50, 3))
	views := 0
	for range 3000 {
		l, r := randLayout(rng)
		// Make views more likely: start from a slice of a contiguous array.
		if rng.IntN(2) == 0 {
			c, _ := Contiguous(r.shape)
			l, r = c, refLayout(r.shape, c.Strides(), 0)
			for range 2 {
				l2, r2, _ := step(t, rng, l, r)
				l, r = l2, r2
			}
		}
		to := randReshape(rng, r.shape)
		v, ok, err := l.Reshape(to)
		if err != nil {
			t.Fatalf("%v Reshape(%v): %v", l, to, err)
		}
		if ok {
			views++
			if !slices.Equal(offsets(v), r.offs) {
				t.Fatalf("%v Reshape(%v) = %v: order %v, want %v", l, to, v, offsets(v), r.offs)
			}
		}
	}
	t.Logf("%d of 3000 reshapes were views", views)
}

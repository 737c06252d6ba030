package nd_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// middleShapes are the outer×mid×inner shapes the middle fold is tested
// at: every mid of {1, 2, 3, 5, 31, 32, 33, 1000, 100003} by every inner
// of {1, 3, 4, 5, 32, 33, 64, 2048} by every outer of {1, 5, 64, 2048}
// of at most limit elements, and the shapes the fake can run.
func middleShapes(limit int) [][3]int {
	var out [][3]int
	for _, mid := range []int{1, 2, 3, 5, 31, 32, 33, 1000, 100003} {
		for _, inner := range []int{1, 3, 4, 5, 32, 33, 64, 2048} {
			for _, outer := range []int{1, 5, 64, 2048} {
				if outer*mid*inner <= limit {
					out = append(out, [3]int{outer, mid, inner})
				}
			}
		}
	}
	return append(out, [3]int{5, 100003, 3}, [3]int{2048, 3, 64}, [3]int{5, 33, 2048})
}

// TestMiddleLayouts: the layouts of nd_mid at the benchmarks' shapes on an
// H100's 132 multiprocessors, and that every layout comes up among the
// test's shapes (at the 132 multiprocessors TestMiddleShapes lays most
// of its folds out for).
func TestMiddleLayouts(t *testing.T) {
	for _, c := range []struct {
		shape                             [3]int
		v, tx, ty, tiles, gx, chunks, siz int
	}{
		{[3]int{2048, 3, 2048}, 4, 256, 1, 2, 4096, 1, 4},
		{[3]int{64, 1024, 64}, 4, 16, 16, 1, 64, 16, 4},
		{[3]int{5, 100003, 3}, 1, 3, 85, 1, 5, 213, 4},
		{[3]int{2048, 5, 3}, 1, 256, 1, 0, 24, 2, 4},
		{[3]int{64, 1024, 64}, 2, 32, 8, 1, 64, 17, 8},
	} {
		v, tx, ty, tiles, gx, chunks := nd.MiddleLayout(132, c.siz, c.shape[0], c.shape[1], c.shape[2])
		got := []int{v, tx, ty, tiles, gx, chunks}
		if want := []int{c.v, c.tx, c.ty, c.tiles, c.gx, c.chunks}; !slices.Equal(got, want) {
			t.Errorf("%v of %d bytes: v, tx, ty, tiles, gx, chunks = %v, want %v", c.shape, c.siz, got, want)
		}
	}
	seen := map[string]bool{}
	for _, sh := range middleShapes(1 << 14) {
		for _, size := range []int{1, 2, 4, 8} {
			_, tx, ty, tiles, _, chunks := nd.MiddleLayout(132, size, sh[0], sh[1], sh[2])
			seen[fmt.Sprint("tiles ", min(tiles, 2), " rows ", min(ty, 2), " chunks ", min(chunks, 2), " tx<32 ", tx < 32)] = true
		}
	}
	for _, want := range []string{
		"tiles 0 rows 1 chunks 1 tx<32 false", "tiles 0 rows 1 chunks 2 tx<32 false",
		"tiles 1 rows 2 chunks 1 tx<32 true", "tiles 1 rows 2 chunks 2 tx<32 true",
		"tiles 1 rows 2 chunks 2 tx<32 false", "tiles 2 rows 1 chunks 1 tx<32 false", "tiles 2 rows 1 chunks 2 tx<32 false",
	} {
		if !seen[want] {
			t.Errorf("no shape of the tests takes the layout %q (took %v)", want, seen)
		}
	}
}

// TestMiddleShapes: Sum, Mean, Prod, Max, Min, All and Any over the middle
// axis of contiguous outer×mid×inner arrays (nd/middle.go) against Go, at
// every shape of middleShapes for float32 and a few for every other type,
// laid out as on an H100 (chunks, tiles, the flat layout) and on the
// fake's device, with their partial results in the stream's scratch and
// in stream-ordered memory (a capture's path): the same bits each way.
func TestMiddleShapes(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	few := [][3]int{{5, 3, 4}, {2, 1000, 3}, {5, 33, 64}, {64, 2, 33}, {1, 31, 5}, {2048, 5, 3}, {3, 1000, 1}, {2, 1000, 64}}
	rng := rand.New(rand.NewPCG(50, 1))
	for _, sms := range []int{132, 0} {
		shapes := middleShapes(1 << 14)
		if sms == 0 {
			shapes = few
		}
		for _, sh := range shapes {
			middleCase[float32](t, s, rng, sms, sh)
		}
		for _, sh := range few {
			middleCase[int8](t, s, rng, sms, sh)
			middleCase[int16](t, s, rng, sms, sh)
			middleCase[int32](t, s, rng, sms, sh)
			middleCase[int64](t, s, rng, sms, sh)
			middleCase[uint8](t, s, rng, sms, sh)
			middleCase[uint16](t, s, rng, sms, sh)
			middleCase[uint32](t, s, rng, sms, sh)
			middleCase[uint64](t, s, rng, sms, sh)
			middleCase[float64](t, s, rng, sms, sh)
			middleCase[cuda.Float16](t, s, rng, sms, sh)
			middleCase[cuda.BFloat16](t, s, rng, sms, sh)
			middleCase[nd.Bool](t, s, rng, sms, sh)
		}
	}
}

// middleCase checks every fold over axis 1 of an outer×mid×inner array of
// T at one layout against Go, and the same bits through stream-ordered
// partial results.
func middleCase[T nd.Elem](t *testing.T, s *cuda.Stream, rng *rand.Rand, sms int, sh [3]int) {
	t.Helper()
	name := fmt.Sprintf("%T/%dx%dx%d/sms%d", *new(T), sh[0], sh[1], sh[2], sms)
	ok := t.Run(name, func(t *testing.T) {
		defer nd.SetMiddleHooks(false, sms)()
		n := sh[0] * sh[1] * sh[2]
		shape := sh[:]
		kinds := []struct {
			what string
			kind valueKind
		}{{"Sum", smallValues}, {"Mean", smallValues}, {"Max", smallValues}, {"Min", smallValues}, {"Prod", prodValues}, {"All", maskValues}, {"Any", maskValues}}
		for _, k := range kinds {
			if k.what == "Mean" && !isFloat[T]() {
				continue
			}
			data := values[T](rng, n, k.kind)
			switch {
			case k.what == "Prod":
				for i := range data { // ±1 (1 for unsigned): no overflow at any mid
					if v := toF64(data[i]); v != 1 && (v != -1 || isUnsigned[T]()) {
						data[i] = fromF[T](1)
					}
				}
			case k.what == "All" || k.what == "Any":
				// Mostly one value, a few of the other, so that some
				// columns fold to each answer.
				common, rare := fromF[T](1), fromF[T](0)
				if k.what == "Any" {
					common, rare = rare, common
				}
				for i := range data {
					data[i] = common
				}
				for range max(1, sh[0]*sh[2]/2) {
					data[rng.IntN(n)] = rare
				}
			case isFloat[T]() && n > 2 && (k.what == "Max" || k.what == "Min"):
				data[rng.IntN(n)] = fromF[T](math.NaN())
			}
			a := free(t, must(nd.FromSlice(s, data, shape...))(t))
			h := host[float64]{make([]float64, n), slices.Clone(shape)}
			for i, v := range data {
				h.data[i] = toF64(v)
			}
			ref, tol := middleRef(k.what), 0.0
			want := foldHost(h, []int{1}, false, ref)
			_, isBool := any(*new(T)).(nd.Bool)
			for i, w := range want.data {
				switch {
				case isBool && k.what == "Sum":
					want.data[i] = bool64(w != 0) // a Bool's sum is an or
				case k.what != "All" && k.what != "Any":
					want.data[i] = roundTo[T](w)
				}
			}
			if k.what == "Mean" {
				tol = 1e-6
				if _, half := any(*new(T)).(cuda.Float16); half {
					tol = 1e-3
				} else if _, half := any(*new(T)).(cuda.BFloat16); half {
					tol = 1e-2
				}
			}
			switch k.what {
			case "All", "Any":
				f := nd.All[T]
				if k.what == "Any" {
					f = nd.Any[T]
				}
				got := free(t, must(f(a, nd.Along(1)))(t))
				closeTo(t, k.what, got, want, 0)
				restore := nd.SetMiddleHooks(true, sms)
				again := free(t, must(f(a, nd.Along(1)))(t))
				restore()
				if g, w := must(again.ToSlice())(t), must(got.ToSlice())(t); !slices.Equal(g, w) {
					t.Fatalf("%s through stream-ordered partial results: %v, want %v", k.what, g, w)
				}
			default:
				f := middleFunc[T](k.what)
				got := free(t, must(f(a, nd.Along(1)))(t))
				closeTo(t, k.what, got, want, tol)
				restore := nd.SetMiddleHooks(true, sms)
				again := free(t, must(f(a, nd.Along(1)))(t))
				restore()
				sameBits(t, k.what+" through stream-ordered partial results", again, got)
			}
		}
	})
	if !ok {
		t.FailNow()
	}
}

// middleRef returns the Go fold of a reduction's name.
func middleRef(what string) func([]float64) float64 {
	nanOr := func(f func([]float64) float64) func([]float64) float64 {
		return func(xs []float64) float64 {
			for _, x := range xs {
				if math.IsNaN(x) {
					return x
				}
			}
			return f(xs)
		}
	}
	switch what {
	case "Sum":
		return sum
	case "Mean":
		return mean
	case "Max":
		return nanOr(slices.Max[[]float64])
	case "Min":
		return nanOr(slices.Min[[]float64])
	case "Prod":
		return func(xs []float64) float64 {
			p := 1.0
			for _, x := range xs {
				p *= x
			}
			return p
		}
	case "All":
		return func(xs []float64) float64 {
			for _, x := range xs {
				if x == 0 {
					return 0
				}
			}
			return 1
		}
	}
	return func(xs []float64) float64 { // Any
		for _, x := range xs {
			if x != 0 {
				return 1
			}
		}
		return 0
	}
}

// middleFunc returns the reduction of T named what (Mean only of floats).
func middleFunc[T nd.Elem](what string) func(*nd.Array[T], nd.Axes) (*nd.Array[T], error) {
	switch what {
	case "Sum":
		return nd.Sum[T]
	case "Max":
		return nd.Max[T]
	case "Min":
		return nd.Min[T]
	case "Prod":
		return nd.Prod[T]
	}
	return func(a *nd.Array[T], x nd.Axes) (*nd.Array[T], error) { // Mean
		switch a := any(a).(type) {
		case *nd.Array[float32]:
			r, err := nd.Mean(a, x)
			return any(r).(*nd.Array[T]), err
		case *nd.Array[float64]:
			r, err := nd.Mean(a, x)
			return any(r).(*nd.Array[T]), err
		case *nd.Array[cuda.Float16]:
			r, err := nd.Mean(a, x)
			return any(r).(*nd.Array[T]), err
		case *nd.Array[cuda.BFloat16]:
			r, err := nd.Mean(a, x)
			return any(r).(*nd.Array[T]), err
		}
		panic("Mean of integers")
	}
}

// sameBits checks that a and b hold the same bits.
func sameBits[T nd.Elem](t testing.TB, what string, a, b *nd.Array[T]) {
	t.Helper()
	ga, gb := must(a.ToSlice())(t), must(b.ToSlice())(t)
	if len(ga) != len(gb) {
		t.Fatalf("%s: %d elements, want %d", what, len(ga), len(gb))
	}
	size := int(unsafe.Sizeof(*new(T)))
	for i := range ga {
		x := unsafe.Slice((*byte)(unsafe.Pointer(&ga[i])), size)
		y := unsafe.Slice((*byte)(unsafe.Pointer(&gb[i])), size)
		if !slices.Equal(x, y) {
			t.Fatalf("%s: element %d is %v, want %v (the same bits)", what, i, ga[i], gb[i])
		}
	}
}

// TestMiddleViews: folds over a middle axis of views: a contiguous view at
// an offset (its address aligned to fewer bytes: narrower loads) folds in
// place; views that are not contiguous (a slice of the last axis, a step
// along the middle, a permutation) fold through a contiguous copy; a
// strided dst takes a contiguous result copied in.
func TestMiddleViews(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	defer nd.SetMiddleHooks(false, 132)()
	data := floats(5*33*6, 3, true)
	a := free(t, must(nd.FromSlice(s, data, 5, 33, 6))(t))
	for _, c := range []struct {
		name string
		view func() (*nd.Array[float32], error)
	}{
		{"offset", func() (*nd.Array[float32], error) { return a.Slice(0, 1, 5, 1) }},
		{"offset by one element", func() (*nd.Array[float32], error) {
			f, err := a.Reshape(-1)
			if err != nil {
				return nil, err
			}
			g, err := f.Slice(0, 1, 1+4*33*4, 1)
			if err != nil {
				return nil, err
			}
			return g.Reshape(4, 33, 4)
		}},
		{"last axis sliced", func() (*nd.Array[float32], error) { return a.Slice(2, 1, 6, 1) }},
		{"middle stepped", func() (*nd.Array[float32], error) { return a.Slice(1, 0, 33, 2) }},
		{"permuted", func() (*nd.Array[float32], error) { return a.Permute(2, 1, 0) }},
		{"reversed", func() (*nd.Array[float32], error) { return a.Slice(1, 32, -34, -1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := must(c.view())(t)
			h := toHost64(hostOf(t, v))
			for _, what := range []string{"Sum", "Max", "Mean"} {
				want := foldHost(h, []int{1}, false, middleRef(what))
				for i, w := range want.data {
					want.data[i] = float64(float32(w))
				}
				got := free(t, must(middleFunc[float32](what)(v, nd.Along(1)))(t))
				closeTo(t, what, got, want, 1e-6)
				sh := v.Shape()
				base := free(t, must(nd.Zeros[float32](s, sh[0], 2*sh[2]))(t))
				dst := must(base.Slice(1, 0, 2*sh[2], 2))(t)
				if err := nd.SumInto(dst, v, nd.Along(1)); err != nil {
					t.Fatal(err)
				}
				closeTo(t, "SumInto a strided dst", dst, foldHost(h, []int{1}, false, sum), 1e-6)
			}
		})
	}
}

// TestMiddleCapture captures folds over a middle axis whose partial
// results take several chunks (the capture's stream-ordered memory and
// second launch) and one chunk, replays the graph with new inputs between,
// and checks that each replay gives the bits the same calls give outside
// the capture (where the last block folds the chunks in the stream's
// scratch).
func TestMiddleCapture(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	defer nd.SetMiddleHooks(false, 132)()
	rng := rand.New(rand.NewPCG(50, 2))
	shapes := [][]int{{2, 1000, 3}, {3, 5, 64}}
	var ins, outs []*nd.Array[float32]
	for _, sh := range shapes {
		n := sh[0] * sh[1] * sh[2]
		ins = append(ins, free(t, must(nd.Zeros[float32](s, sh...))(t)))
		outs = append(outs, free(t, must(nd.Zeros[float32](s, sh[0], sh[2]))(t)))
		_ = n
	}
	mx := free(t, must(nd.Zeros[float32](s, 2, 3))(t))
	record := func() error {
		for i := range ins {
			if err := nd.SumInto(outs[i], ins[i], nd.Along(1)); err != nil {
				return err
			}
		}
		return nd.MaxInto(mx, ins[0], nd.Along(1))
	}
	if err := record(); err != nil { // compiled: a capture does not compile
		t.Fatal(err)
	}
	g := must(s.Capture(cuda.CaptureGlobal, record))(t)
	defer g.Close()
	exec := must(g.Instantiate())(t)
	defer exec.Close()
	for round := range 3 {
		for _, in := range ins {
			data := make([]float32, in.Size())
			for i := range data {
				data[i] = rng.Float32()*2 - 1 // sums that round: the order shows
			}
			b := must(in.Buffer())(t)
			if err := b.CopyFromHost(data); err != nil {
				t.Fatal(err)
			}
		}
		if err := exec.Launch(s); err != nil {
			t.Fatal(err)
		}
		for i, in := range ins {
			want := free(t, must(nd.Sum(in, nd.Along(1)))(t))
			sameBits(t, fmt.Sprintf("round %d: Sum of %v in the graph", round, in.Shape()), outs[i], want)
		}
		sameBits(t, fmt.Sprintf("round %d: Max in the graph", round), mx, free(t, must(nd.Max(ins[0], nd.Along(1)))(t)))
	}
}

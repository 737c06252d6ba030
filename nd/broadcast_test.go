package nd_test

import (
	"fmt"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// TestBroadcastVector: broadcast operations whose last axis is
// contiguous in the result and in each input or broadcast along it (the
// strided kernel's vector variant: 16 bytes of the last axis a thread),
// of every element size, and the patterns beside them that take the
// scalar kernel (a last axis of a length the vector does not divide,
// halves, an input whose address is not aligned to a vector in this
// call), against Go.
func TestBroadcastVector(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	shapes := []struct{ a, b []int }{
		{[]int{4, 16, 8}, []int{16, 1}}, // issue 50's 64×1024×64 + 1024×1
		{[]int{6, 8}, []int{8}},
		{[]int{6, 8}, []int{6, 1}},
		{[]int{3, 5, 32}, []int{5, 32}},
		{[]int{7, 33}, []int{33}}, // 33: no vector
		{[]int{2, 3, 4, 16}, []int{3, 1, 16}},
	}
	for _, sh := range shapes {
		broadcastCase[float32](t, s, sh.a, sh.b)
		broadcastCase[float64](t, s, sh.a, sh.b)
		broadcastCase[int8](t, s, sh.a, sh.b)
		broadcastCase[uint16](t, s, sh.a, sh.b)
		broadcastCase[cuda.Float16](t, s, sh.a, sh.b)
	}
	t.Run("unaligned", func(t *testing.T) {
		// A view one element into its buffer: the signature allows the
		// vector variant, the address does not.
		flat := free(t, must(nd.FromSlice(s, iota[float32](1+6*8), 1+6*8))(t))
		v := must(must(flat.Slice(0, 1, 1+6*8, 1))(t).Reshape(6, 8))(t)
		b := free(t, must(nd.FromSlice(s, iota[float32](8), 8))(t))
		got := free(t, must(nd.Add(v, b))(t))
		want := host[float32]{make([]float32, 48), []int{6, 8}}
		for i := range want.data {
			want.data[i] = float32(1+i) + float32(i%8)
		}
		equal(t, got, want)
		out := free(t, must(nd.Zeros[float32](s, 1+6*8))(t))
		dst := must(must(out.Slice(0, 1, 1+6*8, 1))(t).Reshape(6, 8))(t)
		if err := nd.AddInto(dst, v, b); err != nil {
			t.Fatal(err)
		}
		equal(t, dst, want)
	})
	t.Run("mask", func(t *testing.T) {
		// A float32 comparison into a Bool result: 16 bytes of float32
		// read, 4 of Bool written, a thread.
		a := free(t, must(nd.FromSlice(s, iota[float32](24), 3, 8))(t))
		b := free(t, must(nd.FromSlice(s, []float32{0, 3, 6, 9, 12, 15, 18, 21}, 8))(t))
		got := free(t, must(nd.Less(a, b))(t))
		want := host[nd.Bool]{make([]nd.Bool, 24), []int{3, 8}}
		for i := range want.data {
			if float32(i) < float32(3*(i%8)) {
				want.data[i] = 1
			}
		}
		equal(t, got, want)
	})
}

// broadcastCase checks Add and Mul of arrays of shapes sa and sb of T,
// broadcast, against Go.
func broadcastCase[T nd.Elem](t *testing.T, s *cuda.Stream, sa, sb []int) {
	t.Run(fmt.Sprintf("%T/%v+%v", *new(T), sa, sb), func(t *testing.T) {
		na, nb := size(sa), size(sb)
		da, db := make([]T, na), make([]T, nb)
		for i := range da {
			da[i] = fromF[T](float64(i%13) - 4)
		}
		for i := range db {
			db[i] = fromF[T](float64(i%7) + 1)
		}
		a := free(t, must(nd.FromSlice(s, da, sa...))(t))
		b := free(t, must(nd.FromSlice(s, db, sb...))(t))
		ha, hb := host[T]{da, sa}, host[T]{db, sb}
		shape := broadcastShape(sa, sb)
		for _, op := range []struct {
			name string
			f    func(x, y *nd.Array[T]) (*nd.Array[T], error)
			g    func(x, y float64) float64
		}{
			{"Add", nd.Add[T], func(x, y float64) float64 { return x + y }},
			{"Mul", nd.Mul[T], func(x, y float64) float64 { return x * y }},
		} {
			want := host[float64]{nil, shape}
			each(shape, func(idx []int) {
				want.data = append(want.data, roundTo[T](op.g(toF64(ha.atBroadcast(idx)), toF64(hb.atBroadcast(idx)))))
			})
			closeTo(t, op.name, free(t, must(op.f(a, b))(t)), want, 0)
			closeTo(t, op.name+" reversed", free(t, must(op.f(b, a))(t)), want, 0)
		}
	})
}

// TestIntegerPowKernels: integer Pow, whose C declares variables of its
// own (b_, e_, p_), in nd's contiguous kernel (vectors and the tail), the
// strided kernel's vector variant and its scalar kernel, against Go.
func TestIntegerPowKernels(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	base := make([]int32, 6*9)
	for i := range base {
		base[i] = int32(i%5) - 2
	}
	exps := []int32{0, 1, 2, 3, 4, 5, 2, 1, 3}
	a := free(t, must(nd.FromSlice(s, base, 6, 9))(t))
	for _, c := range []struct {
		name string
		b    *nd.Array[int32]
	}{
		{"contiguous", free(t, must(nd.FromSlice(s, slices.Repeat(exps, 6), 6, 9))(t))},
		{"broadcast row", free(t, must(nd.FromSlice(s, exps, 9))(t))},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, x := range []*nd.Array[int32]{a, must(a.Slice(1, 0, 8, 1))(t)} { // 9 columns: the tail; 8 of 9: strided
				got := free(t, must(nd.Pow(x, must(c.b.Slice(-1, 0, x.Shape()[1], 1))(t)))(t))
				want := host[int32]{nil, x.Shape()}
				hx := hostOf(t, x)
				each(x.Shape(), func(idx []int) {
					p := int32(1)
					for range exps[idx[1]] {
						p *= hx.at(idx)
					}
					want.data = append(want.data, p)
				})
				equal(t, got, want)
			}
		})
	}
	t.Run("vector variant", func(t *testing.T) {
		x := free(t, must(nd.FromSlice(s, base[:32], 4, 8))(t))
		y := free(t, must(nd.FromSlice(s, exps[:8], 8))(t))
		got := free(t, must(nd.Pow(x, y))(t))
		want := host[int32]{nil, []int{4, 8}}
		for i, v := range base[:32] {
			p := int32(1)
			for range exps[i%8] {
				p *= v
			}
			want.data = append(want.data, p)
		}
		equal(t, got, want)
	})
}

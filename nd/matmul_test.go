package nd_test

import (
	"fmt"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// matmulHost is NumPy's matmul of a and b in float64.
func matmulHost(a, b host[float64]) host[float64] {
	as, bs := a.shape, b.shape
	if len(as) == 1 {
		as = []int{1, as[0]}
	}
	if len(bs) == 1 {
		bs = []int{bs[0], 1}
	}
	a2, b2 := host[float64]{a.data, as}, host[float64]{b.data, bs}
	m, k, n := as[len(as)-2], as[len(as)-1], bs[len(bs)-1]
	batch := broadcastShape(as[:len(as)-2], bs[:len(bs)-2])
	full := append(append([]int{}, batch...), m, n)
	out := host[float64]{data: []float64{}}
	each(full, func(i []int) {
		s := 0.0
		for p := range k {
			ai := append(append([]int{}, i[:len(i)-2]...), i[len(i)-2], p)
			bi := append(append([]int{}, i[:len(i)-2]...), p, i[len(i)-1])
			s += a2.atBroadcast(ai) * b2.atBroadcast(bi)
		}
		out.data = append(out.data, s)
	})
	out.shape = append([]int{}, batch...)
	if len(a.shape) > 1 {
		out.shape = append(out.shape, m)
	}
	if len(b.shape) > 1 {
		out.shape = append(out.shape, n)
	}
	return out
}

// atBroadcast for a shape of fewer axes than index aligns from the last:
// as host.atBroadcast, in mapHost's sense.

// TestMatmul: NumPy's matmul rules (1-d operands, batches broadcast),
// transposed views read as cuBLAS's transposes, other views copied, and
// the half types (accumulating in float32), against Go.
func TestMatmul(t *testing.T) {
	s := stream(t)
	arr := func(t *testing.T, shape ...int) *nd.Array[float32] {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return free(t, must(nd.FromSlice(s, floats(n, float64(n), false), shape...))(t))
	}
	for _, tt := range []struct {
		name   string
		a, b   func(t *testing.T) *nd.Array[float32]
		copies bool // a view that is no matrix: copied by a kernel
	}{
		{"2-d", func(t *testing.T) *nd.Array[float32] { return arr(t, 3, 4) }, func(t *testing.T) *nd.Array[float32] { return arr(t, 4, 5) }, false},
		{"a transposed", func(t *testing.T) *nd.Array[float32] { return arr(t, 4, 3).T() }, func(t *testing.T) *nd.Array[float32] { return arr(t, 4, 5) }, false},
		{"both transposed", func(t *testing.T) *nd.Array[float32] { return arr(t, 4, 3).T() }, func(t *testing.T) *nd.Array[float32] { return arr(t, 5, 4).T() }, false},
		{"row slice", func(t *testing.T) *nd.Array[float32] { return must(arr(t, 6, 4).Slice(0, 1, 4, 1))(t) }, func(t *testing.T) *nd.Array[float32] { return must(arr(t, 4, 7).Slice(1, 0, 5, 1))(t) }, false},
		{"vector matrix", func(t *testing.T) *nd.Array[float32] { return arr(t, 4) }, func(t *testing.T) *nd.Array[float32] { return arr(t, 4, 5) }, false},
		{"matrix vector", func(t *testing.T) *nd.Array[float32] { return arr(t, 3, 4) }, func(t *testing.T) *nd.Array[float32] { return arr(t, 4) }, false},
		{"vector vector", func(t *testing.T) *nd.Array[float32] { return arr(t, 4) }, func(t *testing.T) *nd.Array[float32] { return arr(t, 4) }, false},
		{"batched", func(t *testing.T) *nd.Array[float32] { return arr(t, 2, 3, 4) }, func(t *testing.T) *nd.Array[float32] { return arr(t, 2, 4, 5) }, false},
		{"batch broadcast", func(t *testing.T) *nd.Array[float32] { return arr(t, 2, 1, 3, 4) }, func(t *testing.T) *nd.Array[float32] { return arr(t, 5, 4, 2) }, false},
		{"batch folded into rows", func(t *testing.T) *nd.Array[float32] { return arr(t, 2, 3, 3, 4) }, func(t *testing.T) *nd.Array[float32] { return arr(t, 4, 5) }, false},
		{"batch stepped", func(t *testing.T) *nd.Array[float32] { return must(arr(t, 6, 3, 4).Slice(0, 1, nd.None, 2))(t) }, func(t *testing.T) *nd.Array[float32] { return must(arr(t, 3, 5, 4).Permute(0, 2, 1))(t) }, false},
		{"batch of row slices", func(t *testing.T) *nd.Array[float32] { return must(arr(t, 2, 6, 4).Slice(1, 1, 4, 1))(t) }, func(t *testing.T) *nd.Array[float32] { return arr(t, 4, 5) }, false},
		{"batch of transposes", func(t *testing.T) *nd.Array[float32] { return must(arr(t, 2, 4, 3).Permute(0, 2, 1))(t) }, func(t *testing.T) *nd.Array[float32] { return arr(t, 4, 5) }, false},
		{"stepped columns", func(t *testing.T) *nd.Array[float32] { return must(arr(t, 3, 8).Slice(1, 0, nd.None, 2))(t) }, func(t *testing.T) *nd.Array[float32] { return arr(t, 4, 5) }, true},
		{"empty k", func(t *testing.T) *nd.Array[float32] { return arr(t, 3, 0) }, func(t *testing.T) *nd.Array[float32] { return arr(t, 0, 2) }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.copies {
				requireKernels(t)
			}
			a, b := tt.a(t), tt.b(t)
			want := matmulHost(toHost64(hostOf(t, a)), toHost64(hostOf(t, b)))
			got := free(t, must(nd.Matmul(a, b))(t))
			closeTo(t, "Matmul", got, want, 1e-5)
			if len(want.shape) == 2 {
				dst := free(t, must(nd.Zeros[float32](s, want.shape[1], want.shape[0]))(t))
				if err := nd.MatmulInto(dst.T(), a, b); err != nil {
					if tt.copies {
						t.Fatal(err)
					}
					requireKernels(t) // the Into of a view copies
				}
				closeTo(t, "MatmulInto", dst.T(), want, 1e-5)
			}
		})
	}
	// Into a contiguous dst, cuBLAS writes the product itself; into one
	// that is an operand, the product goes through a result of its own.
	t.Run("into", func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			a, b  *nd.Array[float32]
			dstIs int // 0: a new array; 1: a; 2: b
		}{
			{"new", arr(t, 3, 4), arr(t, 4, 5), 0},
			{"batched", arr(t, 2, 3, 4), arr(t, 2, 4, 5), 0},
			{"batch folded", arr(t, 2, 3, 4), arr(t, 4, 5), 0},
			{"vector", arr(t, 4), arr(t, 4, 5), 0},
			{"dst is a", arr(t, 4, 4), arr(t, 4, 4), 1},
			{"dst is b", arr(t, 2, 4, 4), arr(t, 2, 4, 4), 2},
		} {
			t.Run(tt.name, func(t *testing.T) {
				want := matmulHost(toHost64(hostOf(t, tt.a)), toHost64(hostOf(t, tt.b)))
				var dst *nd.Array[float32]
				switch tt.dstIs {
				case 0:
					dst = free(t, must(nd.Full[float32](s, 7, want.shape...))(t))
				case 1:
					dst = tt.a
				case 2:
					dst = tt.b
				}
				if err := nd.MatmulInto(dst, tt.a, tt.b); err != nil {
					t.Fatal(err)
				}
				closeTo(t, "MatmulInto", dst, want, 1e-5)
			})
		}
	})
	t.Run("halves", func(t *testing.T) {
		a16 := free(t, must(nd.FromSlice(s, halves[cuda.BFloat16](12), 3, 4))(t))
		b16 := free(t, must(nd.FromSlice(s, halves[cuda.BFloat16](8), 4, 2))(t))
		want := matmulHost(toHostAny(hostOf(t, a16)), toHostAny(hostOf(t, b16)))
		closeTo(t, "Matmul BFloat16", free(t, must(nd.Matmul(a16, b16))(t)), want, 1e-2)
	})
	t.Run("errors", func(t *testing.T) {
		a, b := arr(t, 3, 4), arr(t, 3, 4)
		for _, err := range []error{second(nd.Matmul(a, b)), second(nd.Matmul(a, nd.Scalar[float32](1))), nd.MatmulInto(a, a, a.T())} {
			if err == nil {
				t.Error("no error")
			} else {
				t.Log(err)
			}
		}
	})
}

func halves[T cuda.Float16 | cuda.BFloat16](n int) []T {
	out := make([]T, n)
	for i, v := range floats(n, float64(n), false) {
		switch p := any(&out[i]).(type) {
		case *cuda.Float16:
			*p = cuda.NewFloat16(v)
		case *cuda.BFloat16:
			*p = cuda.NewBFloat16(v)
		}
	}
	return out
}

func toHostAny[T nd.Elem](h host[T]) host[float64] {
	out := host[float64]{shape: h.shape}
	for _, v := range h.data {
		out.data = append(out.data, toF64(v))
	}
	return out
}

var _ = fmt.Sprint

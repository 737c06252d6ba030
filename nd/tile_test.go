package nd_test

import (
	"fmt"
	"math"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// TestTiledElementwise: operations whose output runs along one axis and
// an input along the other (transposed views, flipped and offset ones,
// with inputs read directly and broadcast beside them, into a transposed
// output) take the tiled kernel, whatever the shape (thin, tall, odd,
// past one tile's reach), and give the CPU's results element for
// element.
func TestTiledElementwise(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	var seen []string
	defer nd.SetTileSeen(func(rows, cols, tr, tc int) {
		seen = append(seen, fmt.Sprintf("%dx%d/%dx%d", rows, cols, tr, tc))
	})()
	for _, sh := range [][2]int{{2, 2}, {8, 4099}, {4099, 8}, {33, 65}, {3, 1000}, {1000, 3}, {64, 64}, {5, 31}, {97, 130}} {
		rows, cols := sh[0], sh[1]
		t.Run(fmt.Sprintf("%dx%d", rows, cols), func(t *testing.T) {
			tileCases[float32](t, s, rows, cols, &seen)
			tileCases[float64](t, s, rows, cols, &seen)
			tileCases[int32](t, s, rows, cols, &seen)
			tileCases[int8](t, s, rows, cols, &seen)
		})
	}
}

// tileValue is element i of a test array: small integers, exact in every
// type and in their sums.
func tileValue[T nd.Elem](i int) T {
	return T((i*7)%23 - 11)
}

// tileCases runs the tiled kernel's cases over a rows×cols array x (its
// transpose is cols×rows) and checks each result and that the tiled
// kernel ran.
func tileCases[T interface {
	float32 | float64 | int32 | int8
}](t *testing.T, s *cuda.Stream, rows, cols int, seen *[]string) {
	t.Helper()
	host := make([]T, rows*cols)
	for i := range host {
		host[i] = tileValue[T](i)
	}
	x := must(nd.FromSlice(s, host, rows, cols))(t)
	defer x.Free()
	xt := func(i, j int) T { return host[j*cols+i] } // x.T()[i][j]
	other := make([]T, rows*cols)
	for i := range other {
		other[i] = tileValue[T](i + 5)
	}
	y := must(nd.FromSlice(s, other, cols, rows))(t) // contiguous, x.T()'s shape
	defer y.Free()
	col := must(nd.FromSlice(s, other[:cols], cols, 1))(t) // broadcast along the rows of x.T()
	defer col.Free()
	check := func(t *testing.T, name string, got *nd.Array[T], want func(i, j int) T) {
		t.Helper()
		g := must(got.ToSlice())(t)
		for i := range cols {
			for j := range rows {
				if w := want(i, j); g[i*rows+j] != w {
					t.Fatalf("%s: [%d][%d] = %v, want %v", name, i, j, g[i*rows+j], w)
				}
			}
		}
	}
	ran := func(t *testing.T, name string) {
		t.Helper()
		if len(*seen) == 0 {
			t.Fatalf("%s: the tiled kernel did not run", name)
		}
		*seen = (*seen)[:0]
	}

	*seen = (*seen)[:0]
	// x.T() + y into a new array: one input staged, one read directly.
	z := must(nd.Add(x.T(), y))(t)
	ran(t, "Add(x.T(), y)")
	check(t, "Add(x.T(), y)", z, func(i, j int) T { return xt(i, j) + other[i*rows+j] })
	z.Free()

	// x.T() · x.T() into a contiguous array: two staged inputs (the same
	// one twice). Mul itself would lay its result out as its inputs are,
	// so that no transpose is left.
	z = must(nd.Empty[T](s, cols, rows))(t)
	if err := nd.MulInto(z, x.T(), x.T()); err != nil {
		t.Fatal(err)
	}
	ran(t, "Mul(x.T(), x.T())")
	check(t, "Mul(x.T(), x.T())", z, func(i, j int) T { return xt(i, j) * xt(i, j) })
	z.Free()

	// x.T() - col into a contiguous array, col broadcast along the rows.
	z = must(nd.Empty[T](s, cols, rows))(t)
	if err := nd.SubInto(z, x.T(), col); err != nil {
		t.Fatal(err)
	}
	ran(t, "Sub(x.T(), col)")
	check(t, "Sub(x.T(), col)", z, func(i, j int) T { return xt(i, j) - other[i] })
	z.Free()

	// Into a transposed output: dst.T() = x + y.T(), x read directly,
	// y.T() contiguous along the output's run (after the swap, staged).
	dst := must(nd.Zeros[T](s, cols, rows))(t)
	if err := nd.AddInto(dst.T(), x, y.T()); err != nil {
		t.Fatal(err)
	}
	ran(t, "AddInto(dst.T(), x, y.T())")
	check(t, "AddInto(dst.T(), x, y.T())", dst, func(i, j int) T { return xt(i, j) + other[i*rows+j] })
	dst.Free()

	// Into a flipped output, dst[:, ::-1] = x.T(): the output's run a
	// stride of -1.
	dst = must(nd.Zeros[T](s, cols, rows))(t)
	if err := nd.CopyInto(must(dst.Slice(1, nd.None, nd.None, -1))(t), x.T()); err != nil {
		t.Fatal(err)
	}
	ran(t, "CopyInto(dst[:, ::-1], x.T())")
	check(t, "CopyInto(dst[:, ::-1], x.T())", dst, func(i, j int) T { return xt(i, rows-1-j) })
	dst.Free()

	// A flipped and offset transposed view: x[1:, ::-1].T().
	if rows > 2 && cols > 2 {
		v := must(must(x.Slice(0, 1, nd.None, 1))(t).Slice(1, nd.None, nd.None, -1))(t).T()
		z = must(nd.Empty[T](s, cols, rows-1))(t)
		if err := nd.MaximumInto(z, v, v); err != nil {
			t.Fatal(err)
		}
		ran(t, "Maximum(x[1:, ::-1].T())")
		g := must(z.ToSlice())(t)
		for i := range cols {
			for j := range rows - 1 {
				if w := host[(j+1)*cols+cols-1-i]; g[i*(rows-1)+j] != w {
					t.Fatalf("x[1:, ::-1].T()[%d][%d] = %v, want %v", i, j, g[i*(rows-1)+j], w)
				}
			}
		}
		z.Free()
	}

	// A comparison: a mask (Bool) out.
	m := must(nd.Less(x.T(), y))(t)
	ran(t, "Less(x.T(), y)")
	mg := must(m.ToSlice())(t)
	for i := range cols {
		for j := range rows {
			if want := xt(i, j) < other[i*rows+j]; (mg[i*rows+j] != 0) != want {
				t.Fatalf("Less: [%d][%d] = %v, want %v", i, j, mg[i*rows+j], want)
			}
		}
	}
	m.Free()

	// A contiguous copy of the transpose.
	z = must(x.T().Contiguous())(t)
	ran(t, "x.T().Contiguous()")
	check(t, "x.T().Contiguous()", z, xt)
	z.Free()
}

// TestTiledExp: Exp of a transposed float32 view into a contiguous array
// through the tiled kernel, within a few float32 ulps of the CPU's, NaNs
// and infinities in place.
func TestTiledExp(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	ran := 0
	defer nd.SetTileSeen(func(rows, cols, tr, tc int) { ran++ })()
	const rows, cols = 8, 1000
	host := make([]float32, rows*cols)
	for i := range host {
		host[i] = float32(math.Sin(float64(i))) * 5
	}
	host[3] = float32(math.NaN())
	host[17] = float32(math.Inf(1))
	host[40] = float32(math.Inf(-1))
	x := must(nd.FromSlice(s, host, rows, cols))(t)
	defer x.Free()
	z := must(nd.Empty[float32](s, cols, rows))(t)
	defer z.Free()
	if err := nd.ExpInto(z, x.T()); err != nil {
		t.Fatal(err)
	}
	if ran == 0 {
		t.Fatal("the tiled kernel did not run")
	}
	g := must(z.ToSlice())(t)
	for i := range cols {
		for j := range rows {
			want := math.Exp(float64(host[j*cols+i]))
			got := float64(g[i*rows+j])
			switch {
			case math.IsNaN(want):
				if !math.IsNaN(got) {
					t.Fatalf("[%d][%d] = %v, want NaN", i, j, got)
				}
			case math.IsInf(want, 0) || want == 0:
				if got != want {
					t.Fatalf("[%d][%d] = %v, want %v", i, j, got, want)
				}
			case math.Abs(got-want) > 1e-6*want: // as TestUnary: float32's exp within a few ulps
				t.Fatalf("[%d][%d] = %v, want %v", i, j, got, want)
			}
		}
	}
}

// TestTiledHalves: the tiled kernel over float16 and bfloat16, each
// element computed in float32 and rounded once, as every other kernel of
// halves, and a transposed copy that keeps a NaN's payload bit for bit.
func TestTiledHalves(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	ran := 0
	defer nd.SetTileSeen(func(rows, cols, tr, tc int) { ran++ })()
	t.Run("float16", func(t *testing.T) { tiledHalves(t, s, cuda.NewFloat16, &ran) })
	t.Run("bfloat16", func(t *testing.T) { tiledHalves(t, s, cuda.NewBFloat16, &ran) })
}

func tiledHalves[T interface {
	nd.Elem
	Float32() float32
	comparable
}](t *testing.T, s *cuda.Stream, of func(float32) T, ran *int) {
	const rows, cols = 37, 70
	host, other := make([]T, rows*cols), make([]T, rows*cols)
	for i := range host {
		host[i] = of(float32(math.Sin(float64(i))) * 3)
		other[i] = of(float32(math.Cos(float64(i))) * 2)
	}
	var nan T
	*(*uint16)(unsafe.Pointer(&nan)) = 0x7d23 // float16: a signalling NaN; bfloat16: a large finite value
	host[5] = nan
	x := must(nd.FromSlice(s, host, rows, cols))(t)
	defer x.Free()
	y := must(nd.FromSlice(s, other, cols, rows))(t)
	defer y.Free()
	z := must(nd.Empty[T](s, cols, rows))(t)
	defer z.Free()
	*ran = 0
	if err := nd.AddInto(z, x.T(), y); err != nil {
		t.Fatal(err)
	}
	if *ran == 0 {
		t.Fatal("the tiled kernel did not run")
	}
	g := must(z.ToSlice())(t)
	for i := range cols {
		for j := range rows {
			a, b := host[j*cols+i].Float32(), other[i*rows+j].Float32()
			want := of(a + b)
			if got := g[i*rows+j]; got != want && !(a != a && got.Float32() != got.Float32()) {
				t.Fatalf("[%d][%d] = %v, want %v", i, j, got, want)
			}
		}
	}
	*ran = 0
	c := must(x.T().Contiguous())(t)
	defer c.Free()
	if *ran == 0 {
		t.Fatal("the transposed copy did not take the tiled kernel")
	}
	g = must(c.ToSlice())(t)
	for i := range cols {
		for j := range rows {
			if got, want := g[i*rows+j], host[j*cols+i]; got != want {
				t.Fatalf("copy [%d][%d] = %#04x, want %#04x", i, j, *(*uint16)(unsafe.Pointer(&got)), *(*uint16)(unsafe.Pointer(&want)))
			}
		}
	}
}

// TestTiledBatch: a batch of transposes (the last two axes swapped, and
// the first and last with the batch between them) takes the tiled
// kernel, a tile of a batch's element at a time, and gives the CPU's;
// with grids of at most 1 and 2 blocks along the rows' tiles and the
// batch, whose blocks then loop over the rest.
func TestTiledBatch(t *testing.T) {
	for _, most := range []int{65535, 2, 1} {
		t.Run(fmt.Sprint("grid ", most), func(t *testing.T) {
			defer nd.SetTileGridMax(most)()
			tiledBatch(t)
		})
	}
}

func tiledBatch(t *testing.T) {
	requireKernels(t)
	s := stream(t)
	ran := 0
	defer nd.SetTileSeen(func(rows, cols, tr, tc int) { ran++ })()
	const d0, d1, d2 = 3, 37, 45
	host := make([]float32, d0*d1*d2)
	for i := range host {
		host[i] = float32(i%101) - 50
	}
	x := must(nd.FromSlice(s, host, d0, d1, d2))(t)
	defer x.Free()
	at := func(i, j, k int) float32 { return host[(i*d1+j)*d2+k] }
	for _, c := range []struct {
		name string
		perm []int
	}{
		{"swap the last two", []int{0, 2, 1}},
		{"swap the first and last", []int{2, 1, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := must(x.Permute(c.perm...))(t)
			shape := v.Shape()
			z := must(nd.Empty[float32](s, shape...))(t)
			defer z.Free()
			ran = 0
			if err := nd.AddInto(z, v, v); err != nil {
				t.Fatal(err)
			}
			if ran == 0 {
				t.Fatal("the tiled kernel did not run")
			}
			g := must(z.ToSlice())(t)
			for a := range shape[0] {
				for b := range shape[1] {
					for e := range shape[2] {
						idx := [3]int{}
						idx[c.perm[0]], idx[c.perm[1]], idx[c.perm[2]] = a, b, e
						want := 2 * at(idx[0], idx[1], idx[2])
						if got := g[(a*shape[1]+b)*shape[2]+e]; got != want {
							t.Fatalf("[%d][%d][%d] = %v, want %v", a, b, e, got, want)
						}
					}
				}
			}
		})
	}
}

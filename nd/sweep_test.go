package nd_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/sweep"
	"github.com/gocuda/cuda/nd"
)

// TestFaultSweep fails each driver, cuBLAS and cuRAND call each operation
// of package nd that runs on the fake driver makes, one at a time, with
// each of a few codes (internal/sweep): the operation returns an error
// carrying the code, its sentinel and the call's name, holds nothing
// afterwards once its results are freed, and the arrays, the stream and
// the context involved still work. Every exported function and method is
// in a row, in ndNoDriver (it calls nothing), or in ndNotOnFake (it needs
// a generated kernel, which the fake does not run), so that new API fails
// the sweep until it has one of the three.
func TestFaultSweep(t *testing.T) {
	api := sweep.API(t, sweep.Zero{Packages: map[string]string{".": "nd"}, Types: sweepZeroTypes()})
	notOnFake := map[string]bool{}
	for _, name := range ndNotOnFake {
		notOnFake[name] = true
	}
	var swept []string
	for _, name := range api {
		if !notOnFake[name] {
			swept = append(swept, name)
		}
		delete(notOnFake, name)
	}
	for name := range notOnFake {
		t.Errorf("ndNotOnFake names %s, which is not in the package's API", name)
	}
	sweep.Run(t, sweep.Config{
		Cases:    ndSweepCases(),
		Families: ndFamilies,
		PTX:      "../testdata/kernels.ptx",
		// The fake's cuBLAS and cuRAND, not a GPU machine's own.
		ChildEnv: []string{cublas.EnvLibrary + "=", cublas.EnvLibraryLt + "=", curand.EnvLibrary + "="},
		Race:     raceEnabled,
		API:      swept,
		NoDriver: ndNoDriver,
	})
}

// sweepZeroTypes is zeroTypes as internal/sweep takes it.
func sweepZeroTypes() map[string]sweep.ZeroType {
	out := map[string]sweep.ZeroType{}
	for name, zero := range zeroTypes {
		out["nd."+name] = sweep.ZeroType{Zero: zero}
	}
	return out
}

// ndFamilies are how cuBLAS's and cuRAND's calls fail, as in
// internal/sweep/libs: cuBLAS's with allocation failed, invalid value and
// execution failed, cuRAND's with allocation failed, launch failure and an
// unknown code, each carried as the package's Result.
var ndFamilies = []sweep.Family{
	{Prefix: "cublas", Codes: []int{3, 7, 13}, Carries: func(err error, code int) bool { return errors.Is(err, cublas.Result(code)) },
		Sentinels: map[int]error{3: cuda.ErrOutOfMemory, 7: cuda.ErrInvalidValue}},
	{Prefix: "curand", Codes: []int{102, 201, 999}, Carries: func(err error, code int) bool { return errors.Is(err, curand.Result(code)) },
		Sentinels: map[int]error{102: cuda.ErrOutOfMemory}},
}

// ndNoDriver are the exported functions and methods that call nothing:
// an array's metadata, views made without reading them (the view row
// reads each, through ToSlice), expressions built, Axes, errors.
var ndNoDriver = []string{
	"nd.Scalar", "nd.Along", "nd.Lazy", "nd.Const",
	"Array.Shape", "Array.Strides", "Array.Ndim", "Array.Size", "Array.Stream", "Array.Context",
	"Array.IsContiguous", "Array.IsView", "Array.Dtype", "Array.T",
	"Axes.KeepDims", "Error.Error", "Error.Unwrap",
	"Expr.Add", "Expr.Sub", "Expr.Mul", "Expr.Div", "Expr.Pow", "Expr.Maximum", "Expr.Minimum", "Expr.Clip",
	"Expr.Neg", "Expr.Abs", "Expr.Sign", "Expr.Relu", "Expr.Exp", "Expr.Log", "Expr.Sqrt", "Expr.Sin",
	"Expr.Cos", "Expr.Tanh", "Expr.Sigmoid", "Expr.Gelu", "Expr.Floor", "Expr.Ceil", "Expr.Round",
}

// ndNotOnFake are the operations no row sweeps: each runs a kernel
// generated through package compute (elementwise, reductions, rows along
// an axis, gathers, strided copies), and the fake driver runs no
// generated kernel (nd's requireKernels skips there: TestBinary says so).
// Their driver calls are those of the rows' kinds (an allocation, a
// free) beside compute's module loads and launches, which compute's own
// TestFaultSweep sweeps with its stand-in kernels. Once the fake runs
// nd's kernels, each gets a row. Fill of a strided array, Full of 8-byte
// values whose halves differ, Eye, Reshape and Contiguous of a strided
// array and MatmulInto (its copy into dst) are kernels too; Fill, Full,
// Reshape, Contiguous and Matmul are swept on their paths without one.
var ndNotOnFake = []string{
	"nd.Add", "nd.AddInto", "nd.Sub", "nd.SubInto", "nd.Mul", "nd.MulInto", "nd.Div", "nd.DivInto",
	"nd.Pow", "nd.PowInto", "nd.Maximum", "nd.MaximumInto", "nd.Minimum", "nd.MinimumInto",
	"nd.Equal", "nd.NotEqual", "nd.Less", "nd.LessEqual", "nd.Greater", "nd.GreaterEqual", "nd.CompareInto",
	"nd.LogicalAnd", "nd.LogicalOr", "nd.LogicalNot", "nd.LogicalAndInto", "nd.LogicalOrInto", "nd.LogicalNotInto",
	"nd.IsNaN", "nd.IsNaNInto", "nd.Where", "nd.WhereInto", "nd.Clip", "nd.ClipInto", "nd.Cast", "nd.CastInto",
	"nd.Neg", "nd.NegInto", "nd.Abs", "nd.AbsInto", "nd.Sign", "nd.SignInto", "nd.Relu", "nd.ReluInto",
	"nd.Exp", "nd.ExpInto", "nd.Log", "nd.LogInto", "nd.Sqrt", "nd.SqrtInto", "nd.Sin", "nd.SinInto",
	"nd.Cos", "nd.CosInto", "nd.Tanh", "nd.TanhInto", "nd.Sigmoid", "nd.SigmoidInto", "nd.Gelu", "nd.GeluInto",
	"nd.Floor", "nd.FloorInto", "nd.Ceil", "nd.CeilInto", "nd.Round", "nd.RoundInto",
	"nd.IsClose", "nd.AllClose", "nd.Diff",
	"nd.Sum", "nd.SumInto", "nd.Max", "nd.MaxInto", "nd.Min", "nd.MinInto", "nd.Mean", "nd.MeanInto",
	"nd.Prod", "nd.ProdInto", "nd.All", "nd.AllInto", "nd.Any", "nd.AnyInto", "nd.Var", "nd.VarInto",
	"nd.Std", "nd.StdInto", "nd.Norm",
	"nd.Softmax", "nd.SoftmaxInto", "nd.LogSoftmax", "nd.LogSoftmaxInto", "nd.Cumsum", "nd.CumsumInto",
	"nd.ArgMax", "nd.ArgMaxInto", "nd.ArgMin", "nd.ArgMinInto",
	"nd.Take", "nd.TakeInto", "nd.Concat", "nd.ConcatInto", "nd.Stack", "nd.Tile", "nd.Repeat",
	"nd.Arange", "nd.Linspace", "nd.Eye", "nd.CopyInto", "nd.RandInt", "nd.MatmulInto",
	"Array.Copy", "Expr.Eval", "Expr.EvalInto",
}

// ndSweepCases are the rows: the constructors, reading, views, Free,
// Matmul and the random arrays.
func ndSweepCases() []sweep.Case {
	cases := []sweep.Case{
		makeCase("Empty", []string{"nd.Empty"}, func(s *cuda.Stream) (*nd.Array[float32], error) { return nd.Empty[float32](s, 3, 4) }, nil),
		makeCase("Zeros", []string{"nd.Zeros"}, func(s *cuda.Stream) (*nd.Array[float32], error) { return nd.Zeros[float32](s, 3, 4) }, make([]float32, 12)),
		makeCase("Ones float32", []string{"nd.Ones"}, func(s *cuda.Stream) (*nd.Array[float32], error) { return nd.Ones[float32](s, 5) },
			[]float32{1, 1, 1, 1, 1}),
		makeCase("Full int8", []string{"nd.Full"}, func(s *cuda.Stream) (*nd.Array[int8], error) { return nd.Full(s, int8(-3), 2, 2) },
			[]int8{-3, -3, -3, -3}),
		makeCase("Full float16", []string{"nd.Full"}, func(s *cuda.Stream) (*nd.Array[cuda.Float16], error) {
			return nd.Full(s, cuda.NewFloat16(1.5), 3)
		}, []cuda.Float16{cuda.NewFloat16(1.5), cuda.NewFloat16(1.5), cuda.NewFloat16(1.5)}),
		makeCase("Full int64", []string{"nd.Full"}, func(s *cuda.Stream) (*nd.Array[int64], error) { return nd.Full(s, int64(-1), 3) },
			[]int64{-1, -1, -1}),
		makeCase("Full bool", []string{"nd.Full"}, func(s *cuda.Stream) (*nd.Array[nd.Bool], error) { return nd.Full(s, nd.Bool(1), 2) },
			[]nd.Bool{1, 1}),
		makeCase("FromSlice", []string{"nd.FromSlice"}, func(s *cuda.Stream) (*nd.Array[float32], error) {
			return nd.FromSlice(s, iota[float32](6), 2, 3)
		}, iota[float32](6)),
		{Name: "Fill", Covers: []string{"nd.Fill"}, // of a contiguous array: a memset
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				a := must(nd.Zeros[float32](e.S, 2, 3))(t)
				row := must(a.Index(0, 1))(t) // a contiguous view: its memory only
				return func() error {
						return sweep.FirstErr(func() error { return nd.Fill(row, 2.5) },
							func() error { return readAs(a, []float32{0, 0, 0, 2.5, 2.5, 2.5}) })
					}, func(t *testing.T, err error) {
						if err := nd.Fill(a, 1); err != nil {
							t.Errorf("Fill after the failure: %v", err)
						}
						stillReads(t, a, []float32{1, 1, 1, 1, 1, 1})
						freeAll(t, a)
					}
			}},
		matmulFirstUse(),
		matmulCase("Matmul", [2][]int{{2, 3}, {3, 4}}, false),
		matmulCase("Matmul 1-d", [2][]int{{3}, {3, 4}}, false),
		matmulCase("Matmul transposed", [2][]int{{2, 3}, {3, 4}}, true),
		matmulCase("Matmul batched", [2][]int{{2, 2, 3}, {1, 3, 4}}, false),
		{Name: "reading", Covers: []string{"Array.ToSlice", "Array.Item", "nd.FromBuffer", "Array.Buffer"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				a := must(nd.FromSlice(e.S, iota[float32](12), 3, 4))(t)
				buf := must(a.Buffer())(t)
				return func() error {
						return sweep.FirstErr(
							func() error { return readAs(a, iota[float32](12)) },
							func() error {
								v, err := a.Item(2, -1)
								return firstOr(err, check(v == 11, "Item(2, -1) = %v, want 11", v))
							},
							func() error {
								b, err := nd.FromBuffer(e.S, buf, 4, 3)
								if err != nil {
									return err
								}
								return readAs(b, iota[float32](12))
							},
						)
					}, func(t *testing.T, err error) {
						stillReads(t, a, iota[float32](12))
						freeAll(t, a)
					}
			}},
		{Name: "views", Covers: []string{"Array.Reshape", "Array.Permute", "Array.Slice", "Array.Index", "Array.At", "Array.BroadcastTo",
			"Array.Expand", "Array.Squeeze", "Array.Unsqueeze", "Array.Contiguous", "nd.Split", "nd.Meshgrid", "nd.Diag"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				a := must(nd.FromSlice(e.S, iota[float32](12), 3, 4))(t)
				v := must(nd.FromSlice(e.S, iota[float32](2)))(t)
				type view struct {
					make func() (*nd.Array[float32], error)
					want []float32
				}
				views := []view{
					{func() (*nd.Array[float32], error) { return a.Reshape(2, 6) }, iota[float32](12)},
					{func() (*nd.Array[float32], error) { return a.Permute(1, 0) }, []float32{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}},
					{func() (*nd.Array[float32], error) { return a.Slice(1, nd.None, nd.None, -2) }, []float32{3, 1, 7, 5, 11, 9}},
					{func() (*nd.Array[float32], error) { return a.Index(0, -1) }, []float32{8, 9, 10, 11}},
					{func() (*nd.Array[float32], error) { return a.At(1, 2) }, []float32{6}},
					{func() (*nd.Array[float32], error) { return v.BroadcastTo(2, 2) }, []float32{0, 1, 0, 1}},
					{func() (*nd.Array[float32], error) { return must(v.Unsqueeze(1))(t).Expand(-1, 3) }, []float32{0, 0, 0, 1, 1, 1}},
					{func() (*nd.Array[float32], error) { return must(a.Index(0, 1))(t).Unsqueeze(0) }, []float32{4, 5, 6, 7}},
					{func() (*nd.Array[float32], error) { return must(a.Slice(0, 1, 2, 1))(t).Squeeze() }, []float32{4, 5, 6, 7}},
					{func() (*nd.Array[float32], error) { return a.Contiguous() }, iota[float32](12)},
					{func() (*nd.Array[float32], error) { return nd.Diag(a) }, []float32{0, 5, 10}},
					{func() (*nd.Array[float32], error) { p, err := nd.Split(a, []int{1}, 1); return second2(p, err, 1) }, []float32{1, 2, 3, 5, 6, 7, 9, 10, 11}},
					{func() (*nd.Array[float32], error) { g, err := nd.Meshgrid(v, v); return second2(g, err, 1) }, []float32{0, 1, 0, 1}},
				}
				return func() error {
						for i, vw := range views {
							x, err := vw.make()
							if err != nil {
								return fmt.Errorf("view %d: %w", i, err)
							}
							if err := readAs(x, vw.want); err != nil {
								return err
							}
						}
						return nil
					}, func(t *testing.T, err error) {
						stillReads(t, a, iota[float32](12))
						freeAll(t, a, v)
					}
			}},
		{Name: "String", Covers: []string{"Array.String"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				small := must(nd.FromSlice(e.S, iota[float32](6), 2, 3))(t)
				large := must(nd.FromSlice(e.S, iota[float32](40*50), 40, 50))(t) // summarized: one copy a run
				return func() error {
						for _, x := range []*nd.Array[float32]{small, large, large.T()} {
							if err := printed(x.String()); err != nil {
								return err
							}
						}
						return nil
					}, func(t *testing.T, err error) {
						stillReads(t, small, iota[float32](6))
						freeAll(t, small, large)
					}
			}},
		{Name: "Array.Free", Covers: []string{"Array.Free"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				a := must(nd.FromSlice(e.S, iota[float32](6), 2, 3))(t)
				view := must(a.Slice(0, 1, 2, 1))(t)
				use := func() error { return readAs(a, iota[float32](6)) }
				return a.Free, func(t *testing.T, err error) {
					if err == nil {
						if _, verr := view.ToSlice(); !errors.Is(verr, cuda.ErrClosed) {
							t.Errorf("a view of a freed array read: %v, want an error wrapping ErrClosed", verr)
						}
						return
					}
					sweep.CloseAgain(use, a.Free)(t, err)
				}
			}},
		{Name: "random", Covers: []string{"nd.Uniform", "nd.Normal"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				g := must(curand.New(e.S, curand.Philox4x32_10, 1))(t)
				var made []*nd.Array[float32]
				var made64 []*nd.Array[float64]
				return func() error {
						return sweep.FirstErr(
							func() error {
								u, err := nd.Uniform[float32](g, 3, 5)
								if err != nil {
									return err
								}
								made = append(made, u)
								xs, err := u.ToSlice()
								return firstOr(err, check(len(xs) == 15 && slices.IndexFunc(xs, func(x float32) bool { return x <= 0 || x > 1 }) < 0,
									"Uniform gave %v", xs))
							},
							func() error {
								n, err := nd.Normal[float64](g, 0, 1, 7) // odd: cuRAND's pairs and a last one
								if err != nil {
									return err
								}
								made64 = append(made64, n)
								_, err = n.ToSlice()
								return err
							},
						)
					}, func(t *testing.T, err error) {
						freeAll(t, made...)
						freeAll(t, made64...)
						if u, err := nd.Uniform[float32](g, 2); err != nil { // the generator still draws
							t.Errorf("Uniform after the failure: %v", err)
						} else {
							freeAll(t, u)
						}
						e.S.Synchronize()
						if err := g.Close(); err != nil {
							t.Errorf("closing the generator: %v", err)
						}
						sweep.StillWorks(t, "random", e.Ctx, e.S)
					}
			}},
	}
	for i, c := range cases {
		cases[i].Prepare = settled(c.Prepare)
	}
	return cases
}

// settled ends a row's after by synchronizing the shared context, which
// also hands the memory the row freed in stream order (an array's Free)
// back to the driver: the fake counts an allocation until its free has
// run, and the sweep counts what the fake holds right after the after.
func settled(prepare func(*testing.T, *sweep.Env) (func() error, func(*testing.T, error))) func(*testing.T, *sweep.Env) (func() error, func(*testing.T, error)) {
	return func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
		op, after := prepare(t, e)
		return op, func(t *testing.T, err error) {
			after(t, err)
			if err := e.Ctx.Synchronize(); err != nil {
				t.Errorf("the context after the row: %v", err)
			}
		}
	}
}

// makeCase is the row of a constructor: make's array holds want (nil: any
// elements), and a failed one leaves nothing behind.
func makeCase[T nd.Elem](name string, covers []string, make func(*cuda.Stream) (*nd.Array[T], error), want []T) sweep.Case {
	return sweep.Case{Name: name, Covers: covers,
		Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
			var a *nd.Array[T]
			return func() error {
					var err error
					if a, err = make(e.S); err != nil {
						return err
					}
					if want == nil {
						_, err = a.ToSlice()
						return err
					}
					return readAs(a, want)
				}, func(t *testing.T, err error) {
					if a != nil {
						if ferr := a.Free(); ferr != nil {
							t.Errorf("%s: freeing the array: %v", name, ferr)
						}
					}
					sweep.StillWorks(t, name, e.Ctx, e.S)
				}
		}}
}

// matmulCase is the row of a product of arrays of the shapes (transposed:
// each the T of an array of its shape reversed, read as cuBLAS's
// transposed operand, not copied) on the shared stream, whose cuBLAS
// handle the row's first Prepare makes (matmulFirstUse sweeps its making).
func matmulCase(name string, shapes [2][]int, transposed bool) sweep.Case {
	return sweep.Case{Name: name, Covers: []string{"nd.Matmul"},
		Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
			x, y, want, bases := matmulOperands(t, e.S, shapes, transposed)
			warm := must(nd.Matmul(x, y))(t)
			must(0, warm.Free())(t)
			var out *nd.Array[float32]
			return func() (err error) {
					if out, err = nd.Matmul(x, y); err != nil {
						return err
					}
					return readAs(out, want)
				}, func(t *testing.T, err error) {
					if out != nil {
						freeAll(t, out)
					}
					// The operands and the handle still multiply.
					again, aerr := nd.Matmul(x, y)
					if aerr == nil {
						aerr = readAs(again, want)
						freeAll(t, again)
					}
					if aerr != nil {
						t.Errorf("%s after the failure (%v): %v", name, err, aerr)
					}
					freeAll(t, bases...)
				}
		}}
}

// matmulFirstUse is Matmul's first call on a stream, in a context of its
// own each time: the cuBLAS handle it makes, and its failures, are swept
// too; the context's Close closes the handle.
func matmulFirstUse() sweep.Case {
	return sweep.Case{Name: "Matmul first use", Covers: []string{"nd.Matmul"},
		Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
			ctx := must(cuda.NewContext(e.Ctx.Device()))(t)
			s := must(ctx.NewStream())(t)
			shapes := [2][]int{{2, 3}, {3, 2}}
			x, y, want, bases := matmulOperands(t, s, shapes, false)
			var out *nd.Array[float32]
			return func() (err error) {
					if out, err = nd.Matmul(x, y); err != nil {
						return err
					}
					return readAs(out, want)
				}, func(t *testing.T, err error) {
					if out != nil {
						freeAll(t, out)
					}
					again, aerr := nd.Matmul(x, y)
					if aerr == nil {
						aerr = readAs(again, want)
						freeAll(t, again)
					}
					if aerr != nil {
						t.Errorf("Matmul after the failure (%v): %v", err, aerr)
					}
					freeAll(t, bases...)
					if err := s.Close(); err != nil {
						t.Error(err)
					}
					if err := ctx.Close(); err != nil {
						t.Error(err)
					}
				}
		}}
}

// matmulOperands returns arrays of the shapes holding 1, 2, 3, ... (or,
// transposed, the T of such arrays of the shapes reversed) and their
// product, computed on the host, and the arrays to free (x and y, or the
// arrays they are views of).
func matmulOperands(t *testing.T, s *cuda.Stream, shapes [2][]int, transposed bool) (x, y *nd.Array[float32], want []float32, bases []*nd.Array[float32]) {
	t.Helper()
	mk := func(shape []int) (*nd.Array[float32], host[float64]) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := iota[float32](n)
		if !transposed {
			a := must(nd.FromSlice(s, data, shape...))(t)
			bases = append(bases, a)
			return a, toHost64(host[float32]{data, shape})
		}
		rev := slices.Clone(shape)
		slices.Reverse(rev)
		a := must(nd.FromSlice(s, data, rev...))(t)
		bases = append(bases, a)
		return a.T(), toHost64(hostOf(t, a.T()))
	}
	x, hx := mk(shapes[0])
	y, hy := mk(shapes[1])
	// 1-d operands as a row and a column, as Matmul takes them.
	if len(hx.shape) == 1 {
		hx.shape = []int{1, hx.shape[0]}
	}
	prod := batchedHost(hx, hy)
	for _, v := range prod.data {
		want = append(want, float32(v))
	}
	return x, y, want, bases
}

// batchedHost is the product of a and b (2-d, or 3-d batches broadcast).
func batchedHost(a, b host[float64]) host[float64] {
	if len(a.shape) == 2 && len(b.shape) == 2 {
		return matmulHost(a, b)
	}
	pad := func(h host[float64]) host[float64] {
		if len(h.shape) == 2 {
			return host[float64]{h.data, append([]int{1}, h.shape...)}
		}
		return h
	}
	a, b = pad(a), pad(b)
	n := max(a.shape[0], b.shape[0])
	var out host[float64]
	for i := range n {
		pick := func(h host[float64]) host[float64] {
			k := i % h.shape[0]
			size := h.shape[1] * h.shape[2]
			return host[float64]{h.data[k*size : (k+1)*size], h.shape[1:]}
		}
		p := matmulHost(pick(a), pick(b))
		out.data = append(out.data, p.data...)
		out.shape = append([]int{n}, p.shape...)
	}
	return out
}

// readAs reads a and returns ToSlice's error, or one saying a does not
// hold want.
func readAs[T nd.Elem](a *nd.Array[T], want []T) error {
	got, err := a.ToSlice()
	return firstOr(err, check(slices.Equal(got, want), "read %v, want %v", got, want))
}

// firstOr returns err, or else other.
func firstOr(err, other error) error {
	if err != nil {
		return err
	}
	return other
}

// second2 returns element i of a function's results, or its error.
func second2(list []*nd.Array[float32], err error, i int) (*nd.Array[float32], error) {
	if err != nil {
		return nil, err
	}
	return list[i], nil
}

// stillReads checks that a still holds want after a failure.
func stillReads[T nd.Elem](t *testing.T, a *nd.Array[T], want []T) {
	t.Helper()
	if err := readAs(a, want); err != nil {
		t.Errorf("the array after the failure: %v", err)
	}
}

// freeAll frees the arrays, failing t where one refuses.
func freeAll[T nd.Elem](t *testing.T, arrays ...*nd.Array[T]) {
	t.Helper()
	for _, a := range arrays {
		if err := a.Free(); err != nil {
			t.Errorf("freeing an array: %v", err)
		}
	}
}

// printedError is what String printed in place of the elements of an
// array it could not read ("<nd: ...>"), as an error: the sweep checks
// that it names the failing call and its code (String returns no error
// of its own: the text is all a user sees).
type printedError string

func (p printedError) Error() string { return string(p) }

// Is matches an error the text names: the failing call's code (a
// cuda.Result) by its words, and a sentinel by its words or by those of a
// code that wraps it.
func (p printedError) Is(target error) bool {
	if strings.Contains(string(p), target.Error()) {
		return true
	}
	// The codes the sweep's sentinels stand for, as package cuda maps
	// them (errors.go).
	name := map[error]string{cuda.ErrInvalidValue: "CUDA_ERROR_INVALID_VALUE", cuda.ErrOutOfMemory: "CUDA_ERROR_OUT_OF_MEMORY"}[target]
	return name != "" && strings.Contains(string(p), name)
}

// printed returns nil where str prints an array, else the printed error.
func printed(str string) error {
	if i := strings.Index(str, "(<"); i >= 0 {
		return printedError(str[i+1:])
	}
	if !strings.HasPrefix(str, "nd.Array[float32]([") {
		return fmt.Errorf("String printed %q", str)
	}
	return nil
}

package cublas_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/internal/cudatest"
)

// operand is a matrix made for a test: on the device, described, and on
// the host for the reference.
type operand[T element] struct {
	buf  *cuda.DeviceBuffer[T]
	desc cublas.Matrix[T]
	host hostMatrix
}

// makeOperand makes a rows×cols matrix (stored transposed when transposed,
// and handed over as a transposed view) in layout, with pad spare elements
// after each row or column, filled with fill.
func makeOperand[T element](t *testing.T, ctx *cuda.Context, rows, cols int, layout cublas.Layout, transposed bool, pad int, fill func(int) []T) operand[T] {
	t.Helper()
	sr, sc := rows, cols
	if transposed {
		sr, sc = cols, rows
	}
	major, minor := sr, sc
	if layout == cublas.ColMajor {
		major, minor = sc, sr
	}
	stride := minor + pad
	data := fill(major*stride + 1) // one spare element at the end too
	buf := cudatest.Upload(t, ctx, data)
	desc := cublas.Matrix[T]{Data: buf, Rows: sr, Cols: sc, Layout: layout}
	if pad != 0 {
		desc.Stride = stride
	}
	host := hostMatrix{rows: sr, cols: sc, stride: stride, layout: layout, data: floats(data)}
	if transposed {
		desc, host = desc.T(), host.t()
	}
	return operand[T]{buf, desc, host}
}

// want computes the reference product, element by element, and the scale
// of each element's terms.
func want(a, b, c hostMatrix, alpha, beta float64, bias []float64, epi cublas.Epilogue) (vals, scales map[int]float64) {
	vals, scales = map[int]float64{}, map[int]float64{}
	for i := range c.rows {
		for j := range c.cols {
			var s, mag float64
			for p := range a.cols {
				s += a.at(i, p) * b.at(p, j)
				mag += math.Abs(a.at(i, p) * b.at(p, j))
			}
			v := alpha * s
			mag = math.Abs(alpha) * mag
			if beta != 0 {
				v += beta * c.at(i, j)
				mag += math.Abs(beta * c.at(i, j))
			}
			if bias != nil {
				v += bias[j]
				mag += math.Abs(bias[j])
			}
			switch epi {
			case cublas.ReLU:
				v = math.Max(v, 0)
			case cublas.GELU:
				v = 0.5 * v * (1 + math.Tanh(0.7978845608028654*(v+0.044715*v*v*v)))
			}
			vals[c.index(i, j)], scales[c.index(i, j)] = v, mag+1
		}
	}
	return vals, scales
}

// checkResult compares C's memory with the reference: every element of the
// matrix within tolerance, and every other element of the buffer (padding)
// as it was.
func checkResult[T element](t *testing.T, got []T, before []float64, vals, scales map[int]float64, tol float64) {
	t.Helper()
	bad := 0
	for i, g := range got {
		w, in := vals[i]
		f := toFloat(g)
		switch {
		case in && !closeTo(f, w, scales[i], tol):
			t.Errorf("element %d: %v, want %v (±%.3g)", i, f, w, tol*scales[i])
		case !in && !(f == before[i] || math.IsNaN(f) && math.IsNaN(before[i])):
			t.Errorf("element %d, outside the matrix, changed from %v to %v", i, before[i], f)
		default:
			continue
		}
		if bad++; bad > 5 {
			t.FailNow()
		}
	}
}

type gemmCase struct {
	m, n, k     int
	la, lb, lc  cublas.Layout
	ta, tb      bool
	pad         int
	alpha, beta float64
}

func (c gemmCase) String() string {
	tr := func(b bool) string {
		if b {
			return "ᵀ"
		}
		return ""
	}
	return fmt.Sprintf("%dx%dx%d/A%s%s,B%s%s,C%s/pad%d/a%g,b%g", c.m, c.n, c.k, c.la, tr(c.ta), c.lb, tr(c.tb), c.lc, c.pad, c.alpha, c.beta)
}

// gemmCases are shapes (odd ones, a vector, a single element) in every
// combination of layouts and transposes, with and without padding and a
// C to add.
func gemmCases(r *rand.Rand) []gemmCase {
	var out []gemmCase
	shapes := [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 9, 33}, {1, 13, 4}, {31, 1, 2}, {0, 3, 4}, {3, 0, 4}, {3, 4, 0}}
	for i, sh := range shapes {
		for _, la := range []cublas.Layout{cublas.RowMajor, cublas.ColMajor} {
			for _, lb := range []cublas.Layout{cublas.RowMajor, cublas.ColMajor} {
				for _, lc := range []cublas.Layout{cublas.RowMajor, cublas.ColMajor} {
					c := gemmCase{m: sh[0], n: sh[1], k: sh[2], la: la, lb: lb, lc: lc,
						ta: r.IntN(2) == 0, tb: r.IntN(2) == 0, pad: (i % 3) * 2, alpha: 1, beta: 0}
					if r.IntN(2) == 0 {
						c.alpha, c.beta = 0.5, -2
					}
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func TestGemm(t *testing.T) {
	ctx, s, h := handle(t)
	t.Run("float32", func(t *testing.T) { gemmTypes[float32](t, ctx, s, h, false) })
	t.Run("float64", func(t *testing.T) { gemmTypes[float64](t, ctx, s, h, false) })
	t.Run("Float16", func(t *testing.T) { gemmTypes[cuda.Float16](t, ctx, s, h, false) })
	t.Run("BFloat16", func(t *testing.T) { gemmTypes[cuda.BFloat16](t, ctx, s, h, false) })
	// Types defined on Go's floats are computed as their floats.
	t.Run("celsius", func(t *testing.T) { gemmTypes[celsius](t, ctx, s, h, false) })
	t.Run("metres", func(t *testing.T) { gemmTypes[metres](t, ctx, s, h, false) })
	t.Run("TF32", func(t *testing.T) {
		if err := h.SetMathMode(cublas.TF32Math); err != nil {
			t.Fatal(err)
		}
		defer h.SetMathMode(cublas.DefaultMath)
		gemmTypes[float32](t, ctx, s, h, true)
	})
}

// celsius and metres are element types defined on float32 and float64,
// as a user's program would define them.
type (
	celsius float32
	metres  float64
)

// gemmOperands makes c's A, B and C of random elements; with beta 0, C
// holds NaNs, which are not read and must not show.
func gemmOperands[T element](t *testing.T, ctx *cuda.Context, r *rand.Rand, c gemmCase) (a, b, cm operand[T]) {
	t.Helper()
	fill := func(n int) []T { return random[T](r, n) }
	a = makeOperand(t, ctx, c.m, c.k, c.la, c.ta, c.pad, fill)
	b = makeOperand(t, ctx, c.k, c.n, c.lb, c.tb, c.pad, fill)
	cfill := fill
	if c.beta == 0 {
		cfill = func(n int) []T {
			out := make([]T, n)
			for i := range out {
				out[i] = fromFloat[T](math.NaN())
			}
			return out
		}
	}
	cm = makeOperand(t, ctx, c.m, c.n, c.lc, false, c.pad, cfill)
	return a, b, cm
}

func gemmTypes[T element](t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cublas.Handle, tf32 bool) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range gemmCases(r) {
		t.Run(c.String(), func(t *testing.T) {
			a, b, cm := gemmOperands[T](t, ctx, r, c)
			if err := cublas.Gemm(h, c.alpha, a.desc, b.desc, c.beta, cm.desc); err != nil {
				t.Fatal(err)
			}
			vals, scales := want(a.host, b.host, cm.host, c.alpha, c.beta, nil, cublas.NoEpilogue)
			checkResult(t, download(t, s, cm.buf), cm.host.data, vals, scales, tolerance[T](tf32))
		})
	}
}

func TestMatmul(t *testing.T) {
	ctx, s, h := handle(t)
	t.Run("Float16", func(t *testing.T) { matmulTypes[cuda.Float16](t, ctx, s, h) })
	t.Run("BFloat16", func(t *testing.T) { matmulTypes[cuda.BFloat16](t, ctx, s, h) })
	t.Run("float32", func(t *testing.T) { matmulTypes[float32](t, ctx, s, h) })
	t.Run("float64", func(t *testing.T) { matmulTypes[float64](t, ctx, s, h) })
	t.Run("celsius", func(t *testing.T) { matmulTypes[celsius](t, ctx, s, h) })
}

// TestMatmulLayouts: Matmul takes what Gemm takes ("as for Gemm"): every
// layout and transpose, padded strides, empty and odd shapes, float64, and
// beta 0 over a C of NaNs, which is not read.
func TestMatmulLayouts(t *testing.T) {
	ctx, s, h := handle(t)
	t.Run("float32", func(t *testing.T) { matmulLayouts[float32](t, ctx, s, h) })
	t.Run("float64", func(t *testing.T) { matmulLayouts[float64](t, ctx, s, h) })
	t.Run("BFloat16", func(t *testing.T) { matmulLayouts[cuda.BFloat16](t, ctx, s, h) })
}

func matmulLayouts[T element](t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cublas.Handle) {
	r := rand.New(rand.NewPCG(13, 14))
	cases := gemmCases(r)
	for _, sh := range [][3]int{{97, 3, 1}, {1, 97, 3}, {3, 1, 97}} {
		cases = append(cases, gemmCase{m: sh[0], n: sh[1], k: sh[2], lb: cublas.ColMajor, ta: true, alpha: 1, beta: 0})
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			a, b, cm := gemmOperands[T](t, ctx, r, c)
			if err := cublas.Matmul(h, c.alpha, a.desc, b.desc, c.beta, cm.desc, cublas.NoEpilogue, nil); err != nil {
				t.Fatal(err)
			}
			vals, scales := want(a.host, b.host, cm.host, c.alpha, c.beta, nil, cublas.NoEpilogue)
			checkResult(t, download(t, s, cm.buf), cm.host.data, vals, scales, 2*tolerance[T](false))
		})
	}
}

func matmulTypes[T element](t *testing.T, ctx *cuda.Context, s *cuda.Stream, h *cublas.Handle) {
	r := rand.New(rand.NewPCG(3, 4))
	// Lt's kernels want sizes of multiples of 8 bytes for half types on
	// some paths; the shapes are ones inference uses, and odd ones.
	for _, sh := range [][3]int{{16, 32, 64}, {8, 24, 16}, {5, 8, 8}, {64, 64, 64}} {
		for _, epi := range []cublas.Epilogue{cublas.NoEpilogue, cublas.ReLU, cublas.GELU} {
			for _, withBias := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					name := fmt.Sprintf("%dx%dx%d/%s/bias=%v/Bᵀ=%v", sh[0], sh[1], sh[2], epi, withBias, tb)
					t.Run(name, func(t *testing.T) {
						fill := func(n int) []T { return random[T](r, n) }
						a := makeOperand(t, ctx, sh[0], sh[2], cublas.RowMajor, false, 0, fill)
						b := makeOperand(t, ctx, sh[2], sh[1], cublas.RowMajor, tb, 0, fill)
						c := makeOperand(t, ctx, sh[0], sh[1], cublas.RowMajor, false, 0, fill)
						var bias *cuda.DeviceBuffer[T]
						var hostBias []float64
						if withBias {
							bv := random[T](r, sh[1])
							bias, hostBias = cudatest.Upload(t, ctx, bv), floats(bv)
						}
						if err := cublas.Matmul(h, 1, a.desc, b.desc, 0.5, c.desc, epi, bias); err != nil {
							t.Fatal(err)
						}
						tol := 2 * tolerance[T](false)
						if epi == cublas.GELU {
							// cuBLASLt's float64 GELU is the tanh form to
							// about 1e-10, not to float64's rounding (H100).
							tol = max(tol, 1e-9)
						}
						vals, scales := want(a.host, b.host, c.host, 1, 0.5, hostBias, epi)
						checkResult(t, download(t, s, c.buf), c.host.data, vals, scales, tol)
						// Again, from the plan the handle kept.
						if err := cublas.Matmul(h, 1, a.desc, b.desc, 0, c.desc, epi, bias); err != nil {
							t.Fatal(err)
						}
						vals, scales = want(a.host, b.host, c.host, 1, 0, hostBias, epi)
						checkResult(t, download(t, s, c.buf), c.host.data, vals, scales, tol)
					})
				}
			}
		}
	}
}

func TestGemmStridedBatched(t *testing.T) {
	ctx, s, h := handle(t)
	r := rand.New(rand.NewPCG(5, 6))
	const count, m, n, k = 3, 4, 5, 6
	for _, layout := range []cublas.Layout{cublas.RowMajor, cublas.ColMajor} {
		for _, spread := range []int{0, 7} {
			t.Run(fmt.Sprintf("%s/spread%d", layout, spread), func(t *testing.T) {
				mk := func(rows, cols int) (cublas.Matrix[float32], []float32, int) {
					step := rows*cols + spread
					data := random[float32](r, count*step)
					desc := cublas.Matrix[float32]{Data: cudatest.Upload(t, ctx, data), Rows: rows, Cols: cols, Layout: layout}
					if spread != 0 {
						desc.BatchStride = step
					}
					return desc, data, step
				}
				a, ad, as := mk(m, k)
				b, bd, bs := mk(k, n)
				c, cd, cs := mk(m, n)
				if err := cublas.GemmStridedBatched(h, count, 2, a, b, 1, c); err != nil {
					t.Fatal(err)
				}
				got := download(t, s, c.Data)
				before := floats(cd)
				vals, scales := map[int]float64{}, map[int]float64{}
				for i := range count {
					host := func(d []float32, off, rows, cols int) hostMatrix {
						stride := cols
						if layout == cublas.ColMajor {
							stride = rows
						}
						return hostMatrix{rows: rows, cols: cols, stride: stride, layout: layout, data: floats(d[off:])}
					}
					v, sc := want(host(ad, i*as, m, k), host(bd, i*bs, k, n), host(cd, i*cs, m, n), 2, 1, nil, cublas.NoEpilogue)
					for j, x := range v {
						vals[i*cs+j], scales[i*cs+j] = x, sc[j]
					}
				}
				checkResult(t, got, before, vals, scales, tolerance[float32](false))
			})
		}
	}
}

func TestGemmBatched(t *testing.T) {
	ctx, s, h := handle(t)
	r := rand.New(rand.NewPCG(7, 8))
	fill := func(n int) []float64 { return random[float64](r, n) }
	shared := makeOperand(t, ctx, 6, 3, cublas.RowMajor, false, 0, fill) // one A for every product
	var as, bs, cs []cublas.Matrix[float64]
	var bops, cops []operand[float64]
	for range 4 {
		b := makeOperand(t, ctx, 3, 5, cublas.RowMajor, false, 0, fill)
		c := makeOperand(t, ctx, 6, 5, cublas.RowMajor, false, 0, fill)
		as, bs, cs = append(as, shared.desc), append(bs, b.desc), append(cs, c.desc)
		bops, cops = append(bops, b), append(cops, c)
	}
	if err := cublas.GemmBatched(h, 1, as, bs, -1, cs); err != nil {
		t.Fatal(err)
	}
	for i := range cops {
		vals, scales := want(shared.host, bops[i].host, cops[i].host, 1, -1, nil, cublas.NoEpilogue)
		checkResult(t, download(t, s, cops[i].buf), cops[i].host.data, vals, scales, tolerance[float64](false))
	}
}

// TestCapture: cuBLAS work captured into a graph runs at each launch with
// the buffers' contents of then; a result cuBLAS hands to the host cannot
// be captured.
func TestCapture(t *testing.T) {
	ctx, s, h := handle(t)
	a := cudatest.Upload(t, ctx, []float32{1, 2, 3, 4})
	b := cudatest.Upload(t, ctx, []float32{1, 0, 0, 1})
	c := cudatest.Upload(t, ctx, make([]float32, 4))
	bias := cudatest.Upload(t, ctx, []float32{10, 20})
	am, bm, cm := cublas.NewMatrix(a, 2, 2), cublas.NewMatrix(b, 2, 2), cublas.NewMatrix(c, 2, 2)
	// Allocated before: cuMemAlloc inside a thread-local capture fails.
	other := cublas.NewMatrix(cudatest.Upload(t, ctx, make([]float32, 4)), 2, 2)
	g, err := s.Capture(cuda.CaptureThreadLocal, func() error {
		if err := cublas.Gemm(h, 1, am, bm, 0, cm); err != nil {
			return err
		}
		if err := cublas.Matmul(h, 1, am, bm, 1, cm, cublas.NoEpilogue, bias); err != nil {
			return err
		}
		if _, err := cublas.Dot(h, a, b); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Dot inside a capture: %v, want ErrInvalidValue: its result cannot be on the host", err)
		}
		if err := cublas.GemmBatched(h, 1, []cublas.Matrix[float32]{am}, []cublas.Matrix[float32]{bm}, 0, []cublas.Matrix[float32]{other}); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("GemmBatched inside a capture: %v, want ErrInvalidValue: its pointer arrays are copied from Go memory", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	exec := must(g.Instantiate())(t)
	defer exec.Close()
	for _, k := range []float32{1, 3} {
		if err := a.CopyFromHost([]float32{k, 2 * k, 3 * k, 4 * k}); err != nil {
			t.Fatal(err)
		}
		if err := exec.Launch(s); err != nil {
			t.Fatal(err)
		}
		got := download(t, s, c)
		// C = A·I, then C = A·I + C + bias: 2A + bias.
		want := []float32{2*k + 10, 4*k + 20, 6*k + 10, 8*k + 20}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("replay with A = %v·[1 2; 3 4]: C = %v, want %v", k, got, want)
			}
		}
	}
}

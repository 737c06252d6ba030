package nn_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// normRef is LayerNorm (or RMSNorm) in float64: y, and the row stats.
func normRef(rms bool, x, w, b []float64, rows, cols int, eps float64) []float64 {
	y := make([]float64, len(x))
	for r := range rows {
		row := x[r*cols : (r+1)*cols]
		mean := 0.0
		if !rms {
			for _, v := range row {
				mean += v
			}
			mean /= float64(cols)
		}
		q := 0.0
		for _, v := range row {
			q += (v - mean) * (v - mean)
		}
		rstd := 1 / math.Sqrt(q/float64(cols)+eps)
		for j, v := range row {
			o := (v - mean) * rstd
			if w != nil {
				o *= w[j]
			}
			if b != nil {
				o += b[j]
			}
			y[r*cols+j] = o
		}
	}
	return y
}

// normBackRef is the analytic backward of normRef: dx, dw, db.
func normBackRef(rms bool, dy, x, w []float64, rows, cols int, eps float64) (dx, dw, db []float64) {
	dx = make([]float64, len(x))
	dw = make([]float64, cols)
	db = make([]float64, cols)
	for r := range rows {
		row, gr := x[r*cols:(r+1)*cols], dy[r*cols:(r+1)*cols]
		mean := 0.0
		if !rms {
			for _, v := range row {
				mean += v
			}
			mean /= float64(cols)
		}
		q := 0.0
		for _, v := range row {
			q += (v - mean) * (v - mean)
		}
		rstd := 1 / math.Sqrt(q/float64(cols)+eps)
		mg, mgx := 0.0, 0.0
		for j, v := range row {
			g := gr[j]
			if w != nil {
				g *= w[j]
			}
			mg += g
			mgx += g * (v - mean) * rstd
			dw[j] += gr[j] * (v - mean) * rstd
			db[j] += gr[j]
		}
		mg /= float64(cols)
		mgx /= float64(cols)
		if rms {
			mg = 0
		}
		for j, v := range row {
			g := gr[j]
			if w != nil {
				g *= w[j]
			}
			dx[r*cols+j] = rstd * (g - mg - (v-mean)*rstd*mgx)
		}
	}
	return dx, dw, db
}

func TestLayerNorm(t *testing.T) {
	layerTypes(t, func(t *testing.T, typ string) {
		switch typ {
		case "float32":
			testNorm[float32](t)
		case "float16":
			testNorm[cuda.Float16](t)
		default:
			testNorm[cuda.BFloat16](t)
		}
	})
}

func testNorm[T nn.Float](t *testing.T) {
	s := layerStream(t)
	tol := layerTol[T]()
	for _, rms := range []bool{false, true} {
		for _, sz := range layerWidths {
			for _, affine := range []bool{true, false} {
				name := fmt.Sprintf("rms=%v/%dx%d/affine=%v", rms, sz.rows, sz.cols, affine)
				t.Run(name, func(t *testing.T) {
					n := sz.rows * sz.cols
					xv := layerRound[T](layerData(n, uint64(n)+3, -3, 5))
					x := layerUp[T](t, s, xv, sz.rows, sz.cols)
					var w, b *nd.Array[T]
					var wv, bv []float64
					if affine {
						wv = layerRound[T](layerData(sz.cols, 7, 0.5, 1.5))
						bv = layerRound[T](layerData(sz.cols, 8, -1, 1))
						w = layerUp[T](t, s, wv, sz.cols)
						b = layerUp[T](t, s, bv, sz.cols)
					}
					const eps = 1e-5
					var y *nd.Array[T]
					if rms {
						y = layerFree(t, must(nn.RMSNorm(x, w, eps))(t))
						bv = nil
					} else {
						y = layerFree(t, must(nn.LayerNorm(x, w, b, eps))(t))
					}
					want := normRef(rms, xv, wv, bv, sz.rows, sz.cols, eps)
					layerClose(t, "y", layerDown(t, y), want, tol)

					// backward, against the analytic gradient of the reference
					gv := layerRound[T](layerData(n, 11, -1, 1))
					dy := layerUp[T](t, s, gv, sz.rows, sz.cols)
					var dx, dw, db *nd.Array[T]
					if rms {
						dx, dw = must2(nn.RMSNormBackward(dy, x, w, eps))(t)
					} else {
						var err error
						dx, dw, db, err = nn.LayerNormBackward(dy, x, w, b, eps)
						if err != nil {
							t.Fatal(err)
						}
					}
					wdx, wdw, wdb := normBackRef(rms, gv, xv, wv, sz.rows, sz.cols, eps)
					// dx sums cols products: its error grows with the row
					btol := tol * 4
					layerClose(t, "dx", layerDown(t, layerFree(t, dx)), wdx, btol)
					if affine {
						layerClose(t, "dweight", layerDown(t, layerFree(t, dw)), wdw, btol*math.Sqrt(float64(sz.rows)))
						if !rms {
							layerClose(t, "dbias", layerDown(t, layerFree(t, db)), wdb, btol*math.Sqrt(float64(sz.rows)))
						}
					} else if dw != nil || db != nil {
						t.Errorf("gradients of nil parameters: %v %v", dw, db)
					}
				})
			}
		}
	}
}

// must2 is must of a call of two results.
func must2[A, B any](a A, b B, err error) func(testing.TB) (A, B) {
	return func(t testing.TB) (A, B) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
}

// TestNormFiniteDifferences checks LayerNorm's backward against its own
// forward, in float32 at a few points.
func TestNormFiniteDifferences(t *testing.T) {
	s := layerStream(t)
	const rows, cols, eps = 2, 9, 1e-5
	xv := layerData(rows*cols, 5, -2, 2)
	wv := layerData(cols, 6, 0.5, 1.5)
	bv := layerData(cols, 7, -1, 1)
	gv := layerData(rows*cols, 8, -1, 1)
	loss := func(xv, wv, bv []float64) float64 {
		y := normRef(false, xv, wv, bv, rows, cols, eps)
		l := 0.0
		for i := range y {
			l += y[i] * gv[i]
		}
		return l
	}
	x := layerUp[float32](t, s, xv, rows, cols)
	w := layerUp[float32](t, s, wv, cols)
	b := layerUp[float32](t, s, bv, cols)
	dy := layerUp[float32](t, s, gv, rows, cols)
	dx, dw, db, err := nn.LayerNormBackward(dy, x, w, b, eps)
	if err != nil {
		t.Fatal(err)
	}
	gx, gw, gb := layerDown(t, layerFree(t, dx)), layerDown(t, layerFree(t, dw)), layerDown(t, layerFree(t, db))
	const h = 1e-6
	fd := func(v []float64, i int, f func([]float64) float64) float64 {
		p, m := slices.Clone(v), slices.Clone(v)
		p[i] += h
		m[i] -= h
		return (f(p) - f(m)) / (2 * h)
	}
	for i := range xv {
		want := fd(xv, i, func(v []float64) float64 { return loss(v, wv, bv) })
		layerClose(t, fmt.Sprint("dx ", i), []float64{gx[i]}, []float64{want}, 1e-4)
	}
	for j := range wv {
		layerClose(t, fmt.Sprint("dw ", j), []float64{gw[j]}, []float64{fd(wv, j, func(v []float64) float64 { return loss(xv, v, bv) })}, 1e-4)
		layerClose(t, fmt.Sprint("db ", j), []float64{gb[j]}, []float64{fd(bv, j, func(v []float64) float64 { return loss(xv, wv, v) })}, 1e-4)
	}
}

func TestNormErrors(t *testing.T) {
	s := layerStream(t)
	x := layerUp[float32](t, s, layerData(12, 1, -1, 1), 3, 4)
	w3 := layerUp[float32](t, s, layerData(3, 1, -1, 1), 3)
	freed := must(nd.Zeros[float32](s, 3, 4))(t)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	_, err := nn.LayerNorm[float32](nil, nil, nil, 1e-5)
	layerWantErr(t, err, cuda.ErrInvalidValue, "LayerNorm", "x is a nil")
	_, err = nn.LayerNorm(x, w3, nil, 1e-5)
	layerWantErr(t, err, cuda.ErrInvalidValue, "weight has shape [3], want [4]")
	_, err = nn.LayerNorm(x, nil, nil, -1)
	layerWantErr(t, err, cuda.ErrInvalidValue, "eps")
	_, err = nn.LayerNorm(freed, nil, nil, 1e-5)
	layerWantErr(t, err, cuda.ErrClosed, "argument x")
	_, err = nn.RMSNorm(x.T(), nil, 1e-5)
	layerWantErr(t, err, cuda.ErrInvalidValue, "not contiguous")
	err = nn.LayerNormInto(w3, x, nil, nil, 1e-5)
	layerWantErr(t, err, cuda.ErrInvalidValue, "dst has shape [3], want [3 4]")
	_, _, _, err = nn.LayerNormBackward(w3, x, nil, nil, 1e-5)
	layerWantErr(t, err, cuda.ErrInvalidValue, "dy has shape")
	_, err = nn.LayerNorm(new(nd.Array[float32]), nil, nil, 1e-5)
	layerWantErr(t, err, cuda.ErrInvalidValue, "zero Array")
}

func TestAddNorm(t *testing.T) {
	layerTypes(t, func(t *testing.T, typ string) {
		switch typ {
		case "float32":
			testAddNorm[float32](t)
		case "float16":
			testAddNorm[cuda.Float16](t)
		default:
			testAddNorm[cuda.BFloat16](t)
		}
	})
}

func testAddNorm[T nn.Float](t *testing.T) {
	s := layerStream(t)
	tol := layerTol[T]()
	for _, rms := range []bool{false, true} {
		for _, sz := range layerWidths {
			t.Run(fmt.Sprintf("rms=%v/%dx%d", rms, sz.rows, sz.cols), func(t *testing.T) {
				n := sz.rows * sz.cols
				xv := layerRound[T](layerData(n, uint64(n)+5, -3, 3))
				rv := layerRound[T](layerData(n, uint64(n)+6, -2, 2))
				wv := layerRound[T](layerData(sz.cols, 7, 0.5, 1.5))
				bv := layerRound[T](layerData(sz.cols, 8, -1, 1))
				x := layerUp[T](t, s, xv, sz.rows, sz.cols)
				r := layerUp[T](t, s, rv, sz.rows, sz.cols)
				w := layerUp[T](t, s, wv, sz.cols)
				b := layerUp[T](t, s, bv, sz.cols)
				sumv := make([]float64, n)
				for i := range sumv {
					sumv[i] = xv[i] + rv[i]
				}
				sumv = layerRound[T](sumv)
				if rms {
					bv = nil
				}
				want := normRef(rms, sumv, wv, bv, sz.rows, sz.cols, 1e-5)
				var sum, y *nd.Array[T]
				if rms {
					sum, y = must2(nn.AddRMSNorm(x, r, w, 1e-5))(t)
				} else {
					sum, y = must2(nn.AddLayerNorm(x, r, w, b, 1e-5))(t)
				}
				layerClose(t, "sum", layerDown(t, layerFree(t, sum)), sumv, 0)
				layerClose(t, "y", layerDown(t, layerFree(t, y)), want, tol)
				// in place: the residual stream x updated, the norm into out
				out := layerFree(t, must(nd.Empty[T](s, sz.rows, sz.cols))(t))
				var err error
				if rms {
					err = nn.AddRMSNormInto(x, out, x, r, w, 1e-5)
				} else {
					err = nn.AddLayerNormInto(x, out, x, r, w, b, 1e-5)
				}
				if err != nil {
					t.Fatal(err)
				}
				layerClose(t, "x in place", layerDown(t, x), sumv, 0)
				layerClose(t, "out", layerDown(t, out), want, tol)
			})
		}
	}
	t.Run("errors", func(t *testing.T) {
		x := layerUp[T](t, s, layerData(12, 1, -1, 1), 3, 4)
		_, _, err := nn.AddLayerNorm(x, nil, nil, nil, 1e-5)
		layerWantErr(t, err, cuda.ErrInvalidValue, "AddLayerNorm", "residual is a nil")
		err = nn.AddRMSNormInto(x, x, x, x, nil, 1e-5)
		layerWantErr(t, err, cuda.ErrInvalidValue, "AddRMSNormInto", "dst and sum are one array")
		_, _, err = nn.AddRMSNorm(x, must(x.Reshape(4, 3))(t), nil, 1e-5)
		layerWantErr(t, err, cuda.ErrInvalidValue, "residual has shape [4 3], want [3 4]")
	})
}

// TestNormManyRows: more rows than the fused backward's grid has warps
// (each warp sums the parameters' gradients of several rows).
func TestNormManyRows(t *testing.T) {
	s := layerStream(t)
	const rows, cols, eps = 2500, 16, 1e-5
	xv := layerRound[cuda.BFloat16](layerData(rows*cols, 3, -2, 2))
	gv := layerRound[cuda.BFloat16](layerData(rows*cols, 4, -1, 1))
	wv := layerRound[cuda.BFloat16](layerData(cols, 5, 0.5, 1.5))
	bv := layerRound[cuda.BFloat16](layerData(cols, 6, -1, 1))
	x := layerUp[cuda.BFloat16](t, s, xv, rows, cols)
	dy := layerUp[cuda.BFloat16](t, s, gv, rows, cols)
	w, b := layerUp[cuda.BFloat16](t, s, wv, cols), layerUp[cuda.BFloat16](t, s, bv, cols)
	dx, dw, db, err := nn.LayerNormBackward(dy, x, w, b, eps)
	if err != nil {
		t.Fatal(err)
	}
	wdx, wdw, wdb := normBackRef(false, gv, xv, wv, rows, cols, eps)
	tol := layerTol[cuda.BFloat16]() * 4
	layerClose(t, "dx", layerDown(t, layerFree(t, dx)), wdx, tol)
	layerClose(t, "dweight", layerDown(t, layerFree(t, dw)), wdw, tol)
	layerClose(t, "dbias", layerDown(t, layerFree(t, db)), wdb, tol)
}

package compute_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nvrtc"
)

// BenchmarkGrid is issue 48's grid: every operation at every size or shape
// of the grid, each cell BenchmarkGrid/<op>/<dtype>/<shape>, with shape
// n=<elements> for the whole-buffer operations and <rows>x<cols> for the
// matrix ones (bench/pyref/compute_grid.py times the same cells in PyTorch and
// CuPy, and bench/report/gridreport.py sets them side by side). A cell's inputs
// are zeros; it calls the operation once (compiling its kernel), then
// times b.N calls and one Synchronize (by CUDA events for the large
// cells: gridLoop), and reports µs per call (us/op).
//
// The casts are named by their source type: cast_f16 and cast_bf16 (from
// f32), cast_from_f16 and cast_from_bf16 (to f32).
//
// The environment selects a subset: GOCUDA_GRID_OPS and GOCUDA_GRID_DTYPES
// (comma lists; default every one), GOCUDA_GRID_MAXELEMS (cells of more
// elements are left out), GOCUDA_GRID_CELLS (a comma list of cells named
// as here, op/dtype/shape: a re-run of the cells a whole run found slow,
// which bench/report/gridreport.py -cells lists). On the fake driver every cell skips. It runs only
// where -test.bench's pattern names it (has "Grid"), so that -test.bench .
// (scripts/gpu-perf.sh compute) is not the whole grid.
func BenchmarkGrid(b *testing.B) {
	if f := flag.Lookup("test.bench"); f == nil || !strings.Contains(f.Value.String(), "Grid") {
		b.Skip("the grid runs only when -test.bench names it (BenchmarkGrid)")
	}
	var e *env
	if _, err := nvrtc.Version(); err == nil {
		ee := newEnv(b)
		e = &ee
	}
	ops := gridSet("GOCUDA_GRID_OPS")
	dtypes := gridSet("GOCUDA_GRID_DTYPES")
	maxElems := int64(-1)
	if v := os.Getenv("GOCUDA_GRID_MAXELEMS"); v != "" {
		n, err := strconv.ParseInt(v, 0, 64)
		if err != nil {
			b.Fatalf("GOCUDA_GRID_MAXELEMS=%q: %v", v, err)
		}
		maxElems = n
	}
	cells := gridSet("GOCUDA_GRID_CELLS")
	known := map[string]bool{}
	for _, op := range gridOps() {
		known[op.name] = true
	}
	for _, dt := range gridDtypes {
		known[dt] = true
	}
	for v := range ops {
		if !known[v] {
			b.Fatalf("GOCUDA_GRID_OPS: no operation %q", v)
		}
	}
	for v := range dtypes {
		if !known[v] {
			b.Fatalf("GOCUDA_GRID_DTYPES: no type %q", v)
		}
	}
	ran := map[string]bool{}
	for _, op := range gridOps() {
		if ops != nil && !ops[op.name] {
			continue
		}
		for _, dt := range gridDtypes {
			cell, ok := op.cells[dt]
			if !ok || dtypes != nil && !dtypes[dt] {
				continue
			}
			for _, sh := range gridShapes(op.matrix) {
				n := int64(sh.Rows) * int64(sh.Cols)
				if maxElems >= 0 && n > maxElems {
					continue
				}
				name := fmt.Sprintf("%dx%d", sh.Rows, sh.Cols)
				if !op.matrix {
					name = fmt.Sprintf("n=%d", n)
				}
				if cells != nil && !cells[op.name+"/"+dt+"/"+name] {
					continue
				}
				ran[op.name+"/"+dt+"/"+name] = true
				b.Run(op.name+"/"+dt+"/"+name, func(b *testing.B) {
					if cudatest.IsFake() {
						b.Skip("the grid times a GPU: the fake's kernels run on the host")
					}
					if e == nil {
						requireNVRTC(b)
					}
					cell(b, *e, sh)
				})
			}
		}
	}
	for c := range cells {
		if !ran[c] {
			b.Errorf("GOCUDA_GRID_CELLS: no cell %q in the grid (op/dtype/shape, with the other filters)", c)
		}
	}
}

// gridSet is the comma list in the environment variable name as a set, or
// nil (every one) where it is empty.
func gridSet(name string) map[string]bool {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return nil
	}
	set := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			set[f] = true
		}
	}
	return set
}

var (
	gridDtypes = []string{"f32", "f16", "bf16", "f64"}
	gridSizes  = []int{1 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20}
	gridRows   = []int{1, 7, 132, 4096, 65536, 1 << 20}
	gridCols   = []int{1, 5, 32, 128, 1000, 8192, 65536, 1 << 20}
)

// gridShapes is the whole-buffer sizes (as 1×n) or the matrices of at most
// 2^27 elements.
func gridShapes(matrix bool) []compute.Shape {
	var shapes []compute.Shape
	if !matrix {
		for _, n := range gridSizes {
			shapes = append(shapes, compute.Shape{Rows: 1, Cols: n})
		}
		return shapes
	}
	for _, r := range gridRows {
		for _, c := range gridCols {
			if int64(r)*int64(c) <= 1<<27 {
				shapes = append(shapes, compute.Shape{Rows: r, Cols: c})
			}
		}
	}
	return shapes
}

// gridCell runs one cell at a shape (Rows·Cols elements for a whole-buffer
// operation).
type gridCell func(b *testing.B, e env, sh compute.Shape)

type gridOp struct {
	name   string
	matrix bool
	cells  map[string]gridCell // by dtype
}

type gbuf[T cuda.Number] = *cuda.DeviceBuffer[T]

func gridOps() []gridOp {
	type (
		f16  = cuda.Float16
		bf16 = cuda.BFloat16
	)
	return []gridOp{
		{"add", false, map[string]gridCell{"f32": gridBinary(compute.Add[float32]), "f16": gridBinary(compute.Add[f16]),
			"bf16": gridBinary(compute.Add[bf16]), "f64": gridBinary(compute.Add[float64])}},
		{"mul", false, map[string]gridCell{"f32": gridBinary(compute.Mul[float32]), "f16": gridBinary(compute.Mul[f16]),
			"bf16": gridBinary(compute.Mul[bf16])}},
		{"addscalar", false, map[string]gridCell{"f32": gridScalar(compute.AddScalar[float32]), "f16": gridScalar(compute.AddScalar[f16]),
			"bf16": gridScalar(compute.AddScalar[bf16])}},
		{"cast_f16", false, map[string]gridCell{"f32": gridUnary(compute.Cast[f16, float32])}},
		{"cast_bf16", false, map[string]gridCell{"f32": gridUnary(compute.Cast[bf16, float32])}},
		{"cast_from_f16", false, map[string]gridCell{"f16": gridUnary(compute.Cast[float32, f16])}},
		{"cast_from_bf16", false, map[string]gridCell{"bf16": gridUnary(compute.Cast[float32, bf16])}},
		{"exp", false, map[string]gridCell{"f32": gridUnary(compute.Exp[float32]), "f16": gridUnary(compute.Exp[f16]),
			"bf16": gridUnary(compute.Exp[bf16])}},
		{"gelu", false, map[string]gridCell{"f32": gridUnary(compute.Gelu[float32]), "f16": gridUnary(compute.Gelu[f16]),
			"bf16": gridUnary(compute.Gelu[bf16])}},
		{"sigmoid", false, map[string]gridCell{"f32": gridUnary(compute.Sigmoid[float32]), "f16": gridUnary(compute.Sigmoid[f16]),
			"bf16": gridUnary(compute.Sigmoid[bf16])}},
		{"where", false, map[string]gridCell{"f32": gridWhere[float32], "f16": gridWhere[f16], "bf16": gridWhere[bf16]}},
		{"sum", false, map[string]gridCell{"f32": gridReduce(compute.Sum[float32]), "f16": gridReduce(compute.Sum[f16]),
			"bf16": gridReduce(compute.Sum[bf16]), "f64": gridReduce(compute.Sum[float64])}},
		{"maxof", false, map[string]gridCell{"f32": gridReduce(compute.MaxOf[float32])}},
		{"mean", false, map[string]gridCell{"f32": gridReduce(compute.Mean[float32])}},
		{"argmax", false, map[string]gridCell{"f32": gridArg(compute.ArgMax[float32])}},
		{"argmin", false, map[string]gridCell{"f32": gridArg(compute.ArgMin[float32])}},
		{"softmax", true, map[string]gridCell{"f32": gridMatrix(compute.Softmax[float32]), "f16": gridMatrix(compute.Softmax[f16]),
			"bf16": gridMatrix(compute.Softmax[bf16])}},
		{"logsoftmax", true, map[string]gridCell{"f32": gridMatrix(compute.LogSoftmax[float32]), "f16": gridMatrix(compute.LogSoftmax[f16]),
			"bf16": gridMatrix(compute.LogSoftmax[bf16])}},
		{"sumrows", true, map[string]gridCell{"f32": gridAxis(compute.SumAxis[float32], compute.PerRow), "f16": gridAxis(compute.SumAxis[f16], compute.PerRow),
			"bf16": gridAxis(compute.SumAxis[bf16], compute.PerRow), "f64": gridAxis(compute.SumAxis[float64], compute.PerRow)}},
		{"sumcols", true, map[string]gridCell{"f32": gridAxis(compute.SumAxis[float32], compute.PerColumn), "f16": gridAxis(compute.SumAxis[f16], compute.PerColumn),
			"bf16": gridAxis(compute.SumAxis[bf16], compute.PerColumn), "f64": gridAxis(compute.SumAxis[float64], compute.PerColumn)}},
		{"maxrows", true, map[string]gridCell{"f32": gridAxis(compute.MaxAxis[float32], compute.PerRow)}},
		{"maxcols", true, map[string]gridCell{"f32": gridAxis(compute.MaxAxis[float32], compute.PerColumn)}},
		{"meanrows", true, map[string]gridCell{"f32": gridAxis(compute.MeanAxis[float32], compute.PerRow)}},
		{"meancols", true, map[string]gridCell{"f32": gridAxis(compute.MeanAxis[float32], compute.PerColumn)}},
		{"transpose", true, map[string]gridCell{"f32": gridMatrix(compute.Transpose[float32])}},
	}
}

func gridBinary[T cuda.Number](f func(dst, a, b gbuf[T], s *cuda.Stream) error) gridCell {
	return func(b *testing.B, e env, sh compute.Shape) {
		n := sh.Rows * sh.Cols
		x, y, z := zeros[T](b, e, n), zeros[T](b, e, n), zeros[T](b, e, n)
		gridLoop(b, e.s, n, func() error { return f(z, x, y, e.s) })
	}
}

func gridScalar[T cuda.Number](f func(dst, a gbuf[T], v T, s *cuda.Stream) error) gridCell {
	return func(b *testing.B, e env, sh compute.Shape) {
		n := sh.Rows * sh.Cols
		x, z := zeros[T](b, e, n), zeros[T](b, e, n)
		var v T
		gridLoop(b, e.s, n, func() error { return f(z, x, v, e.s) })
	}
}

func gridUnary[To, From cuda.Number](f func(dst gbuf[To], src gbuf[From], s *cuda.Stream) error) gridCell {
	return func(b *testing.B, e env, sh compute.Shape) {
		n := sh.Rows * sh.Cols
		x, z := zeros[From](b, e, n), zeros[To](b, e, n)
		gridLoop(b, e.s, n, func() error { return f(z, x, e.s) })
	}
}

// gridWhere picks between two buffers by a mask of 0, 1, ..., 255, 0, ...
// (every 256th element from b).
func gridWhere[T cuda.Number](b *testing.B, e env, sh compute.Shape) {
	n := sh.Rows * sh.Cols
	mask := zeros[uint8](b, e, n)
	if err := compute.Iota(mask, 0, 1, e.s); err != nil {
		b.Fatal(err)
	}
	x, y, z := zeros[T](b, e, n), zeros[T](b, e, n), zeros[T](b, e, n)
	gridLoop(b, e.s, n, func() error { return compute.Where(z, mask, x, y, e.s) })
}

func gridReduce[T cuda.Number](f func(dst, src gbuf[T], s *cuda.Stream) error) gridCell {
	return func(b *testing.B, e env, sh compute.Shape) {
		x, y := zeros[T](b, e, sh.Rows*sh.Cols), zeros[T](b, e, 1)
		gridLoop(b, e.s, sh.Rows*sh.Cols, func() error { return f(y, x, e.s) })
	}
}

func gridArg[T cuda.Number](f func(dst gbuf[int64], src gbuf[T], s *cuda.Stream) error) gridCell {
	return func(b *testing.B, e env, sh compute.Shape) {
		x, y := zeros[T](b, e, sh.Rows*sh.Cols), zeros[int64](b, e, 1)
		gridLoop(b, e.s, sh.Rows*sh.Cols, func() error { return f(y, x, e.s) })
	}
}

func gridMatrix[T cuda.Number](f func(dst, src gbuf[T], sh compute.Shape, s *cuda.Stream) error) gridCell {
	return func(b *testing.B, e env, sh compute.Shape) {
		x, y := zeros[T](b, e, sh.Rows*sh.Cols), zeros[T](b, e, sh.Rows*sh.Cols)
		gridLoop(b, e.s, sh.Rows*sh.Cols, func() error { return f(y, x, sh, e.s) })
	}
}

func gridAxis[T cuda.Number](f func(dst, src gbuf[T], sh compute.Shape, axis compute.Axis, s *cuda.Stream) error, axis compute.Axis) gridCell {
	return func(b *testing.B, e env, sh compute.Shape) {
		m := sh.Rows
		if axis == compute.PerColumn {
			m = sh.Cols
		}
		x, y := zeros[T](b, e, sh.Rows*sh.Cols), zeros[T](b, e, m)
		gridLoop(b, e.s, sh.Rows*sh.Cols, func() error { return f(y, x, sh, axis, e.s) })
	}
}

// gridLoop calls op once (compiled and warm), then times b.N calls and one
// Synchronize, and reports µs per call. A large cell (gridEvents elements
// or more, its calls the device's time, not the host's) is timed by CUDA
// events recorded before and after the calls, as bench/pyref/compute_grid.py
// times it. The buffers of the cell are freed when the run ends (zeros'
// Cleanup).
func gridLoop(b *testing.B, s *cuda.Stream, n int, op func() error) {
	b.Helper()
	if err := op(); err != nil {
		b.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	var start, end *cuda.Event
	if n >= gridEvents {
		start, end = must(s.Context().NewEvent())(b), must(s.Context().NewEvent())(b)
		defer start.Close()
		defer end.Close()
	}
	b.ResetTimer()
	if start != nil {
		if err := start.Record(s); err != nil {
			b.Fatal(err)
		}
	}
	for range b.N {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	if end != nil {
		if err := end.Record(s); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	elapsed := b.Elapsed()
	if start != nil {
		elapsed = must(cuda.ElapsedTime(start, end))(b)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/1e3/float64(b.N), "us/op")
}

// gridEvents is the fewest elements of a cell timed by CUDA events.
const gridEvents = 16 << 20

package cusparse_test

import (
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cusparse"
	"github.com/gocuda/cuda/internal/cudatest"
)

// benchN is the benchmark matrices' size, 1 Mi × 1 Mi (issue 51's item 4).
const benchN = 1 << 20

// benchColumn is the k-th column drawn for row i of the benchmark
// matrices: a hash of (i, k) that bench/pyref/sparse_peers.py computes the
// same way (uint64 arithmetic, wrapping), so that both sides multiply the
// same matrices.
func benchColumn(i, k uint64) uint64 {
	h := (i<<32 | k) * 0x9E3779B97F4A7C15
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 32
	return h % benchN
}

// benchDegree is row i's number of columns drawn: 16 for "uniform16";
// for "powerlaw", 1 + 1800000/(i+1), at most 4096 (Zipf's law in the
// rows' lengths, about 16 a row on average), in integers so that both
// sides draw the same.
func benchDegree(kind string, i int) int {
	if kind == "uniform16" {
		return 16
	}
	return min(1+1800000/(i+1), 4096)
}

// benchMatrix returns the kind's matrix, in CSR with int32 indices: each
// row's drawn columns sorted, a column drawn twice stored once (its value
// the sum, as a COO matrix's duplicates sum), values (i+c)%7/8 + 1/8.
func benchMatrix(b *testing.B, s *cuda.Stream, kind string) *cusparse.Matrix[int32, float32] {
	b.Helper()
	off := make([]int32, benchN+1)
	ind := make([]int32, 0, 17*benchN)
	val := make([]float32, 0, 17*benchN)
	var cols []uint64
	for i := range benchN {
		cols = cols[:0]
		for k := range benchDegree(kind, i) {
			cols = append(cols, benchColumn(uint64(i), uint64(k)))
		}
		slices.Sort(cols)
		for j, c := range cols {
			v := float32((uint64(i)+c)%7)/8 + 0.125
			if j > 0 && c == cols[j-1] {
				val[len(val)-1] += v
				continue
			}
			ind, val = append(ind, int32(c)), append(val, v)
		}
		off[i+1] = int32(len(ind))
	}
	a, err := cusparse.NewCSR(s, benchN, benchN, off, ind, val)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Free() })
	return a
}

// BenchmarkSparse is issue 51's sparse cases, named as
// bench/pyref/sparse_peers.py names them, timed the same way: one call to
// warm up, then a loop of b.N calls and one synchronize, CUDA events
// around the loop (us/op; the lead runs -test.count 3 and takes the
// median): SpMV (y = A·x) and SpMM with 64 columns (C = A·B, B and C
// row-major) of the 1 Mi × 1 Mi uniform matrix of 16 non-zeros a row and
// of the power-law one, and SpGEMM of the power-law matrix with itself
// (its result allocated and freed each call, as the peers' are).
func BenchmarkSparse(b *testing.B) {
	if cudatest.IsFake() {
		b.Skip("the fake computes on the CPU: nothing to measure")
	}
	ctx := cudatest.Context(b)
	s := cudatest.Stream(b, ctx)
	h := must(cusparse.New(s))(b)
	defer h.Close()
	mats := map[string]*cusparse.Matrix[int32, float32]{}
	matrix := func(kind string) *cusparse.Matrix[int32, float32] {
		if mats[kind] == nil {
			mats[kind] = benchMatrix(b, s, kind)
		}
		return mats[kind]
	}
	for _, kind := range []string{"uniform16", "powerlaw"} {
		b.Run("spmv/f32/"+kind, func(b *testing.B) {
			a := matrix(kind)
			x := must(cuda.Zeroed[float32](ctx, benchN))(b)
			defer x.Free()
			y := must(cuda.Alloc[float32](ctx, benchN))(b)
			defer y.Free()
			benchLoop(b, s, func() error { return cusparse.SpMV(h, cusparse.NoTrans, 1, a, x, 0, y) })
		})
		b.Run("spmm64/f32/"+kind, func(b *testing.B) {
			a := matrix(kind)
			const cols = 64
			bb := must(cuda.Zeroed[float32](ctx, benchN*cols))(b)
			defer bb.Free()
			cc := must(cuda.Alloc[float32](ctx, benchN*cols))(b)
			defer cc.Free()
			B, C := cusparse.NewDense(bb, benchN, cols), cusparse.NewDense(cc, benchN, cols)
			benchLoop(b, s, func() error { return cusparse.SpMM(h, cusparse.NoTrans, 1, a, B, 0, C) })
		})
	}
	b.Run("spgemm/f32/powerlaw", func(b *testing.B) {
		a := matrix("powerlaw")
		benchLoop(b, s, func() error {
			c, err := cusparse.SpGEMM(h, a, a)
			if err != nil {
				return err
			}
			return c.Free()
		})
	})
}

// benchLoop times op: one call and a synchronize to warm up, then b.N
// calls between two events, and one synchronize.
func benchLoop(b *testing.B, s *cuda.Stream, op func() error) {
	b.Helper()
	if err := op(); err != nil {
		b.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	start, end := must(s.Context().NewEvent())(b), must(s.Context().NewEvent())(b)
	defer start.Close()
	defer end.Close()
	b.ResetTimer()
	if err := start.Record(s); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	if err := end.Record(s); err != nil {
		b.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	elapsed := must(cuda.ElapsedTime(start, end))(b)
	b.ReportMetric(float64(elapsed.Nanoseconds())/1e3/float64(b.N), "us/op")
}

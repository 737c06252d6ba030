package nd_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nd"
)

// BenchmarkND is issue 50's benchmarks (item 8), each case
// BenchmarkND/<op>/<dtype>/<shape>, beside PyTorch and CuPy: bench/pyref/nd_peers.py
// times the same cases under the same names, and bench/report/ndreport.py
// sets them side by side (scripts/gpu-nd.sh runs the three). The cases are
// benchCases' table: each named case of the issue and shapes around it
// (tall, narrow, tiny, odd), since the goals must hold around the named
// cases too.
//
// A case's inputs are zeros (the indices of a Take are random); it calls
// the operation once (compiling its kernel), then times b.N calls and one
// Synchronize, by CUDA events recorded before and after the calls (the
// device's time, as the peers time it), except the call_* cases, which
// time the host's calls by its clock; and it reports µs per call (us/op),
// as compute's BenchmarkGrid does. Each call is the fastest form of the
// operation: its Into form into a preallocated output where it has one
// (PyTorch's and CuPy's out=), else the allocating call and the result's
// Free (Take, Concat, fusedChain, fusedChain1; the peers' out= where they
// have one).
//
// GOCUDA_ND_OPS (a comma list of ops) selects a subset. Where kernels
// cannot run (the fake driver, a machine without NVRTC) every case skips.
func BenchmarkND(b *testing.B) {
	ops := benchSet(b, "GOCUDA_ND_OPS")
	// One context and stream for every case: a context per case would
	// compile every kernel again.
	s := cudatest.Stream(b, cudatest.Context(b))
	for _, c := range benchCases() {
		if ops != nil && !ops[c.op] {
			continue
		}
		b.Run(c.op+"/"+c.dtype+"/"+c.shape, func(b *testing.B) {
			requireKernels(b)
			c.run(b, s)
		})
	}
}

// benchCase is one case: its name's parts and what sets it up and times it.
type benchCase struct {
	op, dtype, shape string
	run              func(b *testing.B, s *cuda.Stream)
}

// benchCases is the table of cases, the named case of each op
// first. bench/pyref/nd_peers.py's CASES is the same table: a case added
// here is added there, under the same name.
func benchCases() []benchCase {
	type (
		f16  = cuda.Float16
		bf16 = cuda.BFloat16
	)
	return []benchCase{
		// Broadcast add: a row added to every row, and around it.
		benchAdd[float32]([]int{4096, 4096}, []int{4096}),
		benchAdd[float32]([]int{4097, 33}, []int{33}),
		benchAdd[float32]([]int{7, 1048576}, []int{1048576}),
		benchAdd[float32]([]int{4096, 4096}, []int{4096, 1}),
		benchAdd[float32]([]int{4096, 1}, []int{1, 4096}),
		benchAdd[float32]([]int{64, 1024, 64}, []int{1024, 1}),
		// An elementwise op (Exp) on a transposed view, into a contiguous result.
		benchExpT[float32](4096, 4096),
		benchExpT[float32](4097, 4099),
		benchExpT[float32](8, 1048576),
		benchExpT[float32](1048576, 8),
		benchExpT[cuda.Float16](4096, 4096),
		benchExpBT[float32](32, 512, 1024),
		// Sum over the middle axis.
		benchSumMid[float32](64, 1024, 64),
		benchSumMid[float32](5, 100003, 3),
		benchSumMid[float32](1, 4096, 4096),
		benchSumMid[float32](4096, 4096, 1),
		benchSumMid[float32](2048, 3, 2048),
		// Softmax along the last and along the first axis.
		benchSoftmax[float32](4096, 1024, -1),
		benchSoftmax[float32](4096, 1024, 0),
		benchSoftmax[float32](4097, 33, -1),
		benchSoftmax[float32](4097, 33, 0),
		benchSoftmax[float32](262144, 16, -1),
		benchSoftmax[float32](262144, 16, 0),
		benchSoftmax[float32](16, 262144, -1),
		benchSoftmax[float32](16, 262144, 0),
		// Take of rows (axis 0) by random int64 indices, and of columns.
		benchTake[float32](1048576, 128, 1048576, 0),
		benchTake[float32](1048576, 1, 1048576, 0),
		benchTake[float32](1048576, 128, 7, 0),
		benchTake[float32](100003, 33, 65537, 0),
		benchTake[float32](4096, 4096, 1024, 1),
		// Concat of two arrays along axis 0 and along axis 1.
		benchConcat[float32]([]int{4096, 4096}, []int{4096, 4096}, 0),
		benchConcat[float32]([]int{4097, 33}, []int{4097, 33}, 0),
		benchConcat[float32]([]int{1, 1048576}, []int{7, 1048576}, 0),
		benchConcat[float32]([]int{4096, 4096}, []int{4096, 4096}, 1),
		benchConcat[float32]([]int{4097, 33}, []int{4097, 33}, 1),
		benchConcat[float32]([]int{1048576, 1}, []int{1048576, 7}, 1),
		// Batched matmul in bfloat16 (CuPy has none: float16 too, for it).
		benchMatmul[bf16]([]int{32, 512, 512}, []int{32, 512, 512}, false),
		benchMatmul[bf16]([]int{32, 512, 512}, []int{32, 512, 512}, true),
		benchMatmul[bf16]([]int{32, 512, 512}, []int{512, 512}, false),
		benchMatmul[bf16]([]int{32, 513, 511}, []int{32, 511, 509}, false),
		benchMatmul[bf16]([]int{4096, 4096}, []int{4096, 4096}, false),
		benchMatmul[f16]([]int{32, 512, 512}, []int{32, 512, 512}, false),
		// The call cost of one small operation, timed by the host's clock.
		benchCall(1024, false),
		benchCall(1024, true),
		// relu(a*b + c) * d unfused (four Into calls) and fused.
		benchChain(64<<20, 4, false),
		benchChain(64<<20, 4, true),
		benchChain(1<<20, 4, false),
		benchChain(1<<20, 4, true),
		// relu(x*2 + 1) * 3, one input and constants, unfused and fused.
		benchChain(64<<20, 1, false),
		benchChain(64<<20, 1, true),
		benchChain(1<<20, 1, false),
		benchChain(1<<20, 1, true),
	}
}

// fusedChain is relu(a*b + c) * d, the chain of issue 50's fusion goal,
// as one kernel (nd.Expr) with a result of its own (torch.compile's and
// cupy.fuse's function).
func fusedChain(a, b, c, d *nd.Array[float32]) (*nd.Array[float32], error) {
	return nd.Lazy(a).Mul(nd.Lazy(b)).Add(nd.Lazy(c)).Relu().Mul(nd.Lazy(d)).Eval()
}

// fusedChain1 is relu(x*2 + 1) * 3, the chain of one input and
// constants, as one kernel with a result of its own.
func fusedChain1(x *nd.Array[float32]) (*nd.Array[float32], error) {
	return nd.Lazy(x).Mul(nd.Const[float32](2)).Add(nd.Const[float32](1)).Relu().Mul(nd.Const[float32](3)).Eval()
}

// chainInto sets o to relu(ab + c) * d, where ab is a*b already: Add,
// Relu and Mul into o, in place.
func chainInto(o, ab, c, d *nd.Array[float32]) error {
	if err := nd.AddInto(o, ab, c); err != nil {
		return err
	}
	if err := nd.ReluInto(o, o); err != nil {
		return err
	}
	return nd.MulInto(o, o, d)
}

func benchAdd[T nd.Elem](sa, sb []int) benchCase {
	return benchCase{"add", benchDtype[T](), benchDims(sa) + "+" + benchDims(sb), func(b *testing.B, s *cuda.Stream) {
		x, y := benchZeros[T](b, s, sa...), benchZeros[T](b, s, sb...)
		z := benchZeros[T](b, s, benchBroadcast(sa, sb)...)
		benchBytes[T](b, x.Size()+y.Size()+z.Size())
		benchLoop(b, s, true, func() error { return nd.AddInto(z, x, y) })
	}}
}

// benchExpT is Exp of the transpose of a rows×cols array.
func benchExpT[T cuda.AnyFloat](rows, cols int) benchCase {
	return benchCase{"exp_t", benchDtype[T](), benchDims([]int{rows, cols}), func(b *testing.B, s *cuda.Stream) {
		x, z := benchZeros[T](b, s, rows, cols), benchZeros[T](b, s, cols, rows)
		benchBytes[T](b, 2*x.Size())
		benchLoop(b, s, true, func() error { return nd.ExpInto(z, x.T()) })
	}}
}

// benchExpBT is Exp of a batch×rows×cols array with its last two axes
// swapped (case exp_t of three dims: PyTorch's x.mT).
func benchExpBT[T cuda.AnyFloat](batch, rows, cols int) benchCase {
	return benchCase{"exp_t", benchDtype[T](), benchDims([]int{batch, rows, cols}), func(b *testing.B, s *cuda.Stream) {
		x, z := benchZeros[T](b, s, batch, rows, cols), benchZeros[T](b, s, batch, cols, rows)
		benchBytes[T](b, 2*x.Size())
		v, err := x.Permute(0, 2, 1)
		if err != nil {
			b.Fatal(err)
		}
		benchLoop(b, s, true, func() error { return nd.ExpInto(z, v) })
	}}
}

// benchSumMid is the Sum over axis 1 of a d0×d1×d2 array.
func benchSumMid[T nd.Elem](d0, d1, d2 int) benchCase {
	return benchCase{"sum_mid", benchDtype[T](), benchDims([]int{d0, d1, d2}), func(b *testing.B, s *cuda.Stream) {
		x, z := benchZeros[T](b, s, d0, d1, d2), benchZeros[T](b, s, d0, d2)
		benchBytes[T](b, x.Size()+z.Size())
		benchLoop(b, s, true, func() error { return nd.SumInto(z, x, nd.Along(1)) })
	}}
}

// benchSoftmax is the Softmax of a rows×cols array along axis, -1
// (softmax_last) or 0 (softmax_first).
func benchSoftmax[T cuda.AnyFloat](rows, cols, axis int) benchCase {
	op := "softmax_last"
	if axis == 0 {
		op = "softmax_first"
	}
	return benchCase{op, benchDtype[T](), benchDims([]int{rows, cols}), func(b *testing.B, s *cuda.Stream) {
		x, z := benchZeros[T](b, s, rows, cols), benchZeros[T](b, s, rows, cols)
		benchBytes[T](b, 2*x.Size())
		benchLoop(b, s, true, func() error { return nd.SoftmaxInto(z, x, axis) })
	}}
}

// benchTake is the Take of n random indices along axis (0: rows, op take;
// 1: columns, op take_ax1) of a rows×cols table; shape
// <rows>x<cols>[<n>].
func benchTake[T nd.Elem](rows, cols, n, axis int) benchCase {
	op := "take"
	if axis == 1 {
		op = "take_ax1"
	}
	return benchCase{op, benchDtype[T](), fmt.Sprintf("%s[%d]", benchDims([]int{rows, cols}), n), func(b *testing.B, s *cuda.Stream) {
		x := benchZeros[T](b, s, rows, cols)
		hi := rows
		if axis == 1 {
			hi = cols
		}
		rng := rand.New(rand.NewPCG(50, 8))
		idx := make([]int64, n)
		for i := range idx {
			idx[i] = rng.Int64N(int64(hi))
		}
		ix := free(b, must(nd.FromSlice(s, idx))(b))
		out := n * cols
		if axis == 1 {
			out = rows * n
		}
		b.SetBytes(int64(2*out*benchSize[T]() + 8*n))
		benchLoop(b, s, true, func() error {
			r, err := nd.Take(x, ix, axis)
			if err != nil {
				return err
			}
			return r.Free()
		})
	}}
}

// benchConcat is the Concat of a zeros array of shape sa and one of sb
// along axis (op concat0 or concat1).
func benchConcat[T nd.Elem](sa, sb []int, axis int) benchCase {
	return benchCase{fmt.Sprintf("concat%d", axis), benchDtype[T](), benchDims(sa) + "+" + benchDims(sb), func(b *testing.B, s *cuda.Stream) {
		x, y := benchZeros[T](b, s, sa...), benchZeros[T](b, s, sb...)
		benchBytes[T](b, 2*(x.Size()+y.Size()))
		arrays := []*nd.Array[T]{x, y}
		benchLoop(b, s, true, func() error {
			r, err := nd.Concat(arrays, axis)
			if err != nil {
				return err
			}
			return r.Free()
		})
	}}
}

// benchMatmul is a @ b for a of shape sa and b of shape sb, or of b's
// transposed view (the last two axes swapped, PyTorch's b.mT: shape
// <sa>@<sb>.mT) where mT.
func benchMatmul[T cuda.AnyFloat](sa, sb []int, mT bool) benchCase {
	shape := benchDims(sa) + "@" + benchDims(sb)
	if mT {
		shape += ".mT"
	}
	return benchCase{"matmul", benchDtype[T](), shape, func(b *testing.B, s *cuda.Stream) {
		x, y := benchZeros[T](b, s, sa...), benchZeros[T](b, s, sb...)
		if mT {
			axes := make([]int, len(sb))
			for i := range axes {
				axes[i] = i
			}
			axes[len(sb)-2], axes[len(sb)-1] = len(sb)-1, len(sb)-2
			y = must(y.Permute(axes...))(b)
		}
		yb := y.Shape()
		m, k, n := sa[len(sa)-2], sa[len(sa)-1], yb[len(yb)-1]
		batch := benchBroadcast(sa[:len(sa)-2], yb[:len(yb)-2])
		z := benchZeros[T](b, s, append(batch, m, n)...)
		flops := 2 * float64(z.Size()) * float64(k)
		if us := benchLoop(b, s, true, func() error { return nd.MatmulInto(z, x, y) }); us > 0 {
			b.ReportMetric(flops/us/1e6, "TFLOP/s")
		}
	}}
}

// benchCall is the call cost of one Add of two n-element float32 arrays,
// timed by the host's clock: AddInto into a preallocated result
// (call_into), or Add and the result's Free (call_alloc).
func benchCall(n int, alloc bool) benchCase {
	op := "call_into"
	if alloc {
		op = "call_alloc"
	}
	return benchCase{op, "f32", strconv.Itoa(n), func(b *testing.B, s *cuda.Stream) {
		x, y, z := benchZeros[float32](b, s, n), benchZeros[float32](b, s, n), benchZeros[float32](b, s, n)
		call := func() error { return nd.AddInto(z, x, y) }
		if alloc {
			call = func() error {
				r, err := nd.Add(x, y)
				if err != nil {
					return err
				}
				return r.Free()
			}
		}
		benchLoop(b, s, false, call)
	}}
}

// benchChain is a chain of four elementwise operations over n float32:
// relu(a*b + c) * d of four inputs (inputs 4, op chain_*), or
// relu(x*2 + 1) * 3 of one input and constants (inputs 1, op chain1_*).
// Unfused, it is four Into calls into a preallocated result
// (*_unfused: PyTorch's and CuPy's calls with out=); fused, fusedChain or
// fusedChain1 and its result's Free (*_fused: torch.compile's and
// cupy.fuse's function). Why both: the four-input chain moves 11 array
// passes of memory unfused (mul 3, add 3, relu 2, mul 3) against 5 fused,
// which bounds fusion's gain at 2.2x, below the 2.5x; the
// one-input chain (its constants kernel arguments) moves 8 (2 an
// operation) against 2, a bound of 4x.
func benchChain(n, inputs int, fused bool) benchCase {
	op := "chain"
	if inputs == 1 {
		op = "chain1"
	}
	if fused {
		op += "_fused"
	} else {
		op += "_unfused"
	}
	return benchCase{op, "f32", strconv.Itoa(n), func(b *testing.B, s *cuda.Stream) {
		o := benchZeros[float32](b, s, n)
		var unfusedCall, fusedCall func() error
		var moved int // the bytes of the fused form, in elements
		switch inputs {
		case 4:
			x, y, c, d := benchZeros[float32](b, s, n), benchZeros[float32](b, s, n), benchZeros[float32](b, s, n), benchZeros[float32](b, s, n)
			moved = 5 * n // four inputs read, one result written
			unfusedCall = func() error {
				if err := nd.MulInto(o, x, y); err != nil {
					return err
				}
				return chainInto(o, o, c, d)
			}
			fusedCall = func() error {
				r, err := fusedChain(x, y, c, d)
				if err != nil {
					return err
				}
				return r.Free()
			}
		case 1:
			x := benchZeros[float32](b, s, n)
			// The constants, made once: host values (Scalar), passed to
			// the kernels as arguments.
			two, one, three := nd.Scalar[float32](2), nd.Scalar[float32](1), nd.Scalar[float32](3)
			moved = 2 * n // one input read, one result written
			unfusedCall = func() error {
				if err := nd.MulInto(o, x, two); err != nil {
					return err
				}
				if err := nd.AddInto(o, o, one); err != nil {
					return err
				}
				if err := nd.ReluInto(o, o); err != nil {
					return err
				}
				return nd.MulInto(o, o, three)
			}
			fusedCall = func() error {
				r, err := fusedChain1(x)
				if err != nil {
					return err
				}
				return r.Free()
			}
		default:
			b.Fatalf("benchChain: %d inputs", inputs)
		}
		// The bytes of the fused form, read and written once: the figure
		// the unfused form's MB/s is compared against.
		benchBytes[float32](b, moved)
		call := unfusedCall
		if fused {
			call = fusedCall
		}
		benchLoop(b, s, true, call)
	}}
}

// benchLoop calls op once (compiled and warm), then times b.N calls and
// one Synchronize, and reports µs per call: by CUDA events recorded before
// and after the calls where events (the device's time, as
// bench/pyref/nd_peers.py times it), else by the host's clock, as
// compute's gridLoop; it returns the figure.
func benchLoop(b *testing.B, s *cuda.Stream, events bool, op func() error) float64 {
	b.Helper()
	if err := op(); err != nil {
		b.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		b.Fatal(err)
	}
	var start, end *cuda.Event
	if events {
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
	us := float64(elapsed.Nanoseconds()) / 1e3 / float64(b.N)
	b.ReportMetric(us, "us/op")
	return us
}

// benchZeros returns an array of zeros of the shape on s, freed when the
// run ends.
func benchZeros[T nd.Elem](b *testing.B, s *cuda.Stream, shape ...int) *nd.Array[T] {
	b.Helper()
	return free(b, must(nd.Zeros[T](s, shape...))(b))
}

// benchBytes sets the bytes a call moves: n elements of T.
func benchBytes[T nd.Elem](b *testing.B, n int) { b.SetBytes(int64(n * benchSize[T]())) }

func benchSize[T nd.Elem]() int { return int(unsafe.Sizeof(*new(T))) }

// benchDtype is T's short name in the cases' names (the grid's): f32,
// f16, bf16, f64, or NumPy's name of another type.
func benchDtype[T nd.Elem]() string {
	name := (&nd.Array[T]{}).Dtype()
	switch name {
	case "float32":
		return "f32"
	case "float16":
		return "f16"
	case "bfloat16":
		return "bf16"
	case "float64":
		return "f64"
	}
	return name
}

// benchDims is a shape as the cases name it: 4096x1024.
func benchDims(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	return strings.Join(parts, "x")
}

// benchBroadcast is the shape of sa and sb broadcast together (they are
// known to broadcast).
func benchBroadcast(sa, sb []int) []int {
	if len(sa) < len(sb) {
		sa, sb = sb, sa
	}
	out := append([]int(nil), sa...)
	for i := range sb {
		j := len(out) - len(sb) + i
		if out[j] == 1 {
			out[j] = sb[i]
		}
	}
	return out
}

// benchSet is the comma list in the environment variable name as a set,
// or nil (every one) where it is empty; an op no case has is a failure.
func benchSet(b *testing.B, name string) map[string]bool {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return nil
	}
	known := map[string]bool{}
	for _, c := range benchCases() {
		known[c.op] = true
	}
	set := map[string]bool{}
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			if !known[f] {
				b.Fatalf("%s: no op %q", name, f)
			}
			set[f] = true
		}
	}
	return set
}

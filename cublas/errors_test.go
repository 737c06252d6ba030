package cublas_test

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/track"
)

// TestBadInput: every malformed call is an ErrInvalidValue from gocuda,
// before cuBLAS is called (no Call in the error), naming what was wrong;
// the handle stays usable.
func TestBadInput(t *testing.T) {
	ctx, s, h := handle(t)
	buf := func(n int) *cuda.DeviceBuffer[float32] { return cudatest.Upload(t, ctx, make([]float32, n)) }
	a := cublas.NewMatrix(buf(12), 3, 4)
	b := cublas.NewMatrix(buf(20), 4, 5)
	c := cublas.NewMatrix(buf(15), 3, 5)
	x3, x4 := buf(3), buf(4)
	sq := cublas.NewMatrix(buf(9), 3, 3)
	whole := buf(40) // A's 12 elements, then C's 15, from one buffer
	aPart := cublas.NewMatrix(must(whole.Slice(0, 12))(t), 3, 4)
	cPart := cublas.NewMatrix(must(whole.Slice(10, 15))(t), 3, 5) // its first two elements are A's last
	sq2, sq3, c3 := cublas.NewMatrix(buf(9), 3, 3), cublas.NewMatrix(buf(9), 3, 3), cublas.NewMatrix(buf(9), 3, 3)
	a27, b27, b18 := cublas.NewMatrix(buf(27), 3, 3), cublas.NewMatrix(buf(27), 3, 3), cublas.NewMatrix(buf(18), 3, 2)
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"a without data", "a has no data", cublas.Gemm(h, 1, cublas.Matrix[float32]{Rows: 3, Cols: 4}, b, 0, c)},
		{"inner dimensions", "a's columns must equal b's rows", cublas.Gemm(h, 1, a, a, 0, c)},
		{"C's shape", "c is 3×5: want 3×4", cublas.Gemm(h, 1, a, cublas.NewMatrix(buf(16), 4, 4), 0, c)},
		{"negative", "dimensions cannot be negative", cublas.Gemm(h, 1, cublas.Matrix[float32]{Data: a.Data, Rows: -3, Cols: 4}, b, 0, c)},
		{"stride", "a's stride 3 is less than its 4 columns", cublas.Gemm(h, 1, cublas.Matrix[float32]{Data: a.Data, Rows: 3, Cols: 4, Stride: 3}, b, 0, c)},
		{"column-major stride", "b's stride 2 is less than its 4 rows", cublas.Gemm(h, 1, a, cublas.Matrix[float32]{Data: b.Data, Rows: 4, Cols: 5, Stride: 2, Layout: cublas.ColMajor}, 0, c)},
		{"buffer too small", "needs 24 elements; its buffer holds 12", cublas.Gemm(h, 1, cublas.Matrix[float32]{Data: a.Data, Rows: 3, Cols: 4, Stride: 10}, b, 0, c)},
		{"transposed view too small", "b (4×5, row-major, stride 5) needs 20 elements; its buffer holds 12", cublas.Gemm(h, 1, a, cublas.NewMatrix(a.Data, 4, 5), 0, c)},
		{"layout", "unknown layout", cublas.Gemm(h, 1, cublas.Matrix[float32]{Data: a.Data, Rows: 3, Cols: 4, Layout: 7}, b, 0, c)},
		{"batch count", "count is 0", cublas.GemmStridedBatched(h, 0, 1, a, b, 0, c)},
		{"batch too small", "needs 36 elements for 3 matrices; its buffer holds 12", cublas.GemmStridedBatched(h, 3, 1, a, b, 0, c)},
		{"batch stride", "batch stride -1 is negative", cublas.GemmStridedBatched(h, 2, 1, cublas.Matrix[float32]{Data: a.Data, Rows: 3, Cols: 4, BatchStride: -1}, b, 0, c)},
		{"empty batch", "c is empty", cublas.GemmBatched[float32](h, 1, nil, nil, 0, nil)},
		{"batch lengths", "a has 2 matrices, b 1 and c 1", cublas.GemmBatched(h, 1, []cublas.Matrix[float32]{a, a}, []cublas.Matrix[float32]{b}, 0, []cublas.Matrix[float32]{c})},
		{"batched shapes", "product 1 (a[1], b[1], c[1]) differs from product 0", cublas.GemmBatched(h, 1, []cublas.Matrix[float32]{a, a}, []cublas.Matrix[float32]{b, b}, 0,
			[]cublas.Matrix[float32]{c, {Data: c.Data, Rows: 3, Cols: 5, Layout: cublas.ColMajor}})},
		{"batched product", "a[1] has no data", cublas.GemmBatched(h, 1, []cublas.Matrix[float32]{a, {}}, []cublas.Matrix[float32]{b, b}, 0, []cublas.Matrix[float32]{c, c})},
		{"epilogue", "epi is 9", cublas.Matmul(h, 1, a, b, 0, c, 9, nil)},
		{"bias length", "bias has 3 elements: want one per column of c, 5", cublas.Matmul(h, 1, a, b, 0, c, cublas.ReLU, x3)},
		{"bias layout", "a bias needs a row-major c", cublas.Matmul(h, 1, a, b, 0, cublas.Matrix[float32]{Data: c.Data, Rows: 3, Cols: 5, Layout: cublas.ColMajor}, cublas.NoEpilogue, x3)},
		{"vector lengths", "x has 3 elements and y 4", cublas.Axpy(h, 1, x3, x4)},
		{"nil vector", "y is nil", cublas.Axpy(h, 1, x3, nil)},
		{"Dot lengths", "x has 3 elements and y 4", errOf(cublas.Dot(h, x3, x4))},
		{"Scal nil", "x is nil", cublas.Scal[float32](h, 1, nil)},
		{"Nrm2 nil", "x is nil", errOf(cublas.Nrm2[float32](h, nil))},
		{"Gemv lengths", "a is 3×4, x has 3 elements and y 4: want 4 and 3", cublas.Gemv(h, 1, a, x3, 0, x4)},
		{"math mode", "m is 5", h.SetMathMode(5)},
		{"c is a", "c shares memory with a", cublas.Gemm(h, 1, sq, sq.T(), 0, sq)},
		{"c is b", "c shares memory with b", cublas.Gemm(h, 1, cublas.NewMatrix(buf(9), 3, 3), sq, 1, sq)},
		{"c overlaps a", "c shares memory with a", cublas.Gemm(h, 1, aPart, b, 0, cPart)},
		{"Matmul's c is a", "c shares memory with a", cublas.Matmul(h, 1, sq, cublas.NewMatrix(buf(9), 3, 3), 0, sq, cublas.NoEpilogue, nil)},
		{"batched c overlaps b", "c shares memory with b", cublas.GemmStridedBatched(h, 2, 1, cublas.NewMatrix(buf(18), 3, 3), cublas.Matrix[float32]{Data: whole, Rows: 3, Cols: 3, BatchStride: 12}, 0, cublas.NewMatrix(must(whole.Slice(20, 18))(t), 3, 3))},
		{"batched product's c is a", "c[0] shares memory with a[0]", cublas.GemmBatched(h, 1, []cublas.Matrix[float32]{sq}, []cublas.Matrix[float32]{sq}, 0, []cublas.Matrix[float32]{sq})},
		// Outputs of one batch over each other, or over another product's
		// input: the products run side by side, so the result is undefined.
		{"batched outputs overlap", "c's matrices 1 element apart share memory", cublas.GemmStridedBatched(h, 2, 1, a27, b27, 0, cublas.Matrix[float32]{Data: whole, Rows: 3, Cols: 3, BatchStride: 1})},
		{"batched outputs interleave", "c's matrices 6 elements apart share memory", cublas.GemmStridedBatched(h, 3, 1, a27, b18, 0, cublas.Matrix[float32]{Data: whole, Rows: 3, Cols: 2, Stride: 6, BatchStride: 3})},
		{"batched c twice", "c[1] shares memory with c[0]", cublas.GemmBatched(h, 1, []cublas.Matrix[float32]{sq, sq}, []cublas.Matrix[float32]{sq2, sq2}, 0, []cublas.Matrix[float32]{c3, c3})},
		{"batched c is another's a", "c[0] shares memory with a[1]", cublas.GemmBatched(h, 1, []cublas.Matrix[float32]{sq, c3}, []cublas.Matrix[float32]{sq2, sq2}, 0, []cublas.Matrix[float32]{c3, sq3})},
		{"batched c is another's b", "c[1] shares memory with b[0]", cublas.GemmBatched(h, 1, []cublas.Matrix[float32]{sq, sq}, []cublas.Matrix[float32]{c3, sq2}, 0, []cublas.Matrix[float32]{sq3, c3})},
		// Sizes past any buffer are errors, counted without wrapping.
		{"huge matrix", "needs 4611686014132420609 elements; its buffer holds 12", cublas.Gemm(h, 1, cublas.Matrix[float32]{Data: a.Data, Rows: 1<<31 - 1, Cols: 1<<31 - 1}, cublas.Matrix[float32]{Data: b.Data, Rows: 1<<31 - 1, Cols: 5}, 0, cublas.Matrix[float32]{Data: c.Data, Rows: 1<<31 - 1, Cols: 5})},
		{"too large", "cuBLAS takes at most 2147483647", cublas.Gemm(h, 1, cublas.Matrix[float32]{Data: a.Data, Rows: 1 << 31, Cols: 4}, b, 0, c)},
		{"huge batch stride", "2147483647 matrices 4611686018427387904 elements apart are beyond any buffer", cublas.GemmStridedBatched(h, 1<<31-1, 1, cublas.Matrix[float32]{Data: a.Data, Rows: 3, Cols: 4, BatchStride: 1 << 62}, b, 0, c)},
		{"Axpy's y over x", "y shares memory with x", cublas.Axpy(h, 1, must(whole.Slice(0, 4))(t), must(whole.Slice(1, 4))(t))},
		{"Gemv's y over x", "y shares memory with x", cublas.Gemv(h, 1, sq, must(whole.Slice(0, 3))(t), 0, must(whole.Slice(2, 3))(t))},
		{"Gemv's y over a", "y shares memory with a", cublas.Gemv(h, 1, aPart, x4, 0, must(whole.Slice(11, 3))(t))},
		{"bias is c", "bias shares memory with c", cublas.Matmul(h, 1, cublas.NewMatrix(buf(3), 1, 3), sq, 0, cublas.NewMatrix(x3, 1, 3), cublas.NoEpilogue, x3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e *cublas.Error
			if !errors.Is(tc.err, cuda.ErrInvalidValue) || !errors.As(tc.err, &e) || e.Call != "" {
				t.Fatalf("got %v, want an ErrInvalidValue of ours", tc.err)
			}
			if !strings.Contains(tc.err.Error(), tc.want) {
				t.Errorf("%q does not say %q", tc.err, tc.want)
			}
		})
	}
	// Still usable; and disjoint parts of one buffer are no aliasing.
	if err := cublas.Gemm(h, 1, a, b, 0, c); err != nil {
		t.Fatal(err)
	}
	if err := cublas.Gemm(h, 1, aPart, b, 0, cublas.NewMatrix(must(whole.Slice(12, 15))(t), 3, 5)); err != nil {
		t.Fatalf("Gemm into the part of A's buffer after A: %v", err)
	}
	// y = (alpha+1)·y: the same elements, each read before it is written.
	if err := cublas.Axpy(h, 1, x3, x3); err != nil {
		t.Fatalf("Axpy of x onto itself: %v", err)
	}
	// Matrices of a batch whose rows interleave without sharing an
	// element, and one input read by several products, are no aliasing.
	if err := cublas.GemmStridedBatched(h, 3, 1, a27, b18, 0, cublas.Matrix[float32]{Data: whole, Rows: 3, Cols: 2, Stride: 6, BatchStride: 4}); err != nil {
		t.Fatalf("GemmStridedBatched into interleaved matrices: %v", err)
	}
	if err := cublas.GemmBatched(h, 1, []cublas.Matrix[float32]{sq, sq}, []cublas.Matrix[float32]{sq2, sq2}, 0, []cublas.Matrix[float32]{c3, sq3}); err != nil {
		t.Fatalf("GemmBatched with shared inputs: %v", err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

func errOf[T any](_ T, err error) error { return err }

// TestOtherContext: an operand of another context than the handle's is
// refused, naming it.
func TestOtherContext(t *testing.T) {
	ctxs := cudatest.Contexts(t, 2)
	if ctxs == nil {
		return
	}
	s := cudatest.Stream(t, ctxs[0])
	h := must(cublas.New(s))(t)
	defer h.Close()
	mine := cudatest.Upload(t, ctxs[0], make([]float32, 4))
	other := cudatest.Upload(t, ctxs[1], make([]float32, 4))
	m, o := cublas.NewMatrix(mine, 2, 2), cublas.NewMatrix(other, 2, 2)
	for name, err := range map[string]error{
		"b": cublas.Gemm(h, 1, m, o, 0, m),
		"c": cublas.Matmul(h, 1, m, m, 0, o, cublas.NoEpilogue, nil),
		"y": cublas.Axpy(h, 1, mine, other),
	} {
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), name+" belongs to another context") {
			t.Errorf("%s of another context: %v", name, err)
		}
	}
}

// TestZeroAndClosed: a nil or zero Handle, and a closed one, refuse every
// call with an error; Close is idempotent.
func TestZeroAndClosed(t *testing.T) {
	_, s, _ := handle(t)
	ctx := s.Context()
	x := cudatest.Upload(t, ctx, []float32{1, 2})
	m := cublas.NewMatrix(x, 1, 2)
	out := cublas.NewMatrix(cudatest.Upload(t, ctx, []float32{0}), 1, 1)
	closed := must(cublas.New(s))(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	calls := func(h *cublas.Handle) map[string]error {
		return map[string]error{
			"Gemm":        cublas.Gemm(h, 1, m, m.T(), 0, out),
			"Matmul":      cublas.Matmul(h, 1, m, m.T(), 0, out, cublas.NoEpilogue, nil),
			"Dot":         errOf(cublas.Dot(h, x, x)),
			"Axpy":        cublas.Axpy(h, 1, x, x),
			"SetMathMode": h.SetMathMode(cublas.TF32Math),
		}
	}
	for name, err := range calls(nil) {
		if !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("%s on a nil Handle: %v", name, err)
		}
	}
	for name, err := range calls(new(cublas.Handle)) {
		if !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("%s on a zero Handle: %v", name, err)
		}
	}
	if err := new(cublas.Handle).Close(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Close of a zero Handle: %v", err)
	}
	for name, err := range calls(closed) {
		if !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("%s on a closed Handle: %v", name, err)
		}
	}
	if _, err := cublas.New(nil); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("New(nil): %v", err)
	}
}

// TestClosedStream: a handle whose stream was closed refuses work with
// ErrClosed, and still closes.
func TestClosedStream(t *testing.T) {
	ctx := cudatest.Context(t)
	s := must(ctx.NewStream())(t)
	h := must(cublas.New(s))(t)
	x := cudatest.Upload(t, ctx, []float32{1, 2})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cublas.Scal(h, 2, x); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Scal on a closed stream: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrent: goroutines sharing a handle get their own products right
// (run with -race).
func TestConcurrent(t *testing.T) {
	ctx, s, h := handle(t)
	const n = 8
	var wg sync.WaitGroup
	outs := make([]*cuda.DeviceBuffer[float32], n)
	a := cudatest.Upload(t, ctx, []float32{1, 2, 3, 4}) // 2×2
	for i := range n {
		outs[i] = cudatest.Upload(t, ctx, make([]float32, 4))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := cublas.Gemm(h, float64(i), cublas.NewMatrix(a, 2, 2), cublas.NewMatrix(a, 2, 2), 0, cublas.NewMatrix(outs[i], 2, 2)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range n {
		got := download(t, s, outs[i])
		want := []float32{7, 10, 15, 22}
		for j := range want {
			if got[j] != float32(i)*want[j] {
				t.Fatalf("goroutine %d: %v, want %v times %d", i, got, want, i)
			}
		}
	}
}

// TestFaults: each cuBLAS or cuBLASLt call failing once is an error that
// names the call and carries its status, and leaves the handle usable and
// nothing leaked.
func TestFaults(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	x := cudatest.Upload(t, ctx, []float32{1, 2, 3, 4})
	m := cublas.NewMatrix(x, 2, 2)
	out := cublas.NewMatrix(cudatest.Upload(t, ctx, make([]float32, 4)), 2, 2)
	batch := []cublas.Matrix[float32]{m}
	v2, y2 := cudatest.Upload(t, ctx, []float32{1, 2}), cudatest.Upload(t, ctx, []float32{0, 0})
	for _, tc := range []struct {
		call string
		run  func(h *cublas.Handle) error
	}{
		{"cublasGemmEx", func(h *cublas.Handle) error { return cublas.Gemm(h, 1, m, m, 0, out) }},
		{"cublasGemmStridedBatchedEx", func(h *cublas.Handle) error { return cublas.GemmStridedBatched(h, 1, 1, m, m, 0, out) }},
		{"cublasGemmBatchedEx", func(h *cublas.Handle) error {
			return cublas.GemmBatched(h, 1, batch, batch, 0, []cublas.Matrix[float32]{out})
		}},
		{"cublasSaxpy_v2", func(h *cublas.Handle) error { return cublas.Axpy(h, 1, x, out.Data) }},
		{"cublasSscal_v2", func(h *cublas.Handle) error { return cublas.Scal(h, 1, x) }},
		{"cublasSdot_v2", func(h *cublas.Handle) error { return errOf(cublas.Dot(h, x, x)) }},
		{"cublasSnrm2_v2", func(h *cublas.Handle) error { return errOf(cublas.Nrm2(h, x)) }},
		{"cublasSasum_v2", func(h *cublas.Handle) error { return errOf(cublas.Asum(h, x)) }},
		{"cublasIsamax_v2", func(h *cublas.Handle) error { return errOf(cublas.Iamax(h, x)) }},
		{"cublasSgemv_v2", func(h *cublas.Handle) error { return cublas.Gemv(h, 1, m, v2, 0, y2) }},
		{"cublasLtCreate", matmul(m, out)},
		{"cublasLtMatmulDescCreate", matmul(m, out)},
		{"cublasLtMatmulDescSetAttribute", matmul(m, out)},
		{"cublasLtMatrixLayoutCreate", matmul(m, out)},
		{"cublasLtMatmulPreferenceCreate", matmul(m, out)},
		{"cublasLtMatmulPreferenceSetAttribute", matmul(m, out)},
		{"cublasLtMatmulAlgoGetHeuristic", matmul(m, out)},
		{"cublasLtMatmul", matmul(m, out)},
	} {
		t.Run(tc.call, func(t *testing.T) {
			h := must(cublas.New(s))(t)
			defer h.Close()
			f.Fail(tc.call, 1, int(cublas.ResultExecutionFailed))
			err := tc.run(h)
			var e *cublas.Error
			if !errors.Is(err, cublas.ResultExecutionFailed) || !errors.As(err, &e) || e.Call != tc.call ||
				!strings.Contains(err.Error(), "CUBLAS_STATUS_EXECUTION_FAILED") {
				t.Fatalf("with %s failing: %v", tc.call, err)
			}
			if err := tc.run(h); err != nil {
				t.Fatalf("again, with nothing failing: %v", err)
			}
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, call := range []string{"cublasCreate_v2", "cublasSetStream_v2", "cublasSetWorkspace_v2", "cublasSetPointerMode_v2"} {
		t.Run("New/"+call, func(t *testing.T) {
			live := f.Live("device")
			f.Fail(call, 1, int(cublas.ResultAllocFailed))
			if _, err := cublas.New(s); !errors.Is(err, cuda.ErrOutOfMemory) || !strings.Contains(err.Error(), call) {
				t.Fatalf("New with %s failing: %v", call, err)
			}
			if f.Live("device") != live || f.Live("blas") != 0 {
				t.Errorf("a failed New left %d device allocations (want %d) and %d cuBLAS objects", f.Live("device"), live, f.Live("blas"))
			}
		})
	}
	for _, call := range []string{"cublasDestroy_v2", "cublasLtDestroy", "cublasLtMatmulDescDestroy", "cublasLtMatrixLayoutDestroy"} {
		t.Run("Close/"+call, func(t *testing.T) {
			h := must(cublas.New(s))(t)
			if err := matmul(m, out)(h); err != nil {
				t.Fatal(err)
			}
			f.Fail(call, 1, int(cublas.ResultInternalError))
			if err := h.Close(); !errors.Is(err, cublas.ResultInternalError) {
				t.Fatalf("Close with %s failing: %v", call, err)
			}
			// Whole: the plans and the cuBLASLt handle Close released are
			// made again, and no half-released one is reached.
			if err := cublas.Gemm(h, 1, m, m, 0, out); err != nil {
				t.Errorf("Gemm after the failed Close: %v", err)
			}
			if err := matmul(m, out)(h); err != nil {
				t.Errorf("Matmul after the failed Close: %v", err)
			}
			if err := h.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if f.Live("blas") != 0 {
				t.Errorf("%d cuBLAS objects after Close", f.Live("blas"))
			}
		})
	}
	// The workspace's free failing, once the library's handles are gone:
	// the handle refuses calls (it has no cuBLAS handle to make them
	// with) and a second Close frees what is left.
	t.Run("Close/cuMemFree_v2", func(t *testing.T) {
		live := f.Live("device")
		h := must(cublas.New(s))(t)
		if err := matmul(m, out)(h); err != nil {
			t.Fatal(err)
		}
		f.Fail("cuMemFree_v2", 1, 999)
		err := h.Close()
		if !errors.Is(err, cuda.Result(999)) || !strings.Contains(err.Error(), "Handle.Close: cuMemFree_v2") {
			t.Fatalf("Close with cuMemFree_v2 failing: %v, want an error of Handle.Close naming cuMemFree_v2", err)
		}
		if err := cublas.Gemm(h, 1, m, m, 0, out); !errors.Is(err, cuda.ErrClosed) || !strings.Contains(err.Error(), "call Close again") {
			t.Errorf("Gemm after the failed Close: %v, want ErrClosed", err)
		}
		if got := h.String(); !strings.Contains(got, "call Close again") {
			t.Errorf("String after the failed Close: %q", got)
		}
		if err := h.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if f.Live("device") != live || f.Live("blas") != 0 {
			t.Errorf("after Close: %d device allocations (want %d) and %d cuBLAS objects", f.Live("device"), live, f.Live("blas"))
		}
	})
}

// TestCloseWhileCaptured: a graph that captured a product uses the
// handle's workspace, which Close then cannot free: the handle refuses
// calls, and Close finishes once the graph is closed.
func TestCloseWhileCaptured(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	h := must(cublas.New(s))(t)
	m := cublas.NewMatrix(cudatest.Upload(t, ctx, []float32{1, 2, 3, 4}), 2, 2)
	out := cublas.NewMatrix(cudatest.Upload(t, ctx, make([]float32, 4)), 2, 2)
	g := must(s.Capture(cuda.CaptureThreadLocal, func() error { return cublas.Gemm(h, 1, m, m, 0, out) }))(t)
	err := h.Close()
	if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "Handle.Close") || !strings.Contains(err.Error(), "graph") {
		t.Errorf("Close while a graph uses the workspace: %v", err)
	}
	if err := cublas.Gemm(h, 1, m, m, 0, out); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Gemm after that Close: %v, want ErrClosed", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close once the graph is closed: %v", err)
	}
}

// TestString: a Handle says what it is, nil, zero and closed ones too, as
// package cuda's objects do.
func TestString(t *testing.T) {
	ctx, s, h := handle(t)
	dev := regexp.QuoteMeta(ctx.Device().String())
	closed := must(cublas.New(s))(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	tf32 := must(cublas.New(s))(t)
	defer tf32.Close()
	if err := tf32.SetMathMode(cublas.TF32Math); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		h    *cublas.Handle
		want string // a regular expression matching all of it
	}{
		{h, `^cublas\.Handle\{` + dev + `, stream 0x[0-9a-f]+, TF32 off\}$`},
		{tf32, `^cublas\.Handle\{` + dev + `, stream 0x[0-9a-f]+, TF32 on\}$`},
		{closed, `^cublas\.Handle\{` + dev + `, stream 0x[0-9a-f]+, TF32 off, closed\}$`},
		{new(cublas.Handle), `^cublas\.Handle\{zero\}$`},
		{nil, `^cublas\.Handle\(nil\)$`},
	} {
		got := tc.h.String()
		if !regexp.MustCompile(tc.want).MatchString(got) {
			t.Errorf("String: %q, want %s", got, tc.want)
		}
		if p := fmt.Sprint(tc.h); p != got {
			t.Errorf("fmt.Sprint = %q, String() = %q", p, got)
		}
	}
}

func matmul(m, out cublas.Matrix[float32]) func(*cublas.Handle) error {
	return func(h *cublas.Handle) error { return cublas.Matmul(h, 1, m, m, 0, out, cublas.ReLU, nil) }
}

// TestNoLibrary: without cuBLAS, everything is ErrNotSupported naming what
// was tried.
func TestNoLibrary(t *testing.T) {
	const missing = "/nonexistent/libcublas.so.13"
	if cudatest.IsFake() && !strings.HasPrefix(os.Getenv(cublas.EnvLibrary), missing) {
		cudatest.RunChild(t, cublas.EnvLibrary+"="+missing)
		return
	}
	if os.Getenv(cublas.EnvLibrary) != missing {
		t.Skip("runs in a child process on the fake driver")
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	if _, err := cublas.New(s); !errors.Is(err, cuda.ErrNotSupported) || !strings.Contains(err.Error(), missing) {
		t.Errorf("New without cuBLAS: %v", err)
	}
	if _, _, err := cublas.Library(); !errors.Is(err, cuda.ErrNotSupported) {
		t.Errorf("Library without cuBLAS: %v", err)
	}
}

// TestHandleForgotten: a handle nobody closed is destroyed by its cleanup
// once unreachable.
func TestHandleForgotten(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	before := track.Take().Forgotten
	func() { must(cublas.New(s))(t) }()
	if !cudatest.GC(func() bool {
		now := track.Take().Forgotten
		// The handle, and its workspace, a buffer of its own.
		return now[track.BLASHandle] > before[track.BLASHandle] && now[track.DeviceBuffer] > before[track.DeviceBuffer]
	}) {
		t.Fatal("the cleanup of an unreachable handle did not run")
	}
}

func TestVersion(t *testing.T) {
	v, err := cublas.Version()
	if err != nil {
		t.Fatal(err)
	}
	path, lt, _ := cublas.Library()
	t.Logf("cuBLAS %v (%s, %s)", v, path, lt)
	if v.Major < 12 {
		t.Errorf("cuBLAS %v: want 12 or later", v)
	}
}

package compute_test

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestSoftmaxRows checks Softmax and LogSoftmax of rows held in registers
// (_regs: lanes of a warp a row, each lane's share of it in registers, by
// 16-byte vectors or element by element) and of rows of a few elements a
// thread (staged), at lengths around each group's and each vector
// count's change, from aligned buffers and from views one element in
// (element by element), against float64 on the host, each call twice
// (the same bits). Rows 0 to 3 hold a NaN, a +Inf, only -Inf and a -Inf.
func TestSoftmaxRows(t *testing.T) {
	e := gpu(t)
	softmaxRowsOf[float32](t, e, 2e-6)
	softmaxRowsOf[float64](t, e, 1e-13)
	softmaxRowsOf[cuda.Float16](t, e, 2e-3)
	softmaxRowsOf[cuda.BFloat16](t, e, 1.6e-2)
}

var softmaxRowCols = []int{1, 2, 3, 4, 5, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65, 127, 128, 129, 255, 256, 257, 513, 1000, 1023, 1024, 1025, 2047, 2048, 2049, 4099}

func softmaxRowsOf[T cuda.AnyFloat](t *testing.T, e env, tol float64) {
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		for _, rows := range []int{1, 7, 132} {
			for i, cols := range softmaxRowCols {
				if rows*cols > onFake(1<<22, 1<<18) {
					continue
				}
				sh := compute.Shape{Rows: rows, Cols: cols}
				n := rows * cols
				x := randoms[T](n, -20, 20)
				if rows >= 4 {
					x[cols/2] = fromF[T](math.NaN())
					x[cols+cols/3] = fromF[T](math.Inf(1))
					for c := range cols {
						x[2*cols+c] = fromF[T](math.Inf(-1))
					}
					x[3*cols+cols-1] = fromF[T](math.Inf(-1))
				}
				base := must(cuda.Alloc[T](e.ctx, n+1))(t)
				defer base.Free()
				src := must(base.Slice((i+rows)%2, n))(t) // every other one a view one element in
				if err := src.CopyFromHost(x); err != nil {
					t.Fatal(err)
				}
				outBase := must(cuda.Alloc[T](e.ctx, n+1))(t)
				defer outBase.Free()
				dst := must(outBase.Slice((i+rows)%2, n))(t)
				gs := twiceBits(t, fmt.Sprintf("Softmax %v", sh), dst, func() error { return compute.Softmax(dst, src, sh, e.s) })
				gl := twiceBits(t, fmt.Sprintf("LogSoftmax %v", sh), dst, func() error { return compute.LogSoftmax(dst, src, sh, e.s) })
				for r := range rows {
					wants, lwants := softmaxWant(x[r*cols : (r+1)*cols])
					for c := range cols {
						want, lwant := wants[c], lwants[c]
						if got := toF(gs[r*cols+c]); math.IsNaN(want) != math.IsNaN(got) || math.Abs(got-want) > tol*math.Max(want, 1e-3)*4 {
							t.Fatalf("Softmax %v (view %v): [%d,%d] = %v, want %v", sh, (i+rows)%2 == 1, r, c, got, want)
						}
						lgot := toF(gl[r*cols+c])
						if math.IsNaN(lwant) != math.IsNaN(lgot) || lgot != lwant && math.Abs(lgot-lwant) > tol*4*math.Max(1, math.Abs(lwant)) {
							t.Fatalf("LogSoftmax %v (view %v): [%d,%d] = %v, want %v", sh, (i+rows)%2 == 1, r, c, lgot, lwant)
						}
					}
				}
			}
		}
	})
}

// twiceBits is twice comparing bits, NaNs' too.
func twiceBits[T cuda.Number](t *testing.T, what string, dst *cuda.DeviceBuffer[T], op func() error) []T {
	t.Helper()
	var first []T
	for round := range 2 {
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got := make([]T, dst.Len())
		if err := dst.CopyToHost(got); err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			first = slices.Clone(got)
		} else if !bytes.Equal(rawBytes(first), rawBytes(got)) {
			t.Fatalf("%s: a second call gave other bits: deterministic results are the same every time", what)
		}
	}
	return first
}

func rawBytes[T any](s []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(*new(T))))
}

// TestSoftmaxRowsAllocs: a call that holds rows in registers makes no
// more allocations than one of the kernel that stages rows (its kernel's
// name is made once, not at every call).
func TestSoftmaxRowsAllocs(t *testing.T) {
	e := gpu(t)
	x := must(cuda.Zeroed[float32](e.ctx, 64*100))(t)
	defer x.Free()
	allocs := func(sh compute.Shape) float64 {
		t.Helper()
		if err := compute.Softmax(x, x, sh, e.s); err != nil { // compiled
			t.Fatal(err)
		}
		return testing.AllocsPerRun(20, func() {
			if err := compute.Softmax(x, x, sh, e.s); err != nil {
				t.Fatal(err)
			}
		})
	}
	staged, regs := allocs(compute.Shape{Rows: 640, Cols: 10}), allocs(compute.Shape{Rows: 64, Cols: 100})
	if regs > staged {
		t.Errorf("Softmax of rows in registers: %v allocations a call, of staged rows %v", regs, staged)
	}
	t.Logf("allocations a call: staged %v, in registers %v", staged, regs)
}

// TestSoftmaxOptin: a few rows too long for the 48 KiB a block has
// without asking, each kept in the shared memory its kernel opts in to
// (FuncMaxDynamicSharedSize; the fake's device reports none, so the test
// gives it 200 KiB): the same bits as read twice from device memory, and
// float64's reference.
func TestSoftmaxOptin(t *testing.T) {
	e := gpu(t)
	softmaxOptinOf[cuda.Float16](t, e, []compute.Shape{{Rows: 1, Cols: 65536}, {Rows: 3, Cols: 30001}}, 2e-3)
	softmaxOptinOf[float32](t, e, []compute.Shape{{Rows: 2, Cols: 20000}, {Rows: 1, Cols: 11265}}, 2e-6)
	softmaxOptinOf[float64](t, e, []compute.Shape{{Rows: 1, Cols: 12001}}, 1e-13)
	if compute.SharedAllowed() == 0 {
		t.Error("no kernel was allowed more shared memory: the rows were not kept")
	}
}

func softmaxOptinOf[T cuda.AnyFloat](t *testing.T, e env, shapes []compute.Shape, tol float64) {
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		for i, sh := range shapes {
			n := sh.Rows * sh.Cols
			x := randoms[T](n, -20, 20)
			base := must(cuda.Alloc[T](e.ctx, n+1))(t)
			defer base.Free()
			src := must(base.Slice(i%2, n))(t)
			if err := src.CopyFromHost(x); err != nil {
				t.Fatal(err)
			}
			dst := must(cuda.Alloc[T](e.ctx, n))(t)
			defer dst.Free()
			var got [2][]T
			for k, room := range []int{0, 200 << 10} {
				compute.SetSoftmaxRoom(t, room)
				got[k] = twiceBits(t, fmt.Sprintf("Softmax %v, room %d", sh, room), dst, func() error { return compute.Softmax(dst, src, sh, e.s) })
			}
			if !bytes.Equal(rawBytes(got[0]), rawBytes(got[1])) {
				t.Fatalf("Softmax %v: a row kept in shared memory gave other bits than one read twice", sh)
			}
			for r := range sh.Rows {
				wants, _ := softmaxWant(x[r*sh.Cols : (r+1)*sh.Cols])
				for c, want := range wants {
					if g := toF(got[1][r*sh.Cols+c]); math.Abs(g-want) > tol*math.Max(want, 1e-3)*4 {
						t.Fatalf("Softmax %v: [%d,%d] = %v, want %v", sh, r, c, g, want)
					}
				}
			}
		}
	})
}

// TestSoftmaxStaged checks Softmax and LogSoftmax of rows of a few
// elements a thread (staged: every length up to 32 bytes), whose blocks
// read and write their span of rows by 16-byte vectors, the elements
// before the first whole vector and after the last by themselves: one
// row, a block's threads' rows and one either side (255 to 257), a
// block's span and one either side, and two spans and more; from
// aligned buffers, views 1 and 3 elements in, src and dst apart from
// each other by an element (dst's span not as far past a 16-byte
// boundary as src's: element by element), and in place. The elements
// around dst's view and src itself (when apart) keep their bits, each
// call gives the same bits twice, and the results are float64's on the
// host. Rows 0 to 3 hold a NaN, a +Inf, only -Inf and a -Inf, and the
// last row a NaN.
func TestSoftmaxStaged(t *testing.T) {
	e := gpu(t)
	softmaxStagedOf[float32](t, e, 2e-6)
	softmaxStagedOf[float64](t, e, 1e-13)
	softmaxStagedOf[cuda.Float16](t, e, 2e-3)
	softmaxStagedOf[cuda.BFloat16](t, e, 1.6e-2)
}

func softmaxStagedOf[T cuda.AnyFloat](t *testing.T, e env, tol float64) {
	size := int(unsafe.Sizeof(*new(T)))
	t.Run(fmt.Sprintf("%T", *new(T)), func(t *testing.T) {
		for cols := 1; cols*size <= 32; cols++ {
			span := compute.StagedSpan(cols, size)
			for _, rows := range []int{1, 2, 4, 255, 256, 257, span - 1, span, span + 1, 2*span + 3} {
				sh := compute.Shape{Rows: rows, Cols: cols}
				for _, off := range []struct{ src, dst int }{{0, 0}, {1, 1}, {3, 3}, {0, 1}, {1, 0}, {0, -1}, {1, -1}} {
					if !onFake(true, rows <= 257 || off.src == off.dst || cols%3 == 1) {
						continue // the fake's CPU: every offset at a few lengths
					}
					checkStaged[T](t, e, sh, off.src, off.dst, tol)
					if t.Failed() {
						return
					}
				}
			}
		}
	})
}

// checkStaged checks Softmax and LogSoftmax of sh read from a view
// srcOff elements into its buffer and written to a view dstOff elements
// into another (dstOff -1: in place), each of the other's buffer's
// elements kept.
func checkStaged[T cuda.AnyFloat](t *testing.T, e env, sh compute.Shape, srcOff, dstOff int, tol float64) {
	t.Helper()
	n := sh.Rows * sh.Cols
	name := fmt.Sprintf("%v src+%d dst+%d", sh, srcOff, dstOff)
	if dstOff < 0 {
		name = fmt.Sprintf("%v in place at +%d", sh, srcOff)
	}
	x := randoms[T](n, -20, 20)
	if sh.Rows >= 4 {
		x[sh.Cols/2] = fromF[T](math.NaN())
		x[sh.Cols+sh.Cols/3] = fromF[T](math.Inf(1))
		for c := range sh.Cols {
			x[2*sh.Cols+c] = fromF[T](math.Inf(-1))
		}
		x[3*sh.Cols+sh.Cols-1] = fromF[T](math.Inf(-1))
		x[n-1-sh.Cols/2] = fromF[T](math.NaN())
	}
	// Each buffer 16 bytes of guards either side of its view.
	guard := 16 / int(unsafe.Sizeof(*new(T)))
	sentinel := fromF[T](-0.375)
	alloc := func(off int, view []T) (*cuda.DeviceBuffer[T], *cuda.DeviceBuffer[T], []T) {
		t.Helper()
		whole := make([]T, off+n+guard)
		for i := range whole {
			whole[i] = sentinel
		}
		copy(whole[off:], view)
		base := cudatest.Upload(t, e.ctx, whole)
		return base, must(base.Slice(off, n))(t), whole
	}
	srcBase, src, srcWhole := alloc(srcOff, x)
	defer srcBase.Free()
	dstBase, dst, dstWhole := srcBase, src, srcWhole
	if dstOff >= 0 {
		dstBase, dst, dstWhole = alloc(dstOff, nil) // the view too: an element not written shows
		defer dstBase.Free()
	} else {
		dstOff = srcOff
	}
	for k, op := range []func(dst, src *cuda.DeviceBuffer[T], sh compute.Shape, s *cuda.Stream) error{compute.Softmax[T], compute.LogSoftmax[T]} {
		var first []T
		for round := range 2 {
			if err := src.CopyFromHost(x); err != nil {
				t.Fatal(err)
			}
			if err := op(dst, src, sh, e.s); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			whole := cudatest.Download(t, dstBase)
			for i, v := range whole {
				if (i < dstOff || i >= dstOff+n) && !bytes.Equal(rawBytes([]T{v}), rawBytes([]T{dstWhole[i]})) {
					t.Fatalf("%s: element %d of dst's buffer, outside its view (%d to %d), is %v, was %v", name, i, dstOff, dstOff+n, v, dstWhole[i])
				}
			}
			got := whole[dstOff : dstOff+n]
			if round == 0 {
				first = slices.Clone(got)
			} else if !bytes.Equal(rawBytes(first), rawBytes(got)) {
				t.Fatalf("%s: a second call gave other bits: deterministic results are the same every time", name)
			}
		}
		if dstBase != srcBase && !bytes.Equal(rawBytes(cudatest.Download(t, srcBase)), rawBytes(srcWhole)) {
			t.Fatalf("%s: src's buffer changed", name)
		}
		for r := range sh.Rows {
			want, lwant := softmaxWant(x[r*sh.Cols : (r+1)*sh.Cols])
			for c := range sh.Cols {
				g := toF(first[r*sh.Cols+c])
				if k == 0 && (math.IsNaN(g) != math.IsNaN(want[c]) || math.Abs(g-want[c]) > tol*math.Max(want[c], 1e-3)*4) {
					t.Fatalf("Softmax %s: [%d,%d] = %v, want %v", name, r, c, g, want[c])
				}
				if k == 1 && !nearLog[T](g, lwant[c], tol) {
					t.Fatalf("LogSoftmax %s: [%d,%d] = %v, want %v", name, r, c, g, lwant[c])
				}
			}
		}
	}
}

package compute_test

import (
	"math"
	"math/rand/v2"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
	"github.com/gocuda/cuda/internal/cudatest"
)

// halfBits returns n Float16 or BFloat16 bit patterns (exp, the
// exponent's bits) in vectors of 8, the elementwise kernels' for halves:
// vector j has a NaN (of a payload, a sign, quiet or signaling, of its
// own) in lane j%8 for the first 8 vectors, in every lane for the next,
// in none for the next, and then one where j%3 == 0 in a random lane;
// the other elements are numbers of any class (infinities, subnormals,
// zeros of either sign). n need not be a multiple of 8: the elements
// left are converted one by one.
func halfBits(n int, exp uint16) []uint16 {
	number := func() uint16 {
		for {
			if b := uint16(rand.Uint32()); b&exp != exp || b&^(exp|0x8000) == 0 {
				return b // not a NaN
			}
		}
	}
	nan := func() uint16 {
		for {
			if b := uint16(rand.Uint32()) | exp; b&^(exp|0x8000) != 0 {
				return b
			}
		}
	}
	bits := make([]uint16, n)
	for i := range bits {
		bits[i] = number()
	}
	for j := 0; j*8+8 <= n; j++ {
		switch {
		case j < 8:
			bits[j*8+j] = nan()
		case j == 8:
			for k := range 8 {
				bits[j*8+k] = nan()
			}
		case j == 9:
		case j%3 == 0:
			bits[j*8+rand.IntN(8)] = nan()
		}
	}
	bits[n-1] = nan() // and one in the elements left
	return bits
}

// TestHalfNaNVectors: a half's NaN keeps its sign and payload (made quiet
// when rounded to a half), as Go's conversions keep them, wherever it is
// in its vector and whatever the rest of the vector holds, through the
// kernels' loads and stores of whole vectors of halves, which convert a
// vector without NaNs by the device's instructions alone; two halves
// read in one element, a float32 rounded to each half, and the
// operation run once per element, whichever way its vector is converted.
func TestHalfNaNVectors(t *testing.T) {
	e := gpu(t)
	n := 8*64 + 5
	f16 := halfBits(n, 0x7c00)
	bf16 := halfBits(n, 0x7f80)
	x := make([]cuda.Float16, n)
	xb := make([]cuda.BFloat16, n)
	for i := range n {
		x[i], xb[i] = cuda.Float16(f16[i]), cuda.BFloat16(bf16[i])
	}
	// float32s: a NaN of a random payload where the halves have one.
	xf := make([]float32, n)
	for i := range n {
		xf[i] = x[i].Float32()
		if xf[i] != xf[i] {
			xf[i] = math.Float32frombits(rand.Uint32() | 0x7f800001)
		}
	}
	dx, dxb, dxf := cudatest.Upload(t, e.ctx, x), cudatest.Upload(t, e.ctx, xb), cudatest.Upload(t, e.ctx, xf)
	y := must(cuda.Alloc[cuda.Float16](e.ctx, n))(t)
	defer y.Free()
	yb := must(cuda.Alloc[cuda.BFloat16](e.ctx, n))(t)
	defer yb.Free()
	count := must(cuda.Alloc[int32](e.ctx, n))(t)
	defer count.Free()
	kernel := func(name, in, out, op string) *compute.Elementwise {
		return must(compute.NewElementwise(compute.ElementwiseSpec{Name: name, InParams: in, OutParams: out, Operation: op}))(t)
	}
	checkF16 := func(name string, want func(i int) cuda.Float16) {
		t.Helper()
		for i, g := range cudatest.Download(t, y) {
			if w := want(i); g != w {
				t.Fatalf("%s: element %d (lane %d): %#04x, want %#04x", name, i, i%8, uint16(g), uint16(w))
			}
		}
	}
	checkBF16 := func(name string, want func(i int) cuda.BFloat16) {
		t.Helper()
		for i, g := range cudatest.Download(t, yb) {
			if w := want(i); g != w {
				t.Fatalf("%s: element %d (lane %d): %#04x, want %#04x", name, i, i%8, uint16(g), uint16(w))
			}
		}
	}

	// Each half to each half, through its float.
	if err := kernel("f16_f16", "float16 x", "float16 y", "y = x").Launch(e.s, dx, y); err != nil {
		t.Fatal(err)
	}
	checkF16("float16 to float16", func(i int) cuda.Float16 { return cuda.NewFloat16(x[i].Float32()) })
	if err := kernel("bf16_f16", "bfloat16 x", "float16 y", "y = x").Launch(e.s, dxb, y); err != nil {
		t.Fatal(err)
	}
	checkF16("bfloat16 to float16", func(i int) cuda.Float16 { return cuda.NewFloat16(xb[i].Float32()) })
	if err := kernel("f16_bf16", "float16 x", "bfloat16 y", "y = x").Launch(e.s, dx, yb); err != nil {
		t.Fatal(err)
	}
	checkBF16("float16 to bfloat16", func(i int) cuda.BFloat16 { return cuda.NewBFloat16(x[i].Float32()) })
	if err := kernel("bf16_bf16", "bfloat16 x", "bfloat16 y", "y = x").Launch(e.s, dxb, yb); err != nil {
		t.Fatal(err)
	}
	checkBF16("bfloat16 to bfloat16", func(i int) cuda.BFloat16 { return cuda.NewBFloat16(xb[i].Float32()) })

	// float32s, 4 to a vector, to each half.
	if err := kernel("f32_f16", "float32 x", "float16 y", "y = x").Launch(e.s, dxf, y); err != nil {
		t.Fatal(err)
	}
	checkF16("float32 to float16", func(i int) cuda.Float16 { return cuda.NewFloat16(xf[i]) })
	if err := kernel("f32_bf16", "float32 x", "bfloat16 y", "y = x").Launch(e.s, dxf, yb); err != nil {
		t.Fatal(err)
	}
	checkBF16("float32 to bfloat16", func(i int) cuda.BFloat16 { return cuda.NewBFloat16(xf[i]) })

	// Two halves in one element, in place, the operation counting its
	// runs in a raw output.
	if err := compute.Fill(count, 0, e.s); err != nil {
		t.Fatal(err)
	}
	if err := compute.Cast(y, dxb, e.s); err != nil {
		t.Fatal(err)
	}
	pick := kernel("pick", "float16 a, float16 y", "float16 y, raw int32 count", "y = i % 2 ? a : y; count[i] += 1;")
	if err := pick.Launch(e.s, dx, y, count); err != nil {
		t.Fatal(err)
	}
	checkF16("a or y, in place", func(i int) cuda.Float16 {
		if i%2 == 1 {
			return cuda.NewFloat16(x[i].Float32())
		}
		return cuda.NewFloat16(xb[i].Float32())
	})
	for i, c := range cudatest.Download(t, count) {
		if c != 1 {
			t.Fatalf("pick ran %d times for element %d", c, i)
		}
	}
}

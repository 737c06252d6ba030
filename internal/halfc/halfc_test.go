package halfc_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/halfc"
)

// harness is a host program around Source: it writes, for every 16-bit
// pattern h, gocuda_f16_to_f32(h), gocuda_f16_to_f32_num(h) and
// gocuda_bf16_to_f32(h); then, for each float's bits it reads from
// stdin, gocuda_f32_to_f16, gocuda_f32_to_f16_num, gocuda_f32_to_bf16 and
// gocuda_f32_to_bf16_num of it. All in the host's byte order. The
// CUDA vocabulary is defined as internal/hostcc's shim defines it.
const harness = `
#include <stdio.h>
#include <string.h>
#define __device__
#define __forceinline__ static inline
static inline unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
` + halfc.Source + `
int main(void) {
	for (unsigned int i = 0; i < 65536u; i++) {
		unsigned short h = (unsigned short)i;
		unsigned int out[3] = {
			__float_as_uint(gocuda_f16_to_f32(h)),
			__float_as_uint(gocuda_f16_to_f32_num(h)),
			__float_as_uint(gocuda_bf16_to_f32(h)),
		};
		if (fwrite(out, sizeof out, 1, stdout) != 1) return 1;
	}
	unsigned int b;
	while (fread(&b, 4, 1, stdin) == 1) {
		float f = __uint_as_float(b);
		unsigned short out[4] = {
			gocuda_f32_to_f16(f),
			gocuda_f32_to_f16_num(f),
			gocuda_f32_to_bf16(f),
			gocuda_f32_to_bf16_num(f),
		};
		if (fwrite(out, sizeof out, 1, stdout) != 1) return 1;
	}
	return fflush(stdout) != 0;
}
`

// TestHostMatchesGo holds the host's branch of every conversion to Go's
// (cuda.NewFloat16, Float16.Float32, cuda.NewBFloat16, BFloat16.Float32):
// every half, and floats around every half's rounding boundaries (each
// half, the midpoints between neighbours and a few units in the last
// place either side of both), the subnormals' and overflow's edges, NaNs
// of several payloads, infinities, zeros and random bits. The whole
// conversions must give Go's bits; the _num parts Go's for any input but
// a NaN, and a NaN for a NaN. Compiled as C with cc ($CC) and as C++
// with g++ ($CXX) at hostcc's flags, as the fake's kernels are.
func TestHostMatchesGo(t *testing.T) {
	inputs := floatInputs()
	var in bytes.Buffer
	for _, f := range inputs {
		_ = binary.Write(&in, binary.NativeEndian, math.Float32bits(f))
	}
	for _, c := range []struct {
		name, env, def string
		flags          []string
	}{
		{"cc", "CC", "cc", []string{"-x", "c", "-O2"}},
		{"c++", "CXX", "g++", []string{"-x", "c++", "-std=c++17", "-O1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := runHarness(t, c.env, c.def, c.flags, in.Bytes())
			want := 65536*3*4 + len(inputs)*4*2
			if len(out) != want {
				t.Fatalf("the harness wrote %d bytes, want %d", len(out), want)
			}
			checkFromHalves(t, out[:65536*3*4])
			checkToHalves(t, inputs, out[65536*3*4:])
		})
	}
}

// runHarness compiles harness with the compiler $env names (def when it
// is unset), skipping the test where there is none, and runs it on in.
func runHarness(t *testing.T, env, def string, flags []string, in []byte) []byte {
	t.Helper()
	cmdline := strings.Fields(os.Getenv(env))
	if len(cmdline) == 0 {
		cmdline = []string{def}
	}
	path, err := exec.LookPath(cmdline[0])
	if err != nil {
		t.Skipf("no %s: %v", cmdline[0], err)
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "harness.c"), filepath.Join(dir, "harness")
	if err := os.WriteFile(src, []byte(harness), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append(append([]string{}, cmdline[1:]...), flags...), "-o", bin, src)
	if msg, err := exec.Command(path, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", path, strings.Join(args, " "), err, msg)
	}
	cmd := exec.Command(bin)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the harness: %v\n%s", err, stderr.Bytes())
	}
	return out
}

// checkFromHalves checks the harness's conversions of every half to
// float.
func checkFromHalves(t *testing.T, out []byte) {
	t.Helper()
	bad := 0
	report := func(format string, args ...any) {
		t.Helper()
		if bad++; bad <= 20 {
			t.Errorf(format, args...)
		}
	}
	for i := range 65536 {
		got := func(k int) uint32 { return binary.NativeEndian.Uint32(out[(i*3+k)*4:]) }
		h, bh := cuda.Float16(i), cuda.BFloat16(i)
		want := math.Float32bits(h.Float32())
		if got(0) != want {
			report("gocuda_f16_to_f32(%#04x) = %#08x, Go's %#08x", i, got(0), want)
		}
		if num := got(1); isNaN16(h) {
			if f := math.Float32frombits(num); f == f {
				report("gocuda_f16_to_f32_num(%#04x) = %#08x, not a NaN", i, num)
			}
		} else if num != want {
			report("gocuda_f16_to_f32_num(%#04x) = %#08x, Go's %#08x", i, num, want)
		}
		if want := math.Float32bits(bh.Float32()); got(2) != want {
			report("gocuda_bf16_to_f32(%#04x) = %#08x, Go's %#08x", i, got(2), want)
		}
	}
	if bad > 20 {
		t.Errorf("... %d mismatches in all", bad)
	}
}

// checkToHalves checks the harness's conversions of inputs to halves.
func checkToHalves(t *testing.T, inputs []float32, out []byte) {
	t.Helper()
	bad := 0
	report := func(format string, args ...any) {
		t.Helper()
		if bad++; bad <= 20 {
			t.Errorf(format, args...)
		}
	}
	for i, f := range inputs {
		got := func(k int) uint16 { return binary.NativeEndian.Uint16(out[(i*4+k)*2:]) }
		b := math.Float32bits(f)
		nan := f != f
		h, bh := uint16(cuda.NewFloat16(f)), uint16(cuda.NewBFloat16(f))
		if got(0) != h {
			report("gocuda_f32_to_f16(%#08x) = %#04x, Go's %#04x", b, got(0), h)
		}
		if !nan && got(1) != h {
			report("gocuda_f32_to_f16_num(%#08x) = %#04x, Go's %#04x", b, got(1), h)
		}
		if got(2) != bh {
			report("gocuda_f32_to_bf16(%#08x) = %#04x, Go's %#04x", b, got(2), bh)
		}
		if !nan && got(3) != bh {
			report("gocuda_f32_to_bf16_num(%#08x) = %#04x, Go's %#04x", b, got(3), bh)
		}
	}
	if bad > 20 {
		t.Errorf("... %d mismatches in all", bad)
	}
}

// isNaN16 reports whether h is a float16 NaN.
func isNaN16(h cuda.Float16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }

// floatInputs returns the floats the rounding is checked on.
func floatInputs() []float32 {
	var fs []float32
	// around reaches a few units in the last place either side of f.
	around := func(f float32) {
		b := math.Float32bits(f)
		for d := -3; d <= 3; d++ {
			fs = append(fs, math.Float32frombits(b+uint32(d)))
		}
	}
	for i := range 65536 {
		for _, v := range [][2]float32{
			{cuda.Float16(i).Float32(), cuda.Float16(i + 1).Float32()},
			{cuda.BFloat16(i).Float32(), cuda.BFloat16(i + 1).Float32()},
		} {
			lo, hi := v[0], v[1]
			if lo != lo || math.IsInf(float64(lo), 0) {
				fs = append(fs, lo)
				continue
			}
			around(lo)
			// The midpoint of two neighbours (of one sign: i and i+1
			// across 0x7fff/0x8000 are not), exact in a float32: a tie.
			if hi == hi && !math.IsInf(float64(hi), 0) && math.Signbit(float64(lo)) == math.Signbit(float64(hi)) {
				around(float32((float64(lo) + float64(hi)) / 2))
			}
		}
	}
	for _, b := range []uint32{
		0x00000000, 0x00000001, 0x00000002, 0x00400000, 0x007fffff, // float32 subnormals
		0x00800000, 0x33000000, 0x33000001, 0x32ffffff, 0x33800000, // 2^-25 (half the least float16), 2^-24
		0x33c00000, 0x34000000, 0x387fe000, 0x387ff000, 0x387fffff, 0x38800000, // the float16 subnormals' top
		0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, 0x47800000, // 65504, 65520: float16's overflow
		0x7f7f7fff, 0x7f7f8000, 0x7f7fffff, 0x7f800000, // bfloat16's overflow, the largest float, infinity
		0x7f800001, 0x7f800fff, 0x7f801000, 0x7fbfffff, 0x7fc00000, 0x7fc00001, 0x7fffe000, 0x7fffffff, // NaNs
	} {
		fs = append(fs, math.Float32frombits(b), math.Float32frombits(b|0x80000000))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 18 {
		fs = append(fs, math.Float32frombits(r.Uint32()))
	}
	return fs
}

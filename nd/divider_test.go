package nd

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestDivider: the narrow strided kernel's division by multiplication
// (divider), done as its C does it, gives q / d for every d it is given
// (1 to 2^31 - 1) and q below 2^31: at the ends, around multiples of d,
// and at random.
func TestDivider(t *testing.T) {
	rng := rand.New(rand.NewPCG(50, 3))
	ds := []int{1, 2, 3, 5, 7, 31, 32, 33, 64, 1000, 1023, 1024, 1025, 4097, 65535, 65536, 100003, 1 << 30, 1<<30 + 1, math.MaxInt32 - 1, math.MaxInt32}
	for range 200 {
		ds = append(ds, 1+rng.IntN(math.MaxInt32))
		ds = append(ds, 1+rng.IntN(5000))
	}
	for _, d := range ds {
		packed := divider(d)
		dd, m := uint32(packed), uint32(uint64(packed)>>32)
		sh := 32 - bits.LeadingZeros32(dd-1)
		if dd-1 == 0 {
			sh = 0
		}
		qs := []uint32{0, 1, math.MaxInt32, math.MaxInt32 - 1}
		for range 50 {
			qs = append(qs, rng.Uint32()>>1)
			k := uint32(rng.IntN(math.MaxInt32/d + 1))
			for _, q := range []uint32{k*uint32(d) - 1, k * uint32(d), k*uint32(d) + 1} {
				if q <= math.MaxInt32 {
					qs = append(qs, q)
				}
			}
		}
		for _, q := range qs {
			hi, _ := bits.Mul32(q, m)
			if got, want := (hi+q)>>sh, q/uint32(d); got != want {
				t.Fatalf("%d / %d = %d by the divider (m %d, shift %d), want %d", q, d, got, m, sh, want)
			}
		}
	}
}

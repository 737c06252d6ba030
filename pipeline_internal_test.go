package cuda

import (
	"fmt"
	"testing"
)

// TestCut: a transfer's chunks tile it exactly, in order, none empty and
// none larger than a slot; small transfers get the least chunk or a
// quarter, large ones ramp at the end the direction needs.
func TestCut(t *testing.T) {
	const slot = 16 << 20
	for _, tt := range []struct {
		n, slot int
		up      bool
		count   int
		first   int // size of chunk 0
		last    int // size of the last chunk
		ramp    bool
	}{
		{n: 1, slot: slot, up: true, count: 1, first: 1, last: 1},
		{n: 256 << 10, slot: slot, up: true, count: 1, first: 256 << 10, last: 256 << 10},
		{n: 1 << 20, slot: slot, up: true, count: 2, first: 512 << 10, last: 512 << 10},
		{n: 4<<20 + 1, slot: slot, count: 4, first: 1<<20 + 64<<10, last: 4<<20 + 1 - 3*(1<<20+64<<10)},
		{n: 64 << 20, slot: slot, up: true, count: 7, first: 2 << 20, last: 16 << 20, ramp: true},
		{n: 64 << 20, slot: slot, count: 7, first: 16 << 20, last: 2 << 20, ramp: true},
		{n: 256<<20 + 3, slot: slot, up: true, count: 20, first: 2 << 20, last: 3, ramp: true},
		{n: 256<<20 + 3, slot: slot, count: 20, first: 3, last: 2 << 20, ramp: true},
		{n: 1 << 20, slot: 64 << 10, up: true, count: 16, first: 64 << 10, last: 64 << 10},
		{n: 1 << 20, slot: 128 << 10, count: 8, first: 128 << 10, last: 128 << 10},
	} {
		t.Run(fmt.Sprintf("%d/slot=%d/up=%v", tt.n, tt.slot, tt.up), func(t *testing.T) {
			c := cut(tt.n, tt.slot, tt.up)
			if c.count != tt.count || c.ramp != tt.ramp {
				t.Fatalf("%d chunks, ramp %v; want %d, %v", c.count, c.ramp, tt.count, tt.ramp)
			}
			checkTiles(t, c, tt.slot)
			lo, hi := c.bounds(0)
			llo, lhi := c.bounds(c.count - 1)
			if hi-lo != tt.first || lhi-llo != tt.last {
				t.Errorf("first chunk %d bytes, last %d; want %d, %d", hi-lo, lhi-llo, tt.first, tt.last)
			}
		})
	}
}

// checkTiles fails t unless c's chunks tile its n bytes exactly, in order,
// none empty and none larger than c.size or a slot.
func checkTiles(t *testing.T, c chunking, slot int) {
	t.Helper()
	end := 0
	for i := range c.count {
		lo, hi := c.bounds(i)
		if lo != end || hi <= lo || hi-lo > slot || hi-lo > c.size {
			t.Fatalf("chunk %d is [%d, %d) after %d: want it to follow, be non-empty and at most a slot (%d)", i, lo, hi, end, c.size)
		}
		end = hi
	}
	if end != c.n {
		t.Fatalf("the chunks end at %d, want %d", end, c.n)
	}
}

// TestCutRamps: with each ramp setting, every size's chunks tile it, and a
// transfer that ramps at both ends has chunks of an eighth of size first
// and last.
func TestCutRamps(t *testing.T) {
	defer func(old int) { pipeRamp = old }(pipeRamp)
	const slot = 16 << 20
	for mode := range 3 {
		pipeRamp = mode
		for _, n := range []int{1, 512 << 10, 1<<20 + 1, 4 << 20, 4928307, 8 << 20, 16<<20 + 7, 32 << 20, 33<<20 + 1, 64 << 20, 256<<20 + 3} {
			for _, up := range []bool{true, false} {
				t.Run(fmt.Sprintf("ramp=%d/%d/up=%v", mode, n, up), func(t *testing.T) {
					c := cut(n, slot, up)
					checkTiles(t, c, slot)
					if mode == 2 && n >= 4<<20 != c.both {
						t.Errorf("ramps at both ends: %v, want %v", c.both, n >= 4<<20)
					}
					if !c.both {
						return
					}
					for _, i := range []int{0, c.count - 1} {
						if lo, hi := c.bounds(i); hi-lo != c.size/8 {
							t.Errorf("chunk %d of %d is %d bytes, want an eighth of %d", i, c.count, hi-lo, c.size)
						}
					}
				})
			}
		}
	}
}

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
			end := 0
			for i := range c.count {
				lo, hi := c.bounds(i)
				if lo != end || hi <= lo || hi-lo > tt.slot || hi-lo > c.size {
					t.Fatalf("chunk %d is [%d, %d) after %d: want it to follow, be non-empty and at most a slot (%d)", i, lo, hi, end, c.size)
				}
				end = hi
			}
			if end != tt.n {
				t.Fatalf("the chunks end at %d, want %d", end, tt.n)
			}
			lo, hi := c.bounds(0)
			llo, lhi := c.bounds(c.count - 1)
			if hi-lo != tt.first || lhi-llo != tt.last {
				t.Errorf("first chunk %d bytes, last %d; want %d, %d", hi-lo, lhi-llo, tt.first, tt.last)
			}
		})
	}
}

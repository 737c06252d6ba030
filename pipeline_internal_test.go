package cuda

import (
	"fmt"
	"testing"

	"github.com/gocuda/cuda/internal/hostcopy"
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
			d := DeviceToHost
			if tt.up {
				d = HostToDevice
			}
			c := cut(tt.n, tt.slot, true, d)
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

// TestSlotsFor: however much pinned memory is held, the slots a pipelined
// transfer cuts from it fit in it, are whole steps of StagingGranularity,
// and leave two chunks in flight whenever the transfer has two or more, no
// more than the events and counters a StagingBuffer keeps; memory held for
// 1 MiB moves 1 MiB in two chunks of 512 KiB.
func TestSlotsFor(t *testing.T) {
	const g = StagingGranularity
	shapes := []StagingPipeline{
		DefaultStagingPipeline(),
		{ChunkBytes: g, Slots: 2},
		{ChunkBytes: 3 * g, Slots: 3},
		{ChunkBytes: 16 << 20, Slots: 16},
	}
	for _, p := range shapes {
		for _, held := range []int{0, g, 2 * g, 3 * g, 5 * g, 8 * g, 17 * g, 1 << 20, 3<<20 + g, 9 << 20, 31 << 20, 64 << 20} {
			for _, n := range []int{1, g - 1, g, g + 1, 2*g + 5, 300 << 10, 1 << 20, 1<<20 + 1, 5 << 20, 9 << 20, 40 << 20} {
				for _, d := range []Direction{HostToDevice, DeviceToHost} {
					count, size := p.slotsFor(n, held, d)
					name := fmt.Sprintf("chunk=%d/slots=%d/held=%d/n=%d/%v: %d slots of %d", p.ChunkBytes, p.Slots, held, n, d, count, size)
					if size <= 0 || size%g != 0 || count < 1 || count > p.Slots {
						t.Fatalf("%s: want 1 to Slots slots of whole steps", name)
					}
					if c := cut(n, size, false, d); c.size > p.ChunkBytes {
						t.Fatalf("%s: chunks of %d, more than ChunkBytes", name, c.size)
					}
					if n <= held && held < p.Slots*p.ChunkBytes && count*size > held {
						t.Fatalf("%s: more than the %d bytes held", name, held)
					}
					c := cut(n, size, size == p.ChunkBytes, d)
					k := min(c.count, count*size/c.size)
					if k < min(c.count, 2) || k > max(p.Slots, pipeSplit) || k > maxPipeSlots {
						t.Fatalf("%s: %d chunks, %d in flight", name, c.count, k)
					}
					for i := range c.count {
						if lo, hi := c.bounds(i); hi-lo > size {
							t.Fatalf("%s: chunk %d of %d bytes", name, i, hi-lo)
						}
					}
				}
			}
		}
	}
	count, size := DefaultStagingPipeline().slotsFor(1<<20, 1<<20, HostToDevice)
	if c := cut(1<<20, size, false, HostToDevice); count != 2 || size != 512<<10 || c.count != 2 || c.ramp {
		t.Errorf("1 MiB held, 1 MiB moved: %d slots of %d, %d chunks (ramp %v); want 2 of 512 KiB, 2 chunks", count, size, c.count, c.ramp)
	}
}

// TestCopyBoardSlots: the copy engine's board holds the copies of several
// pipelines at once, each with up to maxPipeSlots chunks copying (a copy
// that finds the board full is made by its caller alone).
func TestCopyBoardSlots(t *testing.T) {
	if hostcopy.BoardSlots < 4*maxPipeSlots {
		t.Errorf("hostcopy.BoardSlots = %d: want room for 4 pipelines of %d chunks", hostcopy.BoardSlots, maxPipeSlots)
	}
}

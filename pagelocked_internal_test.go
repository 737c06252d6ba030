package cuda

import (
	"slices"
	"testing"

	"github.com/gocuda/cuda/internal/driver"
)

// TestLockedPieces: a host range is cut at every edge of a page-locked
// range inside it, and only there, so that each piece lies wholly inside
// one locked range or wholly outside all; the first piece that fails ends
// the copy.
func TestLockedPieces(t *testing.T) {
	open := &Context{}
	closed := &Context{}
	lr := func(start, end uintptr, ctx *Context) lockedRange {
		return lockedRange{start: start, end: end, ctx: ctx}
	}
	type piece struct{ off, n uintptr }
	for _, tc := range []struct {
		name    string
		lo, n   uintptr
		ranges  []lockedRange
		failAt  int // the piece whose copy fails, -1 for none
		want    []piece
		wantErr bool
	}{
		{"no ranges", 1000, 100, nil, -1, []piece{{0, 100}}, false},
		{"ordinary, ranges elsewhere", 1000, 100, []lockedRange{lr(0, 1000, open), lr(1100, 1200, open)}, -1, []piece{{0, 100}}, false},
		{"inside one", 1000, 100, []lockedRange{lr(900, 1200, open)}, -1, []piece{{0, 100}}, false},
		{"exactly one", 1000, 100, []lockedRange{lr(1000, 1100, open)}, -1, []piece{{0, 100}}, false},
		{"two adjacent", 1000, 100, []lockedRange{lr(1050, 1100, open), lr(1000, 1050, open)}, -1, []piece{{0, 50}, {50, 50}}, false},
		{"locked head", 1000, 100, []lockedRange{lr(900, 1030, open)}, -1, []piece{{0, 30}, {30, 70}}, false},
		{"locked tail", 1000, 100, []lockedRange{lr(1070, 1300, open)}, -1, []piece{{0, 70}, {70, 30}}, false},
		{"locked middle", 1000, 100, []lockedRange{lr(1020, 1040, open)}, -1, []piece{{0, 20}, {20, 20}, {40, 60}}, false},
		// A closed context's memory may still be locked by the driver.
		{"closed context's range", 1000, 100, []lockedRange{lr(1020, 1040, closed)}, -1, []piece{{0, 20}, {20, 20}, {40, 60}}, false},
		{"closed over open", 1000, 100, []lockedRange{lr(1000, 1100, open), lr(1050, 1200, closed)}, -1, []piece{{0, 50}, {50, 50}}, false},
		{"empty", 1000, 0, []lockedRange{lr(900, 1200, open)}, -1, nil, false},
		{"empty at an edge", 1000, 0, []lockedRange{lr(900, 1000, open)}, -1, nil, false},
		{"first piece fails", 1000, 100, []lockedRange{lr(1020, 1040, open)}, 0, []piece{{0, 20}}, true},
		{"second piece fails", 1000, 100, []lockedRange{lr(1020, 1040, open)}, 1, []piece{{0, 20}, {20, 20}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []piece
			st := lockedPieces(tc.lo, tc.n, tc.ranges, func(off, n uintptr) driver.Status {
				got = append(got, piece{off, n})
				if len(got)-1 == tc.failAt {
					return driver.Status{Code: driver.ErrorInvalidValue}
				}
				return driver.Status{}
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("pieces %v; want %v", got, tc.want)
			}
			if st.OK() == tc.wantErr {
				t.Errorf("status %v; want failure %v", st.Code, tc.wantErr)
			}
		})
	}
}

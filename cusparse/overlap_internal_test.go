package cusparse

import "testing"

// TestRegionOverlaps: two operands' memory shares a byte exactly where an
// element of the one is an element of the other: lines interleaved in
// one another's gaps do not, touching ends do not, one byte in common
// does.
func TestRegionOverlaps(t *testing.T) {
	line := func(base, width uint64) region { return region{base: base, width: width, lines: 1} }
	// Rows of 16 bytes, 40 apart: [100, 116), [140, 156), [180, 196).
	rows := region{base: 100, width: 16, ld: 40, lines: 3}
	for _, tt := range []struct {
		name string
		r, s region
		want bool
	}{
		{"apart", line(0, 100), line(100, 8), false},
		{"one byte", line(0, 101), line(100, 8), true},
		{"inside", line(10, 4), line(0, 100), true},
		{"in a gap", line(116, 24), rows, false},
		{"into a row", line(116, 25), rows, true},
		{"past the last row", line(196, 50), rows, false},
		{"before the first", line(0, 100), rows, false},
		{"the last row's last byte", line(195, 1), rows, true},
		{"interleaved rows", region{base: 120, width: 16, ld: 40, lines: 3}, rows, false},
		{"interleaved, one byte more", region{base: 120, width: 21, ld: 40, lines: 3}, rows, true},
		{"the same rows", rows, rows, true},
		{"empty", region{}, rows, false},
		{"no width", line(100, 0), rows, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.overlaps(tt.s); got != tt.want {
				t.Errorf("overlaps = %v, want %v", got, tt.want)
			}
			if got := tt.s.overlaps(tt.r); got != tt.want {
				t.Errorf("overlaps, the other way = %v, want %v", got, tt.want)
			}
		})
	}
}

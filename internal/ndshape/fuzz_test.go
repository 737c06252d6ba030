package ndshape

import (
	"encoding/binary"
	"slices"
	"testing"
)

// fuzzInts reads ints from fuzz data: one byte is a small int in [-100,
// 155), except bytes >= 255-8 which take the next 8 bytes as a full int (so
// that extremes reach the arithmetic).
type fuzzInts struct{ b []byte }

func (f *fuzzInts) next() int {
	if len(f.b) == 0 {
		return 0
	}
	c := f.b[0]
	f.b = f.b[1:]
	if c < 247 || len(f.b) < 8 {
		return int(c) - 100
	}
	v := int(int64(binary.LittleEndian.Uint64(f.b)))
	f.b = f.b[8:]
	return v
}

// FuzzSliceReshape builds a layout from the data and applies slices,
// indexes, reshapes, broadcasts and squeezes to it: nothing may panic, and
// every layout that comes back must keep its elements within its span (and,
// when small, in the reshape's order).
func FuzzSliceReshape(f *testing.F) {
	f.Add([]byte{102, 103, 104, 103, 101, 100, 0, 1, 100, 102, 99, 0, 7, 96})
	f.Add([]byte{103, 255, 0, 0, 0, 0, 0, 0, 0, 128, 101, 255, 255, 255, 255, 255, 255, 255, 255, 127})
	f.Add([]byte{101, 100, 255, 1, 0, 0, 0, 0, 0, 0, 128, 1, 255, 0, 0, 0, 0, 0, 0, 0, 128, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzInts{data}
		n := in.next() % 7
		if n < 0 {
			n = -n
		}
		shape, strides := make([]int, n), make([]int, n)
		for i := range n {
			shape[i] = in.next()
			strides[i] = in.next()
		}
		l, err := New(shape, strides, in.next())
		if err != nil {
			return
		}
		for range 8 {
			var m Layout
			var err error
			switch in.next() % 6 {
			case 0:
				m, err = l.Slice(in.next(), in.next(), in.next(), in.next())
			case 1:
				m, err = l.Index(in.next(), in.next())
			case 2:
				to := make([]int, in.next()%7&7)
				for i := range to {
					to[i] = in.next()
				}
				var view bool
				m, view, err = l.Reshape(to)
				if err == nil && !view {
					m, err = Contiguous(m.Shape())
					if err != nil {
						t.Fatalf("copy shape of %v refused: %v", l, err)
					}
				} else if err == nil && l.Size() <= 4096 && !slices.Equal(offsets(m), offsets(l)) {
					t.Fatalf("%v Reshape(%v) = %v: order differs", l, to, m)
				}
			case 3:
				to := make([]int, in.next()%7&7)
				for i := range to {
					to[i] = in.next()
				}
				m, err = l.Expand(to)
			case 4:
				m, err = l.Squeeze(in.next())
			default:
				m, err = l.Unsqueeze(in.next())
				if err == nil && m.Ndim() > 64 {
					return
				}
			}
			if err != nil {
				continue
			}
			if m.Size() < 0 {
				t.Fatalf("%v: negative size", m)
			}
			lo, hi := m.Span()
			if m.Size() > 0 {
				if _, _, ok := extent(m.shape, m.strides, m.offset); !ok {
					t.Fatalf("%v: extent overflows", m)
				}
				if m.Size() <= 4096 {
					for o := range m.Offsets() {
						if o < lo || o > hi {
							t.Fatalf("%v: offset %d outside span [%d, %d]", m, o, lo, hi)
						}
					}
				}
				ll, lh := l.Span()
				if m.Size() > 0 && l.Size() > 0 && (lo < ll || hi > lh) && !m.IsContiguous() {
					// Views select from l's elements; only a copy (a
					// fresh contiguous layout) may leave l's span.
					t.Fatalf("%v from %v: span [%d, %d] outside [%d, %d]", m, l, lo, hi, ll, lh)
				}
			}
			_ = m.Simplify()
			l = m
		}
	})
}

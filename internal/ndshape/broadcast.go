package ndshape

// Broadcast returns the shape that NumPy broadcasts the shapes to: aligned
// from the last axis, each axis takes the dimension that is not 1 (0
// included), and two that are not 1 must be equal. No shapes broadcast to
// the 0-d shape. The error prints the two shapes that disagree.
func Broadcast(shapes ...[]int) ([]int, error) {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
		for _, d := range s {
			if d < 0 {
				return nil, errorf("broadcast", "negative dimension in shape %v", s)
			}
		}
	}
	out := make([]int, n)
	from := make([]int, n) // which operand set out[i], -1 none
	for i := range out {
		out[i], from[i] = 1, -1
	}
	for k, s := range shapes {
		for j, d := range s {
			i := j + n - len(s)
			if d == 1 {
				continue
			}
			if from[i] < 0 {
				out[i], from[i] = d, k
				continue
			}
			if out[i] != d {
				return nil, errorf("broadcast", "shapes %v and %v cannot be broadcast together (axis %d: %d vs %d)",
					shapeStr(shapes[from[i]]), shapeStr(s), i-n, out[i], d)
			}
		}
	}
	if _, err := checkShape("broadcast", out); err != nil {
		return nil, err
	}
	return out, nil
}

// BroadcastLayouts broadcasts the layouts' shapes together and returns each
// layout broadcast to the result (stride 0 on the axes it repeats).
func BroadcastLayouts(layouts ...Layout) ([]Layout, error) {
	shapes := make([][]int, len(layouts))
	for i, l := range layouts {
		shapes[i] = l.shape
	}
	shape, err := Broadcast(shapes...)
	if err != nil {
		return nil, err
	}
	out := make([]Layout, len(layouts))
	for i, l := range layouts {
		if out[i], err = l.BroadcastTo(shape); err != nil {
			return nil, err
		}
	}
	return out, nil
}

package cuda

// GrowableViews returns how many Buffers g keeps a record of, to close
// them when it shrinks or is freed. (A function, not a method: the
// zero-value and fault sweeps walk every exported method.)
func GrowableViews[T any](g *GrowableBuffer[T]) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.views)
}

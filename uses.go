package cuda

import (
	"sync"

	"github.com/gocuda/cuda/internal/uses"
)

// Other packages of gocuda keep memory from being freed through
// internal/uses, counted as a graph's use is (graphUses).
func init() { uses.Acquire = acquireUse }

func acquireUse(op string, v any) (uintptr, uintptr, func(), error) {
	m, ok := v.(Memory)
	if !ok || m == nil {
		return 0, 0, nil, errorf(op, ErrInvalidValue, "nil memory")
	}
	ptr, a := m.deviceMemory()
	if a == nil {
		return 0, 0, nil, errorf(op, ErrInvalidValue, "a nil or zero buffer")
	}
	if a.graphOnly {
		return 0, 0, nil, errorf(op, ErrInvalidValue, "a graph's memory (Graph.AddAlloc), which exists only while the graph runs")
	}
	if err := a.hold(op, "the device buffer"); err != nil {
		return 0, 0, nil, err
	}
	// Counted while held: a Free now waits for the hold, then sees the use.
	a.graphs.n.Add(1)
	a.release()
	var once sync.Once
	return uintptr(ptr), m.deviceBytes(), func() { once.Do(func() { a.graphs.n.Add(-1) }) }, nil
}

// Package track counts the live objects of package cuda, so that test
// helpers can tell a test that leaked one.
package track

import "sync/atomic"

// Kind is a kind of object that holds a driver resource.
type Kind int

// The kinds tracked.
const (
	Context Kind = iota
	Stream
	Event
	DeviceBuffer
	PinnedBuffer
	Registered
	Module
	Comm // an NCCL communicator
	MemPool
	Graph
	GraphExec
	BLASHandle // a cuBLAS handle
	Library
	RandGenerator // a cuRAND generator
	FFTPlan       // a cuFFT plan
	SparseHandle  // a cuSPARSE handle
	SolverHandle  // a cuSOLVER handle
	DNNHandle     // a cuDNN handle
	numKinds
)

var names = [numKinds]string{"context", "stream", "event", "device buffer", "pinned buffer", "registered host memory", "module", "NCCL communicator", "memory pool", "graph", "graph instance", "cuBLAS handle", "library", "cuRAND generator", "cuFFT plan", "cuSPARSE handle", "cuSOLVER handle", "cuDNN handle"}

func (k Kind) String() string { return names[k] }

var live, forgotten [numKinds]atomic.Int64

// Add records a new object of kind k.
func Add(k Kind) { live[k].Add(1) }

// Done records an object released by its Close or Free.
func Done(k Kind) { live[k].Add(-1) }

// Forgotten records an object released by its cleanup backstop: one its
// owner forgot to close.
func Forgotten(k Kind) {
	live[k].Add(-1)
	forgotten[k].Add(1)
}

// Snapshot is the count of live and forgotten objects of each kind.
type Snapshot struct {
	Live, Forgotten [numKinds]int64
}

// Take returns the counts now.
func Take() Snapshot {
	var s Snapshot
	for k := range numKinds {
		s.Live[k] = live[k].Load()
		s.Forgotten[k] = forgotten[k].Load()
	}
	return s
}

// Kinds lists every kind, for reports.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for k := range numKinds {
		ks[k] = k
	}
	return ks
}

// Package uses lets gocuda's other packages keep device memory of package
// cuda from being freed while they use it beyond one call (an NCCL buffer
// registration), as a graph does: Free returns an error meanwhile. Package
// cuda sets Acquire when it loads; nothing else writes it.
package uses

// Acquire counts one use of m, a cuda.Memory, and returns its device
// address and size in bytes, and the function that ends the use (once;
// later calls do nothing). It returns an error, and no use, for memory
// that is nil, freed, or exists only inside a graph.
var Acquire func(op string, m any) (ptr, bytes uintptr, release func(), err error)

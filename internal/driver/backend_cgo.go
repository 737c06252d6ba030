//go:build cgo && !gocuda_purego

package driver

// call holds slots for out-parameters: cgo passes the arguments itself, but
// the address of a caller's out variable passed to C would move it to the
// heap.
type call struct {
	out [4]uint64
}

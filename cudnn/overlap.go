package cudnn

import cuda "github.com/gocuda/cuda"

// buffer is what the overlap check reads of a DeviceBuffer of any type.
type buffer interface {
	Ptr() cuda.DevicePtr
	ByteSize() int
}

// named is a call's buffer by the name its signature gives it; a nil
// buffer (an optional one left out) spans nothing.
type named struct {
	name string
	b    buffer
}

// shares reports whether a and b have a byte in common.
func (a named) shares(b named) bool {
	an, bn := uint64(a.b.ByteSize()), uint64(b.b.ByteSize())
	if an == 0 || bn == 0 {
		return false
	}
	alo, blo := uint64(a.b.Ptr()), uint64(b.b.Ptr())
	return alo < blo+bn && blo < alo+an
}

// aliased returns the error for an output of outs that shares memory
// with another output or with an input of ins: cuDNN reads its inputs
// while it writes its outputs, and runs no operation in place (the
// result would depend on the order of its threads), so the package
// refuses what it would compute wrong, on a GPU as on the fake.
func aliased(op string, outs []named, ins ...named) error {
	for i, o := range outs {
		for _, p := range outs[i+1:] {
			if o.shares(p) {
				return errorf(op, cuda.ErrInvalidValue, "%s and %s share memory: cuDNN writes both; give each its own buffer", o.name, p.name)
			}
		}
		for _, in := range ins {
			if o.shares(in) {
				return errorf(op, cuda.ErrInvalidValue, "%s shares memory with %s: cuDNN runs no operation in place, and its result would be undefined; write %s elsewhere", o.name, in.name, o.name)
			}
		}
	}
	return nil
}

// tensorBuf names a tensor's buffer for aliased.
func tensorBuf[T Element](name string, t Tensor[T]) named { return named{name + ".Data", t.Data} }

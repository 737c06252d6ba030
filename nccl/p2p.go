package nccl

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
	clib "github.com/gocuda/cuda/internal/lib/nccl"
)

// Send sends src to rank peer, whose Recv of as many elements takes it.
// Outside a Group, NCCL's Send waits, on s, for the peer's Recv: two ranks
// that each send to the other before receiving wait for ever. Make the
// sends and receives of an exchange inside one Group (as AllToAll does),
// where they progress together.
func Send[T Element](c *Comm, src *cuda.DeviceBuffer[T], peer int, s *cuda.Stream) error {
	const op = "Send"
	if err := c.valid(op); err != nil {
		return err
	}
	if err := checkBuffer(op, c, "src", src); err != nil {
		return err
	}
	return p2p(c, op, "ncclSend", clib.Send, "src", src, peer, s)
}

// Recv receives into dst what rank peer sends with Send, of dst's length.
func Recv[T Element](c *Comm, dst *cuda.DeviceBuffer[T], peer int, s *cuda.Stream) error {
	const op = "Recv"
	if err := c.valid(op); err != nil {
		return err
	}
	if err := checkBuffer(op, c, "dst", dst); err != nil {
		return err
	}
	return p2p(c, op, "ncclRecv", clib.Recv, "dst", dst, peer, s)
}

// p2pFunc is ncclSend or ncclRecv, which take the same arguments.
type p2pFunc func(buff, count uintptr, datatype clib.DataType, peer int32, comm clib.Comm, stream uintptr) clib.Result

// p2p queues NCCL's send or receive (name, fn) of b, checked already and
// given as parameter param, for op.
func p2p[T Element](c *Comm, op, name string, fn p2pFunc, param string, b *cuda.DeviceBuffer[T], peer int, s *cuda.Stream) error {
	if peer < 0 || peer >= c.size {
		return errorf(op, cuda.ErrInvalidValue, "peer %d out of range [0, %d)", peer, c.size)
	}
	return c.enqueue(op, name, s, []operand{{param, b, freed[T]}}, func(comm clib.Comm, stream uintptr) clib.Result {
		return fn(uintptr(b.Ptr()), uintptr(b.Len()), dataType[T](), int32(peer), comm, stream)
	})
}

// AllToAll sends block j of src to rank j and receives rank j's block for
// this rank into block j of dst, on every rank: dst and src hold Size()
// blocks of the same length. It is a Group of a send and a receive per
// rank, this rank's own block copied through NCCL like the others.
func AllToAll[T Element](c *Comm, dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	const op = "AllToAll"
	if err := operands(op, c, dst, src, 1, 1); err != nil {
		return err
	}
	if src.Len()%c.size != 0 {
		return errorf(op, cuda.ErrInvalidValue, "src has %d elements: want a block for each of the %d ranks, of one length", src.Len(), c.size)
	}
	// The blocks are slices, which fail only for a freed buffer: name it
	// before the first send is queued, and before the overlap, which a
	// freed buffer's address, another's now, would make.
	if err := freedOperand(op, pair(dst, src)); err != nil {
		return err
	}
	if overlap(dst, src) {
		return errorf(op, cuda.ErrInvalidValue, "dst and src overlap: an all-to-all is out of place")
	}
	if err := c.checkStream(op, s); err != nil {
		return err
	}
	n := src.Len() / c.size
	return group(op, func() error {
		for peer := range c.size {
			out, err := src.Slice(peer*n, n)
			if err != nil {
				return calledas.Op(op, err)
			}
			in, err := dst.Slice(peer*n, n)
			if err != nil {
				return calledas.Op(op, err)
			}
			if err := p2p(c, op, "ncclSend", clib.Send, "src", out, peer, s); err != nil {
				return err
			}
			if err := p2p(c, op, "ncclRecv", clib.Recv, "dst", in, peer, s); err != nil {
				return err
			}
		}
		return nil
	})
}

// overlap reports whether a and b share memory.
func overlap[T any](a, b *cuda.DeviceBuffer[T]) bool {
	as, bs := uintptr(a.Ptr()), uintptr(b.Ptr())
	return as < bs+uintptr(b.ByteSize()) && bs < as+uintptr(a.ByteSize())
}

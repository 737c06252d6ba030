package nccl

import (
	cuda "github.com/gocuda/cuda"
)

// Send sends buf to rank peer, whose Recv of as many elements takes it.
// Outside a Group, NCCL's Send waits, on s, for the peer's Recv: two ranks
// that each send to the other before receiving wait for ever. Make the
// sends and receives of an exchange inside one Group (as AllToAll does),
// where they progress together.
func Send[T Number](c *Comm, buf *cuda.DeviceBuffer[T], peer int, s *cuda.Stream) error {
	return p2p(c, "Send", "ncclSend", lib.fn.send, buf, peer, s)
}

// Recv receives into buf what rank peer sends with Send, of buf's length.
func Recv[T Number](c *Comm, buf *cuda.DeviceBuffer[T], peer int, s *cuda.Stream) error {
	return p2p(c, "Recv", "ncclRecv", lib.fn.recv, buf, peer, s)
}

func p2p[T Number](c *Comm, op, name string, fn uintptr, buf *cuda.DeviceBuffer[T], peer int, s *cuda.Stream) error {
	if err := c.valid(op); err != nil {
		return err
	}
	if buf == nil {
		return errorf(op, cuda.ErrInvalidValue, "nil buffer")
	}
	if peer < 0 || peer >= c.size {
		return errorf(op, cuda.ErrInvalidValue, "peer %d out of range [0, %d)", peer, c.size)
	}
	return c.enqueue(op, name, fn, s, []cuda.Memory{buf}, uintptr(buf.Ptr()), uintptr(buf.Len()), dataType[T](), uintptr(peer))
}

// AllToAll sends block j of send to rank j and receives rank j's block for
// this rank into block j of recv, on every rank: send and recv hold Size()
// blocks of the same length. It is a Group of a Send and a Recv per rank,
// this rank's own block copied through NCCL like the others.
func AllToAll[T Number](c *Comm, send, recv *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	const op = "AllToAll"
	if err := c.valid(op); err != nil {
		return err
	}
	if err := lengths(op, send, recv, 1, 1); err != nil {
		return err
	}
	if send.Len()%c.size != 0 {
		return errorf(op, cuda.ErrInvalidValue, "%d elements: want a block for each of the %d ranks, of one length", send.Len(), c.size)
	}
	if overlap(send, recv) {
		return errorf(op, cuda.ErrInvalidValue, "send and recv overlap: an all-to-all is out of place")
	}
	n := send.Len() / c.size
	return Group(func() error {
		for peer := range c.size {
			out, err := send.Slice(peer*n, n)
			if err != nil {
				return err
			}
			in, err := recv.Slice(peer*n, n)
			if err != nil {
				return err
			}
			if err := Send(c, out, peer, s); err != nil {
				return err
			}
			if err := Recv(c, in, peer, s); err != nil {
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

package nccl

import (
	"reflect"

	cuda "github.com/gocuda/cuda"
)

// Number is an element type NCCL reduces and moves: its types of fixed size
// that Go has (not float16 or bfloat16).
type Number interface {
	~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// dataType returns NCCL's ncclDataType_t for T.
func dataType[T Number]() uintptr {
	switch reflect.TypeFor[T]().Kind() {
	case reflect.Int8:
		return 0
	case reflect.Uint8:
		return 1
	case reflect.Int32:
		return 2
	case reflect.Uint32:
		return 3
	case reflect.Int64:
		return 4
	case reflect.Uint64:
		return 5
	case reflect.Float32:
		return 7
	default: // float64: Number allows nothing else
		return 8
	}
}

// Op is a reduction (ncclRedOp_t).
type Op int32

// The reductions.
const (
	Sum  Op = 0
	Prod Op = 1
	Max  Op = 2
	Min  Op = 3
	Avg  Op = 4 // the sum divided by the number of ranks
)

func (o Op) String() string {
	if o >= 0 && o <= Avg {
		return [...]string{"sum", "prod", "max", "min", "avg"}[o]
	}
	return "Op(?)"
}

// AllReduce reduces send across the ranks with op and leaves the result
// in recv on every rank. send and recv have the same length; they may be
// the same buffer (in place).
func AllReduce[T Number](c *Comm, send, recv *cuda.DeviceBuffer[T], op Op, s *cuda.Stream) error {
	const name = "AllReduce"
	if err := lengths(name, send, recv, 1, 1); err != nil {
		return err
	}
	if err := checkOp(name, op); err != nil {
		return err
	}
	return c.enqueue(name, "ncclAllReduce", lib.fn.allReduce, s, []cuda.Memory{send, recv},
		uintptr(send.Ptr()), uintptr(recv.Ptr()), uintptr(send.Len()), dataType[T](), uintptr(op))
}

// Broadcast copies root's send into recv on every rank. Every rank passes
// both buffers, of the same length; only root's send is read.
func Broadcast[T Number](c *Comm, send, recv *cuda.DeviceBuffer[T], root int, s *cuda.Stream) error {
	const name = "Broadcast"
	if err := lengths(name, send, recv, 1, 1); err != nil {
		return err
	}
	if err := c.checkRoot(name, root); err != nil {
		return err
	}
	return c.enqueue(name, "ncclBroadcast", lib.fn.broadcast, s, []cuda.Memory{send, recv},
		uintptr(send.Ptr()), uintptr(recv.Ptr()), uintptr(send.Len()), dataType[T](), uintptr(root))
}

// Reduce reduces send across the ranks with op into root's recv. Every rank
// passes both buffers, of the same length; only root's recv is written.
func Reduce[T Number](c *Comm, send, recv *cuda.DeviceBuffer[T], op Op, root int, s *cuda.Stream) error {
	const name = "Reduce"
	if err := lengths(name, send, recv, 1, 1); err != nil {
		return err
	}
	if err := checkOp(name, op); err != nil {
		return err
	}
	if err := c.checkRoot(name, root); err != nil {
		return err
	}
	return c.enqueue(name, "ncclReduce", lib.fn.reduce, s, []cuda.Memory{send, recv},
		uintptr(send.Ptr()), uintptr(recv.Ptr()), uintptr(send.Len()), dataType[T](), uintptr(op), uintptr(root))
}

// AllGather gathers every rank's send into recv on every rank, rank i's at
// element i*send.Len(): recv holds Size() times send's length.
func AllGather[T Number](c *Comm, send, recv *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	const name = "AllGather"
	if c == nil {
		return errorf(name, cuda.ErrInvalidValue, "nil *Comm")
	}
	if err := lengths(name, send, recv, 1, c.size); err != nil {
		return err
	}
	return c.enqueue(name, "ncclAllGather", lib.fn.allGather, s, []cuda.Memory{send, recv},
		uintptr(send.Ptr()), uintptr(recv.Ptr()), uintptr(send.Len()), dataType[T]())
}

// ReduceScatter reduces send across the ranks with op and leaves block i of
// the result in rank i's recv: send holds Size() times recv's length.
func ReduceScatter[T Number](c *Comm, send, recv *cuda.DeviceBuffer[T], op Op, s *cuda.Stream) error {
	const name = "ReduceScatter"
	if c == nil {
		return errorf(name, cuda.ErrInvalidValue, "nil *Comm")
	}
	if err := lengths(name, send, recv, c.size, 1); err != nil {
		return err
	}
	if err := checkOp(name, op); err != nil {
		return err
	}
	return c.enqueue(name, "ncclReduceScatter", lib.fn.reduceScatter, s, []cuda.Memory{send, recv},
		uintptr(send.Ptr()), uintptr(recv.Ptr()), uintptr(recv.Len()), dataType[T](), uintptr(op))
}

// lengths checks the buffers' shape: send and recv hold n*sendBlocks and
// n*recvBlocks elements for one n.
func lengths[T any](op string, send, recv *cuda.DeviceBuffer[T], sendBlocks, recvBlocks int) error {
	if send == nil || recv == nil {
		return errorf(op, cuda.ErrInvalidValue, "nil send or receive buffer")
	}
	if send.Len()*recvBlocks != recv.Len()*sendBlocks {
		switch {
		case sendBlocks > 1:
			return errorf(op, cuda.ErrInvalidValue, "send has %d elements, want %d (%d ranks × the %d of recv)", send.Len(), sendBlocks*recv.Len(), sendBlocks, recv.Len())
		case recvBlocks > 1:
			return errorf(op, cuda.ErrInvalidValue, "recv has %d elements, want %d (%d ranks × the %d of send)", recv.Len(), recvBlocks*send.Len(), recvBlocks, send.Len())
		}
		return errorf(op, cuda.ErrInvalidValue, "send has %d elements, recv %d: want the same", send.Len(), recv.Len())
	}
	return nil
}

func checkOp(name string, op Op) error {
	if op < Sum || op > Avg {
		return errorf(name, cuda.ErrInvalidValue, "unknown reduction %d", int32(op))
	}
	return nil
}

func (c *Comm) checkRoot(name string, root int) error {
	if err := c.valid(name); err != nil {
		return err
	}
	if root < 0 || root >= c.size {
		return errorf(name, cuda.ErrInvalidValue, "root %d out of range [0, %d)", root, c.size)
	}
	return nil
}

// enqueue queues one NCCL call on s that reads or writes mems: args, then
// the communicator and the stream, as every collective, send and receive
// takes them last.
func (c *Comm) enqueue(op, name string, fn uintptr, s *cuda.Stream, mems []cuda.Memory, args ...uintptr) error {
	if err := c.hold(op); err != nil {
		return err
	}
	defer c.life.Release()
	if s == nil {
		return errorf(op, cuda.ErrInvalidValue, "nil *cuda.Stream")
	}
	if s.Context() != c.ctx {
		return errorf(op, cuda.ErrInvalidValue, "the stream belongs to another context than the communicator's rank")
	}
	return s.Do(func(stream uintptr) error {
		return c.do(op, name, fn, append(args, c.handle, stream)...)
	}, mems...)
}

package nccl

import (
	"errors"
	"reflect"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
	"github.com/gocuda/cuda/internal/closed"
	clib "github.com/gocuda/cuda/internal/lib/nccl"
)

// Element is an element type NCCL reduces and moves: the types of fixed
// size that Go has, and types defined on them (type Celsius float32). NCCL
// has float16 and bfloat16 too (ncclFloat16, ncclBfloat16), but
// cuda.Float16 and cuda.BFloat16 are not among these yet: the fake NCCL
// the tests run on refuses them, so nothing would check them.
type Element interface {
	~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64 | ~float32 | ~float64
}

// dataType returns NCCL's ncclDataType_t for T.
func dataType[T Element]() clib.DataType {
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
	default: // float64: Element allows nothing else
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

// The collectives take dst before src (see the package doc); NCCL's C
// functions take the send buffer first, and so do their arguments below.

// AllReduce reduces src across the ranks with op and leaves the result in
// dst on every rank. dst and src have the same length; they may be the
// same buffer (in place), but must not otherwise overlap.
func AllReduce[T Element](c *Comm, dst, src *cuda.DeviceBuffer[T], op Op, s *cuda.Stream) error {
	const name = "AllReduce"
	if err := operands(name, c, dst, src, 1, 1); err != nil {
		return err
	}
	if err := sameOrApart(name, dst, src); err != nil {
		return err
	}
	if err := checkOp(name, op); err != nil {
		return err
	}
	return c.enqueue(name, "ncclAllReduce", s, pair(dst, src), func(comm clib.Comm, stream uintptr) clib.Result {
		return clib.AllReduce(uintptr(src.Ptr()), uintptr(dst.Ptr()), uintptr(src.Len()), dataType[T](), clib.RedOp(op), comm, stream)
	})
}

// Broadcast copies root's src into dst on every rank. Every rank passes
// both buffers, of the same length; only root's src is read. They may be
// the same buffer (in place), but must not otherwise overlap.
func Broadcast[T Element](c *Comm, dst, src *cuda.DeviceBuffer[T], root int, s *cuda.Stream) error {
	const name = "Broadcast"
	if err := operands(name, c, dst, src, 1, 1); err != nil {
		return err
	}
	if err := sameOrApart(name, dst, src); err != nil {
		return err
	}
	if err := c.checkRoot(name, root); err != nil {
		return err
	}
	return c.enqueue(name, "ncclBroadcast", s, pair(dst, src), func(comm clib.Comm, stream uintptr) clib.Result {
		return clib.Broadcast(uintptr(src.Ptr()), uintptr(dst.Ptr()), uintptr(src.Len()), dataType[T](), int32(root), comm, stream)
	})
}

// Reduce reduces src across the ranks with op into root's dst. Every rank
// passes both buffers, of the same length; only root's dst is written.
// They may be the same buffer (in place), but must not otherwise overlap.
func Reduce[T Element](c *Comm, dst, src *cuda.DeviceBuffer[T], op Op, root int, s *cuda.Stream) error {
	const name = "Reduce"
	if err := operands(name, c, dst, src, 1, 1); err != nil {
		return err
	}
	if err := sameOrApart(name, dst, src); err != nil {
		return err
	}
	if err := checkOp(name, op); err != nil {
		return err
	}
	if err := c.checkRoot(name, root); err != nil {
		return err
	}
	return c.enqueue(name, "ncclReduce", s, pair(dst, src), func(comm clib.Comm, stream uintptr) clib.Result {
		return clib.Reduce(uintptr(src.Ptr()), uintptr(dst.Ptr()), uintptr(src.Len()), dataType[T](), clib.RedOp(op), int32(root), comm, stream)
	})
}

// AllGather gathers every rank's src into dst on every rank, rank i's at
// element i*src.Len(): dst holds Size() times src's length. In place, src
// is this rank's block of dst (dst.Slice(Rank()*src.Len(), src.Len()));
// otherwise they must not overlap.
func AllGather[T Element](c *Comm, dst, src *cuda.DeviceBuffer[T], s *cuda.Stream) error {
	const name = "AllGather"
	if err := operands(name, c, dst, src, c.Size(), 1); err != nil {
		return err
	}
	if err := blockOrApart(name, c, "src", src, "dst", dst); err != nil {
		return err
	}
	return c.enqueue(name, "ncclAllGather", s, pair(dst, src), func(comm clib.Comm, stream uintptr) clib.Result {
		return clib.AllGather(uintptr(src.Ptr()), uintptr(dst.Ptr()), uintptr(src.Len()), dataType[T](), comm, stream)
	})
}

// ReduceScatter reduces src across the ranks with op and leaves block i of
// the result in rank i's dst: src holds Size() times dst's length. In
// place, dst is this rank's block of src (src.Slice(Rank()*dst.Len(),
// dst.Len())); otherwise they must not overlap.
func ReduceScatter[T Element](c *Comm, dst, src *cuda.DeviceBuffer[T], op Op, s *cuda.Stream) error {
	const name = "ReduceScatter"
	if err := operands(name, c, dst, src, 1, c.Size()); err != nil {
		return err
	}
	if err := blockOrApart(name, c, "dst", dst, "src", src); err != nil {
		return err
	}
	if err := checkOp(name, op); err != nil {
		return err
	}
	return c.enqueue(name, "ncclReduceScatter", s, pair(dst, src), func(comm clib.Comm, stream uintptr) clib.Result {
		return clib.ReduceScatter(uintptr(src.Ptr()), uintptr(dst.Ptr()), uintptr(dst.Len()), dataType[T](), clib.RedOp(op), comm, stream)
	})
}

// operands checks what a collective is given, before NCCL sees it: a
// usable c, and dst and src of c's context holding n*dstBlocks and
// n*srcBlocks elements for one n.
func operands[T any](op string, c *Comm, dst, src *cuda.DeviceBuffer[T], dstBlocks, srcBlocks int) error {
	if err := c.valid(op); err != nil {
		return err
	}
	if err := checkBuffer(op, c, "dst", dst); err != nil {
		return err
	}
	if err := checkBuffer(op, c, "src", src); err != nil {
		return err
	}
	if dst.Len()*srcBlocks != src.Len()*dstBlocks {
		switch {
		case dstBlocks > 1:
			return errorf(op, cuda.ErrInvalidValue, "dst has %d elements, want %d (%d ranks × the %d of src)", dst.Len(), dstBlocks*src.Len(), dstBlocks, src.Len())
		case srcBlocks > 1:
			return errorf(op, cuda.ErrInvalidValue, "src has %d elements, want %d (%d ranks × the %d of dst)", src.Len(), srcBlocks*dst.Len(), srcBlocks, dst.Len())
		}
		return errorf(op, cuda.ErrInvalidValue, "dst has %d elements, src %d: want the same", dst.Len(), src.Len())
	}
	return nil
}

// checkBuffer checks b, given as parameter param of a call on c, a valid
// Comm.
func checkBuffer[T any](op string, c *Comm, param string, b *cuda.DeviceBuffer[T]) error {
	switch {
	case b == nil:
		return errorf(op, cuda.ErrInvalidValue, "%s is nil", param)
	case b.Context() == nil:
		return errorf(op, cuda.ErrInvalidValue, "%s is a zero DeviceBuffer: make one with cuda.Alloc", param)
	case b.Context() != c.ctx:
		return errorf(op, cuda.ErrInvalidValue, "%s belongs to another context than the communicator's rank", param)
	}
	return nil
}

// NCCL runs a collective in place only where its buffers are where its
// documentation says (sendbuff == recvbuff, or the one at this rank's block
// of the other); buffers that overlap otherwise are read while written,
// with results that depend on the algorithm NCCL picks. They are refused.

// sameOrApart checks that dst and src, of one length, are the same buffer
// or share no memory.
func sameOrApart[T any](op string, dst, src *cuda.DeviceBuffer[T]) error {
	if dst.Ptr() != src.Ptr() && overlap(dst, src) {
		if err := freedOperand(op, pair(dst, src)); err != nil {
			return err
		}
		return errorf(op, cuda.ErrInvalidValue, "dst and src overlap: in place, they are the same buffer; otherwise they must not overlap")
	}
	return nil
}

// blockOrApart checks that the buffer small (named as parameter sname) is
// c's rank's block of big (bname), for in place, or shares no memory with
// it.
func blockOrApart[T any](op string, c *Comm, sname string, small *cuda.DeviceBuffer[T], bname string, big *cuda.DeviceBuffer[T]) error {
	at := uintptr(big.Ptr()) + uintptr(c.rank)*uintptr(small.ByteSize())
	if uintptr(small.Ptr()) != at && overlap(small, big) {
		if err := freedOperand(op, []operand{{sname, small, freed[T]}, {bname, big, freed[T]}}); err != nil {
			return err
		}
		return errorf(op, cuda.ErrInvalidValue, "%s overlaps %s other than as rank %d's block of it (%s.Slice(%d, %d)), where it would be in place; otherwise they must not overlap",
			sname, bname, c.rank, bname, c.rank*small.Len(), small.Len())
	}
	return nil
}

func checkOp(name string, op Op) error {
	if op < Sum || op > Avg {
		return errorf(name, cuda.ErrInvalidValue, "op %d is no reduction: want Sum, Prod, Max, Min or Avg", int32(op))
	}
	return nil
}

// checkRoot checks root, of a call on c, a valid Comm.
func (c *Comm) checkRoot(name string, root int) error {
	if root < 0 || root >= c.size {
		return errorf(name, cuda.ErrInvalidValue, "root %d out of range [0, %d)", root, c.size)
	}
	return nil
}

// checkStream checks the stream of a call on c, a valid Comm.
func (c *Comm) checkStream(op string, s *cuda.Stream) error {
	switch {
	case s == nil:
		return errorf(op, cuda.ErrInvalidValue, "nil *cuda.Stream")
	case s.Context() == nil:
		// A zero Stream has no context: say so, not that it has another.
		return errorf(op, cuda.ErrInvalidValue, "a zero cuda.Stream: make one with Context.NewStream")
	case s.Context() != c.ctx:
		return errorf(op, cuda.ErrInvalidValue, "the stream belongs to another context than the communicator's rank")
	}
	return nil
}

// operand is a buffer a call is given, by its parameter's name, for the
// errors of Stream.Do, which knows it only by its place.
type operand struct {
	param string
	mem   cuda.Memory
	freed func(cuda.Memory) bool
}

// pair is a collective's two operands.
func pair[T any](dst, src *cuda.DeviceBuffer[T]) []operand {
	return []operand{{"dst", dst, freed[T]}, {"src", src, freed[T]}}
}

// freed reports whether m, a *cuda.DeviceBuffer[T], is freed (or its
// context closed).
func freed[T any](m cuda.Memory) bool { return closed.Buffer(m.(*cuda.DeviceBuffer[T])) }

// freedOperand returns op's error naming the first of bufs that is freed,
// nil where none is. enqueue asks it once Stream.Do refused, and the
// overlap checks once they found two buffers overlapping, before they
// report it (see package closed).
func freedOperand(op string, bufs []operand) error {
	for _, b := range bufs {
		if b.freed(b.mem) {
			return errorf(op, cuda.ErrClosed, "%s is freed, or its context closed", b.param)
		}
	}
	return nil
}

// enqueue queues one NCCL call, name, on s that reads or writes bufs: fn
// makes it with the communicator and the stream, which every collective,
// send and receive takes last, on the thread the context is bound to.
func (c *Comm) enqueue(op, name string, s *cuda.Stream, bufs []operand, fn func(comm clib.Comm, stream uintptr) clib.Result) error {
	if err := c.hold(op); err != nil {
		return err
	}
	defer c.life.Release()
	if err := c.checkStream(op, s); err != nil {
		return err
	}
	mems := make([]cuda.Memory, len(bufs))
	for i, b := range bufs {
		mems[i] = b.mem
	}
	ran := false
	err := s.Do(func(stream uintptr) error {
		ran = true
		return c.do(op, name, fn(c.handle, stream))
	}, mems...)
	if ran {
		return err
	}
	// Stream.Do refused: a buffer or the stream closed, or the bind.
	if errors.Is(err, cuda.ErrClosed) {
		if err := freedOperand(op, bufs); err != nil {
			return err
		}
	}
	return calledas.Op(op, err)
}

package cusolver

import (
	"errors"
	"fmt"
	"sync"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/lifetime"
)

// infoKind is what an info value means.
type infoKind uint8

const (
	infoPivot       infoKind = iota // getrf: i > 0 is U(i,i) = 0
	infoMinor                       // potrf: i > 0 is the leading minor of order i
	infoInverse                     // potri: i > 0 is a zero on the factor's diagonal
	infoConvergence                 // gesvd, syevd, the Jacobi batches: i > 0 did not converge
	infoRank                        // gels: i > 0 is R(i,i) = 0; -30 a singular R (see irsInfo)
	infoNone                        // getrs, potrs, orgqr, ormqr, geqrf: only < 0 (an argument)
)

// Info holds the info values cuSOLVER writes on the device for one call
// (one value, or one for each matrix of a batch) until Err reads them.
// The zero Info is not usable: Err returns cuda.ErrInvalidValue.
type Info struct {
	h     *Handle
	op    string
	kind  infoKind
	count int
	batch bool // a batched call's: Err names the matrix, in a batch of one too
	mu    sync.Mutex
	buf   *cuda.DeviceBuffer[int32] // nil once read or freed
	read  bool
	freed bool // by Free, unread
	err   error
}

// Free frees the info values in stream order without reading them, for a
// caller who will not ask (Err then says they were freed); after Err has
// read them it does nothing. An Info neither read nor freed keeps its few
// bytes of device memory until the garbage collector finds it, whose
// cleanup then synchronizes the context to free them: in a loop, read or
// free each.
func (i *Info) Free() error {
	if i == nil || i.h == nil {
		return errorf("Info.Free", cuda.ErrInvalidValue, "a nil or zero *Info: the calls of this package return one")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	var err error
	if i.discard(&err); err == nil && !i.read {
		i.freed = true
	}
	return err
}

// newInfo allocates count info values in stream order on h's stream.
func newInfo(h *Handle, op string, kind infoKind, count int) (*Info, error) {
	buf, err := cuda.AllocAsync[int32](h.base.Stream(), max(count, 1))
	if err != nil {
		return nil, err
	}
	return &Info{h: h, op: op, kind: kind, count: count, buf: buf}, nil
}

// newBatchInfo is newInfo for a batched call, whose Err names the matrix
// (counted from 0) whatever the count.
func newBatchInfo(h *Handle, op string, kind infoKind, count int) (*Info, error) {
	i, err := newInfo(h, op, kind, count)
	if err == nil {
		i.batch = true
	}
	return i, err
}

// zero queues zeros into the info values, on h's stream: the answer for
// a problem with no elements, which cuSOLVER is not asked about. LAPACK
// returns at once for those; cuSOLVER may instead refuse the NULL arrays
// of empty buffers, and what it would do is not the package's to pass on.
// Where the zeros cannot be queued, the info is discarded.
func (i *Info) zero() error {
	err := i.buf.Memset32Async(0, i.h.base.Stream())
	if err != nil {
		i.discard(&err)
	}
	return err
}

// discard frees an info whose call failed (or that nobody will read), in
// stream order, into *err as lifetime.CloseTemp does: a free that fails is
// tried once more, and reported unless *err holds an error already.
func (i *Info) discard(err *error) {
	if i != nil && i.buf != nil {
		var ferr error
		if freeTemp(&ferr, i.buf, i.h.base.Stream()); ferr == nil {
			i.buf = nil
		} else if *err == nil {
			*err = ferr
		}
	}
}

// freeTemp frees b in stream order on s into *err, as lifetime.CloseTemp.
func freeTemp[T any](err *error, b *cuda.DeviceBuffer[T], s *cuda.Stream) {
	lifetime.CloseTemp(err, func() error { return b.FreeOn(s) })
}

// ptr is the device address of the info values.
func (i *Info) ptr() uintptr { return uintptr(i.buf.Ptr()) }

// Err waits for the handle's stream to finish the call (and what was
// queued before it), reads the info values, frees them, and returns what
// they mean: nil, or an error matching ErrSingular,
// ErrNotPositiveDefinite or ErrNoConvergence that names the pivot or the
// minor (and, in a batch, the matrix, counted from 0). It reads once: later
// calls return the same answer without waiting.
func (i *Info) Err() error {
	const op = "Info.Err"
	if i == nil || i.h == nil {
		return errorf(op, cuda.ErrInvalidValue, "a nil or zero *Info: the calls of this package return one")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.freed {
		return errorf(op, cuda.ErrInvalidValue, "the info of %s was freed before Err read it", i.op)
	}
	if i.read {
		// Read already; a free that failed is tried again.
		if i.buf != nil {
			var err error
			if i.discard(&err); err != nil {
				return err
			}
		}
		return i.err
	}
	vals := make([]int32, max(i.count, 1))
	err := i.buf.CopyToHostAsync(vals, i.h.base.Stream())
	if err == nil {
		err = i.h.base.Stream().Synchronize()
	}
	if err != nil {
		// The stream failed (or was closed): the values are lost; try
		// again once the stream is usable.
		return fmt.Errorf("%s: reading the info of %s: %w", op, i.op, err)
	}
	i.read = true
	var errs []error
	for m, v := range vals[:i.count] {
		if v != 0 {
			errs = append(errs, i.meaning(m, v))
			if len(errs) == 8 {
				break
			}
		}
	}
	i.err = errors.Join(errs...)
	var ferr error
	if i.discard(&ferr); ferr != nil {
		// The answer is kept; the next Err frees the values again.
		return ferr
	}
	return i.err
}

// meaning says in words what info value v of matrix m means.
func (i *Info) meaning(m int, v int32) error {
	where := ""
	if i.count > 1 || i.batch {
		where = fmt.Sprintf("matrix %d: ", m)
	}
	if v < 0 {
		if i.kind == infoRank && -v > gelsArgs {
			return irsInfo(i.op, where, v)
		}
		return errorf(i.op, cuda.ErrInvalidValue, "%scuSOLVER refused argument %d (info %d)", where, -v, v)
	}
	switch i.kind {
	case infoPivot:
		return &Error{Op: i.op, Err: ErrSingular, Detail: fmt.Sprintf("%spivot %d is exactly zero (U(%d,%d), 1-based)", where, v, v, v)}
	case infoMinor:
		return &Error{Op: i.op, Err: ErrNotPositiveDefinite, Detail: fmt.Sprintf("%sthe leading minor of order %d is not positive definite", where, v)}
	case infoInverse:
		return &Error{Op: i.op, Err: ErrNotPositiveDefinite, Detail: fmt.Sprintf("%sthe factor's diagonal element %d is zero: no inverse", where, v)}
	case infoRank:
		return &Error{Op: i.op, Err: ErrSingular, Detail: fmt.Sprintf("%sR(%d,%d) is exactly zero (1-based): the matrix lacks full column rank", where, v, v)}
	case infoConvergence:
		return &Error{Op: i.op, Err: ErrNoConvergence, Detail: fmt.Sprintf("%s%d values did not converge (info %d)", where, v, v)}
	}
	return errorf(i.op, cuda.ErrInvalidValue, "%scuSOLVER wrote info %d", where, v)
}

// gelsArgs is the number of arguments of cusolverDn<t1><t2>gels, not
// counting the handle: an info of -1 to -gelsArgs names one of them.
const gelsArgs = 13

// irsInfo says what a gels info v below -gelsArgs means. cuSOLVER's IRS
// solvers (the <t1><t2>gels and gesv family) write there the negative of
// a cusolverStatus_t from the IRS codes, not an argument's index: the real
// cuSOLVER 12 (on an H100) writes -30, -CUSOLVER_STATUS_IRS_MATRIX_SINGULAR,
// for a matrix whose R has a zero on its diagonal, that is one without
// full column rank. The error carries the code (errors.Is with
// ResultIRSMatrixSingular, say) and matches ErrSingular for a singular R.
func irsInfo(op, where string, v int32) error {
	s := Result(-v)
	e := &Error{Op: op, Code: s}
	switch s {
	case ResultIRSMatrixSingular:
		e.Err, e.Detail = ErrSingular, fmt.Sprintf("%sR is singular: the matrix lacks full column rank (info %d)", where, v)
	case ResultIRSNotSupported, ResultIRSNrhsNotSupportedForRefineGMRES:
		e.Err, e.Detail = cuda.ErrNotSupported, where+"the iterative-refinement solver does not support this problem"
	case ResultIRSOutOfRange, ResultInvalidWorkspace:
		e.Err, e.Detail = cuda.ErrInvalidValue, where+"the iterative-refinement solver refused its arguments"
	default:
		e.Detail = fmt.Sprintf("%sthe iterative-refinement solver failed (info %d)", where, v)
	}
	return e
}

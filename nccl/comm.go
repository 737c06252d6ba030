package nccl

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
	"github.com/gocuda/cuda/internal/capturegate"
	clib "github.com/gocuda/cuda/internal/lib/nccl"
	"github.com/gocuda/cuda/internal/lifetime"
	"github.com/gocuda/cuda/internal/track"
)

// UniqueID is what the ranks of a communicator spanning processes find
// each other by (ncclUniqueId). One rank makes it with NewUniqueID and
// hands it to the others: it marshals to text (hex) for flags, environment
// variables or JSON.
type UniqueID [128]byte

// NewUniqueID returns a new UniqueID. With NCCL it also starts the
// listener the other ranks contact, in this process.
func NewUniqueID() (UniqueID, error) {
	const op = "NewUniqueID"
	if err := open(op); err != nil {
		return UniqueID{}, err
	}
	var id UniqueID
	if err := check(op, "ncclGetUniqueId", clib.GetUniqueId((*clib.UniqueID)(&id))); err != nil {
		return UniqueID{}, err
	}
	return id, nil
}

// MarshalText encodes the id in hex.
func (id UniqueID) MarshalText() ([]byte, error) {
	return hex.AppendEncode(nil, id[:]), nil
}

// UnmarshalText decodes an id MarshalText encoded.
func (id *UniqueID) UnmarshalText(text []byte) error {
	// A nil id has nowhere to put what it decodes: an error, not the
	// panic of the store below.
	if id == nil {
		return errorf("UniqueID.UnmarshalText", cuda.ErrInvalidValue, "nil *UniqueID")
	}
	var b UniqueID
	if len(text) != hex.EncodedLen(len(b)) {
		return errorf("UniqueID.UnmarshalText", cuda.ErrInvalidValue, "want %d hex digits, got %d", hex.EncodedLen(len(b)), len(text))
	}
	if _, err := hex.Decode(b[:], text); err != nil {
		return errorf("UniqueID.UnmarshalText", cuda.ErrInvalidValue, "want %d hex digits, got %q", 2*len(b), shorten(text))
	}
	*id = b
	return nil
}

func shorten(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// Comm is one rank of an NCCL communicator, on one device. Close it when
// done; it is safe for use by many goroutines. The zero Comm is not usable:
// its methods return cuda.ErrInvalidValue.
type Comm struct {
	// life is held by every call and closed by Close and Abort, which wait
	// for calls in flight (internal/lifetime).
	life   lifetime.Life
	ctx    *cuda.Context
	handle clib.Comm
	rank   int
	size   int
	// nonBlocking: made without blocking, and so NCCL's calls on it may
	// leave it in progress (progress.go). aborting is set while Abort
	// runs: calls waiting for progress give up.
	nonBlocking bool
	aborting    atomic.Bool

	// regMu guards regs, the buffers registered with the communicator
	// (Register), which Close deregisters first. A leaf.
	regMu sync.Mutex
	regs  map[*Registration]struct{}
}

func newComm(ctx *cuda.Context, handle clib.Comm, rank, size int, nonBlocking bool) *Comm {
	c := &Comm{ctx: ctx, handle: handle, rank: rank, size: size, nonBlocking: nonBlocking}
	c.life.Arm(track.Comm, runtime.AddCleanup(c, func(h clib.Comm) {
		track.Forgotten(track.Comm)
		capturegate.Cleanup(func() { clib.CommDestroy(h) })
	}, handle))
	return c
}

// valid returns the error for a nil or zero Comm.
func (c *Comm) valid(op string) error {
	switch {
	case c == nil:
		return errorf(op, cuda.ErrInvalidValue, "nil *Comm")
	case c.life.Status() == lifetime.Zero:
		return errorf(op, cuda.ErrInvalidValue, "a zero Comm: make one with NewComm or NewComms")
	}
	return nil
}

// hold keeps c open until c.life.Release.
func (c *Comm) hold(op string) error {
	if err := c.valid(op); err != nil {
		return err
	}
	if c.life.Hold() != lifetime.Held {
		return errorf(op, cuda.ErrClosed, "the communicator is closed")
	}
	return nil
}

// NewComms makes a communicator of the devices of ctxs, one per context,
// in this process (ncclCommInitAll): the Comm of ctxs[i] is rank i. The
// contexts must be of different devices.
func NewComms(ctxs []*cuda.Context) ([]*Comm, error) {
	const op = "NewComms"
	if len(ctxs) == 0 {
		return nil, errorf(op, cuda.ErrInvalidValue, "no contexts")
	}
	devs := make([]int32, len(ctxs))
	seen := map[int]int{}
	for i, ctx := range ctxs {
		if ctx == nil {
			return nil, errorf(op, cuda.ErrInvalidValue, "context %d is nil", i)
		}
		d := ctx.Device().Ordinal()
		if j, dup := seen[d]; dup {
			return nil, errorf(op, cuda.ErrInvalidValue, "contexts %d and %d are both of device %d: one rank per device", j, i, d)
		}
		seen[d] = i
		devs[i] = int32(d)
	}
	if err := open(op); err != nil {
		return nil, err
	}
	handles := make([]clib.Comm, len(ctxs))
	// Each context is held open, one Do inside the other, until NCCL has
	// made the ranks: a closed one fails here, not at the first collective.
	made := false
	var initAll func(i int) error
	initAll = func(i int) error {
		if i < len(ctxs) {
			return bound(op, ctxs[i], func() error { return initAll(i + 1) })
		}
		err := check(op, "ncclCommInitAll", clib.CommInitAll(&handles[0], int32(len(ctxs)), &devs[0]))
		made = err == nil
		return err
	}
	if err := initAll(0); err != nil {
		if made {
			// The ranks were made, then the Dos around failed (making the
			// context before current again): release them.
			for i, h := range handles {
				releasing(op, ctxs[i], func() error { return check(op, "ncclCommDestroy", clib.CommDestroy(h)) })
			}
		}
		return nil, err
	}
	comms := make([]*Comm, len(ctxs))
	for i, ctx := range ctxs {
		comms[i] = newComm(ctx, handles[i], i, len(ctxs), false)
	}
	return comms, nil
}

// NewComm makes rank rank of a communicator of nranks ranks, on ctx's
// device, that finds the other ranks through id. It returns once every rank
// has joined, so the ranks call it from different goroutines, processes or
// hosts, or from one goroutine inside Group. Needs NCCL 2.23 or later.
func NewComm(ctx *cuda.Context, id UniqueID, nranks, rank int) (*Comm, error) {
	const op = "NewComm"
	if err := checkRank(op, ctx, nranks, rank); err != nil {
		return nil, err
	}
	if err := open(op); err != nil {
		return nil, err
	}
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	// NCCL reads the id while the call runs: on the heap, it cannot move.
	idp, handle := new(UniqueID), new(clib.Comm)
	*idp = id
	err := bound(op, ctx, func() error {
		return check(op, "ncclCommInitRankScalable", clib.CommInitRankScalable(handle, int32(nranks), int32(rank), 1, (*clib.UniqueID)(idp), nil))
	})
	if err != nil {
		return nil, err
	}
	return newComm(ctx, *handle, rank, nranks, false), nil
}

// checkID refuses the zero UniqueID, which names no rank 0 to meet: NCCL
// would look for one at no address.
func checkID(op string, id UniqueID) error {
	if id == (UniqueID{}) {
		return errorf(op, cuda.ErrInvalidValue, "a zero UniqueID: rank 0 makes one with NewUniqueID and hands it to the others")
	}
	return nil
}

// checkRank checks the arguments that make one rank of a communicator.
func checkRank(op string, ctx *cuda.Context, nranks, rank int) error {
	switch {
	case ctx == nil:
		return errorf(op, cuda.ErrInvalidValue, "nil *cuda.Context")
	case nranks < 1 || nranks > 1<<30:
		// Too many names the bound too, not only the least.
		return errorf(op, cuda.ErrInvalidValue, "%d ranks: want at least 1 and at most %d", nranks, 1<<30)
	case rank < 0 || rank >= nranks:
		return errorf(op, cuda.ErrInvalidValue, "rank %d out of range [0, %d)", rank, nranks)
	}
	return nil
}

// config is the head of NCCL's ncclConfig_t as NCCL 2.14 defined it (the
// struct is versioned and only grows: NCCL reads the fields of the version
// it is given), enough to ask for a non-blocking initialization.
type config struct {
	size                                       uintptr
	magic, version                             uint32
	blocking, cgaClusterSize, minCTAs, maxCTAs int32
	netName                                    uintptr
	splitShare                                 int32
}

// unset is NCCL_CONFIG_UNDEF_INT: NCCL's default for the field.
const unset = math.MinInt32

// NewCommContext is NewComm bounded by ctx: NCCL initializes the rank
// without blocking (ncclCommInitRankConfig with blocking = 0), and
// NewCommContext waits for it, asking NCCL's state every millisecond
// (ncclCommGetAsyncError). When ctx ends first, the half-made
// communicator is aborted (ncclCommAbort) and the error wraps ctx's
// error (context.Canceled or context.DeadlineExceeded); an initialization
// that fails (a rank that died: ResultRemoteError, ResultTimeout) returns NCCL's result.
// Needs NCCL 2.23 or later.
//
// The communicator stays non-blocking in NCCL (and so do those Split makes
// of it): NCCL may leave any call on it in progress. Each gocuda call
// waits for that (ncclCommGetAsyncError), and Group for every
// communicator it named, so that they return with their work queued on
// the stream, as they do on a communicator NewComm made.
func NewCommContext(ctx context.Context, cc *cuda.Context, id UniqueID, nranks, rank int) (*Comm, error) {
	const op = "NewCommContext"
	if ctx == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "nil context.Context")
	}
	if err := checkRank(op, cc, nranks, rank); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, errorf(op, err, "done before the initialization began")
	}
	if err := open(op); err != nil {
		return nil, err
	}
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	// NCCL reads the id and the configuration while the call runs: on the
	// heap, they cannot move.
	idp, handle := new(UniqueID), new(clib.Comm)
	*idp = id
	cfg := &config{magic: 0xcafebeef, version: 21400, blocking: 0, cgaClusterSize: unset, minCTAs: unset, maxCTAs: unset, splitShare: unset}
	cfg.size = unsafe.Sizeof(*cfg)
	err := bound(op, cc, func() error {
		return check(op, "ncclCommInitRankScalable", clib.CommInitRankScalable(handle, int32(nranks), int32(rank), 1, (*clib.UniqueID)(idp), unsafe.Pointer(cfg)))
	})
	if err != nil && !errors.Is(err, ResultInProgress) {
		return nil, err
	}
	for {
		var r Result
		if err := bound(op, cc, func() (err error) { r, err = asyncState(op, *handle); return err }); err != nil {
			abort(cc, *handle)
			return nil, err
		}
		switch r {
		case ResultSuccess:
			return newComm(cc, *handle, rank, nranks, true), nil
		case ResultInProgress:
		default:
			abort(cc, *handle)
			return nil, resultError(op, "ncclCommInitRankScalable", r)
		}
		select {
		case <-ctx.Done():
			start := time.Now()
			aerr := abort(cc, *handle)
			return nil, &Error{Op: op, Err: ctx.Err(), Detail: withAbortErr(fmt.Sprintf("rank %d of %d: the other ranks had not all joined; aborted in %v", rank, nranks, time.Since(start).Round(time.Millisecond)), aerr)}
		case <-time.After(time.Millisecond):
		}
	}
}

// abort aborts the half-made communicator h.
func abort(cc *cuda.Context, h clib.Comm) error {
	const op = "NewCommContext"
	return bound(op, cc, func() error { return check(op, "ncclCommAbort", clib.CommAbort(h)) })
}

// withAbortErr appends a failed abort's error to detail.
func withAbortErr(detail string, err error) string {
	if err == nil {
		return detail
	}
	return detail + " (and the abort failed: " + err.Error() + ")"
}

// NoColor is the color of a rank that joins none of Split's communicators.
const NoColor = -1

// Split makes communicators of c's ranks by color (ncclCommSplit), such
// as the tensor-parallel and the data-parallel groups of a job: every rank
// of c calls it, each from its own goroutine or process, and the ranks of
// one color form one communicator, ordered by key (ties by their rank in
// c), on the same devices. A rank passing NoColor gets nil and no error.
// Close the new communicators as any other; c stays usable.
func (c *Comm) Split(color, key int) (*Comm, error) {
	const op = "Comm.Split"
	if err := c.valid(op); err != nil {
		return nil, err
	}
	if color < NoColor || color > math.MaxInt32 || key < math.MinInt32 || key > math.MaxInt32 {
		return nil, errorf(op, cuda.ErrInvalidValue, "color %d, key %d: want a color of 0 or more (or NoColor) and keys that fit 32 bits", color, key)
	}
	if err := c.hold(op); err != nil {
		return nil, err
	}
	defer c.life.Release()
	handle, rank, size := new(clib.Comm), new(int32), new(int32)
	err := bound(op, c.ctx, func() error {
		// The new communicator has c's configuration (none is given): a
		// split of a non-blocking one is made without blocking, done once
		// NCCL's state of c, and then of the new one, is no longer in
		// progress (NCCL 2.28 leaves c in progress, and the new one's rank
		// and size unset until then).
		err := check(op, "ncclCommSplit", clib.CommSplit(c.handle, int32(color), int32(key), handle, nil))
		if c.nonBlocking && (err == nil || errors.Is(err, ResultInProgress)) {
			err = c.settle(op, "ncclCommSplit", c.handle)
			if err == nil && *handle != 0 {
				err = c.settle(op, "ncclCommSplit", *handle)
			}
			if err != nil && *handle != 0 {
				clib.CommAbort(*handle)
				*handle = 0
			}
		}
		if err != nil || *handle == 0 {
			return err
		}
		err = errors.Join(check(op, "ncclCommUserRank", clib.CommUserRank(*handle, rank)),
			check(op, "ncclCommCount", clib.CommCount(*handle, size)))
		if err != nil {
			clib.CommDestroy(*handle)
		}
		return err
	})
	if err != nil || *handle == 0 {
		return nil, err
	}
	return newComm(c.ctx, *handle, int(*rank), int(*size), c.nonBlocking), nil
}

// Rank returns the rank of c in its communicator.
func (c *Comm) Rank() int {
	if c == nil {
		return 0
	}
	return c.rank
}

// Size returns how many ranks the communicator has.
func (c *Comm) Size() int {
	if c == nil {
		return 0
	}
	return c.size
}

// Context returns the context of the rank's device.
func (c *Comm) Context() *cuda.Context {
	if c == nil {
		return nil
	}
	return c.ctx
}

// Close frees the rank's resources (ncclCommDestroy), after its queued
// collectives. Closing twice, or a nil Comm, is a no-op; if NCCL refuses,
// the communicator stays usable and Close (or Abort) may be called again.
func (c *Comm) Close() error { return c.destroy("Comm.Close", false) }

// Abort frees the rank's resources at once, abandoning collectives in
// flight (ncclCommAbort): for giving up on a rank that failed. On a
// non-blocking communicator, calls of other goroutines still waiting for
// NCCL to finish one of theirs (see NewCommContext) give up, returning an
// error wrapping cuda.ErrClosed, instead of holding the abort up.
func (c *Comm) Abort() error {
	if c == nil {
		return nil
	}
	c.aborting.Store(true)
	err := c.destroy("Comm.Abort", true)
	if err != nil && c.life.Status() == lifetime.Held {
		c.aborting.Store(false) // NCCL refused: the communicator is usable again
	}
	return err
}

// destroy is Close, or Abort where abort is set.
func (c *Comm) destroy(op string, abort bool) error {
	if c == nil {
		return nil
	}
	if err := c.valid(op); err != nil {
		return err
	}
	name, fn := "ncclCommDestroy", clib.CommDestroy
	if abort {
		name, fn = "ncclCommAbort", clib.CommAbort
	}
	_, err := c.life.Close(func() (bool, error) {
		// Close deregisters the buffers first, each one for good once
		// NCCL let go of it. Abort drops them only once NCCL has dropped
		// them with the communicator: an abort NCCL refuses leaves them
		// registered, as they still are in NCCL.
		if !abort {
			if err := c.closeRegistrations(op); err != nil {
				return false, err
			}
		}
		// NCCL finds the device through the current context; with the
		// context closed, it makes one current itself.
		if err := releasing(op, c.ctx, func() error { return check(op, name, fn(c.handle)) }); err != nil {
			return false, err
		}
		if abort {
			c.dropRegistrations()
		}
		return true, nil
	})
	return err
}

// Err returns the communicator's asynchronous error
// (ncclCommGetAsyncError): nil while it is sound, else an error matching
// NCCL's code with errors.Is (ResultRemoteError when another rank failed or
// left, ResultTimeout, ResultSystemError, ...). Collectives in flight on a failed
// communicator may never finish: Abort it. Wait does both.
func (c *Comm) Err() error { return c.heldAsyncError("Comm.Err") }

// heldAsyncError is Err for op.
func (c *Comm) heldAsyncError(op string) error {
	if err := c.hold(op); err != nil {
		return err
	}
	defer c.life.Release()
	return c.asyncError(op)
}

func (c *Comm) asyncError(op string) error {
	var r Result
	if err := bound(op, c.ctx, func() (err error) { r, err = asyncState(op, c.handle); return err }); err != nil {
		return err
	}
	if r != ResultSuccess && r != ResultInProgress {
		return resultError(op, "ncclCommGetAsyncError", r)
	}
	return nil
}

// Wait waits until the work queued on s is done, as s.Synchronize does,
// while it watches the communicator: when NCCL reports an asynchronous
// error (another rank failed, a timeout), or ctx ends first, it aborts
// the communicator (ncclCommAbort), so that the collectives stuck on it
// end, and returns the error, which matches NCCL's code or ctx's error.
// What the stream queued after the collectives may then have failed too.
func (c *Comm) Wait(ctx context.Context, s *cuda.Stream) error {
	const op = "Comm.Wait"
	if ctx == nil || s == nil {
		return errorf(op, cuda.ErrInvalidValue, "nil context.Context or *cuda.Stream")
	}
	if err := c.valid(op); err != nil {
		return err
	}
	if err := c.checkStream(op, s); err != nil {
		return err
	}
	for pause := 10 * time.Microsecond; ; pause = min(2*pause, time.Millisecond) {
		done, err := s.Query()
		if err != nil {
			// An error of the call the user made, not of Stream.Query.
			return calledas.Op(op, err)
		}
		// Checked after the stream too: collectives a failure ended may
		// leave it done, with results that are not.
		if err := c.heldAsyncError(op); err != nil {
			if errors.Is(err, cuda.ErrClosed) {
				return err
			}
			aerr := c.Abort()
			return &Error{Op: op, Err: err, Detail: withAbortErr("the communicator is aborted", aerr)}
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			aerr := c.Abort()
			return &Error{Op: op, Err: ctx.Err(), Detail: withAbortErr("the stream's work had not finished; the communicator is aborted", aerr)}
		case <-time.After(pause):
		}
	}
}

// Group runs fn between ncclGroupStart and ncclGroupEnd, on one OS thread:
// the collectives (and NewComm calls) fn makes on that goroutine are queued
// together, so that one goroutine can drive several ranks. The group ends
// even when fn fails; Group returns fn's error, and ncclGroupEnd's. NCCL
// queues the group's work when it ends: free no buffer passed to a
// collective in fn before Group returns. A panic of fn ends the group too,
// then goes on.
func Group(fn func() error) error { return group("Group", fn) }

// group is Group for op.
func group(op string, fn func() error) error {
	if fn == nil {
		return errorf(op, cuda.ErrInvalidValue, "nil function")
	}
	if err := open(op); err != nil {
		return err
	}
	runtime.LockOSThread() // NCCL's group state is per thread
	defer runtime.UnlockOSThread()
	grouped.open.Add(1)
	defer endGroup()
	if err := check(op, "ncclGroupStart", clib.GroupStart()); err != nil {
		return err
	}
	returned := false
	defer func() {
		if !returned {
			// fn panicked: end NCCL's group of this thread all the same,
			// as for an fn that fails, or every later NCCL call on the
			// thread would be grouped, and queued by no ncclGroupEnd.
			clib.GroupEnd()
		}
	}()
	ferr := fn()
	returned = true
	eerr := check(op, "ncclGroupEnd", clib.GroupEnd())
	if errors.Is(eerr, ResultInProgress) {
		// The group's non-blocking communicators are in progress: its
		// work is queued once they are not.
		eerr = settleGrouped(op)
	}
	return errors.Join(ferr, eerr)
}

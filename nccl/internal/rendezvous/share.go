// Package rendezvous is how the processes of an NCCL job meet to share
// their communicator's unique id, with no NCCL call of its own: rank 0
// serves the id over TCP and the other ranks fetch it (port.go), or,
// under torchrun, they meet in the store torchrun's agent serves, a
// client of PyTorch's TCPStore protocol (torchstore.go). Package nccl is
// its face (Launch, LaunchFromEnv, ShareUniqueID): it makes the id and
// turns this package's errors (Error) into its own.
package rendezvous

import (
	"context"
	"fmt"
	"net"
	"time"
)

// ID is the id the ranks share: an ncclUniqueId, which this package only
// carries.
type ID [128]byte

// Share gives every rank of j the same ID, as nccl.ShareUniqueID
// documents: rank 0 makes it with newID and serves it, or puts it in
// torchrun's store, and the other ranks fetch it. A ctx with no deadline
// is given timeout. Its errors are *Error, except newID's, returned as
// they are; rank 0 returns its id beside an error of serving it.
func Share(ctx context.Context, j Job, timeout time.Duration, newID func() (ID, error)) (ID, error) {
	switch {
	case ctx == nil:
		return ID{}, invalid("nil context.Context")
	case j.Size < 1 || j.Size > 1<<30:
		// Too many names the bound too, not only the least.
		return ID{}, invalid("size %d: want at least 1 and at most %d", j.Size, 1<<30)
	case j.Rank < 0 || j.Rank >= j.Size:
		return ID{}, invalid("rank %d out of range [0, %d)", j.Rank, j.Size)
	}
	if _, _, err := net.SplitHostPort(j.Addr); err != nil {
		return ID{}, invalid("address %q: want host:port (%v)", j.Addr, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	switch {
	case j.Size == 1:
		return newID()
	case j.TorchStore:
		return shareInStore(ctx, j, newID)
	case j.Rank == 0:
		id, err := newID()
		if err != nil {
			return ID{}, err
		}
		return id, serve(ctx, j, id)
	}
	return fetch(ctx, j)
}

// failed is an error of ranks that could not meet, carrying ctx's error
// once it is done.
func failed(ctx context.Context, format string, args ...any) error {
	return &Error{Ctx: ctx.Err(), Detail: fmt.Sprintf(format, args...)}
}

package rendezvous_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocuda/cuda/nccl/internal/rendezvous"
)

// made counts the ids newID made, so that each is another.
var made atomic.Uint64

// newID stands for NCCL's ncclGetUniqueId: an id unlike every other, of
// this process (its count) and of others (random bytes).
func newID() (rendezvous.ID, error) {
	var id rendezvous.ID
	binary.LittleEndian.PutUint64(id[:], made.Add(1))
	for i := 8; i < len(id); i += 8 {
		binary.LittleEndian.PutUint64(id[i:], rand.Uint64())
	}
	return id, nil
}

// freeAddr returns a loopback address with a port nothing listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// share runs Share for the ranks given of a job of size ranks at addr,
// each on a goroutine, and returns their ids and errors by rank.
func share(ctx context.Context, addr string, size int, ranks ...int) ([]rendezvous.ID, []error) {
	return shareJob(ctx, rendezvous.Job{Size: size, Addr: addr}, ranks...)
}

// shareJob is share for the ranks of j, a Job but for its Rank.
func shareJob(ctx context.Context, j rendezvous.Job, ranks ...int) ([]rendezvous.ID, []error) {
	ids, errs := make([]rendezvous.ID, j.Size), make([]error, j.Size)
	var wg sync.WaitGroup
	for _, r := range ranks {
		wg.Go(func() {
			j := j
			j.Rank = r
			ids[r], errs[r] = rendezvous.Share(ctx, j, defaultTimeout, newID)
		})
	}
	wg.Wait()
	return ids, errs
}

// defaultTimeout is what Share gives a context with no deadline in the
// tests, whose contexts all have one.
const defaultTimeout = time.Minute

// sameIDs fails t unless every rank met and got rank 0's id.
func sameIDs(t *testing.T, ids []rendezvous.ID, errs []error) {
	t.Helper()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for r := range ids {
		if ids[r] != ids[0] || ids[r] == (rendezvous.ID{}) {
			t.Fatalf("rank %d got another id than rank 0's", r)
		}
	}
}

// wantFailed fails t unless err is an *Error of ranks that could not
// meet, matching also (when not nil) and saying want.
func wantFailed(t *testing.T, err error, want string, also error) {
	t.Helper()
	var e *rendezvous.Error
	if !errors.As(err, &e) || e.Invalid || also != nil && !errors.Is(err, also) || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v; want a failed rendezvous (and %v) saying %q", err, also, want)
	}
}

// wantInvalid fails t unless err is an *Error of input that cannot be,
// saying want.
func wantInvalid(t *testing.T, err error, want string) {
	t.Helper()
	var e *rendezvous.Error
	if !errors.As(err, &e) || !e.Invalid || e.Ctx != nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v; want input that cannot be, saying %q", err, want)
	}
}

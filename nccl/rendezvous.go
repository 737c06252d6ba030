package nccl

import (
	"context"
	"errors"
	"os"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nccl/internal/rendezvous"
)

// ErrRendezvous is what the errors of ShareUniqueID wrap when the ranks
// could not meet: rank 0 unreachable, a rank that never came, a rank that
// died or was refused. An error of a rendezvous that ran out of time or
// was cancelled also matches context.DeadlineExceeded or context.Canceled.
var ErrRendezvous = errors.New("rendezvous failed")

// DefaultRendezvousTimeout bounds a rendezvous whose context has no
// deadline: the time the slowest rank may take to start.
const DefaultRendezvousTimeout = 5 * time.Minute

// DefaultPort is the port of rank 0's rendezvous when MASTER_PORT is not
// set: torchrun's default.
const DefaultPort = 29500

// Launch is what a job launcher told this process: its rank among Size
// processes, its rank among those of its host (the device to use, as a
// rule), and where rank 0 serves the rendezvous. LaunchFromEnv reads it.
type Launch struct {
	Rank, Size, LocalRank int
	// Addr is rank 0's host and port, "host:port": rank 0 listens on the
	// port, the other ranks connect to it (unless TorchStore).
	Addr string
	// Launcher names the variables Rank and Size came from: "torchrun"
	// (RANK, WORLD_SIZE: torchrun, Kubernetes JobSet and the PyTorch
	// operator), "openmpi" (OMPI_COMM_WORLD_*), "pmi" (PMI_RANK, PMI_SIZE:
	// MPICH, Intel MPI) or "slurm" (SLURM_PROCID, SLURM_NTASKS).
	Launcher string
	// TorchStore reports that Addr is where torchrun's agent serves its
	// store (PyTorch's TCPStore), which torchrun says by setting
	// TORCHELASTIC_USE_AGENT_STORE=True: the port is the agent's, so the
	// ranks meet in that store, as PyTorch's ranks do, and rank 0 does
	// not listen. It needs the store of PyTorch 2.4 or later.
	TorchStore bool

	// attempt names the job's attempt in torchrun's store: its run id and
	// restart count, so that workers torchrun restarts never read the id
	// of the attempt before.
	attempt string
}

// LaunchFromEnv reads the process's rank, the job's size and rank 0's
// address from the variables launchers set: RANK, WORLD_SIZE and
// LOCAL_RANK (torchrun, JobSet), else OMPI_COMM_WORLD_RANK, _SIZE and
// _LOCAL_RANK (mpirun of Open MPI), else PMI_RANK, PMI_SIZE and
// MPI_LOCALRANKID, else SLURM_PROCID, SLURM_NTASKS and SLURM_LOCALID (srun).
// The address is MASTER_ADDR and MASTER_PORT (DefaultPort when unset),
// which torchrun sets and other launchers pass on (mpirun -x MASTER_ADDR).
// A local rank not set is 0. TORCHELASTIC_USE_AGENT_STORE=True (torchrun's)
// sets TorchStore, and TORCHELASTIC_RUN_ID and TORCHELASTIC_RESTART_COUNT
// name the attempt.
func LaunchFromEnv() (Launch, error) { return launchFrom(os.Getenv) }

func launchFrom(getenv func(string) string) (Launch, error) {
	j, err := rendezvous.FromEnv(getenv, DefaultPort)
	if err != nil {
		return Launch{}, rendezvousError("LaunchFromEnv", err)
	}
	return Launch{Rank: j.Rank, Size: j.Size, LocalRank: j.LocalRank, Addr: j.Addr,
		Launcher: j.Launcher, TorchStore: j.TorchStore, attempt: j.Attempt}, nil
}

// job is l as package rendezvous takes it.
func (l Launch) job() rendezvous.Job {
	return rendezvous.Job{Rank: l.Rank, Size: l.Size, LocalRank: l.LocalRank, Addr: l.Addr,
		Launcher: l.Launcher, TorchStore: l.TorchStore, Attempt: l.attempt}
}

// rendezvousError turns an error of package rendezvous into an Error of op:
// input that cannot be matches cuda.ErrInvalidValue, ranks that could not
// meet ErrRendezvous (and the context's error, when it ended). NCCL's
// errors, of the id's making, pass as they are.
func rendezvousError(op string, err error) error {
	e, ok := err.(*rendezvous.Error)
	switch {
	case err == nil:
		return nil
	case !ok:
		return err
	case e.Invalid:
		return errorf(op, cuda.ErrInvalidValue, "%s", e.Detail)
	case e.Ctx != nil:
		return errorf(op, errors.Join(ErrRendezvous, e.Ctx), "%s", e.Detail)
	}
	return errorf(op, ErrRendezvous, "%s", e.Detail)
}

// NewCommFromLaunch makes this process's rank of a communicator of l.Size
// ranks on ctx's device: rank 0 makes a UniqueID and hands it to the
// others over TCP at l.Addr (ShareUniqueID), then every rank joins
// (NewCommContext). The context bounds both: cancelling it aborts a
// communicator half made. A program started by
// torchrun or mpirun:
//
//	l, err := nccl.LaunchFromEnv()
//	ctx, s, err := cuda.Open(l.LocalRank)
//	comm, err := nccl.NewCommFromLaunch(context.Background(), ctx, l)
func NewCommFromLaunch(ctx context.Context, cc *cuda.Context, l Launch) (*Comm, error) {
	if cc == nil {
		return nil, errorf("NewCommFromLaunch", cuda.ErrInvalidValue, "nil *cuda.Context")
	}
	id, err := ShareUniqueID(ctx, l)
	if err != nil {
		return nil, err
	}
	return NewCommContext(ctx, cc, id, l.Size, l.Rank)
}

// ShareUniqueID gives every rank of l the same UniqueID: rank 0 makes it
// (NewUniqueID) and serves it on l.Addr's port until each other rank has
// fetched it; the other ranks connect to l.Addr, trying again while rank 0
// is not yet listening. Rank 0 refuses a rank that says another size, a
// rank out of range, or one that came twice. It returns an error wrapping
// ErrRendezvous, and naming the address and the ranks missing, when the
// ranks have not all met by the context's deadline (or
// DefaultRendezvousTimeout), and at once when ctx is cancelled.
//
// Under torchrun (l.TorchStore), whose agent already listens on l.Addr,
// the ranks meet in the agent's store instead: rank 0 sets the id there,
// under keys of this job's attempt and of this rendezvous (the first,
// second, ... that the process makes: every rank must call ShareUniqueID,
// or NewCommFromLaunch, the same number of times, in the same order), and
// the others read it; what is refused and the errors are as above.
//
// Anyone who can reach the port while rank 0 serves can fetch the id, as
// with torchrun's store: run jobs on a network of their own.
func ShareUniqueID(ctx context.Context, l Launch) (UniqueID, error) {
	id, err := rendezvous.Share(ctx, l.job(), DefaultRendezvousTimeout, func() (rendezvous.ID, error) {
		id, err := NewUniqueID()
		return rendezvous.ID(id), err
	})
	return UniqueID(id), rendezvousError("ShareUniqueID", err)
}

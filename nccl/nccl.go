// Package nccl runs collectives (all-reduce, broadcast, reduce, all-gather,
// reduce-scatter, all-to-all) and point-to-point sends and receives across
// GPUs on gocuda's DeviceBuffers and Streams, with
// NVIDIA's NCCL library, opened at run time like the driver: nothing is
// needed to build, and libnccl only where a communicator is made.
//
// A Comm is one rank of a communicator. NewComms makes one per device for
// the GPUs of one process; NewComm makes one rank of a communicator that
// spans processes or hosts, which find each other through a UniqueID that
// one of them makes (NewUniqueID) and hands to the others (it marshals to
// text). Collectives are queued on a stream of the rank's context and run
// when every rank has queued its part; Stream.Synchronize waits for them.
//
// Every collective takes its destination before its source, as Go's
// copy(dst, src) and PyTorch's all_gather_into_tensor(output, input) do,
// and the stream last: AllReduce(c, dst, src, Sum, s), in place when dst
// is src. NCCL's C functions take the two the other way round, the send
// buffer first. Send(c, src, peer, s) and Recv(c, dst, peer, s) take one
// buffer each.
//
// Comm.Split makes communicators of a communicator's ranks by color, as
// the tensor- and data-parallel groups of a job are made.
//
// NewCommContext is NewComm bounded by a context.Context: NCCL initializes
// without blocking, and when the context ends first the half-made
// communicator is aborted.
//
// A job started by a launcher (torchrun, Kubernetes JobSet, mpirun, srun)
// needs no code to hand the id round: LaunchFromEnv reads the rank, the
// size and rank 0's address from the variables the launcher set, and
// NewCommFromLaunch has rank 0 serve the id over TCP to the others
// (ShareUniqueID), or, under torchrun, put it in the store torchrun's
// agent serves, with a deadline, and an error naming the address or the
// missing ranks when they cannot meet.
//
// One goroutine queuing the collectives of several ranks must do so inside
// Group, or each rank's call would wait for the others.
//
// On two H200s joined by NVLink, an all-reduce moved what PyTorch's
// torch.distributed moved in the same run from 16 MiB up
// (docs/performance.md). On machines
// others share, keep NVLink multicast off: NCCL_NVLS_ENABLE=0.
//
// The library is looked for as libnccl.so.2 and libnccl.so on the loader's
// path; GOCUDA_LIBNCCL names another file (such as the one the nvidia-nccl
// Python package installs). NewComm needs NCCL 2.23 or later.
package nccl

//go:generate go run ../internal/driver/gen -in ../internal/lib/nccl/status.txt -backend lib-public -pkg nccl -out zstatus.go

import (
	"errors"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
	"github.com/gocuda/cuda/internal/dl"
	clib "github.com/gocuda/cuda/internal/lib/nccl"
)

// EnvLibrary names the environment variable that overrides which NCCL
// library is opened.
const EnvLibrary = "GOCUDA_LIBNCCL"

// lib is NCCL, opened once per process by the first call that needs it,
// with the functions of internal/lib/nccl: a file that lacks
// ncclGetVersion or ncclGetErrorString is not NCCL, and the others
// (ncclCommSplit, ncclCommRegister, ncclMemAlloc, ... of newer NCCLs)
// fail only their own calls.
var lib = dl.Lazy{
	Library: dl.Library{
		Name:    "NCCL",
		Env:     EnvLibrary,
		Sonames: []string{"libnccl.so.2", "libnccl.so"},
		// No DLLs: NCCL has no Windows build.
		Wheels:  []string{"cu13/lib", "nccl/lib"},
		Install: "install NCCL (libnccl2, or pip install nvidia-nccl-cu13)",
		Missing: cuda.ErrNotSupported,
	},
	Table: clib.Table,
}

// Library returns the path of the NCCL library opened, opening it if
// needed.
func Library() (string, error) {
	if err := open("Library"); err != nil {
		return "", err
	}
	return lib.Path(), nil
}

// Version returns the NCCL version, such as 2.28.3.
func Version() (cuda.Version, error) {
	const op = "Version"
	if err := open(op); err != nil {
		return cuda.Version{}, err
	}
	var v int32
	if err := check(op, "ncclGetVersion", clib.GetVersion(&v)); err != nil {
		return cuda.Version{}, err
	}
	// NCCL_VERSION: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z since.
	code := int(v)
	if code < 20900 {
		return cuda.Version{Major: code / 1000, Minor: code % 1000 / 100, Patch: code % 100}, nil
	}
	return cuda.Version{Major: code / 10000, Minor: code % 10000 / 100, Patch: code % 100}, nil
}

// bound runs fn with ctx current on the calling goroutine's OS thread
// (Context.Do), as NCCL's calls need it. A bind that fails is an error of
// op, the call the user made, not of Context.Do.
func bound(op string, ctx *cuda.Context, fn func() error) error {
	_, err := bind(op, ctx, fn)
	return err
}

// releasing is bound for a call that releases what NCCL holds: with ctx
// closed it calls fn unbound, as NCCL then makes a context of the device
// current itself, so that what was made in a context can be released
// after the context is closed.
func releasing(op string, ctx *cuda.Context, fn func() error) error {
	ran, err := bind(op, ctx, fn)
	if !ran && errors.Is(err, cuda.ErrClosed) {
		return fn()
	}
	return err
}

// bind is bound, reporting whether fn ran.
func bind(op string, ctx *cuda.Context, fn func() error) (ran bool, err error) {
	err = ctx.Do(func() error {
		ran = true
		return fn()
	})
	if ran {
		return true, err
	}
	return false, calledas.Op(op, err)
}

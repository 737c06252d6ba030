package nccl

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	cuda "github.com/gocuda/cuda"
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

// launchers are the variables each launcher sets, in the order they are
// looked for: rank, size, local rank.
var launchers = []struct{ name, rank, size, local string }{
	{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
	{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
	{"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
	{"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
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
	const op = "LaunchFromEnv"
	var l Launch
	var tried []string
	for _, v := range launchers {
		if getenv(v.rank) == "" && getenv(v.size) == "" {
			tried = append(tried, v.rank+"/"+v.size)
			continue
		}
		l.Launcher = v.name
		var err error
		if l.Size, err = envInt(getenv, v.size, 1); err != nil {
			return Launch{}, errorf(op, cuda.ErrInvalidValue, "%v", err)
		}
		if l.Rank, err = envInt(getenv, v.rank, 0); err != nil {
			return Launch{}, errorf(op, cuda.ErrInvalidValue, "%v", err)
		}
		if l.Rank >= l.Size {
			return Launch{}, errorf(op, cuda.ErrInvalidValue, "%s=%d is not below %s=%d", v.rank, l.Rank, v.size, l.Size)
		}
		if getenv(v.local) != "" {
			if l.LocalRank, err = envInt(getenv, v.local, 0); err != nil {
				return Launch{}, errorf(op, cuda.ErrInvalidValue, "%v", err)
			}
		}
		break
	}
	if l.Launcher == "" {
		return Launch{}, errorf(op, cuda.ErrInvalidValue, "no launcher's variables: none of %s is set (start the program with torchrun, mpirun or srun, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)", strings.Join(tried, ", "))
	}
	host := getenv("MASTER_ADDR")
	if host == "" {
		return Launch{}, errorf(op, cuda.ErrInvalidValue, "%s set the rank and size, but MASTER_ADDR (rank 0's host) is not set", l.Launcher)
	}
	port := DefaultPort
	if getenv("MASTER_PORT") != "" {
		var err error
		if port, err = envInt(getenv, "MASTER_PORT", 1); err != nil || port > 65535 {
			return Launch{}, errorf(op, cuda.ErrInvalidValue, "MASTER_PORT=%q: want a port from 1 to 65535", getenv("MASTER_PORT"))
		}
	}
	l.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	if getenv("TORCHELASTIC_USE_AGENT_STORE") == "True" {
		l.TorchStore = true
		l.attempt = getenv("TORCHELASTIC_RUN_ID") + "/" + getenv("TORCHELASTIC_RESTART_COUNT")
	}
	return l, nil
}

// envInt reads the integer of at least least in the variable name.
func envInt(getenv func(string) string, name string, least int) (int, error) {
	s := getenv(name)
	n, err := strconv.Atoi(s)
	if err != nil || n < least || n > 1<<30 {
		return 0, fmt.Errorf("%s=%q: want a whole number of at least %d", name, s, least)
	}
	return n, nil
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

// The rendezvous's messages. A rank connects to rank 0 and sends hello:
// the magic, its rank and the size it was told (big-endian uint32s). Rank
// 0 answers with a status byte, then the UniqueID (status ok) or a reason
// of up to 255 bytes (status refused).
const (
	magic         = "gocuda-nccl-rendezvous 1\n"
	statusOK      = 0
	statusRefused = 1
)

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
	const op = "ShareUniqueID"
	switch {
	case ctx == nil:
		return UniqueID{}, errorf(op, cuda.ErrInvalidValue, "nil context.Context")
	case l.Size < 1 || l.Size > 1<<30:
		return UniqueID{}, errorf(op, cuda.ErrInvalidValue, "size %d: want at least 1", l.Size)
	case l.Rank < 0 || l.Rank >= l.Size:
		return UniqueID{}, errorf(op, cuda.ErrInvalidValue, "rank %d out of range [0, %d)", l.Rank, l.Size)
	}
	if _, _, err := net.SplitHostPort(l.Addr); err != nil {
		return UniqueID{}, errorf(op, cuda.ErrInvalidValue, "address %q: want host:port (%v)", l.Addr, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultRendezvousTimeout)
		defer cancel()
	}
	switch {
	case l.Size == 1:
		return NewUniqueID()
	case l.TorchStore:
		return shareInStore(ctx, op, l)
	case l.Rank == 0:
		id, err := NewUniqueID()
		if err != nil {
			return UniqueID{}, err
		}
		return id, serve(ctx, op, l, id)
	}
	return fetch(ctx, op, l)
}

// failed is a rendezvous error: ErrRendezvous, and ctx's error once it is
// done.
func failed(ctx context.Context, op, format string, args ...any) error {
	sentinel := ErrRendezvous
	if err := ctx.Err(); err != nil {
		sentinel = errors.Join(ErrRendezvous, err)
	}
	return errorf(op, sentinel, format, args...)
}

// serve is rank 0's side: it listens on l.Addr's port, on every interface,
// and answers each rank's hello until all have the id.
func serve(ctx context.Context, op string, l Launch, id UniqueID) error {
	_, port, _ := net.SplitHostPort(l.Addr)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort("", port))
	if err != nil {
		return failed(ctx, op, "rank 0 cannot listen on port %s: %v", port, err)
	}
	defer ln.Close()
	// Close the listener when ctx ends, which ends Accept.
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	served := make([]bool, l.Size)
	served[0] = true
	left := l.Size - 1
	for left > 0 {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return failed(ctx, op, "rank 0 at %s: ranks %s did not come within the time given", l.Addr, missing(served))
			}
			return failed(ctx, op, "rank 0 at %s: %v", l.Addr, err)
		}
		if rank, ok := answer(ctx, conn, l.Size, served, id); ok {
			served[rank] = true
			left--
		}
	}
	return nil
}

// answer reads one hello from conn and sends the id, or the reason it is
// refused. It reports the rank served.
func answer(ctx context.Context, conn net.Conn, size int, served []bool, id UniqueID) (int, bool) {
	defer conn.Close()
	// A rank that connects and says nothing must not hold up the others.
	conn.SetDeadline(within(ctx, 10*time.Second))
	hello := make([]byte, len(magic)+8)
	if _, err := io.ReadFull(conn, hello); err != nil || string(hello[:len(magic)]) != magic {
		return 0, false // not a rank of ours, or it died: wait for another
	}
	rank := int(binary.BigEndian.Uint32(hello[len(magic):]))
	theirs := int(binary.BigEndian.Uint32(hello[len(magic)+4:]))
	var reason string
	switch {
	case theirs != size:
		reason = fmt.Sprintf("rank %d was told the job has %d ranks; rank 0 was told %d", rank, theirs, size)
	case rank <= 0 || rank >= size:
		reason = fmt.Sprintf("rank %d out of range [1, %d)", rank, size)
	case served[rank]:
		reason = fmt.Sprintf("rank %d came twice", rank)
	}
	if reason != "" {
		if len(reason) > 255 {
			reason = reason[:255]
		}
		conn.Write(append([]byte{statusRefused, byte(len(reason))}, reason...))
		return 0, false
	}
	if _, err := conn.Write(append([]byte{statusOK}, id[:]...)); err != nil {
		return 0, false // it died before reading: it may come again
	}
	return rank, true
}

// missing lists the ranks not served, the first few.
func missing(served []bool) string {
	var ranks []string
	for r, ok := range served {
		if !ok {
			if len(ranks) == 8 {
				ranks = append(ranks, "...")
				break
			}
			ranks = append(ranks, strconv.Itoa(r))
		}
	}
	return strings.Join(ranks, ", ")
}

// fetch is the other ranks' side: connect to rank 0 (again while it is not
// yet listening), say hello, read the id.
func fetch(ctx context.Context, op string, l Launch) (UniqueID, error) {
	var id UniqueID
	gaveUp, err := redial(ctx, l.Addr, func(conn net.Conn) (retry bool, err error) {
		id, retry, err = hello(ctx, op, conn, l)
		return retry, err
	})
	if gaveUp {
		return UniqueID{}, failed(ctx, op, "rank %d cannot reach rank 0 at %s within the time given: %v", l.Rank, l.Addr, err)
	}
	return id, err
}

// redial connects to addr and runs try on the connection, again after a
// pause (from 50 ms, doubling up to a second) while the connection fails
// or try asks for another, until ctx ends; it returns try's error, or,
// having given up as ctx ended, the last error. try owns the connection.
func redial(ctx context.Context, addr string, try func(net.Conn) (retry bool, err error)) (gaveUp bool, _ error) {
	var d net.Dialer
	wait := 50 * time.Millisecond
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			var retry bool
			if retry, err = try(conn); !retry {
				return false, err
			}
		}
		select {
		case <-ctx.Done():
			return true, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// within returns the deadline of a step that may take d at most, or less
// when ctx ends first.
func within(ctx context.Context, d time.Duration) time.Time {
	deadline := time.Now().Add(d)
	if c, ok := ctx.Deadline(); ok && c.Before(deadline) {
		return c
	}
	return deadline
}

// hello asks rank 0 for the id on conn. retry reports a failure worth
// another try (rank 0 closed the connection before answering: a listener
// from another job, or rank 0 dying and starting again).
func hello(ctx context.Context, op string, conn net.Conn, l Launch) (id UniqueID, retry bool, err error) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	msg := binary.BigEndian.AppendUint32([]byte(magic), uint32(l.Rank))
	msg = binary.BigEndian.AppendUint32(msg, uint32(l.Size))
	if _, err := conn.Write(msg); err != nil {
		return id, true, err
	}
	var status [1]byte
	if _, err := io.ReadFull(conn, status[:]); err != nil {
		return id, true, fmt.Errorf("rank 0 closed the connection before answering: %v", err)
	}
	if status[0] == statusOK {
		if _, err := io.ReadFull(conn, id[:]); err != nil {
			return id, true, fmt.Errorf("rank 0 closed the connection while sending the id: %v", err)
		}
		if bytes.Equal(id[:], make([]byte, len(id))) {
			return id, false, failed(ctx, op, "rank 0 at %s sent an empty id", l.Addr)
		}
		return id, false, nil
	}
	var n [1]byte
	io.ReadFull(conn, n[:])
	reason := make([]byte, n[0])
	io.ReadFull(conn, reason)
	return id, false, failed(ctx, op, "rank 0 at %s refused rank %d: %s", l.Addr, l.Rank, reason)
}

package rendezvous

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Job is what a job launcher told this process (nccl.Launch): its rank
// among Size processes, its rank among those of its host, where rank 0
// serves the rendezvous (or torchrun's agent its store) and which
// launcher said so.
type Job struct {
	Rank, Size, LocalRank int
	Addr                  string
	Launcher              string
	TorchStore            bool
	// Attempt names the job's attempt in torchrun's store: its run id and
	// restart count, so that workers torchrun restarts never read the id
	// of the attempt before.
	Attempt string
}

// launchers are the variables each launcher sets, in the order they are
// looked for: rank, size, local rank.
var launchers = []struct{ name, rank, size, local string }{
	{"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
	{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
	{"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
	{"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
}

// FromEnv reads the job from the variables launchers set, as
// nccl.LaunchFromEnv documents, through getenv; rank 0's port is
// defaultPort when MASTER_PORT is not set. Its errors are Invalid.
func FromEnv(getenv func(string) string, defaultPort int) (Job, error) {
	var j Job
	var tried []string
	for _, v := range launchers {
		if getenv(v.rank) == "" && getenv(v.size) == "" {
			tried = append(tried, v.rank+"/"+v.size)
			continue
		}
		j.Launcher = v.name
		var err error
		if j.Size, err = envInt(getenv, v.size, 1); err != nil {
			return Job{}, err
		}
		if j.Rank, err = envInt(getenv, v.rank, 0); err != nil {
			return Job{}, err
		}
		if j.Rank >= j.Size {
			return Job{}, invalid("%s=%d is not below %s=%d", v.rank, j.Rank, v.size, j.Size)
		}
		if getenv(v.local) != "" {
			if j.LocalRank, err = envInt(getenv, v.local, 0); err != nil {
				return Job{}, err
			}
		}
		break
	}
	if j.Launcher == "" {
		return Job{}, invalid("no launcher's variables: none of %s is set (start the program with torchrun, mpirun or srun, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)", strings.Join(tried, ", "))
	}
	host := getenv("MASTER_ADDR")
	if host == "" {
		return Job{}, invalid("%s set the rank and size, but MASTER_ADDR (rank 0's host) is not set", j.Launcher)
	}
	port := defaultPort
	if getenv("MASTER_PORT") != "" {
		var err error
		if port, err = envInt(getenv, "MASTER_PORT", 1); err != nil || port > 65535 {
			return Job{}, invalid("MASTER_PORT=%q: want a port from 1 to 65535", getenv("MASTER_PORT"))
		}
	}
	j.Addr = net.JoinHostPort(host, strconv.Itoa(port))
	if getenv("TORCHELASTIC_USE_AGENT_STORE") == "True" {
		j.TorchStore = true
		j.Attempt = getenv("TORCHELASTIC_RUN_ID") + "/" + getenv("TORCHELASTIC_RESTART_COUNT")
	}
	return j, nil
}

// envInt reads the integer of at least least in the variable name.
func envInt(getenv func(string) string, name string, least int) (int, error) {
	s := getenv(name)
	n, err := strconv.Atoi(s)
	if err != nil || n < least || n > 1<<30 {
		return 0, invalid("%s=%q: want a whole number of at least %d", name, s, least)
	}
	return n, nil
}

// invalid is an error of input that cannot be.
func invalid(format string, args ...any) error {
	return &Error{Invalid: true, Detail: fmt.Sprintf(format, args...)}
}

package rendezvous_test

import (
	"testing"

	"github.com/gocuda/cuda/nccl/internal/rendezvous"
)

func TestFromEnv(t *testing.T) {
	type job = rendezvous.Job
	for _, tt := range []struct {
		name string
		env  map[string]string
		want job
		err  string // a part of the error; "" for none
	}{
		{"torchrun", map[string]string{"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "MASTER_ADDR": "node0", "MASTER_PORT": "1234"},
			job{Rank: 3, Size: 8, LocalRank: 1, Addr: "node0:1234", Launcher: "torchrun"}, ""},
		{"torchrun with its agent's store", map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "node0", "MASTER_PORT": "29400",
			"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RUN_ID": "job7", "TORCHELASTIC_RESTART_COUNT": "2"},
			job{Rank: 1, Size: 2, Addr: "node0:29400", Launcher: "torchrun", TorchStore: true, Attempt: "job7/2"}, ""},
		{"torchrun without its agent's store", map[string]string{"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "node0", "TORCHELASTIC_USE_AGENT_STORE": "False"},
			job{Rank: 1, Size: 2, Addr: "node0:29500", Launcher: "torchrun"}, ""},
		{"openmpi, the default port", map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0", "MASTER_ADDR": "10.0.0.1"},
			job{Rank: 0, Size: 2, Addr: "10.0.0.1:29500", Launcher: "openmpi"}, ""},
		{"pmi", map[string]string{"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1", "MASTER_ADDR": "h", "MASTER_PORT": "9"},
			job{Rank: 1, Size: 2, LocalRank: 1, Addr: "h:9", Launcher: "pmi"}, ""},
		{"slurm, an IPv6 host", map[string]string{"SLURM_PROCID": "5", "SLURM_NTASKS": "6", "SLURM_LOCALID": "1", "MASTER_ADDR": "fe80::1", "MASTER_PORT": "7000"},
			job{Rank: 5, Size: 6, LocalRank: 1, Addr: "[fe80::1]:7000", Launcher: "slurm"}, ""},
		{"torchrun's variables first", map[string]string{"RANK": "1", "WORLD_SIZE": "2", "SLURM_PROCID": "0", "SLURM_NTASKS": "4", "MASTER_ADDR": "a"},
			job{Rank: 1, Size: 2, Addr: "a:29500", Launcher: "torchrun"}, ""},
		{"no launcher", map[string]string{"MASTER_ADDR": "a"}, job{}, "none of RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE"},
		{"no address", map[string]string{"RANK": "0", "WORLD_SIZE": "1"}, job{}, "MASTER_ADDR (rank 0's host) is not set"},
		{"rank beyond size", map[string]string{"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "a"}, job{}, "RANK=2 is not below WORLD_SIZE=2"},
		{"size missing", map[string]string{"RANK": "0", "MASTER_ADDR": "a"}, job{}, `WORLD_SIZE="": want a whole number of at least 1`},
		{"rank not a number", map[string]string{"RANK": "x", "WORLD_SIZE": "2", "MASTER_ADDR": "a"}, job{}, `RANK="x"`},
		{"negative local rank", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "-1", "MASTER_ADDR": "a"}, job{}, `LOCAL_RANK="-1"`},
		{"bad port", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "a", "MASTER_PORT": "70000"}, job{}, `MASTER_PORT="70000"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rendezvous.FromEnv(func(k string) string { return tt.env[k] }, 29500)
			if tt.err != "" {
				wantInvalid(t, err, tt.err)
				if got != (job{}) {
					t.Errorf("FromEnv = %+v beside the error, want the zero Job", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("FromEnv = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

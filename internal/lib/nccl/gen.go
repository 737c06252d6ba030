// Package nccl is NCCL's raw layer, generated from prototypes.txt and
// status.txt (internal/driver/gen's library backend): one Go function per
// C function, returning its Result, or Missing where the library opened
// lacks it (ncclGetErrorString and ncclGetLastError return a string and
// ok). Package github.com/gocuda/cuda/nccl opens the library (dl.Lazy of
// Table) and is the safe layer over these.
package nccl

//go:generate go run ../../driver/gen -in prototypes.txt -backend lib -pkg nccl -out zcalls.go
//go:generate go run ../../driver/gen -in status.txt -backend lib-status -pkg nccl -out zstatus.go

// Package nvrtc is NVRTC's raw layer, generated from prototypes.txt and
// status.txt (internal/driver/gen's library backend): one Go function per
// C function, returning its Result, or Missing where the library opened
// lacks it (GetErrorString returns a string and ok). Package
// github.com/gocuda/cuda/nvrtc opens the library (dl.Lazy of Table) and is
// the safe layer over these.
package nvrtc

//go:generate go run ../../driver/gen -in prototypes.txt -backend lib -pkg nvrtc -out zcalls.go
//go:generate go run ../../driver/gen -in status.txt -backend lib-status -pkg nvrtc -out zstatus.go

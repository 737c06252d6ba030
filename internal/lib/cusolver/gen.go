// Package cusolver is cuSOLVER's raw layer (its dense part, cusolverDn),
// generated from prototypes.txt and status.txt (internal/driver/gen's
// library backend): one Go function per C function, returning its Result,
// or Missing where the library opened lacks it. Package
// github.com/gocuda/cuda/cusolver opens the library (dl.Lazy of Table)
// and is the safe layer over these.
package cusolver

//go:generate go run ../../driver/gen -in prototypes.txt -backend lib -pkg cusolver -out zcalls.go
//go:generate go run ../../driver/gen -in status.txt -backend lib-status -pkg cusolver -out zstatus.go

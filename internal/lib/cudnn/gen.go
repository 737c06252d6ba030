// Package cudnn is cuDNN's raw layer (the legacy calls cuDNN 9 still
// exports: handles, tensor, filter, convolution, activation and pooling
// descriptors, the convolutions, pooling and batch normalization),
// generated from prototypes.txt and status.txt (internal/driver/gen's
// library backend): one Go function per C function, returning its Result,
// or Missing where the library opened lacks it. Package
// github.com/gocuda/cuda/cudnn opens the library (dl.Lazy of Table) and is
// the safe layer over these.
package cudnn

//go:generate go run ../../driver/gen -in prototypes.txt -backend lib -pkg cudnn -out zcalls.go
//go:generate go run ../../driver/gen -in status.txt -backend lib-status -pkg cudnn -out zstatus.go

// Package cublas is cuBLAS's and cuBLASLt's raw layer, generated from
// prototypes.txt and status.txt (internal/driver/gen's library backend):
// one Go function per C function, returning its Result, or Missing where
// the library opened lacks it. The two libraries are two files, each with
// its table: Table for libcublas, LtTable for libcublasLt, whose functions
// take the prefix Lt. Package github.com/gocuda/cuda/cublas opens each
// (a dl.Lazy of each table) and is the safe layer over these.
package cublas

//go:generate go run ../../driver/gen -in prototypes.txt -backend lib -pkg cublas -out zcalls.go
//go:generate go run ../../driver/gen -in status.txt -backend lib-status -pkg cublas -out zstatus.go

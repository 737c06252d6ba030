package libs_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/sweep"
	"github.com/gocuda/cuda/nccl"
)

// sweepCases are the fault sweep's rows of the library packages.
func sweepCases() []sweep.Case {
	var cases []sweep.Case
	for _, family := range []func() []sweep.Case{sweepFiles, sweepNCCL, sweepMath, sweepSolver, sweepSparse, sweepDNN} {
		cases = append(cases, family()...)
	}
	return cases
}

// families are how each library's calls fail: NCCL's with internal error
// and invalid argument; cuBLAS's with allocation failed, invalid value and
// execution failed; cuRAND's with allocation failed, launch failure and
// an unknown code; cuFFT's with allocation failed, internal error and
// execution failed. Each code is carried as the package's Result.
var families = []sweep.Family{
	{Prefix: "nccl", Codes: []int{3, 4}, Carries: func(err error, code int) bool { return errors.Is(err, nccl.Result(code)) },
		Sentinels: map[int]error{4: cuda.ErrInvalidValue}},
	{Prefix: "cublas", Codes: []int{3, 7, 13}, Carries: func(err error, code int) bool { return errors.Is(err, cublas.Result(code)) },
		Sentinels: map[int]error{3: cuda.ErrOutOfMemory, 7: cuda.ErrInvalidValue}},
	{Prefix: "curand", Codes: []int{102, 201, 999}, Carries: func(err error, code int) bool { return errors.Is(err, curand.Result(code)) },
		Sentinels: map[int]error{102: cuda.ErrOutOfMemory}},
	{Prefix: "cufft", Codes: []int{2, 5, 6}, Carries: func(err error, code int) bool { return errors.Is(err, cufft.Result(code)) },
		Sentinels: map[int]error{2: cuda.ErrOutOfMemory}},
}

// noDriverMethods are the libraries' exported methods and functions that
// never call the driver or the library.
var noDriverMethods = []string{
	"Result.Error", "Result.String", "Error.Error", "Error.Unwrap", "Error.Is", "Comm.Rank", "Comm.Size",
	"Comm.Context", "Comm.String", "Op.String", "UniqueID.MarshalText", "UniqueID.GoString",
	"UniqueID.UnmarshalText", "nccl.Library", "nvrtc.Library", "nccl.LaunchFromEnv", "Output.LoweredName",
	"cublas.Library", "cublas.NewMatrix", "Matrix.T", "MathMode.String", "Layout.String", "Epilogue.String",
	"Handle.Stream", "Handle.SetMathMode", "Handle.MathMode", "safetensors.Parse", "safetensors.Open",
	"safetensors.Get", "DType.Size", "Tensor.Elements", "Header.Tensor", "File.Tensor", "File.Close",
	"Weights.Bytes", "Weights.Tensor", "curand.Library", "Generator.Stream", "Generator.RNG", "RNG.String",
	"cufft.Library", "Plan.Type", "Plan.Shape", "Plan.WorkBytes", "Plan.Stream", "Plans.Len", "Type.String",
	"Allocation.Buffer",
}

// TestFaultSweep fails each driver and library call each public operation
// of the library packages makes, one at a time, with each of a few codes,
// and checks what follows, as package cuda's TestFaultSweep does its own
// (internal/sweep).
func TestFaultSweep(t *testing.T) {
	api := sweep.API(t, zero)
	for i := 0; i < len(api); i++ {
		// nccl's Op constants' functions need no row.
		if len(api[i]) > 7 && api[i][:7] == "nccl.Op" {
			api = append(api[:i], api[i+1:]...)
			i--
		}
	}
	sweep.Run(t, sweep.Config{
		Cases:    sweepCases(),
		Families: families,
		PTX:      "../../../testdata/kernels.ptx",
		ChildEnv: []string{nccl.EnvLibrary + "="},
		Race:     raceEnabled,
		API:      api,
		NoDriver: noDriverMethods,
	})
}

package libs_test

import (
	"context"
	"io"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/sweep"
	"github.com/gocuda/cuda/nccl"
	"github.com/gocuda/cuda/nvrtc"
	"github.com/gocuda/cuda/safetensors"
)

// zero is the libraries' table of zero values (internal/sweep.Zero): every
// exported type of packages nccl, nvrtc, cublas, curand, cufft and
// safetensors, and a call of each exported function with zero objects.
var zero = sweep.Zero{
	Packages: map[string]string{
		"../../../nccl": "nccl", "../../../nvrtc": "nvrtc", "../../../cublas": "cublas", "../../../curand": "curand",
		"../../../cufft": "cufft", "../../../safetensors": "safetensors",
	},
	Types: map[string]sweep.ZeroType{
		"safetensors.DType":   {Zero: new(safetensors.DType), Driver: false},
		"safetensors.Tensor":  {Zero: new(safetensors.Tensor), Driver: false},
		"safetensors.Error":   {Zero: new(safetensors.Error), Driver: false},
		"safetensors.Header":  {Zero: new(safetensors.Header), Driver: false},
		"safetensors.File":    {Zero: new(safetensors.File), Driver: false},
		"safetensors.Weights": {Zero: new(safetensors.Weights), Driver: false},
		"safetensors.Source":  {Zero: new(safetensors.Source), Driver: false},
		"nccl.Element":        {Zero: nil, Driver: false}, // a constraint
		"nccl.Op":             {Zero: new(nccl.Op), Driver: true},
		"nccl.UniqueID":       {Zero: new(nccl.UniqueID), Driver: true},
		"nccl.Launch":         {Zero: new(nccl.Launch), Driver: true},
		"nccl.Comm":           {Zero: new(nccl.Comm), Driver: false},
		"nccl.Registration":   {Zero: new(nccl.Registration), Driver: false},
		"nccl.Allocation":     {Zero: new(nccl.Allocation), Driver: false},
		"nccl.Result":         {Zero: new(nccl.Result), Driver: true},
		"nccl.Error":          {Zero: new(nccl.Error), Driver: false},
		"nvrtc.Result":        {Zero: new(nvrtc.Result), Driver: true},
		"nvrtc.Error":         {Zero: new(nvrtc.Error), Driver: false},
		"nvrtc.Options":       {Zero: new(nvrtc.Options), Driver: true},
		"nvrtc.Output":        {Zero: new(nvrtc.Output), Driver: false},
		"cublas.Result":       {Zero: new(cublas.Result), Driver: false},
		"cublas.Error":        {Zero: new(cublas.Error), Driver: false},
		"cublas.Handle":       {Zero: new(cublas.Handle), Driver: false},
		"cublas.MathMode":     {Zero: new(cublas.MathMode), Driver: false},
		"cublas.Layout":       {Zero: new(cublas.Layout), Driver: false},
		"cublas.Epilogue":     {Zero: new(cublas.Epilogue), Driver: false},
		"cublas.Matrix":       {Zero: new(cublas.Matrix[float32]), Driver: false},
		"curand.RNG":          {Zero: new(curand.RNG), Driver: false},
		"curand.Ordering":     {Zero: new(curand.Ordering), Driver: false},
		"curand.Result":       {Zero: new(curand.Result), Driver: false},
		"curand.Error":        {Zero: new(curand.Error), Driver: false},
		"curand.Generator":    {Zero: new(curand.Generator), Driver: false},
		"cufft.Type":          {Zero: new(cufft.Type), Driver: false},
		"cufft.Direction":     {Zero: new(cufft.Direction), Driver: false},
		"cufft.Result":        {Zero: new(cufft.Result), Driver: false},
		"cufft.Error":         {Zero: new(cufft.Error), Driver: false},
		"cufft.Plan":          {Zero: new(cufft.Plan), Driver: false},
		"cufft.Plans":         {Zero: new(cufft.Plans), Driver: false},
	},
	Funcs: map[string]func() []error{
		"nccl.NewUniqueID":   nil,
		"nccl.Group":         nil,
		"nccl.LaunchFromEnv": nil,
		"nccl.Library":       nil,
		"nccl.Version":       nil,
		"nvrtc.Version":      nil,
		"nvrtc.Library":      nil,
		"cublas.Version":     nil,
		"curand.Version":     nil,
		"curand.Library":     nil,
		"cufft.Version":      nil,
		"cufft.Library":      nil,
		"cufft.NewPlans":     func() []error { _, err := cufft.NewPlans(nil); return []error{err} },
		"cufft.NewPlan": func() []error {
			_, e1 := cufft.NewPlan(&cuda.Stream{}, cufft.C2C, []int{4}, 1)
			_, e2 := cufft.NewPlan(nil, cufft.C2C, []int{4}, 1)
			return []error{e1, e2}
		},
		"curand.New": func() []error {
			_, e1 := curand.New(&cuda.Stream{}, curand.Philox4x32_10, 1)
			_, e2 := curand.New(nil, curand.Philox4x32_10, 1)
			return []error{e1, e2}
		},
		"curand.Uniform": func() []error {
			return []error{curand.Uniform(&curand.Generator{}, &cuda.DeviceBuffer[float32]{}), curand.Uniform[float64](nil, nil)}
		},
		"curand.Normal": func() []error {
			return []error{curand.Normal(&curand.Generator{}, &cuda.DeviceBuffer[float32]{}, 0, 1), curand.Normal[float64](nil, nil, 0, 1)}
		},
		"curand.LogNormal": func() []error {
			return []error{curand.LogNormal(&curand.Generator{}, &cuda.DeviceBuffer[float32]{}, 0, 1), curand.LogNormal[float64](nil, nil, 0, 1)}
		},
		"cublas.Library":   nil,
		"cublas.NewMatrix": nil,
		"safetensors.Open": nil, // a path: nothing of gocuda's
		"safetensors.Parse": func() []error {
			_, err := safetensors.Parse(strings.NewReader(""), 0)
			return []error{err}
		},
		"safetensors.Get": func() []error {
			_, err := safetensors.Get[float32](&safetensors.Weights{}, "x")
			_, err2 := safetensors.Get[float32](nil, "x")
			return []error{err, err2}
		},
		"safetensors.From": func() []error { // a Source of a zero or nil buffer: Save refuses it
			return []error{
				safetensors.Save(io.Discard, []safetensors.Source{safetensors.From("x", &cuda.DeviceBuffer[float32]{}, 1)}, nil, cuda.IOConfig{}),
				safetensors.Save(io.Discard, []safetensors.Source{safetensors.From[float32]("x", nil, 1)}, nil, cuda.IOConfig{}),
			}
		},
		"safetensors.Save": func() []error {
			return []error{
				safetensors.Save(io.Discard, []safetensors.Source{{}}, nil, cuda.IOConfig{}),
				safetensors.Save(nil, nil, nil, cuda.IOConfig{}),
			}
		},
		"safetensors.SaveFile": func() []error { // refused before the file is made: no folder is needed
			return []error{safetensors.SaveFile("/nonexistent-gocuda/zero.safetensors", []safetensors.Source{{}}, nil, cuda.IOConfig{})}
		},
		"nccl.NewComms": func() []error {
			_, err := nccl.NewComms([]*cuda.Context{{}})
			return []error{err}
		},
		"nccl.ShareUniqueID": func() []error {
			_, err := nccl.ShareUniqueID(context.Background(), nccl.Launch{})
			return []error{err}
		},
		"nccl.NewCommContext": func() []error {
			_, err := nccl.NewCommContext(context.Background(), &cuda.Context{}, nccl.UniqueID{}, 1, 0)
			return []error{err}
		},
		"nccl.NewCommFromLaunch": func() []error {
			_, e1 := nccl.NewCommFromLaunch(context.Background(), &cuda.Context{}, nccl.Launch{})
			_, e2 := nccl.NewCommFromLaunch(context.Background(), nil, nccl.Launch{})
			return []error{e1, e2}
		},
		"nccl.Alloc": func() []error {
			_, e1 := nccl.Alloc(&cuda.Context{}, 64)
			_, e2 := nccl.Alloc(nil, 64)
			return []error{e1, e2}
		},
		"nccl.NewComm": func() []error {
			_, err := nccl.NewComm(&cuda.Context{}, nccl.UniqueID{}, 1, 0)
			return []error{err}
		},
		"nccl.AllReduce": func() []error {
			return []error{nccl.AllReduce(&nccl.Comm{}, &cuda.DeviceBuffer[float32]{}, &cuda.DeviceBuffer[float32]{}, nccl.Sum, &cuda.Stream{})}
		},
		"nccl.Broadcast": func() []error {
			return []error{nccl.Broadcast(&nccl.Comm{}, &cuda.DeviceBuffer[float32]{}, &cuda.DeviceBuffer[float32]{}, 0, &cuda.Stream{})}
		},
		"nccl.Reduce": func() []error {
			return []error{nccl.Reduce(&nccl.Comm{}, &cuda.DeviceBuffer[float32]{}, &cuda.DeviceBuffer[float32]{}, nccl.Sum, 0, &cuda.Stream{})}
		},
		"nccl.AllGather": func() []error {
			return []error{nccl.AllGather(&nccl.Comm{}, &cuda.DeviceBuffer[float32]{}, &cuda.DeviceBuffer[float32]{}, &cuda.Stream{})}
		},
		"nccl.Send": func() []error {
			return []error{nccl.Send(&nccl.Comm{}, &cuda.DeviceBuffer[float32]{}, 0, &cuda.Stream{})}
		},
		"nccl.Recv": func() []error {
			return []error{nccl.Recv(&nccl.Comm{}, &cuda.DeviceBuffer[float32]{}, 0, &cuda.Stream{})}
		},
		"nccl.AllToAll": func() []error {
			return []error{nccl.AllToAll(&nccl.Comm{}, &cuda.DeviceBuffer[float32]{}, &cuda.DeviceBuffer[float32]{}, &cuda.Stream{})}
		},
		"nccl.ReduceScatter": func() []error {
			return []error{nccl.ReduceScatter(&nccl.Comm{}, &cuda.DeviceBuffer[float32]{}, &cuda.DeviceBuffer[float32]{}, nccl.Sum, &cuda.Stream{})}
		},
		"cublas.New": func() []error { _, err := cublas.New(&cuda.Stream{}); return []error{err} },
		"cublas.Gemm": func() []error {
			m := cublas.Matrix[float32]{}
			return []error{cublas.Gemm(&cublas.Handle{}, 1, m, m, 0, m), cublas.Gemm(nil, 1, m, m, 0, m)}
		},
		"cublas.GemmStridedBatched": func() []error {
			m := cublas.Matrix[float32]{}
			return []error{cublas.GemmStridedBatched(&cublas.Handle{}, 1, 1, m, m, 0, m)}
		},
		"cublas.GemmBatched": func() []error {
			m := []cublas.Matrix[float32]{{}}
			return []error{cublas.GemmBatched(&cublas.Handle{}, 1, m, m, 0, m)}
		},
		"cublas.Matmul": func() []error {
			m := cublas.Matrix[float32]{}
			return []error{cublas.Matmul(&cublas.Handle{}, 1, m, m, 0, m, cublas.ReLU, &cuda.DeviceBuffer[float32]{})}
		},
		"cublas.Axpy": func() []error {
			return []error{cublas.Axpy(&cublas.Handle{}, 1, &cuda.DeviceBuffer[float32]{}, &cuda.DeviceBuffer[float32]{})}
		},
		"cublas.Scal": func() []error { return []error{cublas.Scal(&cublas.Handle{}, 1, &cuda.DeviceBuffer[float32]{})} },
		"cublas.Dot": func() []error {
			_, err := cublas.Dot(&cublas.Handle{}, &cuda.DeviceBuffer[float32]{}, &cuda.DeviceBuffer[float32]{})
			return []error{err}
		},
		"cublas.Nrm2": func() []error {
			_, err := cublas.Nrm2(&cublas.Handle{}, &cuda.DeviceBuffer[float32]{})
			return []error{err}
		},
		"cublas.Asum": func() []error {
			_, err := cublas.Asum(&cublas.Handle{}, &cuda.DeviceBuffer[float64]{})
			return []error{err}
		},
		"cublas.Iamax": func() []error {
			_, err := cublas.Iamax(&cublas.Handle{}, &cuda.DeviceBuffer[float32]{})
			return []error{err}
		},
		"cublas.Gemv": func() []error {
			return []error{cublas.Gemv(&cublas.Handle{}, 1, cublas.Matrix[float32]{}, &cuda.DeviceBuffer[float32]{}, 0, &cuda.DeviceBuffer[float32]{})}
		},
		"nvrtc.Compile": func() []error {
			_, err := nvrtc.Compile(&cuda.Context{}, "__global__ void k() {}", nvrtc.Options{})
			return []error{err}
		},
	},
	// NVRTC compiles without a context to check first.
	Driving: []string{"nvrtc.Compile"},
}

// TestZeroValues walks every exported type and method of the library
// packages by reflection, and every exported function taking their
// objects, as package cuda's TestZeroValues does its own.
func TestZeroValues(t *testing.T) {
	sweep.ZeroValues(t, zero)
}

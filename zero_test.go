package cuda_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nccl"
	"github.com/gocuda/cuda/nvrtc"
	"github.com/gocuda/cuda/safetensors"
)

// zeroTypes lists a pointer to the zero value of every exported type of
// packages cuda, nccl, nvrtc, cublas and safetensors, by package and name. driver says the zero
// value is a valid value of its own (a number or a plain struct), whose
// methods may ask the driver (a Result's name): those are checked for
// panics only.
var zeroTypes = map[string]struct {
	zero   any
	driver bool
}{
	"cuda.CalibrateOption":    {new(cuda.CalibrateOption), true},
	"cuda.Integer":            {}, // constraints: no values
	"cuda.Float":              {},
	"cuda.AnyFloat":           {},
	"cuda.Number":             {},
	"cuda.LibraryError":       {new(cuda.LibraryError), false},
	"cuda.Attribute":          {new(cuda.Attribute), true},
	"cuda.DevicePtr":          {new(cuda.DevicePtr), true},
	"cuda.DeviceBuffer":       {new(cuda.DeviceBuffer[float32]), false},
	"cuda.MemPool":            {new(cuda.MemPool), false},
	"cuda.Graph":              {new(cuda.Graph), false},
	"cuda.GraphExec":          {new(cuda.GraphExec), false},
	"cuda.GraphNode":          {new(cuda.GraphNode), false},
	"cuda.GraphCondition":     {new(cuda.GraphCondition), false},
	"cuda.GraphMemory":        {new(cuda.GraphMemory), false},
	"cuda.CaptureMode":        {new(cuda.CaptureMode), true},
	"cuda.MemPoolStats":       {new(cuda.MemPoolStats), true},
	"cuda.StagingMeasurement": {new(cuda.StagingMeasurement), true},
	"cuda.StagingCalibration": {new(cuda.StagingCalibration), true},
	"cuda.IOConfig":           {new(cuda.IOConfig), false},
	"cuda.IPCHandle":          {new(cuda.IPCHandle), false},
	"cuda.IPCEventHandle":     {new(cuda.IPCEventHandle), false},
	"safetensors.DType":       {new(safetensors.DType), false},
	"safetensors.Tensor":      {new(safetensors.Tensor), false},
	"safetensors.Error":       {new(safetensors.Error), false},
	"safetensors.Header":      {new(safetensors.Header), false},
	"safetensors.File":        {new(safetensors.File), false},
	"safetensors.Weights":     {new(safetensors.Weights), false},
	"safetensors.Source":      {new(safetensors.Source), false},
	"cuda.Context":            {new(cuda.Context), false},
	"cuda.Version":            {new(cuda.Version), true},
	"cuda.Device":             {new(cuda.Device), false},
	"cuda.Result":             {new(cuda.Result), true},
	"cuda.Error":              {new(cuda.Error), false},
	"cuda.EventFlag":          {new(cuda.EventFlag), true},
	"cuda.Event":              {new(cuda.Event), false},
	"cuda.Memory":             {nil, false}, // an interface
	"cuda.Function":           {new(cuda.Function), false},
	"cuda.FunctionAttribute":  {new(cuda.FunctionAttribute), true},
	"cuda.Dim3":               {new(cuda.Dim3), true},
	"cuda.Occupancy":          {new(cuda.Occupancy), true},
	"cuda.ClusterPolicy":      {new(cuda.ClusterPolicy), true},
	"cuda.Library":            {new(cuda.Library), false},
	"cuda.GrowableBuffer":     {new(cuda.GrowableBuffer[float32]), false},
	"cuda.MemoryStats":        {new(cuda.MemoryStats), true},
	"cuda.MemoryCount":        {new(cuda.MemoryCount), true},
	"cuda.MemoryKind":         {new(cuda.MemoryKind), true},
	"cuda.ManagedBuffer":      {new(cuda.ManagedBuffer[float32]), false},
	"cuda.ManagedAttributes":  {new(cuda.ManagedAttributes), true},
	"cuda.Location":           {new(cuda.Location), true},
	"cuda.Advice":             {new(cuda.Advice), true},
	"cuda.Attach":             {new(cuda.Attach), true},
	"cuda.LaunchConfig":       {new(cuda.LaunchConfig), true},
	"cuda.Module":             {new(cuda.Module), false},
	"cuda.JITOption":          {new(cuda.JITOption), true},
	"cuda.PeerPath":           {new(cuda.PeerPath), true},
	"cuda.PinnedBuffer":       {new(cuda.PinnedBuffer[float32]), false},
	"cuda.Registered":         {new(cuda.Registered[float32]), false},
	"cuda.Direction":          {new(cuda.Direction), true},
	"cuda.StagingPipeline":    {new(cuda.StagingPipeline), true},
	"cuda.StagingOptions":     {new(cuda.StagingOptions), true},
	"cuda.StagingStats":       {new(cuda.StagingStats), true},
	"cuda.StagingBuffer":      {new(cuda.StagingBuffer), false},
	"cuda.Stream":             {new(cuda.Stream), false},
	"nccl.Element":            {nil, false}, // a constraint
	"nccl.Op":                 {new(nccl.Op), true},
	"nccl.UniqueID":           {new(nccl.UniqueID), true},
	"nccl.Launch":             {new(nccl.Launch), true},
	"nccl.Comm":               {new(nccl.Comm), false},
	"nccl.Registration":       {new(nccl.Registration), false},
	"nccl.Allocation":         {new(nccl.Allocation), false},
	"nccl.Result":             {new(nccl.Result), true},
	"nccl.Error":              {new(nccl.Error), false},
	"nvrtc.Result":            {new(nvrtc.Result), true},
	"nvrtc.Error":             {new(nvrtc.Error), false},
	"nvrtc.Options":           {new(nvrtc.Options), true},
	"nvrtc.Output":            {new(nvrtc.Output), false},
	"cuda.Float16":            {new(cuda.Float16), false},
	"cuda.BFloat16":           {new(cuda.BFloat16), false},
	"cublas.Result":           {new(cublas.Result), false},
	"cublas.Error":            {new(cublas.Error), false},
	"cublas.Handle":           {new(cublas.Handle), false},
	"cublas.MathMode":         {new(cublas.MathMode), false},
	"cublas.Layout":           {new(cublas.Layout), false},
	"cublas.Epilogue":         {new(cublas.Epilogue), false},
	"cublas.Matrix":           {new(cublas.Matrix[float32]), false},
	"curand.RNG":              {new(curand.RNG), false},
	"curand.Ordering":         {new(curand.Ordering), false},
	"curand.Result":           {new(curand.Result), false},
	"curand.Error":            {new(curand.Error), false},
	"curand.Generator":        {new(curand.Generator), false},
	"cufft.Type":              {new(cufft.Type), false},
	"cufft.Direction":         {new(cufft.Direction), false},
	"cufft.Result":            {new(cufft.Result), false},
	"cufft.Error":             {new(cufft.Error), false},
	"cufft.Plan":              {new(cufft.Plan), false},
	"cufft.Plans":             {new(cufft.Plans), false},
}

// zeroFuncs calls every exported function that takes an object of ours
// with zero (and nil) objects; nil marks a function that takes none.
var zeroFuncs = map[string]func() []error{
	"cuda.DriverVersion": nil, "cuda.DriverLibrary": nil, "cuda.DeviceCount": nil, "cuda.GetDevice": nil, "cuda.Open": nil,
	"cuda.Devices": nil, "cuda.ParseAttribute": nil, "cuda.KnownAttributes": nil,
	"cuda.LoadLibrary": nil, "cuda.JITMaxRegisters": nil, "cuda.JITOptimizationLevel": nil, "cuda.JITLineInfo": nil, "cuda.JITDebugInfo": nil,
	"cuda.DefaultStagingPipeline": nil, "cuda.DefaultStagingOptions": nil, "cuda.LaunchConfigFor": nil, "cuda.DefaultCalibrationSizes": nil, "cuda.CalibrateSizes": nil,
	"nccl.NewUniqueID": nil, "nccl.Group": nil, "nccl.LaunchFromEnv": nil, "nccl.Library": nil, "nccl.Version": nil, "nvrtc.Version": nil, "nvrtc.Library": nil, "cublas.Version": nil, "curand.Version": nil, "curand.Library": nil, "cufft.Version": nil, "cufft.Library": nil,
	"cufft.NewPlans": func() []error { _, err := cufft.NewPlans(nil); return []error{err} },
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
	"cuda.NewFloat16": nil, "cuda.NewBFloat16": nil, "cublas.Library": nil, "cublas.NewMatrix": nil,
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
	"cuda.NewContext": func() []error { _, err := cuda.NewContext(cuda.Device{}); return []error{err} },
	"cuda.AllocFromPool": func() []error {
		_, e1 := cuda.AllocFromPool[float32](&cuda.MemPool{}, &cuda.Stream{}, 1)
		_, e2 := cuda.AllocFromPool[float32](nil, nil, 1)
		return []error{e1, e2}
	},
	"cuda.AllocAsync": func() []error {
		_, e1 := cuda.AllocAsync[float32](&cuda.Stream{}, 1)
		_, e2 := cuda.AllocAsync[float32](nil, 1)
		return []error{e1, e2}
	},
	"cuda.Alloc": func() []error {
		_, e1 := cuda.Alloc[float32](&cuda.Context{}, 1)
		_, e2 := cuda.Alloc[float32](nil, 1)
		return []error{e1, e2}
	},
	"cuda.Zeroed":   func() []error { _, err := cuda.Zeroed[float32](&cuda.Context{}, 1); return []error{err} },
	"cuda.FromHost": func() []error { _, err := cuda.FromHost(&cuda.Context{}, []float32{1}); return []error{err} },
	"cuda.FromRaw": func() []error {
		_, e1 := cuda.FromRaw[float32](&cuda.Context{}, 256, 1)
		_, e2 := cuda.FromRaw[float32](nil, 256, 1)
		return []error{e1, e2}
	},
	"cuda.ViewAs": func() []error {
		_, e1 := cuda.ViewAs[byte](&cuda.DeviceBuffer[float32]{})
		_, e2 := cuda.ViewAs[byte]((*cuda.DeviceBuffer[float32])(nil))
		return []error{e1, e2}
	},
	"cuda.AllocPinned": func() []error { _, err := cuda.AllocPinned[float32](&cuda.Context{}, 1); return []error{err} },
	"cuda.AllocManaged": func() []error {
		_, e1 := cuda.AllocManaged[float32](&cuda.Context{}, 1, cuda.AttachGlobal)
		_, e2 := cuda.AllocManaged[float32](nil, 1, cuda.AttachGlobal)
		return []error{e1, e2}
	},
	"cuda.OnDevice": nil, "cuda.OnHost": nil,
	"cuda.NewGrowableBuffer": func() []error {
		_, e1 := cuda.NewGrowableBuffer[float32](&cuda.Context{}, 1)
		_, e2 := cuda.NewGrowableBuffer[float32](nil, 1)
		return []error{e1, e2}
	},
	"cuda.Register": func() []error { _, err := cuda.Register(&cuda.Context{}, []float32{1}); return []error{err} },
	"cuda.NewStagingBuffer": func() []error {
		_, err := cuda.NewStagingBuffer(&cuda.Context{}, 1)
		return []error{err}
	},
	"cuda.NewStagingBufferOptions": func() []error {
		_, e1 := cuda.NewStagingBufferOptions(&cuda.Context{}, 1, cuda.StagingOptions{})
		_, e2 := cuda.NewStagingBufferOptions(nil, 1, cuda.StagingOptions{})
		_, e3 := cuda.NewStagingBufferOptions(nil, 0, cuda.StagingOptions{Pipeline: cuda.StagingPipeline{Slots: 2}})
		return []error{e1, e2, e3}
	},
	"cuda.ElapsedTime": func() []error {
		_, e1 := cuda.ElapsedTime(&cuda.Event{}, &cuda.Event{})
		_, e2 := cuda.ElapsedTime(nil, nil)
		return []error{e1, e2}
	},
	"cuda.Global": func() []error { _, err := cuda.Global[float32](&cuda.Module{}, "x"); return []error{err} },
	"cuda.CopyPeer": func() []error {
		_, err := cuda.CopyPeer(&cuda.DeviceBuffer[float32]{}, &cuda.DeviceBuffer[float32]{})
		return []error{err}
	},
	"cuda.CopyPeerAsync": func() []error {
		_, err := cuda.CopyPeerAsync(&cuda.DeviceBuffer[float32]{}, &cuda.DeviceBuffer[float32]{}, &cuda.Stream{})
		return []error{err}
	},
	"cuda.Upload": func() []error {
		return []error{
			cuda.Upload(new(cuda.StagingBuffer), &cuda.DeviceBuffer[float32]{}, []float32{1}, &cuda.Stream{}),
			cuda.Upload(nil, (*cuda.DeviceBuffer[float32])(nil), nil, nil),
		}
	},
	"cuda.Download": func() []error {
		return []error{cuda.Download(new(cuda.StagingBuffer), []float32{1}, &cuda.DeviceBuffer[float32]{}, &cuda.Stream{})}
	},
	"cuda.UploadWith": func() []error {
		return []error{cuda.UploadWith(new(cuda.StagingBuffer), &cuda.DeviceBuffer[float32]{}, 1, &cuda.Stream{}, func([]float32) {})}
	},
	"cuda.OpenIPC": func() []error {
		_, err := cuda.OpenIPC[float32](&cuda.Context{}, cuda.IPCHandle{}, 1)
		_, err2 := cuda.OpenIPC[float32](nil, cuda.IPCHandle{}, 1)
		return []error{err, err2}
	},
	"cuda.OpenIPCEvent": func() []error {
		_, err := cuda.OpenIPCEvent(&cuda.Context{}, cuda.IPCEventHandle{})
		return []error{err}
	},
	"cuda.ReadFrom": func() []error {
		_, err := cuda.ReadFrom(&cuda.DeviceBuffer[float32]{}, strings.NewReader("x"), cuda.IOConfig{})
		_, err2 := cuda.ReadFrom[float32](nil, nil, cuda.IOConfig{Staging: new(cuda.StagingBuffer), Stream: &cuda.Stream{}})
		return []error{err, err2}
	},
	"cuda.WriteTo": func() []error {
		_, err := cuda.WriteTo(&cuda.DeviceBuffer[float32]{}, io.Discard, cuda.IOConfig{})
		return []error{err}
	},
	"cuda.DownloadInto": func() []error {
		_, err := cuda.DownloadInto(new(cuda.StagingBuffer), &cuda.DeviceBuffer[float32]{}, 1, &cuda.Stream{})
		return []error{err}
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
}

// TestZeroValues walks every exported type and method of packages cuda,
// nccl and nvrtc by reflection, and every exported function taking their
// objects: on a zero value, and on a nil pointer where the method has a
// pointer receiver, each must work or return an error wrapping
// ErrInvalidValue or ErrClosed, without panicking and without calling the
// driver. A type or function added later without a line in the tables
// above fails the test.
func TestZeroValues(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t) // the driver is open: a call would count
	_ = ctx
	types, funcs := exportedNames(t)
	for _, name := range types {
		if _, ok := zeroTypes[name]; !ok {
			t.Errorf("exported type %s is not in zeroTypes: add its zero value", name)
		}
	}
	for _, name := range funcs {
		if _, ok := zeroFuncs[name]; !ok {
			t.Errorf("exported function %s is not in zeroFuncs: add a call with zero objects, or nil if it takes none", name)
		}
	}
	acceptable := func(err error) bool {
		return err == nil || errors.Is(err, cuda.ErrInvalidValue) || errors.Is(err, cuda.ErrClosed) ||
			errors.Is(err, cuda.ErrNotSupported) // nvrtc without its library
	}
	methods := 0
	for name, zt := range zeroTypes {
		if zt.zero == nil {
			continue
		}
		ptr := reflect.ValueOf(zt.zero)
		valueMethods := map[string]bool{}
		for i := range ptr.Elem().NumMethod() {
			valueMethods[ptr.Elem().Type().Method(i).Name] = true
		}
		receivers := []struct {
			what string
			v    reflect.Value
		}{{"zero", ptr}, {"nil", reflect.Zero(ptr.Type())}}
		for i := range ptr.NumMethod() {
			m := ptr.Type().Method(i)
			for _, r := range receivers {
				if r.what == "nil" && valueMethods[m.Name] {
					continue // a value receiver: Go itself dereferences nil
				}
				call := fmt.Sprintf("(%s %s).%s", r.what, name, m.Name)
				before := f.Calls()
				results, panicked := callZero(r.v.MethodByName(m.Name))
				methods++
				if panicked != nil {
					t.Errorf("%s panicked: %v", call, panicked)
					continue
				}
				for _, res := range results {
					if err, ok := res.Interface().(error); ok && res.Type().Name() == "error" && !acceptable(err) {
						t.Errorf("%s: error %v wraps neither ErrInvalidValue nor ErrClosed", call, err)
					}
				}
				if !zt.driver && f.Calls() != before {
					t.Errorf("%s called the driver %d time(s)", call, f.Calls()-before)
				}
			}
		}
	}
	for name, fn := range zeroFuncs {
		if fn == nil {
			continue
		}
		before := f.Calls()
		var errs []error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s with zero objects panicked: %v", name, p)
				}
			}()
			errs = fn()
		}()
		for _, err := range errs {
			if err == nil || !acceptable(err) {
				t.Errorf("%s with zero objects: %v; want an error wrapping ErrInvalidValue or ErrClosed", name, err)
			}
		}
		if name != "nvrtc.Compile" && f.Calls() != before {
			t.Errorf("%s with zero objects called the driver %d time(s)", name, f.Calls()-before)
		}
	}
	t.Logf("%d types, %d method calls on zero and nil receivers, %d functions with zero objects", len(zeroTypes), methods, len(zeroFuncs))
}

// callZero calls m with the zero value of each parameter.
func callZero(m reflect.Value) (results []reflect.Value, panicked any) {
	defer func() { panicked = recover() }()
	mt := m.Type()
	args := make([]reflect.Value, mt.NumIn())
	for i := range args {
		in := mt.In(i)
		if mt.IsVariadic() && i == mt.NumIn()-1 {
			args[i] = reflect.Zero(in.Elem())
			args = args[:i] // no variadic arguments
			break
		}
		args[i] = reflect.Zero(in)
	}
	return m.Call(args), nil
}

// exportedNames returns the exported types and functions (not methods) of
// packages cuda, nccl, nvrtc, cublas and safetensors, as "pkg.Name".
func exportedNames(t *testing.T) (types, funcs []string) {
	t.Helper()
	for dir, pkg := range map[string]string{".": "cuda", "nccl": "nccl", "nvrtc": "nvrtc", "cublas": "cublas", "curand": "curand", "cufft": "cufft", "safetensors": "safetensors"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil && d.Name.IsExported() {
						funcs = append(funcs, pkg+"."+d.Name.Name)
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() {
							types = append(types, pkg+"."+ts.Name.Name)
						}
					}
				}
			}
		}
	}
	return types, funcs
}

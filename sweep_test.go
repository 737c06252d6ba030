package cuda_test

import (
	"testing"

	"github.com/gocuda/cuda/internal/sweep"
)

// sweepCases are the fault sweep's rows of package cuda, by family (the
// libraries' rows are internal/sweep/libs's).
func sweepCases() []sweep.Case {
	var cases []sweep.Case
	for _, family := range []func() []sweep.Case{sweepContexts, sweepMemory, sweepGraphs, sweepTransfers, sweepStaging, sweepModules} {
		cases = append(cases, family()...)
	}
	return cases
}

// noDriverMethods are exported methods and functions that never call the
// driver: there is nothing to inject into them (TestZeroValues checks them
// on zero values).
var noDriverMethods = []string{
	"Context.Device", "LibraryError.Error", "LibraryError.Unwrap", "Stream.Context", "Stream.Priority",
	"Stream.Capturing", "MemPool.Context", "CaptureMode.String", "DeviceBuffer.Len", "DeviceBuffer.ByteSize",
	"Allocation.Buffer", "GraphMemory.ByteSize", "GraphMemory.Ptr", "GraphCondition.Handle", "DeviceBuffer.Ptr",
	"DeviceBuffer.Context", "PinnedBuffer.Data", "PinnedBuffer.Len", "Registered.Len", "Function.Name",
	"Device.Ordinal", "Device.String", "Version.String", "Result.Error", "Result.String", "Error.Error",
	"Error.Unwrap", "Error.Is", "Attribute.String", "FunctionAttribute.String", "Direction.String",
	"PeerPath.String", "StagingBuffer.Capacity", "StagingBuffer.Stats", "StagingBuffer.AutoStageMaxBytes",
	"StagingBuffer.SetAutoStageMaxBytes", "StagingBuffer.Options", "cuda.FromRaw", "cuda.ParseAttribute",
	"cuda.KnownAttributes", "cuda.JITMaxRegisters", "cuda.JITOptimizationLevel", "cuda.JITLineInfo",
	"cuda.JITDebugInfo", "cuda.DefaultStagingPipeline", "cuda.DefaultStagingOptions",
	"cuda.DefaultCalibrationSizes", "cuda.CalibrateSizes", "cuda.LaunchConfigFor", "cuda.ViewAs",
	"DeviceBuffer.Slice", "cuda.NewFloat16", "cuda.NewBFloat16", "Float16.Float32", "Float16.String", "Float16.Format",
	"BFloat16.Float32", "BFloat16.String", "BFloat16.Format", "IPCHandle.MarshalText", "IPCHandle.UnmarshalText",
	"IPCEventHandle.MarshalText", "IPCEventHandle.UnmarshalText", "Context.MemoryStats",
	"Context.ResetPeakMemory", "MemoryStats.Kind", "MemoryKind.String", "ManagedBuffer.Data",
	"ManagedBuffer.Buffer", "ManagedBuffer.Len", "Location.IsHost", "Location.Device", "Location.String",
	"ClusterPolicy.String", "GrowableBuffer.Len", "GrowableBuffer.Cap", "GrowableBuffer.MaxLen",
	"GrowableBuffer.Ptr", "Advice.String", "cuda.OnDevice", "cuda.OnHost",
}

// TestFaultSweep fails each driver call each public operation of package
// cuda makes, one at a time, with each of a few codes, and checks what
// follows (internal/sweep): no panic and no hang, an error that carries
// the code, its sentinel and the call's name, nothing leaked once the
// caller frees what it was given, and every object involved still working
// (a StagingBuffer still moves data and counts only what succeeded; a
// buffer whose copy failed is freed and reused; a Close that failed works
// when called again).
func TestFaultSweep(t *testing.T) {
	sweep.Run(t, sweep.Config{
		Cases:    sweepCases(),
		PTX:      "testdata/kernels.ptx",
		Race:     raceEnabled,
		API:      sweep.API(t, zero),
		NoDriver: noDriverMethods,
	})
}

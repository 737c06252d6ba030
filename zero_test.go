package cuda_test

import (
	"io"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/sweep"
)

// zero is package cuda's table of zero values (internal/sweep): a pointer
// to the zero value of every exported type, by package and name (Driver
// says the zero value is a valid value of its own, a number or a plain
// struct, whose methods may ask the driver: a Result's name; those are
// checked for panics only), and a call of every exported function that
// takes an object of ours with zero (and nil) objects (nil marks a
// function that takes none). The libraries' table is internal/sweep/libs's.
var zero = sweep.Zero{
	Packages: map[string]string{".": "cuda"},
	Types: map[string]sweep.ZeroType{
		"cuda.CalibrateOption":    {Zero: new(cuda.CalibrateOption), Driver: true},
		"cuda.Integer":            {}, // constraints: no values
		"cuda.Float":              {},
		"cuda.AnyFloat":           {},
		"cuda.Number":             {},
		"cuda.LibraryError":       {Zero: new(cuda.LibraryError), Driver: false},
		"cuda.Attribute":          {Zero: new(cuda.Attribute), Driver: true},
		"cuda.DevicePtr":          {Zero: new(cuda.DevicePtr), Driver: true},
		"cuda.DeviceBuffer":       {Zero: new(cuda.DeviceBuffer[float32]), Driver: false},
		"cuda.MemPool":            {Zero: new(cuda.MemPool), Driver: false},
		"cuda.Graph":              {Zero: new(cuda.Graph), Driver: false},
		"cuda.GraphExec":          {Zero: new(cuda.GraphExec), Driver: false},
		"cuda.GraphNode":          {Zero: new(cuda.GraphNode), Driver: false},
		"cuda.GraphCondition":     {Zero: new(cuda.GraphCondition), Driver: false},
		"cuda.GraphMemory":        {Zero: new(cuda.GraphMemory), Driver: false},
		"cuda.CaptureMode":        {Zero: new(cuda.CaptureMode), Driver: true},
		"cuda.MemPoolStats":       {Zero: new(cuda.MemPoolStats), Driver: true},
		"cuda.StagingMeasurement": {Zero: new(cuda.StagingMeasurement), Driver: true},
		"cuda.StagingCalibration": {Zero: new(cuda.StagingCalibration), Driver: true},
		"cuda.IOConfig":           {Zero: new(cuda.IOConfig), Driver: false},
		"cuda.IPCHandle":          {Zero: new(cuda.IPCHandle), Driver: false},
		"cuda.IPCEventHandle":     {Zero: new(cuda.IPCEventHandle), Driver: false},
		"cuda.Context":            {Zero: new(cuda.Context), Driver: false},
		"cuda.Version":            {Zero: new(cuda.Version), Driver: true},
		"cuda.Device":             {Zero: new(cuda.Device), Driver: false},
		"cuda.Result":             {Zero: new(cuda.Result), Driver: true},
		"cuda.Error":              {Zero: new(cuda.Error), Driver: false},
		"cuda.EventFlag":          {Zero: new(cuda.EventFlag), Driver: true},
		"cuda.Event":              {Zero: new(cuda.Event), Driver: false},
		"cuda.Memory":             {Zero: nil, Driver: false}, // an interface
		"cuda.Function":           {Zero: new(cuda.Function), Driver: false},
		"cuda.FunctionAttribute":  {Zero: new(cuda.FunctionAttribute), Driver: true},
		"cuda.Dim3":               {Zero: new(cuda.Dim3), Driver: true},
		"cuda.Occupancy":          {Zero: new(cuda.Occupancy), Driver: true},
		"cuda.ClusterPolicy":      {Zero: new(cuda.ClusterPolicy), Driver: true},
		"cuda.Library":            {Zero: new(cuda.Library), Driver: false},
		"cuda.GrowableBuffer":     {Zero: new(cuda.GrowableBuffer[float32]), Driver: false},
		"cuda.MemoryStats":        {Zero: new(cuda.MemoryStats), Driver: true},
		"cuda.MemoryCount":        {Zero: new(cuda.MemoryCount), Driver: true},
		"cuda.MemoryKind":         {Zero: new(cuda.MemoryKind), Driver: true},
		"cuda.ManagedBuffer":      {Zero: new(cuda.ManagedBuffer[float32]), Driver: false},
		"cuda.ManagedAttributes":  {Zero: new(cuda.ManagedAttributes), Driver: true},
		"cuda.Location":           {Zero: new(cuda.Location), Driver: true},
		"cuda.Advice":             {Zero: new(cuda.Advice), Driver: true},
		"cuda.Attach":             {Zero: new(cuda.Attach), Driver: true},
		"cuda.LaunchConfig":       {Zero: new(cuda.LaunchConfig), Driver: true},
		"cuda.Module":             {Zero: new(cuda.Module), Driver: false},
		"cuda.JITOption":          {Zero: new(cuda.JITOption), Driver: true},
		"cuda.PeerPath":           {Zero: new(cuda.PeerPath), Driver: true},
		"cuda.PinnedBuffer":       {Zero: new(cuda.PinnedBuffer[float32]), Driver: false},
		"cuda.Registered":         {Zero: new(cuda.Registered[float32]), Driver: false},
		"cuda.Direction":          {Zero: new(cuda.Direction), Driver: true},
		"cuda.StagingPipeline":    {Zero: new(cuda.StagingPipeline), Driver: true},
		"cuda.StagingOptions":     {Zero: new(cuda.StagingOptions), Driver: true},
		"cuda.StagingStats":       {Zero: new(cuda.StagingStats), Driver: true},
		"cuda.StagingBuffer":      {Zero: new(cuda.StagingBuffer), Driver: false},
		"cuda.Stream":             {Zero: new(cuda.Stream), Driver: false},
		"cuda.Float16":            {Zero: new(cuda.Float16), Driver: false},
		"cuda.BFloat16":           {Zero: new(cuda.BFloat16), Driver: false},
	},
	Funcs: map[string]func() []error{
		"cuda.DriverVersion":           nil,
		"cuda.DriverLibrary":           nil,
		"cuda.DeviceCount":             nil,
		"cuda.GetDevice":               nil,
		"cuda.Open":                    nil,
		"cuda.Devices":                 nil,
		"cuda.ParseAttribute":          nil,
		"cuda.KnownAttributes":         nil,
		"cuda.LoadLibrary":             nil,
		"cuda.JITMaxRegisters":         nil,
		"cuda.JITOptimizationLevel":    nil,
		"cuda.JITLineInfo":             nil,
		"cuda.JITDebugInfo":            nil,
		"cuda.DefaultStagingPipeline":  nil,
		"cuda.DefaultStagingOptions":   nil,
		"cuda.LaunchConfigFor":         nil,
		"cuda.DefaultCalibrationSizes": nil,
		"cuda.CalibrateSizes":          nil,
		"cuda.NewFloat16":              nil,
		"cuda.NewBFloat16":             nil,
		"cuda.NewContext":              func() []error { _, err := cuda.NewContext(cuda.Device{}); return []error{err} },
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
		"cuda.OnDevice": nil,
		"cuda.OnHost":   nil,
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
	},
}

// TestZeroValues walks every exported type and method of package cuda by
// reflection, and every exported function taking its objects: on a zero
// value, and on a nil pointer where the method has a pointer receiver,
// each must work or return an error wrapping ErrInvalidValue or ErrClosed,
// without panicking and without calling the driver. A type or function
// added later without a line in the table above fails the test.
func TestZeroValues(t *testing.T) {
	sweep.ZeroValues(t, zero)
}

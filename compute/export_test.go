package compute

import cuda "github.com/gocuda/cuda"

// Compiles returns how many kernels NVRTC compiled in this process.
func Compiles() int64 { return compiles.Load() }

// ElementwiseSource returns the source of k's variant for the pattern
// (true: the parameter is a buffer).
func ElementwiseSource(k *Elementwise, buffers ...bool) string { return k.source(buffers) }

// ReductionSource returns the source of r's variant for the pattern.
func ReductionSource(r *Reduction, buffers ...bool) string { return r.source(buffers) }

// ReadEntry and WriteEntry are the disk cache's.
var (
	ReadEntry  = readEntry
	WriteEntry = writeEntry
	EntryPath  = entryPath
)

// RawAdd returns the launch of Add's float32 kernel (its variant for three
// buffers) on x, x and x, through Function.Launch alone.
func RawAdd(s *cuda.Stream, x *cuda.DeviceBuffer[float32]) (func() error, error) {
	k, err := stdElementwise("add_float32", "float32 a, float32 b", "float32 y", binaryBodies["add"][1])
	if err != nil {
		return nil, err
	}
	f, err := function("RawAdd", s.Context(), &variant{src: k.source([]bool{true, true, true})}, k.name)
	if err != nil {
		return nil, err
	}
	cfg, err := linearConfig(s, x.Len())
	return func() error { return f.Launch(cfg, x, x, x, int64(x.Len())) }, err
}

package safetensors_test

import (
	"encoding/binary"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/safetensors"
)

// must(f())(t) ends the test on an error.
func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }

// dtypeCase is a dtype with the Go element type Get reads it as and Save
// writes it from.
type dtypeCase struct {
	dtype safetensors.DType
	// read reads a loaded tensor as its element type: its bytes, and the
	// address of the buffer Get gave.
	read func(w *safetensors.Weights, name string) ([]byte, cuda.DevicePtr, error)
	// source makes a Source of raw on ctx, of that shape.
	source func(t testing.TB, ctx *cuda.Context, name string, raw []byte, shape ...int) safetensors.Source
}

// dtypeCases are every dtype of the format.
var dtypeCases = []dtypeCase{
	{safetensors.F64, readAs[float64], sourceAs[float64]},
	{safetensors.F32, readAs[float32], sourceAs[float32]},
	{safetensors.F16, readAs[cuda.Float16], sourceAs[cuda.Float16]},
	{safetensors.BF16, readAs[cuda.BFloat16], sourceAs[cuda.BFloat16]},
	{safetensors.I64, readAs[int64], sourceAs[int64]},
	{safetensors.I32, readAs[int32], sourceAs[int32]},
	{safetensors.I16, readAs[int16], sourceAs[int16]},
	{safetensors.I8, readAs[int8], sourceAs[int8]},
	{safetensors.U8, readAs[uint8], sourceAs[uint8]},
	{safetensors.Bool, readAs[uint8], boolSource},
	{safetensors.U16, readAs[uint16], sourceAs[uint16]},
	{safetensors.U32, readAs[uint32], sourceAs[uint32]},
	{safetensors.U64, readAs[uint64], sourceAs[uint64]},
	{safetensors.F8E4M3, readAs[uint8], dtypeSource(safetensors.F8E4M3)},
	{safetensors.F8E5M2, readAs[uint8], dtypeSource(safetensors.F8E5M2)},
}

// readAs reads tensor name of w with Get[T] and returns its bytes.
func readAs[T any](w *safetensors.Weights, name string) ([]byte, cuda.DevicePtr, error) {
	b, err := safetensors.Get[T](w, name)
	if err != nil {
		return nil, 0, err
	}
	got := make([]T, b.Len())
	if err := b.CopyToHost(got); err != nil {
		return nil, 0, err
	}
	out, err := binary.Append(nil, binary.LittleEndian, got)
	return out, b.Ptr(), err
}

// sourceAs copies raw to the device and makes a Source of it as a buffer
// of T, freed when the test ends.
func sourceAs[T any](t testing.TB, ctx *cuda.Context, name string, raw []byte, shape ...int) safetensors.Source {
	t.Helper()
	b := must(cuda.FromHost(ctx, raw))(t)
	t.Cleanup(func() { b.Free() })
	return safetensors.From(name, must(cuda.ViewAs[T](b))(t), shape...)
}

// boolSource is sourceAs for bool, which a buffer of bytes cannot be viewed
// as (not every byte is a bool): raw's bytes are 0 or 1.
func boolSource(t testing.TB, ctx *cuda.Context, name string, raw []byte, shape ...int) safetensors.Source {
	t.Helper()
	host := make([]bool, len(raw))
	for i, v := range raw {
		host[i] = v != 0
	}
	b := must(cuda.FromHost(ctx, host))(t)
	t.Cleanup(func() { b.Free() })
	return safetensors.From(name, b, shape...)
}

// dtypeSource makes Sources of uint8 buffers with dtype d, which Go has no
// type for.
func dtypeSource(d safetensors.DType) func(testing.TB, *cuda.Context, string, []byte, ...int) safetensors.Source {
	return func(t testing.TB, ctx *cuda.Context, name string, raw []byte, shape ...int) safetensors.Source {
		t.Helper()
		s := sourceAs[uint8](t, ctx, name, raw, shape...)
		s.DType = d
		return s
	}
}

// pattern is n bytes of tensor data for dtype d, each tensor's its own
// (seed): 0 and 1 for BOOL.
func pattern(d safetensors.DType, n, seed int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(i*7 + seed*31 + 1)
		if d == safetensors.Bool {
			out[i] &= 1
		}
	}
	return out
}

package safetensors_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/safetensors"
)

// Loading a .safetensors file (here a tiny one, written for the example)
// into device memory, and a tensor of it as a typed buffer.
func ExampleFile_Load() {
	header := `{"bias":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}`
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	file = append(file, header...)
	for _, v := range []float32{0.5, 1.5, 2.5} {
		file = binary.LittleEndian.AppendUint32(file, math.Float32bits(v))
	}
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		fmt.Println(err)
		return
	}

	dev, _ := cuda.GetDevice(0)
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	f, err := safetensors.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	w, err := f.Load(ctx, cuda.IOConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Free()
	bias, err := safetensors.Get[float32](w, "bias")
	if err != nil {
		fmt.Println(err)
		return
	}
	out := make([]float32, bias.Len())
	if err := bias.CopyToHost(out); err != nil {
		fmt.Println(err)
		return
	}
	t, _ := f.Tensor("bias")
	fmt.Println(t.DType, t.Shape, out)
	// Output: F32 [3] [0.5 1.5 2.5]
}

// Saving device buffers as a .safetensors file, laid out as Hugging Face's
// library lays it out (the widest dtype first, then by name), and loading
// it back.
func ExampleSaveFile() {
	dev, _ := cuda.GetDevice(0)
	ctx, err := cuda.NewContext(dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	weight, err := cuda.FromHost(ctx, []float32{1, 2, 3, 4, 5, 6})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer weight.Free()
	ids, err := cuda.FromHost(ctx, []int64{7, 8})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ids.Free()

	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")
	err = safetensors.SaveFile(path, []safetensors.Source{
		safetensors.From("weight", weight, 2, 3),
		safetensors.From("ids", ids, 2),
	}, map[string]string{"format": "pt"}, cuda.IOConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}

	f, err := safetensors.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	fmt.Println(f.Metadata)
	for _, t := range f.Tensors {
		fmt.Println(t.Name, t.DType, t.Shape, "bytes", t.Begin, "to", t.End)
	}
	w, err := f.Load(ctx, cuda.IOConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Free()
	fmt.Println(w)
	back, err := safetensors.Get[float32](w, "weight")
	if err != nil {
		fmt.Println(err)
		return
	}
	out := make([]float32, back.Len())
	if err := back.CopyToHost(out); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out)
	// Output:
	// map[format:pt]
	// ids I64 [2] bytes 0 to 16
	// weight F32 [2 3] bytes 16 to 40
	// safetensors.Weights{2 tensors, 40 bytes, cuda:0}
	// [1 2 3 4 5 6]
}

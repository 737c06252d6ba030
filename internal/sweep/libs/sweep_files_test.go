package libs_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/sweep"
	"github.com/gocuda/cuda/nvrtc"
	"github.com/gocuda/cuda/safetensors"
)

// sweepFiles is the fault sweep's rows of safetensors files and NVRTC.
func sweepFiles() []sweep.Case {
	return []sweep.Case{
		{Name: "safetensors", Covers: []string{"File.Load", "Weights.Free", "Weights.String", "File.String", "Header.String"}, MaxNth: 2,
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				// c is misaligned in the file (I16 at byte 11): loaded whole,
				// the file is two reads, c's at an aligned place.
				path := filepath.Join(t.TempDir(), "w.safetensors")
				header := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]},"c":{"dtype":"I16","shape":[1],"data_offsets":[11,13]}}`
				file := append(binary.LittleEndian.AppendUint64(nil, uint64(len(header))), header...)
				if err := os.WriteFile(path, append(file, make([]byte, 13)...), 0o644); err != nil {
					t.Fatal(err)
				}
				f := must(safetensors.Open(path))(t)
				sb := new(cuda.StagingBuffer)
				var all, one *safetensors.Weights
				c := cuda.IOConfig{Staging: sb, Stream: e.S}
				return func() error {
						return sweep.FirstErr(
							func() (err error) { all, err = f.Load(e.Ctx, c); return err },
							func() (err error) { one, err = f.Load(e.Ctx, c, "b"); return err },
							func() error { _, _, _ = all.String(), f.String(), f.Header.String(); return nil },
							func() error { return all.Free() },
							func() error { return one.Free() },
						)
					}, func(t *testing.T, _ error) {
						for _, w := range []*safetensors.Weights{all, one} {
							if err := w.Free(); err != nil {
								if err := w.Free(); err != nil {
									t.Errorf("freeing the weights again: %v", err)
								}
							}
						}
						if err := sb.Close(); err != nil && sb.Close() != nil {
							t.Errorf("closing the staging buffer: %v", err)
						}
						f.Close()
					}
			}},
		{Name: "safetensors.Save", Covers: []string{"safetensors.From", "safetensors.Save", "safetensors.SaveFile"}, MaxNth: 2,
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				a := must(cuda.FromHost(e.Ctx, []float32{1, 2}))(t)
				b := must(cuda.FromHost(e.Ctx, []uint8{3, 4, 5}))(t)
				sb := new(cuda.StagingBuffer)
				c := cuda.IOConfig{Staging: sb, Stream: e.S}
				path := filepath.Join(t.TempDir(), "saved.safetensors")
				var buf bytes.Buffer
				return func() error {
						sources := []safetensors.Source{safetensors.From("a", a, 2), safetensors.From("b", b, 3)}
						return sweep.FirstErr(
							func() error { return safetensors.Save(&buf, sources, map[string]string{"format": "pt"}, c) },
							func() error { return safetensors.SaveFile(path, sources, nil, c) },
						)
					}, func(t *testing.T, err error) {
						if _, serr := os.Stat(path); err != nil && !errors.Is(serr, os.ErrNotExist) {
							t.Errorf("a failed save left its file (%v)", serr)
						}
						if err == nil {
							if _, err := safetensors.Parse(bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
								t.Errorf("Save's file does not parse: %v", err)
							}
						}
						got := make([]float32, 2)
						if err := a.CopyToHost(got); err != nil || got[1] != 2 {
							t.Errorf("the saved buffer no longer reads: %v %v", got, err)
						}
						a.Free()
						b.Free()
						if err := sb.Close(); err != nil && sb.Close() != nil {
							t.Errorf("closing the staging buffer: %v", err)
						}
					}
			}},
		{Name: "nvrtc", Covers: []string{"nvrtc.Compile", "nvrtc.Version"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var m *cuda.Module
				return func() error {
						// NVRTC has no fake: where the library is missing
						// there is nothing to sweep.
						if _, err := nvrtc.Version(); errors.Is(err, cuda.ErrNotSupported) {
							return nil
						}
						out, err := nvrtc.Compile(e.Ctx, `extern "C" __global__ void k() {}`, nvrtc.Options{PTX: true})
						if err != nil {
							return err
						}
						m, err = e.Ctx.LoadModule(out.Image)
						return err
					}, func(t *testing.T, _ error) {
						m.Close()
					}
			}},
	}
}

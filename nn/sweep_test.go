package nn_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/sweep"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// nnSweepCases are the fault sweep's rows, each one or more of the
// package's calls on small arrays. A file of the package's tests adds
// its own rows in an init function.
var nnSweepCases []sweep.Case

// nnNoDriver are the exported functions and methods that call nothing.
var nnNoDriver = []string{"Error.Error", "Error.Unwrap"}

// TestFaultSweep fails each driver call each layer makes (allocations in
// stream order, the kernel's launch, the copies that read the result),
// one at a time, with each of a few codes (internal/sweep): the layer
// returns an error carrying the code, its sentinel and the call's name,
// holds nothing afterwards (its result freed where it made one), and the
// arrays and the stream still work: the layer, called again, gives what
// it gave before. The kernels run on the fake (compiled for the host by
// internal/hostcc); each row warms its kernels first, so that the sweep
// hits the calls of a launch, not of a compile. Where no kernel runs, the
// sweep is skipped.
func TestFaultSweep(t *testing.T) {
	if !cudatest.KernelsRun() {
		t.Skip("no kernel runs here (no C++ compiler for the fake): the layers are not swept")
	}
	api := sweep.API(t, sweep.Zero{Packages: map[string]string{".": "nn"}, Types: nnZeroTypes})
	cases := append(slices.Clone(nnSweepCases), layerSweepCases()...)
	sweep.Run(t, sweep.Config{
		Cases:    cases,
		PTX:      "../testdata/kernels.ptx",
		Race:     nnRace,
		API:      api,
		NoDriver: nnNoDriver,
	})
}

// layerSweepStep is one call of a row: it returns its results' bytes
// read back, and frees them.
type layerSweepStep func() ([]float32, error)

// layerSweepRead reads a's elements as float32s and frees a: a Free the
// driver refuses is the step's error, and is made again (as the refusal
// leaves the memory allocated).
func layerSweepRead[T nn.Float](a *nd.Array[T], err error) ([]float32, error) {
	if err != nil {
		return nil, err
	}
	v, err := a.ToSlice()
	if e := a.Free(); e != nil {
		a.Free()
		err = errors.Join(err, e)
	}
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(v))
	for i, x := range layerFrom(v) {
		out[i] = float32(x)
	}
	return out, nil
}

// layerSweepCase is a row of steps over arrays made by setup on the
// sweep's stream: each step is run once before the sweep (compiling its
// kernel, and giving what it must give again), then the steps are the
// operation; after it each step must give the same again, and setup's
// arrays are freed.
func layerSweepCase(name string, covers []string, setup func(t *testing.T, s *cuda.Stream) ([]layerSweepStep, func())) sweep.Case {
	return sweep.Case{Name: name, Covers: covers,
		Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
			steps, release := setup(t, e.S)
			want := make([][]float32, len(steps))
			for i, st := range steps {
				want[i] = must(st())(t)
			}
			if err := e.S.Synchronize(); err != nil {
				t.Fatal(err)
			}
			op := func() error {
				for i, st := range steps {
					if _, err := st(); err != nil {
						return fmt.Errorf("step %d: %w", i, err)
					}
				}
				return nil
			}
			return op, func(t *testing.T, err error) {
				for i, st := range steps {
					got, err := st()
					if err != nil {
						t.Errorf("%s: step %d after the failure: %v", name, i, err)
					} else if !slices.Equal(got, want[i]) {
						t.Errorf("%s: step %d after the failure gives %v, want %v", name, i, got, want[i])
					}
				}
				release()
				if err := e.Ctx.Synchronize(); err != nil {
					t.Errorf("the context after the row: %v", err)
				}
			}
		}}
}

// layerSweepArrays makes float32 arrays on s and frees them all at once.
type layerSweepArrays struct {
	t      *testing.T
	s      *cuda.Stream
	arrays []func() error
}

func (r *layerSweepArrays) f32(v []float32, shape ...int) *nd.Array[float32] {
	a := must(nd.FromSlice(r.s, v, shape...))(r.t)
	r.arrays = append(r.arrays, a.Free)
	return a
}

func (r *layerSweepArrays) bf16(v []float32, shape ...int) *nd.Array[cuda.BFloat16] {
	h := make([]cuda.BFloat16, len(v))
	for i := range v {
		h[i] = cuda.NewBFloat16(v[i])
	}
	a := must(nd.FromSlice(r.s, h, shape...))(r.t)
	r.arrays = append(r.arrays, a.Free)
	return a
}

func (r *layerSweepArrays) i32(v []int32, shape ...int) *nd.Array[int32] {
	a := must(nd.FromSlice(r.s, v, shape...))(r.t)
	r.arrays = append(r.arrays, a.Free)
	return a
}

func (r *layerSweepArrays) release() {
	for _, f := range r.arrays {
		if err := f(); err != nil {
			r.t.Error(err)
		}
	}
}

func layerSweepCases() []sweep.Case {
	x6 := []float32{1, -2, 3, 0.5, 2, -1, 0, 4, -3, 1, 1, 2}
	return []sweep.Case{
		layerSweepCase("norms", []string{"nn.LayerNorm", "nn.LayerNormInto", "nn.RMSNorm", "nn.RMSNormInto",
			"nn.LayerNormBackward", "nn.RMSNormBackward", "nn.AddLayerNorm", "nn.AddLayerNormInto", "nn.AddRMSNorm", "nn.AddRMSNormInto"},
			func(t *testing.T, s *cuda.Stream) ([]layerSweepStep, func()) {
				r := &layerSweepArrays{t: t, s: s}
				x, w, b := r.f32(x6, 2, 6), r.f32([]float32{1, 2, 1, 2, 1, 2}, 6), r.f32([]float32{0, 1, 0, 1, 0, 1}, 6)
				dy, out := r.f32(x6, 2, 6), r.f32(make([]float32, 12), 2, 6)
				hx := r.bf16(x6, 2, 6)
				sum := r.f32(make([]float32, 12), 2, 6)
				x8, w8 := r.f32(append(x6[:12:12], 1, 2, 3, 4), 2, 8), r.f32([]float32{1, 2, 1, 2, 1, 2, 1, 2}, 8) // the fused backward's rows
				return []layerSweepStep{
					func() ([]float32, error) { return layerSweepRead(nn.LayerNorm(x, w, b, 1e-5)) },
					func() ([]float32, error) { return layerSweepRead(nn.RMSNorm(hx, nil, 1e-5)) },
					func() ([]float32, error) { return layerSweepInto(out, nn.LayerNormInto(out, x, nil, b, 1e-5)) },
					func() ([]float32, error) { return layerSweepInto(out, nn.RMSNormInto(out, x, w, 1e-5)) },
					func() ([]float32, error) {
						dx, dw, db, err := nn.LayerNormBackward(dy, x, w, b, 1e-5)
						return layerSweepAll(err, dx, dw, db)
					},
					func() ([]float32, error) {
						dx, dw, err := nn.RMSNormBackward(dy, x, w, 1e-5)
						return layerSweepAll(err, dx, dw)
					},
					func() ([]float32, error) {
						dx, dw, db, err := nn.LayerNormBackward(x8, x8, w8, w8, 1e-5)
						return layerSweepAll(err, dx, dw, db)
					},
					func() ([]float32, error) {
						sum, y, err := nn.AddLayerNorm(x, dy, w, b, 1e-5)
						return layerSweepAll(err, sum, y)
					},
					func() ([]float32, error) {
						sum, y, err := nn.AddRMSNorm(hx, hx, nil, 1e-5)
						return layerSweepAll(err, sum, y)
					},
					func() ([]float32, error) {
						return layerSweepInto(out, nn.AddLayerNormInto(sum, out, x, dy, w, nil, 1e-5))
					},
					func() ([]float32, error) { return layerSweepInto(out, nn.AddRMSNormInto(sum, out, x, dy, w, 1e-5)) },
				}, r.release
			}),
		layerSweepCase("activations", []string{"nn.GELU", "nn.GELUInto", "nn.GELUTanh", "nn.GELUTanhInto", "nn.SiLU", "nn.SiLUInto",
			"nn.SwiGLU", "nn.SwiGLUInto"},
			func(t *testing.T, s *cuda.Stream) ([]layerSweepStep, func()) {
				r := &layerSweepArrays{t: t, s: s}
				x, out := r.f32(x6, 12), r.f32(make([]float32, 12), 12)
				return []layerSweepStep{
					func() ([]float32, error) { return layerSweepRead(nn.GELU(x)) },
					func() ([]float32, error) { return layerSweepInto(out, nn.GELUInto(out, x)) },
					func() ([]float32, error) { return layerSweepRead(nn.GELUTanh(x)) },
					func() ([]float32, error) { return layerSweepInto(out, nn.GELUTanhInto(out, x)) },
					func() ([]float32, error) { return layerSweepRead(nn.SiLU(x)) },
					func() ([]float32, error) { return layerSweepInto(out, nn.SiLUInto(out, x)) },
					func() ([]float32, error) { return layerSweepRead(nn.SwiGLU(x, x)) },
					func() ([]float32, error) { return layerSweepInto(out, nn.SwiGLUInto(out, x, x)) },
				}, r.release
			}),
		layerSweepCase("softmax and cross-entropy", []string{"nn.Softmax", "nn.SoftmaxInto", "nn.CrossEntropy", "nn.CrossEntropyBackward"},
			func(t *testing.T, s *cuda.Stream) ([]layerSweepStep, func()) {
				r := &layerSweepArrays{t: t, s: s}
				x, out := r.f32(x6, 2, 6), r.f32(make([]float32, 12), 2, 6)
				lengths, targets := r.i32([]int32{3, 5}, 2), r.i32([]int32{4, -100}, 2)
				return []layerSweepStep{
					func() ([]float32, error) {
						return layerSweepRead(nn.Softmax(x, 0.5, nn.Mask{Causal: true, Lengths: lengths}))
					},
					func() ([]float32, error) { return layerSweepInto(out, nn.SoftmaxInto(out, x, 1, nn.Mask{})) },
					func() ([]float32, error) { return layerSweepRead(nn.CrossEntropy(x, targets, -100)) },
					func() ([]float32, error) { return layerSweepRead(nn.CrossEntropyBackward(x, targets, -100, 1)) },
				}, r.release
			}),
		layerSweepCase("embedding, rope, dropout", []string{"nn.Embedding", "nn.EmbeddingInto", "nn.RoPE", "nn.RoPEInto",
			"nn.Dropout", "nn.DropoutInto", "nn.DropoutBackward", "nn.DropoutMask"},
			func(t *testing.T, s *cuda.Stream) ([]layerSweepStep, func()) {
				r := &layerSweepArrays{t: t, s: s}
				table, ids := r.f32(x6, 3, 4), r.i32([]int32{2, 0}, 2)
				out := r.f32(make([]float32, 8), 2, 4)
				x := r.f32(x6, 1, 3, 1, 4)
				rot := r.f32(make([]float32, 12), 1, 3, 1, 4)
				return []layerSweepStep{
					func() ([]float32, error) { return layerSweepRead(nn.Embedding(table, ids)) },
					func() ([]float32, error) { return layerSweepInto(out, nn.EmbeddingInto(out, table, ids)) },
					func() ([]float32, error) { return layerSweepRead(nn.RoPE(x, 2, nn.Rotary{})) },
					func() ([]float32, error) { return layerSweepInto(rot, nn.RoPEInto(rot, x, 2, nn.Rotary{})) },
					func() ([]float32, error) { return layerSweepRead(nn.Dropout(x, 0.5, 9, 0)) },
					func() ([]float32, error) { return layerSweepInto(rot, nn.DropoutInto(rot, x, 0.5, 9, 0)) },
					func() ([]float32, error) { return layerSweepRead(nn.DropoutBackward(x, 0.5, 9, 0)) },
					func() ([]float32, error) {
						m, err := nn.DropoutMask(s, 0.5, 9, 0, 12)
						if err != nil {
							return nil, err
						}
						v, err := m.ToSlice()
						if e := m.Free(); e != nil {
							m.Free()
							err = errors.Join(err, e)
						}
						out := make([]float32, len(v))
						for i := range v {
							out[i] = float32(v[i])
						}
						return out, err
					},
				}, r.release
			}),
	}
}

// layerSweepInto reads dst after an Into call.
func layerSweepInto(dst *nd.Array[float32], err error) ([]float32, error) {
	if err != nil {
		return nil, err
	}
	return dst.ToSlice()
}

// layerSweepAll reads and frees a backward pass's results, one after the
// other.
func layerSweepAll[T nn.Float](err error, as ...*nd.Array[T]) ([]float32, error) {
	if err != nil {
		return nil, err // the call freed what it made
	}
	var out []float32
	var errs []error
	for _, a := range as {
		v, err := layerSweepRead(a, nil)
		out = append(out, v...)
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

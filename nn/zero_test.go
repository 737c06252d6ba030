package nn_test

import (
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/sweep"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// nnZeroTypes are the zero values of the package's exported types, by
// "nn.Name" (nil for a constraint). A file of the package's tests adds
// its own types' in an init function.
var nnZeroTypes = map[string]sweep.ZeroType{
	"nn.Error":  {Zero: new(nn.Error)},
	"nn.Mask":   {Zero: new(nn.Mask)},
	"nn.Rotary": {Zero: new(nn.Rotary)},
	"nn.Float":  {},
	"nn.Index":  {},
}

// nnZeroFuncs are the calls of each exported function with nil, zero and
// failed arrays and streams, by "nn.Name": each must return errors
// wrapping cuda.ErrInvalidValue (or ErrClosed), without calling the
// driver. A file of the package's tests adds its own functions' in an
// init function.
var nnZeroFuncs = map[string]func() []error{}

// zeroBad is the bad arrays of T: nil, the zero Array, and a failed one
// (the stand-in an nd operation returns with its error).
func zeroBad[T nd.Elem]() []*nd.Array[T] {
	failed, _ := nd.Empty[T](nil, 1)
	return []*nd.Array[T]{nil, new(nd.Array[T]), failed}
}

// zeroEach calls f with each bad array.
func zeroEach[T nd.Elem](f func(*nd.Array[T]) error) []error {
	var out []error
	for _, b := range zeroBad[T]() {
		out = append(out, f(b))
	}
	return out
}

// zeroErr is the error of a call of two results.
func zeroErr[A any](_ A, err error) error { return err }

func init() {
	type (
		a32 = *nd.Array[float32]
		bf  = *nd.Array[cuda.BFloat16]
	)
	z := nnZeroFuncs
	z["nn.LayerNorm"] = func() []error {
		return zeroEach(func(x a32) error { return zeroErr(nn.LayerNorm(x, x, x, 1e-5)) })
	}
	z["nn.LayerNormInto"] = func() []error {
		return zeroEach(func(x bf) error { return nn.LayerNormInto(x, x, nil, nil, 1e-5) })
	}
	z["nn.AddLayerNorm"] = func() []error {
		return zeroEach(func(x a32) error { _, _, err := nn.AddLayerNorm(x, x, nil, nil, 1e-5); return err })
	}
	z["nn.AddRMSNorm"] = func() []error {
		return zeroEach(func(x bf) error { _, _, err := nn.AddRMSNorm(x, x, x, 1e-5); return err })
	}
	z["nn.AddLayerNormInto"] = func() []error {
		return zeroEach(func(x a32) error { return nn.AddLayerNormInto(x, x, x, x, x, x, 1e-5) })
	}
	z["nn.AddRMSNormInto"] = func() []error {
		return zeroEach(func(x a32) error { return nn.AddRMSNormInto(x, x, x, x, nil, 1e-5) })
	}
	z["nn.RMSNorm"] = func() []error { return zeroEach(func(x a32) error { return zeroErr(nn.RMSNorm(x, nil, 1e-5)) }) }
	z["nn.RMSNormInto"] = func() []error {
		return zeroEach(func(x a32) error { return nn.RMSNormInto(x, x, x, 1e-5) })
	}
	z["nn.LayerNormBackward"] = func() []error {
		return zeroEach(func(x a32) error { _, _, _, err := nn.LayerNormBackward(x, x, x, x, 1e-5); return err })
	}
	z["nn.RMSNormBackward"] = func() []error {
		return zeroEach(func(x a32) error { _, _, err := nn.RMSNormBackward(x, x, nil, 1e-5); return err })
	}
	for name, f := range map[string]func(a32) (a32, error){
		"nn.GELU": nn.GELU[float32], "nn.GELUTanh": nn.GELUTanh[float32], "nn.SiLU": nn.SiLU[float32],
	} {
		z[name] = func() []error { return zeroEach(func(x a32) error { return zeroErr(f(x)) }) }
	}
	for name, f := range map[string]func(a32, a32) error{
		"nn.GELUInto": nn.GELUInto[float32], "nn.GELUTanhInto": nn.GELUTanhInto[float32], "nn.SiLUInto": nn.SiLUInto[float32],
	} {
		z[name] = func() []error { return zeroEach(func(x a32) error { return f(x, x) }) }
	}
	z["nn.SwiGLU"] = func() []error { return zeroEach(func(x a32) error { return zeroErr(nn.SwiGLU(x, x)) }) }
	z["nn.SwiGLUInto"] = func() []error { return zeroEach(func(x a32) error { return nn.SwiGLUInto(x, x, x) }) }
	z["nn.Softmax"] = func() []error {
		return zeroEach(func(x a32) error { return zeroErr(nn.Softmax(x, 1, nn.Mask{Causal: true})) })
	}
	z["nn.SoftmaxInto"] = func() []error { return zeroEach(func(x a32) error { return nn.SoftmaxInto(x, x, 1, nn.Mask{}) }) }
	z["nn.CrossEntropy"] = func() []error {
		return zeroEach(func(x a32) error { return zeroErr(nn.CrossEntropy(x, new(nd.Array[int64]), -100)) })
	}
	z["nn.CrossEntropyBackward"] = func() []error {
		return zeroEach(func(x a32) error { return zeroErr(nn.CrossEntropyBackward[float32, int32](x, nil, -100, 1)) })
	}
	z["nn.Embedding"] = func() []error {
		return zeroEach(func(x a32) error { return zeroErr(nn.Embedding[float32, int32](x, nil)) })
	}
	z["nn.EmbeddingInto"] = func() []error {
		return zeroEach(func(x a32) error { return nn.EmbeddingInto(x, x, new(nd.Array[int64])) })
	}
	z["nn.RoPE"] = func() []error { return zeroEach(func(x a32) error { return zeroErr(nn.RoPE(x, 0, nn.Rotary{})) }) }
	z["nn.RoPEInto"] = func() []error { return zeroEach(func(x a32) error { return nn.RoPEInto(x, x, 0, nn.Rotary{}) }) }
	z["nn.Dropout"] = func() []error { return zeroEach(func(x a32) error { return zeroErr(nn.Dropout(x, 0.5, 1, 0)) }) }
	z["nn.DropoutInto"] = func() []error { return zeroEach(func(x a32) error { return nn.DropoutInto(x, x, 0.5, 1, 0) }) }
	z["nn.DropoutBackward"] = func() []error {
		return zeroEach(func(x a32) error { return zeroErr(nn.DropoutBackward(x, 0.5, 1, 0)) })
	}
	z["nn.DropoutMask"] = func() []error {
		return []error{zeroErr(nn.DropoutMask(nil, 0.5, 1, 0, 3)), zeroErr(nn.DropoutMask(new(cuda.Stream), 0.5, 1, 0, 3))}
	}
}

// TestZeroValues: every exported function of the package, called with
// nil, zero and failed arrays (and nil and zero streams), returns an
// error wrapping cuda.ErrInvalidValue and calls no driver function; every
// method of each exported type's zero value and nil pointer answers
// without a panic (internal/sweep's ZeroValues, against the fake). A new
// exported function or type fails the test until it has a row.
func TestZeroValues(t *testing.T) {
	sweep.ZeroValues(t, sweep.Zero{Types: nnZeroTypes, Funcs: nnZeroFuncs, Packages: map[string]string{".": "nn"}})
}

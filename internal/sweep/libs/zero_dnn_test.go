package libs_test

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
	"github.com/gocuda/cuda/internal/sweep"
)

// The zero values of package cudnn, added to the libraries' table.
func init() {
	zero.Packages["../../../cudnn"] = "cudnn"
	for name, zt := range map[string]sweep.ZeroType{
		"cudnn.Element":          {Zero: nil, Driver: false}, // a constraint
		"cudnn.Half":             {Zero: nil, Driver: false}, // a constraint
		"cudnn.AttentionTensor":  {Zero: new(cudnn.AttentionTensor[cuda.BFloat16]), Driver: false},
		"cudnn.AttentionOptions": {Zero: new(cudnn.AttentionOptions), Driver: false},
		"cudnn.Result":           {Zero: new(cudnn.Result), Driver: false},
		"cudnn.Error":            {Zero: new(cudnn.Error), Driver: false},
		"cudnn.Handle":           {Zero: new(cudnn.Handle), Driver: false},
		"cudnn.Layout":           {Zero: new(cudnn.Layout), Driver: false},
		"cudnn.Shape":            {Zero: new(cudnn.Shape), Driver: false},
		"cudnn.Tensor":           {Zero: new(cudnn.Tensor[float32]), Driver: false},
		"cudnn.Conv2D":           {Zero: new(cudnn.Conv2D), Driver: false},
		"cudnn.Activation":       {Zero: new(cudnn.Activation), Driver: false},
		"cudnn.PoolMode":         {Zero: new(cudnn.PoolMode), Driver: false},
		"cudnn.Pool2D":           {Zero: new(cudnn.Pool2D), Driver: false},
		"cudnn.BatchNorm":        {Zero: new(cudnn.BatchNorm), Driver: false},
	} {
		zero.Types[name] = zt
	}
	h, x, hx := &cudnn.Handle{}, cudnn.Tensor[float32]{}, cudnn.Tensor[cuda.Float16]{}
	b, hb := &cuda.DeviceBuffer[float32]{}, &cuda.DeviceBuffer[cuda.Float16]{}
	bn := cudnn.BatchNorm{}
	for name, f := range map[string]func() []error{
		"cudnn.Version": nil,
		"cudnn.Library": nil,
		"cudnn.New": func() []error {
			_, e1 := cudnn.New(&cuda.Stream{})
			_, e2 := cudnn.New(nil)
			return []error{e1, e2}
		},
		"cudnn.ConvOutput": func() []error {
			_, err := cudnn.ConvOutput(cudnn.Shape{}, cudnn.Shape{}, cudnn.Conv2D{})
			return []error{err}
		},
		"cudnn.PoolOutput": func() []error {
			_, err := cudnn.PoolOutput(cudnn.Shape{}, cudnn.Pool2D{})
			return []error{err}
		},
		"cudnn.ConvForward": func() []error {
			return []error{cudnn.ConvForward(h, x, x, x, cudnn.Conv2D{}), cudnn.ConvForward(nil, hx, hx, hx, cudnn.Conv2D{})}
		},
		"cudnn.ConvBackwardData":   func() []error { return []error{cudnn.ConvBackwardData(h, x, x, x, cudnn.Conv2D{})} },
		"cudnn.ConvBackwardFilter": func() []error { return []error{cudnn.ConvBackwardFilter(h, hx, hx, hx, cudnn.Conv2D{})} },
		"cudnn.ConvBiasActivation": func() []error {
			return []error{cudnn.ConvBiasActivation(h, x, x, x, b, cudnn.ReLU, cudnn.Conv2D{}), cudnn.ConvBiasActivation(h, hx, hx, hx, hb, cudnn.Identity, cudnn.Conv2D{})}
		},
		"cudnn.ConvBackwardBias": func() []error {
			return []error{cudnn.ConvBackwardBias(h, b, x), cudnn.ConvBackwardBias(nil, hb, hx)}
		},
		"cudnn.PoolForward":        func() []error { return []error{cudnn.PoolForward(h, x, x, cudnn.Pool2D{})} },
		"cudnn.PoolBackward":       func() []error { return []error{cudnn.PoolBackward(h, hx, hx, hx, hx, cudnn.Pool2D{})} },
		"cudnn.BatchNormInference": func() []error { return []error{cudnn.BatchNormInference(h, x, x, bn)} },
		"cudnn.BatchNormTraining":  func() []error { return []error{cudnn.BatchNormTraining(h, hx, hx, bn, nil, nil)} },
		"cudnn.BatchNormBackward":  func() []error { return []error{cudnn.BatchNormBackward(h, x, x, x, bn, b, b, nil, nil)} },
		"cudnn.Attention": func() []error {
			a := cudnn.AttentionTensor[cuda.BFloat16]{}
			return []error{cudnn.Attention(h, a, a, a, a, cudnn.AttentionOptions{}), cudnn.Attention(nil, a, a, a, a, cudnn.AttentionOptions{})}
		},
	} {
		zero.Funcs[name] = f
	}
}

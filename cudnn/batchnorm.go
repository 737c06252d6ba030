package cudnn

import (
	"errors"
	"math"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cudnn"
)

// BatchNorm is a batch normalization's parameters, one float32 per channel
// whatever the tensors' type (cuDNN's for float32 and the halves): y =
// Scale·(x − mean)/√(var + Epsilon) + Bias for each channel, the mean and
// variance over the batch and the image (cuDNN's spatial mode, PyTorch's
// BatchNorm2d).
type BatchNorm struct {
	Scale, Bias *cuda.DeviceBuffer[float32] // γ and β
	// Mean and Var are the running statistics: what BatchNormInference
	// normalizes with, and what BatchNormTraining updates (where both are
	// given) as mean ← (1 − Momentum)·mean + Momentum·batch mean, and var
	// likewise with the batch's unbiased variance.
	Mean, Var *cuda.DeviceBuffer[float32]
	Epsilon   float64 // added to the variance; 0 means 1e-5 (PyTorch's default)
	Momentum  float64 // 0 means 0.1 (PyTorch's default)
}

func (bn BatchNorm) eps() float64 {
	if bn.Epsilon == 0 {
		return 1e-5
	}
	return bn.Epsilon
}

func (bn BatchNorm) momentum() float64 {
	if bn.Momentum == 0 {
		return 0.1
	}
	return bn.Momentum
}

// checkParam says what is wrong with a per-channel buffer named name.
func checkParam(op, name string, b *cuda.DeviceBuffer[float32], c int, optional bool) error {
	switch {
	case b == nil && optional:
		return nil
	case b == nil:
		return errorf(op, cuda.ErrInvalidValue, "%s is nil", name)
	case b.Len() != c:
		return errorf(op, cuda.ErrInvalidValue, "len(%s) is %d: want %d (the channels)", name, b.Len(), c)
	}
	return nil
}

// bnArgs checks the tensors and the parameters every batch normalization
// takes.
func bnArgs[T Element](op string, names [2]string, y, x Tensor[T], bn BatchNorm) error {
	if err := errors.Join(checkTensor(op, names[0], y), checkTensor(op, names[1], x)); err != nil {
		return err
	}
	switch {
	case y.Shape != x.Shape || y.Layout != x.Layout:
		return errorf(op, cuda.ErrInvalidValue, "%s is %v %v and %s %v %v: want one shape and layout", names[0], y.Shape, y.Layout, names[1], x.Shape, x.Layout)
	case bn.Epsilon < 0 || math.IsNaN(bn.Epsilon) || math.IsInf(bn.Epsilon, 0):
		return errorf(op, cuda.ErrInvalidValue, "bn.Epsilon is %v", bn.Epsilon)
	case bn.Momentum < 0 || bn.Momentum > 1 || math.IsNaN(bn.Momentum):
		return errorf(op, cuda.ErrInvalidValue, "bn.Momentum is %v: want 0 to 1", bn.Momentum)
	}
	return errors.Join(checkParam(op, "bn.Scale", bn.Scale, x.Shape.C, false), checkParam(op, "bn.Bias", bn.Bias, x.Shape.C, names[0] == "dx"))
}

const bnSpatial = 1 // CUDNN_BATCHNORM_SPATIAL

// bnDescs makes the descriptors of x (and y, its shape) and of the
// per-channel parameters.
func bnDescs(d *descs, s Shape, l Layout, dt int32) (xd, pd clib.TensorDescriptor, err error) {
	if xd, err = d.tensor(s, l, dt); err != nil {
		return 0, 0, err
	}
	var p clib.TensorDescriptor
	if err := check(d.op, "cudnnCreateTensorDescriptor", clib.CreateTensorDescriptor(&p)); err != nil {
		return 0, 0, err
	}
	d.tensors = append(d.tensors, p)
	return xd, p, check(d.op, "cudnnDeriveBNTensorDescriptor", clib.DeriveBNTensorDescriptor(p, xd, bnSpatial))
}

// ptr is b's address, 0 for nil.
func ptr(b *cuda.DeviceBuffer[float32]) uintptr {
	if b == nil {
		return 0
	}
	return uintptr(b.Ptr())
}

// BatchNormInference normalizes x with the running statistics bn.Mean and
// bn.Var into y (x's shape and layout), queued on h's stream
// (cudnnBatchNormalizationForwardInference).
func BatchNormInference[T Element](h *Handle, y, x Tensor[T], bn BatchNorm) error {
	const op = "BatchNormInference"
	if err := h.valid(op); err != nil {
		return err
	}
	if err := bnArgs(op, [2]string{"y", "x"}, y, x, bn); err != nil {
		return err
	}
	c := x.Shape.C
	if err := errors.Join(checkParam(op, "bn.Mean", bn.Mean, c, false), checkParam(op, "bn.Var", bn.Var, c, false)); err != nil {
		return err
	}
	outs, ins := []named{tensorBuf("y", y)}, []named{tensorBuf("x", x), buf("bn.Scale", bn.Scale), buf("bn.Bias", bn.Bias), buf("bn.Mean", bn.Mean), buf("bn.Var", bn.Var)}
	if err := aliased(op, outs, ins...); err != nil {
		return err
	}
	return h.do(op, append(outs, ins...), func(cl *call) (err error) {
		d := &descs{op: op}
		defer d.release(&err)
		xd, pd, err := bnDescs(d, x.Shape, x.Layout, dataType[T]())
		if err != nil {
			return err
		}
		one, zero := float32(1), float32(0)
		return check(op, "cudnnBatchNormalizationForwardInference", clib.BatchNormalizationForwardInference(cl.lh, bnSpatial, unsafe.Pointer(&one), unsafe.Pointer(&zero),
			xd, uintptr(x.Data.Ptr()), xd, uintptr(y.Data.Ptr()), pd, ptr(bn.Scale), ptr(bn.Bias), ptr(bn.Mean), ptr(bn.Var), bn.eps()))
	})
}

// BatchNormTraining normalizes x with its own statistics (each channel's
// mean and biased variance over the batch) into y (x's shape and layout),
// updates the running statistics bn.Mean and bn.Var where both are given
// (by bn.Momentum; x must then hold more than one value per channel,
// N·H·W > 1, for the unbiased variance), and writes the batch's mean and 1/√(var + ε) into
// saveMean and saveInvStd where both are given, for BatchNormBackward;
// queued on h's stream (cudnnBatchNormalizationForwardTraining).
func BatchNormTraining[T Element](h *Handle, y, x Tensor[T], bn BatchNorm, saveMean, saveInvStd *cuda.DeviceBuffer[float32]) error {
	const op = "BatchNormTraining"
	if err := h.valid(op); err != nil {
		return err
	}
	if err := bnArgs(op, [2]string{"y", "x"}, y, x, bn); err != nil {
		return err
	}
	c := x.Shape.C
	if err := errors.Join(checkParam(op, "bn.Mean", bn.Mean, c, true), checkParam(op, "bn.Var", bn.Var, c, true),
		checkParam(op, "saveMean", saveMean, c, true), checkParam(op, "saveInvStd", saveInvStd, c, true)); err != nil {
		return err
	}
	switch {
	case (bn.Mean == nil) != (bn.Var == nil):
		return errorf(op, cuda.ErrInvalidValue, "bn.Mean and bn.Var: give both running statistics or neither")
	case (saveMean == nil) != (saveInvStd == nil):
		return errorf(op, cuda.ErrInvalidValue, "saveMean and saveInvStd: give both or neither")
	case bn.Var != nil && x.Shape.N*x.Shape.H*x.Shape.W == 1:
		return errorf(op, cuda.ErrInvalidValue, "x is %v: one value per channel has no unbiased variance to update bn.Var with (PyTorch refuses it too); leave bn.Mean and bn.Var nil, or give more values", x.Shape)
	}
	// The running statistics are read and written: outputs, as y and
	// the saved statistics are.
	outs := []named{tensorBuf("y", y), buf("bn.Mean", bn.Mean), buf("bn.Var", bn.Var), buf("saveMean", saveMean), buf("saveInvStd", saveInvStd)}
	ins := []named{tensorBuf("x", x), buf("bn.Scale", bn.Scale), buf("bn.Bias", bn.Bias)}
	if err := aliased(op, outs, ins...); err != nil {
		return err
	}
	return h.do(op, append(outs, ins...), func(cl *call) (err error) {
		d := &descs{op: op}
		defer d.release(&err)
		xd, pd, err := bnDescs(d, x.Shape, x.Layout, dataType[T]())
		if err != nil {
			return err
		}
		one, zero := float32(1), float32(0)
		return check(op, "cudnnBatchNormalizationForwardTraining", clib.BatchNormalizationForwardTraining(cl.lh, bnSpatial, unsafe.Pointer(&one), unsafe.Pointer(&zero),
			xd, uintptr(x.Data.Ptr()), xd, uintptr(y.Data.Ptr()), pd, ptr(bn.Scale), ptr(bn.Bias), bn.momentum(), ptr(bn.Mean), ptr(bn.Var), bn.eps(), ptr(saveMean), ptr(saveInvStd)))
	})
}

// BatchNormBackward computes the gradients of a batch normalization in
// training: dx (x's shape and layout) from x, dy and bn.Scale, and dScale
// and dBias (a float32 per channel); saveMean and saveInvStd are
// BatchNormTraining's (both, or neither: cuDNN then computes them again),
// bn.Bias, bn.Mean and bn.Var are not read. Queued on h's stream
// (cudnnBatchNormalizationBackward).
func BatchNormBackward[T Element](h *Handle, dx, x, dy Tensor[T], bn BatchNorm, dScale, dBias, saveMean, saveInvStd *cuda.DeviceBuffer[float32]) error {
	const op = "BatchNormBackward"
	if err := h.valid(op); err != nil {
		return err
	}
	if err := bnArgs(op, [2]string{"dx", "x"}, dx, x, bn); err != nil {
		return err
	}
	if err := checkTensor(op, "dy", dy); err != nil {
		return err
	}
	if dy.Shape != x.Shape || dy.Layout != x.Layout {
		return errorf(op, cuda.ErrInvalidValue, "dy is %v %v and x %v %v: want one shape and layout", dy.Shape, dy.Layout, x.Shape, x.Layout)
	}
	c := x.Shape.C
	if err := errors.Join(checkParam(op, "dScale", dScale, c, false), checkParam(op, "dBias", dBias, c, false),
		checkParam(op, "saveMean", saveMean, c, true), checkParam(op, "saveInvStd", saveInvStd, c, true)); err != nil {
		return err
	}
	if (saveMean == nil) != (saveInvStd == nil) {
		return errorf(op, cuda.ErrInvalidValue, "saveMean and saveInvStd: give both or neither")
	}
	outs := []named{tensorBuf("dx", dx), buf("dScale", dScale), buf("dBias", dBias)}
	ins := []named{tensorBuf("x", x), tensorBuf("dy", dy), buf("bn.Scale", bn.Scale), buf("saveMean", saveMean), buf("saveInvStd", saveInvStd)}
	if err := aliased(op, outs, ins...); err != nil {
		return err
	}
	return h.do(op, append(outs, ins...), func(cl *call) (err error) {
		d := &descs{op: op}
		defer d.release(&err)
		xd, pd, err := bnDescs(d, x.Shape, x.Layout, dataType[T]())
		if err != nil {
			return err
		}
		one, zero := float32(1), float32(0)
		pOne, pZero := unsafe.Pointer(&one), unsafe.Pointer(&zero)
		return check(op, "cudnnBatchNormalizationBackward", clib.BatchNormalizationBackward(cl.lh, bnSpatial, pOne, pZero, pOne, pZero,
			xd, uintptr(x.Data.Ptr()), xd, uintptr(dy.Data.Ptr()), xd, uintptr(dx.Data.Ptr()), pd, ptr(bn.Scale), ptr(dScale), ptr(dBias), bn.eps(), ptr(saveMean), ptr(saveInvStd)))
	})
}

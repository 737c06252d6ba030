package cudnn

import (
	"errors"
	"fmt"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cudnn"
)

// PoolMode is what a pooling window computes.
type PoolMode int

const (
	// MaxPool takes the window's largest element (a NaN wins, as in
	// PyTorch's max_pool2d).
	MaxPool PoolMode = iota
	// AvgPool averages the window, the padding counted as zeros (PyTorch's
	// avg_pool2d with count_include_pad=True, its default).
	AvgPool
	// AvgPoolExcludePad averages the window's elements inside the input.
	AvgPoolExcludePad
)

// String returns the mode's name, such as "MaxPool".
func (m PoolMode) String() string {
	switch m {
	case MaxPool:
		return "MaxPool"
	case AvgPool:
		return "AvgPool"
	case AvgPoolExcludePad:
		return "AvgPoolExcludePad"
	}
	return fmt.Sprintf("PoolMode(%d)", int(m))
}

// cudnnPoolingMode_t values, by PoolMode.
var poolModes = [...]int32{MaxPool: 0, AvgPool: 1, AvgPoolExcludePad: 2}

// Pool2D is a 2-D pooling's parameters: a window of WindowH×WindowW
// (required), moved by StrideH×StrideW (0 means the window's size, as
// PyTorch's default), over the input padded by PadH×PadW at each side,
// less than the window (else a window could hold padding alone: its
// maximum or average of the input's elements is undefined, and PyTorch
// refuses padding above half the window).
type Pool2D struct {
	Mode             PoolMode
	WindowH, WindowW int
	PadH, PadW       int
	StrideH, StrideW int
}

// norm returns p with its defaults in place, or what is wrong with it.
func (p Pool2D) norm() (Pool2D, string) {
	if p.StrideH == 0 {
		p.StrideH = p.WindowH
	}
	if p.StrideW == 0 {
		p.StrideW = p.WindowW
	}
	switch {
	case p.Mode < MaxPool || p.Mode > AvgPoolExcludePad:
		return p, fmt.Sprintf("Mode is %v", p.Mode)
	case p.WindowH < 1 || p.WindowW < 1:
		return p, fmt.Sprintf("the window is %d×%d: want at least 1×1", p.WindowH, p.WindowW)
	case p.PadH < 0 || p.PadW < 0:
		return p, fmt.Sprintf("padding %d×%d is negative", p.PadH, p.PadW)
	case p.PadH >= p.WindowH || p.PadW >= p.WindowW:
		return p, fmt.Sprintf("padding %d×%d is not below the window %d×%d: a window of padding alone has no element to pool", p.PadH, p.PadW, p.WindowH, p.WindowW)
	case p.StrideH < 1 || p.StrideW < 1:
		return p, fmt.Sprintf("stride %d×%d is negative", p.StrideH, p.StrideW)
	case p.WindowH > 1<<20 || p.WindowW > 1<<20 || p.PadH > 1<<20 || p.PadW > 1<<20 || p.StrideH > 1<<20 || p.StrideW > 1<<20:
		return p, "a window, padding or stride is above 2²⁰"
	}
	return p, ""
}

// PoolOutput returns the shape of the output of pooling an input of shape
// x under p: N×C×P×Q with P = (H + 2·PadH − WindowH)/StrideH + 1 (Q
// likewise), as cuDNN computes it (cudnnGetPooling2dForwardOutputDim).
func PoolOutput(x Shape, p Pool2D) (Shape, error) {
	const op = "PoolOutput"
	p, why := p.norm()
	if why != "" {
		return Shape{}, errorf(op, cuda.ErrInvalidValue, "p: %s", why)
	}
	return poolOutput(op, x, p)
}

func poolOutput(op string, x Shape, p Pool2D) (Shape, error) {
	if why := x.check(); why != "" {
		return Shape{}, errorf(op, cuda.ErrInvalidValue, "x: %s", why)
	}
	if x.H+2*p.PadH < p.WindowH || x.W+2*p.PadW < p.WindowW {
		return Shape{}, errorf(op, cuda.ErrInvalidValue, "the window %d×%d is larger than the padded input's %d×%d", p.WindowH, p.WindowW, x.H+2*p.PadH, x.W+2*p.PadW)
	}
	return Shape{N: x.N, C: x.C, H: (x.H+2*p.PadH-p.WindowH)/p.StrideH + 1, W: (x.W+2*p.PadW-p.WindowW)/p.StrideW + 1}, nil
}

// PoolForward pools x under p into y (PoolOutput's shape, x's layout),
// queued on h's stream (cudnnPoolingForward).
func PoolForward[T Element](h *Handle, y, x Tensor[T], p Pool2D) error {
	const op = "PoolForward"
	if err := h.valid(op); err != nil {
		return err
	}
	if err := errors.Join(checkTensor(op, "x", x), checkTensor(op, "y", y)); err != nil {
		return err
	}
	p, why := p.norm()
	if why != "" {
		return errorf(op, cuda.ErrInvalidValue, "p: %s", why)
	}
	if y.Layout != x.Layout {
		return errorf(op, cuda.ErrInvalidValue, "x is %v and y %v: want one layout", x.Layout, y.Layout)
	}
	out, err := poolOutput(op, x.Shape, p)
	if err != nil {
		return err
	}
	if y.Shape != out {
		return errorf(op, cuda.ErrInvalidValue, "y is %v: want %v (PoolOutput)", y.Shape, out)
	}
	outs, ins := []named{tensorBuf("y", y)}, []named{tensorBuf("x", x)}
	if err := aliased(op, outs, ins...); err != nil {
		return err
	}
	dt := dataType[T]()
	return h.do(op, append(outs, ins...), func(c *call) (err error) {
		d := &descs{op: op}
		defer d.release(&err)
		xd, err := d.tensor(x.Shape, x.Layout, dt)
		if err != nil {
			return err
		}
		yd, err := d.tensor(y.Shape, y.Layout, dt)
		if err != nil {
			return err
		}
		pd, err := d.pooling(p)
		if err != nil {
			return err
		}
		one, zero := float32(1), float32(0)
		return check(op, "cudnnPoolingForward", clib.PoolingForward(c.lh, pd, unsafe.Pointer(&one), xd, uintptr(x.Data.Ptr()), unsafe.Pointer(&zero), yd, uintptr(y.Data.Ptr())))
	})
}

// pooling makes a pooling descriptor of p (normalized), added to d.
func (d *descs) pooling(p Pool2D) (clib.PoolingDescriptor, error) {
	var pd clib.PoolingDescriptor
	if err := check(d.op, "cudnnCreatePoolingDescriptor", clib.CreatePoolingDescriptor(&pd)); err != nil {
		return 0, err
	}
	d.pools = append(d.pools, pd)
	const propagateNaN = 1 // CUDNN_PROPAGATE_NAN
	return pd, check(d.op, "cudnnSetPooling2dDescriptor", clib.SetPooling2dDescriptor(pd, poolModes[p.Mode], propagateNaN, int32(p.WindowH), int32(p.WindowW), int32(p.PadH), int32(p.PadW), int32(p.StrideH), int32(p.StrideW)))
}

// PoolBackward computes dx, the gradient of pooling's input x, from the
// gradient dy of its output y (PoolForward's y of x under p, which it
// reads): a max window's gradient goes to its largest element, an
// average's is shared by the elements it averaged. All four tensors in
// one layout; queued on h's stream (cudnnPoolingBackward).
func PoolBackward[T Element](h *Handle, dx, y, dy, x Tensor[T], p Pool2D) error {
	const op = "PoolBackward"
	if err := h.valid(op); err != nil {
		return err
	}
	if err := errors.Join(checkTensor(op, "dx", dx), checkTensor(op, "y", y), checkTensor(op, "dy", dy), checkTensor(op, "x", x)); err != nil {
		return err
	}
	p, why := p.norm()
	if why != "" {
		return errorf(op, cuda.ErrInvalidValue, "p: %s", why)
	}
	if dx.Layout != x.Layout || y.Layout != x.Layout || dy.Layout != x.Layout {
		return errorf(op, cuda.ErrInvalidValue, "dx is %v, y %v, dy %v and x %v: want one layout", dx.Layout, y.Layout, dy.Layout, x.Layout)
	}
	out, err := poolOutput(op, x.Shape, p)
	if err != nil {
		return err
	}
	switch {
	case y.Shape != out:
		return errorf(op, cuda.ErrInvalidValue, "y is %v: want %v (PoolOutput)", y.Shape, out)
	case dy.Shape != out:
		return errorf(op, cuda.ErrInvalidValue, "dy is %v: want %v (PoolOutput)", dy.Shape, out)
	case dx.Shape != x.Shape:
		return errorf(op, cuda.ErrInvalidValue, "dx is %v: want x's %v", dx.Shape, x.Shape)
	}
	outs, ins := []named{tensorBuf("dx", dx)}, []named{tensorBuf("y", y), tensorBuf("dy", dy), tensorBuf("x", x)}
	if err := aliased(op, outs, ins...); err != nil {
		return err
	}
	dt := dataType[T]()
	return h.do(op, append(outs, ins...), func(c *call) (err error) {
		d := &descs{op: op}
		defer d.release(&err)
		xd, err := d.tensor(x.Shape, x.Layout, dt)
		if err != nil {
			return err
		}
		yd, err := d.tensor(y.Shape, y.Layout, dt)
		if err != nil {
			return err
		}
		pd, err := d.pooling(p)
		if err != nil {
			return err
		}
		one, zero := float32(1), float32(0)
		return check(op, "cudnnPoolingBackward", clib.PoolingBackward(c.lh, pd, unsafe.Pointer(&one), yd, uintptr(y.Data.Ptr()), yd, uintptr(dy.Data.Ptr()),
			xd, uintptr(x.Data.Ptr()), unsafe.Pointer(&zero), xd, uintptr(dx.Data.Ptr())))
	})
}

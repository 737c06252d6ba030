package cusparse

import (
	"unsafe"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cusparse"
)

// SpMVMisused calls cusparseSpMV as SpMV does but for one thing wrong,
// which only the fake can be trusted to catch (the real library's answer
// to it is undefined): "short", a work buffer a byte smaller than
// cusparseSpMV_bufferSize asked for; "destroyed", a vector descriptor
// destroyed before the call; "nil", no work buffer. It returns SpMV's
// error and the size asked for.
func SpMVMisused[I Index, T Element](h *Handle, a *Matrix[I, T], x, y *cuda.DeviceBuffer[T], how string) (uintptr, error) {
	const name = "SpMV"
	if err := a.hold(name); err != nil {
		return 0, err
	}
	defer a.life.Release()
	var asked uintptr
	d := &descs{op: name}
	err := h.do(name, append(a.mem(), x, y), func(lh clib.Handle, _ func(int, uintptr) (uintptr, error)) (err error) {
		defer d.release(&err)
		da, err := spMat(d, a)
		if err != nil {
			return err
		}
		dx, err := dnVec(d, x)
		if err != nil {
			return err
		}
		dy, err := dnVec(d, y)
		if err != nil {
			return err
		}
		var one, zero T
		one = 1
		ct := valueType[T]()
		pa, pb := unsafe.Pointer(&one), unsafe.Pointer(&zero)
		if err := check(name, "cusparseSpMV_bufferSize", clib.SpMV_bufferSize(lh, 0, pa, da, dx, pb, dy, ct, 0, &asked)); err != nil {
			return err
		}
		var buf uintptr
		switch how {
		case "short", "destroyed":
			b, err := cuda.AllocAsync[byte](h.base.Stream(), int(asked)-1)
			if err != nil {
				return err
			}
			defer b.Free()
			buf = uintptr(b.Ptr())
			if how == "destroyed" {
				big, err := cuda.AllocAsync[byte](h.base.Stream(), int(asked))
				if err != nil {
					return err
				}
				defer big.Free()
				buf = uintptr(big.Ptr())
				if err := check(name, "cusparseDestroyDnVec", clib.DestroyDnVec(dx)); err != nil {
					return err
				}
				d.vec = d.vec[1:] // destroyed already
			}
		}
		return check(name, "cusparseSpMV", clib.SpMV(lh, 0, pa, da, dx, pb, dy, ct, 0, buf))
	})
	return asked, err
}

// SpMVBufferSize calls cusparseSpMV_bufferSize for a, x and y with op and
// the compute type ct as given, without SpMV's own checks: what the
// library (or the fake) answers combinations SpMV and SpMVHalf refuse
// first.
func SpMVBufferSize[I Index, T, X Value](h *Handle, op Op, ct int32, a *Matrix[I, T], x, y *cuda.DeviceBuffer[X]) error {
	const name = "SpMV"
	if err := a.hold(name); err != nil {
		return err
	}
	defer a.life.Release()
	d := &descs{op: name}
	return h.do(name, append(a.mem(), x, y), func(lh clib.Handle, _ func(int, uintptr) (uintptr, error)) (err error) {
		defer d.release(&err)
		da, err := spMat(d, a)
		if err != nil {
			return err
		}
		dx, err := dnVec(d, x)
		if err != nil {
			return err
		}
		dy, err := dnVec(d, y)
		if err != nil {
			return err
		}
		var scalars [2]complex128
		var n uintptr
		return check(name, "cusparseSpMV_bufferSize", clib.SpMV_bufferSize(lh, int32(op), unsafe.Pointer(&scalars[0]), da, dx, unsafe.Pointer(&scalars[1]), dy, ct, 0, &n))
	})
}

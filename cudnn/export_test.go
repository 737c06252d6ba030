package cudnn

import (
	"unsafe"

	cuda "github.com/gocuda/cuda"
	clib "github.com/gocuda/cuda/internal/lib/cudnn"
)

// Missing makes the library opened seem to lack the function name (its
// address 0, as where the file has no such symbol) until restore is
// called. The library must be open.
func Missing(name string) (restore func()) {
	for _, s := range clib.Table.Symbols {
		if s.Name == name {
			old := *s.Addr
			*s.Addr = 0
			return func() { *s.Addr = old }
		}
	}
	panic("no function " + name)
}

// ForwardMisused calls cudnnConvolutionForward as ConvForward does but for
// one thing wrong, which only the fake can be trusted to catch (the real
// library's answer to it is undefined): "short", a work area a byte
// smaller than cudnnGetConvolutionForwardWorkspaceSize asked for;
// "destroyed", an output descriptor destroyed before the call; "nil", no
// work area. It returns the call's error and the size asked for.
func ForwardMisused[T Element](h *Handle, y, x, w Tensor[T], p Conv2D, how string) (uintptr, error) {
	const op = "ConvForward"
	k, err := convArgs(op, passForward, [3]string{"x", "w", "y"}, x, w, y, p)
	if err != nil {
		return 0, err
	}
	k.legacy = true
	var asked uintptr
	err = h.do(op, []named{tensorBuf("x", x), tensorBuf("w", w), tensorBuf("y", y)}, func(c *call) (err error) {
		d := &descs{op: op}
		defer d.release(&err)
		pl, err := c.plan(k, y.Shape, k.pointers(uintptr(x.Data.Ptr()), uintptr(w.Data.Ptr()), uintptr(y.Data.Ptr()), 0))
		if err != nil {
			return err
		}
		asked = pl.work
		n := pl.work
		ws, err := c.work(n)
		if err != nil {
			return err
		}
		yd := pl.y
		switch how {
		case "short":
			n--
		case "nil":
			ws = 0
		case "destroyed":
			if yd, err = d.tensor(y.Shape, y.Layout, k.dt); err != nil {
				return err
			}
			if err := check(op, "cudnnDestroyTensorDescriptor", clib.DestroyTensorDescriptor(yd)); err != nil {
				return err
			}
			d.tensors = nil
		}
		one, zero := float32(1), float32(0)
		return check(op, "cudnnConvolutionForward", clib.ConvolutionForward(c.lh, unsafe.Pointer(&one), pl.x, uintptr(x.Data.Ptr()), pl.w, uintptr(w.Data.Ptr()), pl.c, pl.algo, ws, n, unsafe.Pointer(&zero), yd, uintptr(y.Data.Ptr())))
	})
	return asked, err
}

// PlanKinds returns how many of h's convolution plans are the backend
// API's (graph) and how many the legacy calls'.
func PlanKinds(h *Handle) (graph, legacy int) {
	h.base.Lock()
	defer h.base.Unlock()
	for _, p := range h.raw.plans {
		if p.g != nil {
			graph++
		} else {
			legacy++
		}
	}
	return graph, legacy
}

// GraphMisused runs ConvForward's plan of the backend API as ConvForward
// does but for one thing wrong, which only the fake can be trusted to
// catch: "short", a work area a byte smaller than the plan's;
// "unnamed", a variant pack without y; "misaligned", x's pointer 2 bytes
// past the alignment the plan was built for. It returns the execution's
// error.
func GraphMisused[T Element](h *Handle, y, x, w Tensor[T], p Conv2D, how string) error {
	const op = "ConvForward"
	k, err := convArgs(op, passForward, [3]string{"x", "w", "y"}, x, w, y, p)
	if err != nil {
		return err
	}
	return h.do(op, []named{tensorBuf("x", x), tensorBuf("w", w), tensorBuf("y", y)}, func(c *call) error {
		ptrs := k.pointers(uintptr(x.Data.Ptr()), uintptr(w.Data.Ptr()), uintptr(y.Data.Ptr()), 0)
		pl, err := c.plan(k, y.Shape, ptrs)
		if err != nil {
			return err
		}
		if pl.g == nil {
			return errorf(op, cuda.ErrNotSupported, "no plan of the backend API")
		}
		ws, uids, args := pl.g.work, pl.g.uids, ptrs[:3]
		switch how {
		case "short": // the variant pack says where the work area is, not its size
			buf, err := cuda.Alloc[byte](c.ctx, int(ws-1))
			if err != nil {
				return err
			}
			defer buf.Free()
			g := &graphPlan{}
			defer g.destroy(op)
			pack, err := c.pack(g, uids, args, uintptr(buf.Ptr()))
			if err != nil {
				return err
			}
			return check(op, "cudnnBackendExecute", clib.BackendExecute(c.lh, pl.g.plan, pack))
		case "unnamed":
			uids, args = uids[:2], args[:2]
		case "misaligned":
			args[roleX] += 2
		}
		return c.execute(pl.g.plan, ws, uids, args)
	})
}

// AllowedNotes is allowedNotes: whether an engine of these numerical
// notes (0 tensor cores, 1 inputs converted down) may run a call, strict
// for float32 without TF32.
func AllowedNotes(notes []int32, strict bool) bool { return allowedNotes(notes, strict) }

package nd

import (
	"errors"
	"slices"
	"sync"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/ndshape"
)

// Matmul returns the matrix product of a and b by NumPy's rules (matmul,
// the @ operator): 2-d arrays multiply as matrices; a 1-d a is a row and a
// 1-d b a column, their axis dropped from the result; the axes before the
// last two are batches, broadcast together. It computes with cuBLAS, on a
// handle of a's stream that the package makes on first use and closes
// with the stream's context (Float16 and BFloat16 accumulating in
// float32). A transposed view (a.T(), Permute of the last two axes) is
// read as cuBLAS's transposed operand, not copied; an operand whose last
// two axes are strided otherwise is copied first.
func Matmul[T cuda.AnyFloat](a, b *Array[T]) (out *Array[T], failure error) {
	defer poison(&out, &failure)
	return matmul("Matmul", a, b, nil)
}

// MatmulInto sets dst to the matrix product of a and b.
func MatmulInto[T cuda.AnyFloat](dst, a, b *Array[T]) error {
	if err := writable("MatmulInto", "dst", dst); err != nil {
		return err
	}
	return errOnly(matmul("MatmulInto", a, b, dst))
}

func matmul[T cuda.AnyFloat](op string, a, b, dst *Array[T]) (result *Array[T], failure error) {
	for _, x := range []struct {
		name string
		a    *Array[T]
	}{{"a", a}, {"b", b}} {
		if err := x.a.check(op, x.name); err != nil {
			return nil, err
		}
		if x.a.scalar || x.a.layout.Ndim() == 0 {
			// A Scalar's view may have axes: named as what it is.
			what := "0-d"
			if x.a.scalar {
				what = "a Scalar"
			}
			return nil, errorf(op, cuda.ErrInvalidValue, "%s is %s: matmul takes arrays of 1 or more dimensions on the GPU (Mul multiplies by a scalar)", x.name, what)
		}
		if err := x.a.emptyOpen(op); err != nil {
			return nil, err // an empty operand is not read (an empty k fills zeros)
		}
	}
	if a.s != b.s {
		return nil, errorf(op, cuda.ErrInvalidValue, "a and b are on different streams: the operands of an operation share one")
	}
	// 1-d operands as a row and a column.
	av, bv := a, b
	var err error
	if a.layout.Ndim() == 1 {
		if av, err = a.Unsqueeze(0); err != nil {
			return nil, wrap(op, err)
		}
	}
	if b.layout.Ndim() == 1 {
		if bv, err = b.Unsqueeze(1); err != nil {
			return nil, wrap(op, err)
		}
	}
	as, bs := av.layout.Shape(), bv.layout.Shape()
	m, k, k2, n := as[len(as)-2], as[len(as)-1], bs[len(bs)-2], bs[len(bs)-1]
	if k != k2 {
		return nil, errorf(op, cuda.ErrInvalidValue, "a has shape %v and b %v: a's last axis (%d) must match b's second to last (%d)", a.layout.Shape(), b.layout.Shape(), k, k2)
	}
	batch, err := ndshape.Broadcast(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		// ndshape names only the batch axes, shapes the caller never
		// wrote: name a's and b's too.
		why := err.Error()
		if se := (*ndshape.Error)(nil); errors.As(err, &se) {
			why = se.Msg
		}
		return nil, errorf(op, cuda.ErrInvalidValue, "a has shape %v and b %v: their batch axes do not broadcast (%s)", a.layout.Shape(), b.layout.Shape(), why)
	}
	full := append(slices.Clone(batch), m, n)
	var outShape []int
	outShape = append(outShape, batch...)
	if a.layout.Ndim() > 1 {
		outShape = append(outShape, m)
	}
	if b.layout.Ndim() > 1 {
		outShape = append(outShape, n)
	}
	if dst != nil {
		if err := writable(op, "dst", dst); err != nil {
			return nil, err
		}
		if dst.s != a.s {
			return nil, errorf(op, cuda.ErrInvalidValue, "dst and a are on different streams: the operands of an operation share one")
		}
		if !slices.Equal(dst.layout.Shape(), outShape) {
			return nil, errorf(op, cuda.ErrInvalidValue, "dst has shape %v, and the product %v", dst.layout.Shape(), outShape)
		}
	}
	// Into a contiguous dst that shares no memory with a or b, cuBLAS
	// writes the product itself (dst's shape is the product's, its axes of
	// one element aside): no result to allocate and copy.
	if dst != nil && dst.layout.IsContiguous() && !overlapping(op, dst, a) && !overlapping(op, dst, b) {
		if dst.layout.Size() > 0 {
			c, err := dst.Buffer()
			if err != nil {
				return nil, wrap(op, err)
			}
			if err := gemm(op, av, bv, dst, c, batch, m, k, n); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	out, err := empty[T](op, a.s, full)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Array[T], error) {
		out.Free()
		return nil, err
	}
	if out.layout.Size() > 0 {
		if err := gemm(op, av, bv, out, out.buf, batch, m, k, n); err != nil {
			return fail(err)
		}
	}
	l, _, err := out.layout.Reshape(outShape) // a view: out is contiguous
	if err != nil {
		return fail(wrap(op, err))
	}
	out.layout = l
	if dst == nil {
		return out, nil
	}
	defer freed(&failure, out)
	return nil, copyInto(op, dst, out)
}

// gemm computes out = a·b, a and b broadcast to batch: out is
// contiguous, of the shape (batch..., m, n) but for axes of one element,
// and c its memory.
func gemm[T cuda.AnyFloat](op string, a, b, out *Array[T], c *cuda.DeviceBuffer[T], batch []int, m, k, n int) (err error) {
	h, err := handleOf(op, a.s)
	if err != nil {
		return err
	}
	count := 1
	for _, d := range batch {
		count *= d
	}
	if k == 0 {
		return fill(op, out, *new(T))
	}
	ma, copyA, err := matrices(op, a, batch, m, k)
	if err != nil {
		return err
	}
	defer freed(&err, copyA)
	mb, copyB, err := matrices(op, b, batch, k, n)
	if err != nil {
		return err
	}
	defer freed(&err, copyB)
	mc := cublas.NewMatrix(c, m, n)
	switch {
	case count == 1:
		return wrap(op, cublas.Gemm(h, 1, ma.first, mb.first, 0, mc))
	case mb.one && ma.strided && ma.first.Layout == cublas.RowMajor && ma.first.BatchStride == m*ma.first.Stride:
		// One b for every a, and a's matrices are the rows of one
		// taller matrix (the batch's span is that matrix's): one product,
		// as PyTorch folds the batch of a into its rows.
		tall := ma.first
		tall.Rows, tall.BatchStride = count*m, 0
		return wrap(op, cublas.Gemm(h, 1, tall, mb.first, 0, cublas.NewMatrix(c, count*m, n)))
	case ma.strided && mb.strided:
		// A stride from one matrix to the next in each: cuBLAS's strided
		// batch, with no arrays of pointers to build and copy.
		return wrap(op, cublas.GemmStridedBatched(h, count, 1, ma.first, mb.first, 0, mc))
	}
	mcs := make([]cublas.Matrix[T], count)
	for i := range mcs {
		ci, err := c.Slice(i*m*n, m*n)
		if err != nil {
			return wrap(op, err)
		}
		mcs[i] = cublas.NewMatrix(ci, m, n)
	}
	as, err := ma.each(count)
	if err != nil {
		return wrap(op, err)
	}
	bs, err := mb.each(count)
	if err != nil {
		return wrap(op, err)
	}
	return wrap(op, cublas.GemmBatched(h, 1, as, bs, 0, mcs))
}

// batchOf is an operand's matrices, one for each product of a batch: the
// first, and where they are evenly spaced in memory (strided), the first
// with the elements from one to the next as its BatchStride; or one
// matrix for every product (one: x has no batch axes, or they
// broadcast). each makes the others, where a product needs them.
type batchOf[T cuda.AnyFloat] struct {
	first        cublas.Matrix[T]
	strided, one bool

	span   *cuda.DeviceBuffer[T] // the memory the matrices are in
	offs   []int                 // each matrix's offset in span
	extent int                   // the elements a matrix reaches
}

// each returns the matrix of each of count products. A slice of the
// memory a matrix, made only here: a strided batch of 32 made 32 slices
// of each operand at every call, and a product of 512×512 bfloat16
// matrices was bound by the host.
func (b batchOf[T]) each(count int) ([]cublas.Matrix[T], error) {
	if b.one {
		m := b.first
		m.BatchStride = 0
		return slices.Repeat([]cublas.Matrix[T]{m}, count), nil
	}
	ms := make([]cublas.Matrix[T], len(b.offs))
	for i, o := range b.offs {
		data, err := b.span.Slice(o, b.extent)
		if err != nil {
			return nil, err
		}
		ms[i] = cublas.Matrix[T]{Data: data, Rows: b.first.Rows, Cols: b.first.Cols, Stride: b.first.Stride, Layout: b.first.Layout}
	}
	return ms, nil
}

// matrices returns x's matrices (its last two axes, rows×cols) for each
// batch index in row-major order: each a row-major or (for a transposed
// view) column-major matrix of x's memory, or of a contiguous copy where
// x's last two axes are neither (copied, to free after the product; nil
// where none was made).
func matrices[T cuda.AnyFloat](op string, x *Array[T], batch []int, rows, cols int) (ms batchOf[T], copied *Array[T], err error) {
	nb := len(x.layout.Shape()) - 2
	st := x.layout.Strides()
	rs, cs := st[nb], st[nb+1]
	layout := func(rs, cs int) (cublas.Layout, int, bool) {
		switch {
		case (cs == 1 || cols == 1) && rs >= max(cols, 1):
			return cublas.RowMajor, rs, true
		case (rs == 1 || rows == 1) && cs >= max(rows, 1):
			return cublas.ColMajor, cs, true
		case rows == 1 && cols == 1:
			return cublas.RowMajor, 1, true
		}
		return 0, 0, false
	}
	fail := func(err error) (batchOf[T], *Array[T], error) {
		copied.Free()
		return batchOf[T]{}, nil, err
	}
	lay, ld, ok := layout(rs, cs)
	if !ok {
		if copied, err = contiguous(op, x); err != nil {
			return batchOf[T]{}, nil, err
		}
		x = copied
		lay, ld = cublas.RowMajor, cols
	}
	span, off, err := x.span(op)
	if err != nil {
		return fail(err)
	}
	// The matrix at each batch index: x's batch axes broadcast to batch.
	bl, err := ndshape.New(x.layout.Shape()[:nb], x.layout.Strides()[:nb], off)
	if err == nil {
		bl, err = bl.BroadcastTo(batch)
	}
	if err != nil {
		return fail(wrap(op, err))
	}
	extent := (rows-1)*ld + cols // the elements a matrix reaches
	if lay != cublas.RowMajor {
		extent = (cols-1)*ld + rows
	}
	// One matrix for every product, where the batch axes broadcast (or
	// are none).
	ms.one = bl.Size() > 0 && allZero(bl.Strides())
	offs := make([]int, 0, bl.Size())
	for o := range bl.Offsets() {
		offs = append(offs, o)
		if ms.one {
			break
		}
	}
	ms.span, ms.offs, ms.extent = span, offs, extent
	data, err := span.Slice(offs[0], extent)
	if err != nil {
		return fail(wrap(op, err))
	}
	ms.first = cublas.Matrix[T]{Data: data, Rows: rows, Cols: cols, Stride: ld, Layout: lay}
	// Evenly spaced, a positive stride apart: one matrix of the batch
	// with its stride (cublas.Matrix's BatchStride, where 0 means packed,
	// cannot say that every product reads the same).
	if step := 0; len(offs) > 1 {
		step = offs[1] - offs[0]
		ms.strided = step > 0
		for i, o := range offs {
			ms.strided = ms.strided && o == offs[0]+i*step
		}
		if ms.strided {
			if ms.first.Data, err = span.Slice(offs[0], (len(offs)-1)*step+extent); err != nil {
				return fail(wrap(op, err))
			}
			ms.first.BatchStride = step
		}
	}
	return ms, copied, nil
}

func allZero(s []int) bool {
	for _, v := range s {
		if v != 0 {
			return false
		}
	}
	return true
}

// handles are the cuBLAS handles of the streams Matmul ran on, each
// closed with its stream's context.
var handles sync.Map // *cuda.Stream -> *cublas.Handle

type handleKey struct{ s *cuda.Stream }

var handleMu sync.Mutex

// handleOf returns s's handle, made on first use.
func handleOf(op string, s *cuda.Stream) (*cublas.Handle, error) {
	if h, ok := handles.Load(s); ok {
		return h.(*cublas.Handle), nil
	}
	handleMu.Lock()
	defer handleMu.Unlock()
	if h, ok := handles.Load(s); ok {
		return h.(*cublas.Handle), nil
	}
	h, err := cublas.New(s)
	if err != nil {
		return nil, wrap(op, err)
	}
	err = attach.OnClose(s.Context(), handleKey{s}, func() error {
		if err := h.Close(); err != nil {
			return err
		}
		handles.Delete(s)
		return nil
	})
	if err != nil {
		h.Close()
		return nil, wrap(op, err)
	}
	handles.Store(s, h)
	return h, nil
}

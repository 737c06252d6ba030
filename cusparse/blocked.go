package cusparse

import (
	"errors"
	"reflect"
	"slices"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/calledas"
)

// orderRow is CUSPARSE_ORDER_ROW: a BSR block's elements row after row.
const orderRow = 2

// point is one stored element of a matrix being blocked.
type point[T Value] struct {
	r, c int
	v    T
}

// checkBlocks checks a blocked matrix's shape: rows and cols multiples of
// a block size of at least 2 (cuSPARSE's blocked formats hold whole
// blocks, and its BSR routines take no blocks of 1: CSR is that format).
func checkBlocks[I Index](op string, rows, cols, block int) error {
	switch {
	case block < 2:
		return errorf(op, cuda.ErrInvalidValue, "blockSize is %d: want at least 2 (blocks of 1 are CSR)", block)
	case rows < 0 || cols < 0:
		return errorf(op, cuda.ErrInvalidValue, "a %dx%d matrix: the sizes must not be negative", rows, cols)
	case rows%block != 0 || cols%block != 0:
		return errorf(op, cuda.ErrInvalidValue, "a %dx%d matrix in blocks of %d: the sizes must be multiples of the block size (pad the matrix with zeros)", rows, cols, block)
	}
	if rows > 0 && cols > maxIndex[I]()/rows {
		return errorf(op, cuda.ErrInvalidValue, "a %dx%d matrix: its blocks' values are more than %v indices count", rows, cols, reflect.TypeFor[I]())
	}
	return nil
}

// densePoints returns the non-zeros of a row-major rows×cols matrix.
func densePoints[T Value](op string, rows, cols int, dense []T) ([]point[T], error) {
	if len(dense) != rows*cols {
		return nil, errorf(op, cuda.ErrInvalidValue, "len(dense) is %d: want %d (%dx%d, row-major)", len(dense), rows*cols, rows, cols)
	}
	var zero T
	var pts []point[T]
	for k, v := range dense {
		if v != zero {
			pts = append(pts, point[T]{k / cols, k % cols, v})
		}
	}
	return pts, nil
}

// blockRows returns the columns (in blocks) of the blocks holding a
// point, increasing, by row of blocks: only the rows of blocks that hold
// one (a matrix of many rows and few non-zeros costs the host no more).
func blockRows[T Value](block int, pts []point[T]) map[int][]int {
	br := map[int][]int{}
	for _, p := range pts {
		i, j := p.r/block, p.c/block
		if k, found := slices.BinarySearch(br[i], j); !found {
			br[i] = slices.Insert(br[i], k, j)
		}
	}
	return br
}

// blockedShape is the lengths of a blocked matrix's arrays, and a
// Blocked-ELL matrix's width in blocks: every row of blocks holds as many
// as the fullest (at least one where there are columns).
type blockedShape struct{ outer, inner, values, width int }

func shapeOf(f Format, rows, cols, block int, br map[int][]int) blockedShape {
	if f == BSR {
		n := 0
		for _, cs := range br {
			n += len(cs)
		}
		return blockedShape{outer: rows/block + 1, inner: n, values: n * block * block}
	}
	width := min(1, cols/block) // a matrix of columns stores a block a row, if empty
	for _, cs := range br {
		width = max(width, len(cs))
	}
	return blockedShape{inner: rows / block * width, values: rows * width * block, width: width}
}

// bsrOf returns the BSR arrays of pts, of blocks br.
func bsrOf[I Index, T Value](rows, cols, block int, pts []point[T], br map[int][]int, sh blockedShape) hostMatrix[I, T] {
	h := hostMatrix[I, T]{format: BSR, rows: rows, cols: cols, block: block,
		outer: make([]I, sh.outer), inner: make([]I, 0, sh.inner), values: make([]T, sh.values)}
	for i := range rows / block {
		cs := br[i]
		h.outer[i+1] = h.outer[i] + I(len(cs))
		for _, c := range cs {
			h.inner = append(h.inner, I(c))
		}
	}
	bb := block * block
	for _, p := range pts {
		i := p.r / block
		k, _ := slices.BinarySearch(br[i], p.c/block)
		h.values[(int(h.outer[i])+k)*bb+(p.r%block)*block+p.c%block] = p.v
	}
	h.nnz = len(h.values)
	return h
}

// ellOf returns the Blocked-ELL arrays of pts, of blocks br: the blocks a
// row of blocks lacks have column -1 and zeros.
func ellOf[I Index, T Value](rows, cols, block int, pts []point[T], br map[int][]int, sh blockedShape) hostMatrix[I, T] {
	width := sh.width
	ellCols := width * block
	h := hostMatrix[I, T]{format: BlockedELL, rows: rows, cols: cols, block: block,
		inner: make([]I, sh.inner), values: make([]T, sh.values)}
	for i := range rows / block {
		cs := br[i]
		for k := range width {
			h.inner[i*width+k] = -1
			if k < len(cs) {
				h.inner[i*width+k] = I(cs[k])
			}
		}
	}
	for _, p := range pts {
		k, _ := slices.BinarySearch(br[p.r/block], p.c/block)
		h.values[p.r*ellCols+k*block+p.c%block] = p.v
	}
	h.nnz = len(h.values)
	return h
}

// blocked makes the blocked Matrix (f, BSR or BlockedELL) of pts in
// stream-ordered memory of s: its device arrays first, so that a matrix
// too large for them is the device's out of memory (an error) before the
// host builds arrays as large (a failure Go cannot recover from), then
// the arrays built on the host and copied in.
func blocked[I Index, T Value](op string, s *cuda.Stream, f Format, rows, cols, block int, pts []point[T]) (*Matrix[I, T], error) {
	br := blockRows(block, pts)
	sh := shapeOf(f, rows, cols, block, br)
	m := &Matrix[I, T]{format: f, rows: rows, cols: cols, nnz: sh.values, stream: s, outerLen: sh.outer, block: block, innerN: sh.inner}
	if err := m.allocArrays(s); err != nil {
		return nil, calledas.Op(op, err)
	}
	var h hostMatrix[I, T]
	if f == BSR {
		h = bsrOf[I](rows, cols, block, pts, br, sh)
	} else {
		h = ellOf[I](rows, cols, block, pts, br, sh)
	}
	if err := errors.Join(copyIn(m.outer, h.outer), copyIn(m.inner, h.inner), copyIn(m.values, h.values)); err != nil {
		m.freeAll()
		return nil, calledas.Op(op, err)
	}
	m.life.ArmUntracked()
	return m, nil
}

// NewBSR makes a Matrix in BSR format of the row-major rows×cols matrix
// dense (dense[i*cols+j]), copied to stream-ordered memory of s: cut into
// blockSize×blockSize blocks, the blocks holding a non-zero stored whole,
// each row-major. rows and cols must be multiples of blockSize, at least
// 2. cuSPARSE
// multiplies a BSR matrix untransposed (SpMV, SpMM); ToDense writes it
// out.
func NewBSR[I Index, T Element](s *cuda.Stream, rows, cols, blockSize int, dense []T) (*Matrix[I, T], error) {
	const op = "NewBSR"
	return newBlocked[I](op, s, BSR, rows, cols, blockSize, dense)
}

// NewBlockedELL makes a Matrix in Blocked-ELL format of the row-major
// rows×cols matrix dense, copied to stream-ordered memory of s: cut into
// blockSize×blockSize blocks, each row of blocks stores as many as the
// fullest holds (a block holding a non-zero stored whole; the ones a row
// lacks marked with column -1). rows and cols must be multiples of
// blockSize, at least 2. cuSPARSE multiplies a Blocked-ELL matrix by dense matrices
// only, untransposed (SpMM, and SpMMHalf for the half types, for which the
// format is made: tensor cores); ToDense writes it out.
func NewBlockedELL[I Index, T Value](s *cuda.Stream, rows, cols, blockSize int, dense []T) (*Matrix[I, T], error) {
	const op = "NewBlockedELL"
	return newBlocked[I](op, s, BlockedELL, rows, cols, blockSize, dense)
}

func newBlocked[I Index, T Value](op string, s *cuda.Stream, f Format, rows, cols, block int, dense []T) (*Matrix[I, T], error) {
	if s == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	}
	if err := checkBlocks[I](op, rows, cols, block); err != nil {
		return nil, err
	}
	pts, err := densePoints(op, rows, cols, dense)
	if err != nil {
		return nil, err
	}
	return blocked[I](op, s, f, rows, cols, block, pts)
}

// ToBSR returns a, CSR, CSC or COO, as a new BSR Matrix of
// blockSize×blockSize blocks in stream-ordered memory of h's stream (see
// NewBSR). It goes through the host: it waits for h's stream, and is
// refused while the stream captures.
func ToBSR[I Index, T Element](h *Handle, a *Matrix[I, T], blockSize int) (*Matrix[I, T], error) {
	return toBlocked("ToBSR", h, a, BSR, blockSize)
}

// ToBlockedELL returns a, CSR, CSC or COO, as a new Blocked-ELL Matrix of
// blockSize×blockSize blocks in stream-ordered memory of h's stream (see
// NewBlockedELL). It goes through the host: it waits for h's stream, and
// is refused while the stream captures.
func ToBlockedELL[I Index, T Element](h *Handle, a *Matrix[I, T], blockSize int) (*Matrix[I, T], error) {
	return toBlocked("ToBlockedELL", h, a, BlockedELL, blockSize)
}

func toBlocked[I Index, T Element](name string, h *Handle, a *Matrix[I, T], f Format, block int) (*Matrix[I, T], error) {
	if err := h.valid(name); err != nil {
		return nil, err
	}
	if err := a.hold(name); err != nil {
		return nil, err
	}
	defer a.life.Release()
	if err := h.base.SameContext(name, a.operand("a")); err != nil {
		return nil, err
	}
	if a.blocked() {
		return nil, errorf(name, cuda.ErrInvalidValue, "a is %v: %s takes CSR, CSC or COO", a.format, name)
	}
	if err := checkBlocks[I](name, a.rows, a.cols, block); err != nil {
		return nil, err
	}
	hm, err := hostOf(name, h, a)
	if err != nil {
		return nil, err
	}
	// The non-zeros as they are stored (a COO of many rows is not made
	// CSR on the host: its offsets would be as many).
	pts := make([]point[T], 0, len(hm.values))
	switch hm.format {
	case COO:
		for k, v := range hm.values {
			pts = append(pts, point[T]{int(hm.outer[k]), int(hm.inner[k]), v})
		}
	case CSR, CSC:
		for o := range len(hm.outer) - 1 {
			for k := hm.outer[o]; k < hm.outer[o+1]; k++ {
				p := point[T]{o, int(hm.inner[k]), hm.values[k]}
				if hm.format == CSC {
					p.r, p.c = p.c, p.r
				}
				pts = append(pts, p)
			}
		}
	}
	return blocked[I](name, h.base.Stream(), f, a.rows, a.cols, block, pts)
}

// hostOf waits for h's stream and copies a's arrays to the host; refused
// while the stream captures.
func hostOf[I Index, T Value](name string, h *Handle, a *Matrix[I, T]) (hostMatrix[I, T], error) {
	if h.base.Stream().Capturing() {
		return hostMatrix[I, T]{}, errorf(name, cuda.ErrInvalidValue, "the stream captures: %s goes through the host, which a capture cannot", name)
	}
	if err := h.hold(name); err != nil {
		return hostMatrix[I, T]{}, err
	}
	defer h.base.Release()
	if err := h.base.Stream().Synchronize(); err != nil {
		return hostMatrix[I, T]{}, calledas.Op(name, err)
	}
	return a.download(name)
}

// points returns the elements a blocked hm stores (zeros within blocks
// included, empty Blocked-ELL blocks left out).
func (hm hostMatrix[I, T]) points() []point[T] {
	var pts []point[T]
	b := hm.block
	switch hm.format {
	case BSR:
		for i := range len(hm.outer) - 1 {
			for k := hm.outer[i]; k < hm.outer[i+1]; k++ {
				for e := range b * b {
					pts = append(pts, point[T]{i*b + e/b, int(hm.inner[k])*b + e%b, hm.values[int(k)*b*b+e]})
				}
			}
		}
	case BlockedELL:
		width := len(hm.inner) / max(hm.rows/b, 1)
		for i := range hm.rows / b {
			for k := range width {
				c := hm.inner[i*width+k]
				if c < 0 {
					continue
				}
				for e := range b * b {
					r := i*b + e/b
					pts = append(pts, point[T]{r, int(c)*b + e%b, hm.values[r*width*b+k*b+e%b]})
				}
			}
		}
	}
	return pts
}

// blockedToDense is ToDense of a blocked matrix, through the host: it
// waits for h's stream, writes the elements out on the host and copies d's
// rows (or columns) back, leaving what lies between them as it was.
func blockedToDense[I Index, T Element](name string, h *Handle, a *Matrix[I, T], d Dense[T]) error {
	hm, err := hostOf(name, h, a)
	if err != nil {
		return err
	}
	major, minor := d.Rows, d.Cols
	if d.Layout == ColMajor {
		major, minor = d.Cols, d.Rows
	}
	lines := make([][]T, major)
	for i := range lines {
		lines[i] = make([]T, minor)
	}
	for _, p := range hm.points() {
		if d.Layout == ColMajor {
			lines[p.c][p.r] = p.v
		} else {
			lines[p.r][p.c] = p.v
		}
	}
	for i, line := range lines {
		if minor == 0 {
			break
		}
		v, err := d.Data.Slice(i*d.ld(), minor)
		if err == nil {
			err = v.CopyFromHost(line)
		}
		if err != nil {
			return calledas.Op(name, err)
		}
	}
	return nil
}

package compute

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/attach"
)

// Shape is a row-major matrix's shape: Rows rows of Cols elements, one row
// after the other.
type Shape struct{ Rows, Cols int }

// Axis says what a reduction over a matrix folds.
type Axis int

const (
	// PerRow folds each row: Rows results.
	PerRow Axis = iota
	// PerColumn folds each column: Cols results.
	PerColumn
)

func (a Axis) String() string {
	switch a {
	case PerRow:
		return "per row"
	case PerColumn:
		return "per column"
	}
	return fmt.Sprintf("Axis(%d)", int(a))
}

// ReductionSpec declares a reduction, a field for each of CuPy's
// ReductionKernel arguments (in_params, out_params, map_expr, reduce_expr,
// post_map_expr, identity, name, reduce_type), so that a port in CuPy's
// order, or any other, means what it says.
type ReductionSpec struct {
	// Name is the reduction's name: a C identifier, not starting with _ or
	// gocuda (CuPy's name).
	Name string
	// InParams are the inputs, such as "float32 x, float32 m" (in_params):
	// at least one, each a type and a name, as ElementwiseSpec's.
	InParams string
	// OutParams is the one output, such as "float32 y" (out_params).
	OutParams string
	// MapExpr is the value of element i, an expression over the inputs as
	// an ElementwiseSpec's Operation sees them (map_expr), such as "x * x".
	MapExpr string
	// ReduceExpr folds two values, a and b, of ReduceType into one
	// (reduce_expr), such as "a + b".
	ReduceExpr string
	// PostMapExpr sets the output from the folded value a and n, the
	// elements folded into it (post_map_expr), such as "y = a / n": a
	// statement, with or without its semicolon.
	PostMapExpr string
	// Identity is the value that folds with any other into it (identity),
	// such as "0".
	Identity string
	// ReduceType is the type of a and b (reduce_type): one of the element
	// types' names. Float16 and BFloat16 inputs are best folded in
	// float32.
	ReduceType string
}

// Reduction is a kernel that folds buffers into one value, or into one per
// row or column of a matrix, as CuPy's ReductionKernel:
//
//	sumsq, err := compute.NewReduction(compute.ReductionSpec{
//		Name:        "sumsq",
//		InParams:    "float32 x",
//		OutParams:   "float32 y",
//		MapExpr:     "x * x",
//		ReduceExpr:  "a + b",
//		PostMapExpr: "y = a",
//		Identity:    "0",
//		ReduceType:  "float32",
//	})
//	err = sumsq.Launch(s, x, y) // y: a buffer of one element
//
// Results are deterministic: the same inputs on the same device give the
// same bits every run. The elements are folded in a fixed tree (each
// thread a fixed run of them, then the lanes of its warp and the warps of
// its block, then, where one result takes several blocks, their partial
// results in block order, by the last of them to finish or, in a graph
// capture, by a second kernel, in the same tree); the tree depends on the
// shape and the device's size only (layout.go), never on timing: the
// atomic counter that finds the last block adds nothing up. Floating-point
// sums may differ in their last bits from a sequential sum on the host.
//
// A Reduction is safe for use by many goroutines.
type Reduction struct {
	name                                   string
	in                                     []param
	out                                    param
	mapExpr, reduceExpr, identity, postMap string
	acc                                    dtype
	mu                                     sync.Mutex
	variants                               map[string]*variant
	names                                  sync.Map // suffix -> name+suffix, the kernels' names, made once
}

// NewReduction checks a reduction's declaration, each field of spec on its
// own: an error names the field. Nothing is compiled until the first
// launch.
func NewReduction(spec ReductionSpec) (*Reduction, error) {
	const op = "NewReduction"
	ins, outs, err := declaration(op, spec.Name, spec.InParams, spec.OutParams)
	if err != nil {
		return nil, err
	}
	switch {
	case len(ins) == 0:
		return nil, errorf(op, cuda.ErrInvalidValue, "InParams is empty: a reduction needs an input")
	case len(outs) != 1:
		return nil, errorf(op, cuda.ErrInvalidValue, "OutParams declares %d parameters: a reduction has exactly one output", len(outs))
	}
	seen := map[string]bool{}
	for j, p := range append(append([]param(nil), ins...), outs...) {
		field := map[bool]string{true: "InParams", false: "OutParams"}[j < len(ins)]
		switch {
		case p.name == "a" || p.name == "b" || p.name == "i" || p.name == "n":
			return nil, errorf(op, cuda.ErrInvalidValue, "%s: %q is reserved: a and b are the values folded, i the element's index and n the element count", field, p.name)
		case seen[p.name]:
			return nil, errorf(op, cuda.ErrInvalidValue, "%s declares %q twice", field, p.name)
		}
		seen[p.name] = true
	}
	for _, f := range []struct{ name, value string }{
		{"MapExpr", expression(spec.MapExpr)}, {"ReduceExpr", expression(spec.ReduceExpr)},
		{"PostMapExpr", expression(spec.PostMapExpr)}, {"Identity", expression(spec.Identity)},
	} {
		if f.value == "" {
			return nil, errorf(op, cuda.ErrInvalidValue, "%s is empty", f.name)
		}
	}
	if strings.TrimSpace(spec.ReduceType) == "" {
		return nil, errorf(op, cuda.ErrInvalidValue, "ReduceType is empty: want the type of a and b, one of %s", typeNames())
	}
	acc, ok := dtypeNamed(spec.ReduceType)
	if !ok {
		return nil, errorf(op, cuda.ErrInvalidValue, "ReduceType %q is not a type: want one of %s", spec.ReduceType, typeNames())
	}
	return &Reduction{name: spec.Name, in: ins, out: outs[0], mapExpr: expression(spec.MapExpr), reduceExpr: expression(spec.ReduceExpr),
		identity: expression(spec.Identity), postMap: spec.PostMapExpr, acc: acc, variants: map[string]*variant{}}, nil
}

// expression returns e without the semicolon a port may end it with: an
// expression is put in parentheses, where one would not compile.
func expression(e string) string {
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(e), ";"))
}

// vectors returns, for loads of v elements of each buffer input at a
// time (buffer[j]: input j is a buffer), the conditions that every such
// buffer is aligned for them ("false" where none is a buffer: nothing to
// load), and the declarations of each one's vector gocudav_NAME, vector
// gocuda_j of its buffer.
func (r *Reduction) vectors(buffer []bool, v int) (aligned, decl []string) {
	return r.vectorsFrom(buffer, v, "((const %[1]s*)gocudap_%[2]s)[gocuda_j]")
}

// vectorsFrom is vectors with each buffer's vector taken from the
// expression from (a format of the vector's C type and the parameter's
// name).
func (r *Reduction) vectorsFrom(buffer []bool, v int, from string) (aligned, decl []string) {
	for j, p := range r.in {
		if buffer[j] {
			vec := vecType(p.t, v)
			aligned = append(aligned, "(unsigned long long)gocudap_"+p.name+" % sizeof("+vec+") == 0")
			decl = append(decl, "const "+vec+" gocudav_"+p.name+" = "+fmt.Sprintf(from, vec, p.name)+"; ")
			if p.t.half != "" { // converted a vector at a time: the prelude's, the same bits
				decl = append(decl, "float gocudaf_"+p.name+"["+strconv.Itoa(v)+"]; gocuda_load_"+p.t.half+"(gocudaf_"+p.name+", gocudav_"+p.name+"); ")
			}
		}
	}
	if len(aligned) == 0 {
		aligned = []string{"false"}
	}
	return aligned, decl
}

// vecType is the C type of v elements of t loaded at once.
func vecType(t dtype, v int) string {
	return "gocuda_vec<" + t.storage + ", " + strconv.Itoa(v) + ">"
}

// stagedLoads returns, for the buffers of the pattern, the declarations of
// u vectors of v elements each (gocudas_NAME) and their loads, vector
// gocuda_u from vector gocuda_j of the buffer: the column kernels load a
// thread's rows' vectors all before they convert and fold any, so that
// the loads are in flight together (vectorsFrom then takes each from
// gocudas_NAME[gocuda_u]).
func (r *Reduction) stagedLoads(buffer []bool, v, u int) (decl, loads []string) {
	for j, p := range r.in {
		if buffer[j] {
			vec := vecType(p.t, v)
			decl = append(decl, vec+" gocudas_"+p.name+"["+strconv.Itoa(u)+"]; ")
			loads = append(loads, "gocudas_"+p.name+"[gocuda_u] = ((const "+vec+"*)gocudap_"+p.name+")[gocuda_j]; ")
		}
	}
	return decl, loads
}

// reductionText is the fields of templates/reduction.cu.tmpl, which says
// what each is.
type reductionText struct {
	KernelName                              string
	Acc                                     string
	ReduceExpr, Identity, MapExpr, PostMap  string
	MapParams                               string
	OutStorage, OutValue, OutName, OutStore string
	Params, Args                            string
	Width                                   int
	VectorLoads, Aligned, Wide, VectorMap   string
	Map                                     string
	ColumnMap                               string
	Cols                                    []reductionCols
	// FoldBatch and FoldBatchChunks: the last block of _cols and _colsv
	// folds FoldBatch columns at once where they have FoldBatchChunks
	// chunks or fewer (foldBatch, foldBatchChunks).
	FoldBatch, FoldBatchChunks int
}

// reductionCols is a column kernel of reduction.cu.tmpl: _cols, whose
// threads take colVector's adjacent columns each, or _colsv, whose take
// up to a whole vector of 16 bytes (tall matrices of few columns:
// colsVector).
type reductionCols struct {
	Suffix                          string
	Threads, V                      int
	MinBlocks                       int // the blocks a multiprocessor must hold at once (colsBlocks)
	Unroll                          int // the rows a thread has loads in flight for (colsUnroll)
	Aligned, VectorLoads, VectorMap string
	Map                             string
	// StagedDecl and StagedLoads: the Unroll vectors of each buffer a
	// thread loads before it folds any (stagedLoads); VectorLoads takes
	// them from there.
	StagedDecl, StagedLoads string
}

// source writes the reduction's kernels for an argument pattern (see
// layout.go and templates/reduction.cu.tmpl): NAME_rows, NAME_split and
// NAME_chunks fold rows (a whole buffer is one row), NAME_cols,
// NAME_colsv, NAME_narrow, NAME_short and NAME_chunks columns.
func (r *Reduction) source(buffer []bool) string {
	// The inputs as parameters, and the map as a function of their values.
	widest := 1
	var params, args, decl []string
	for j, p := range r.in {
		decl = append(decl, "const "+p.t.value+" "+p.name)
		args = append(args, "gocudap_"+p.name+", ")
		if buffer[j] {
			params = append(params, "const "+p.t.storage+"* __restrict__ gocudap_"+p.name+", ")
			widest = max(widest, int(p.t.goType.Size()))
		} else {
			params = append(params, p.t.storage+" gocudap_"+p.name+", ")
		}
	}
	width := 16 / widest
	// mapAt calls the map for element at, each buffer's element given by
	// element (a format of the parameter's name).
	// A vector's element (gocudav_NAME.v[gocuda_k]) of a half is its
	// float, converted with the whole vector (vectors' gocudaf_NAME).
	mapAt := func(element, at string) string {
		var vals []string
		for j, p := range r.in {
			v := "gocudap_" + p.name
			switch {
			case buffer[j] && p.t.half != "" && element == "gocudav_%s.v[gocuda_k]":
				vals = append(vals, "gocudaf_"+p.name+"[gocuda_k]")
				continue
			case buffer[j]:
				v = fmt.Sprintf(element, p.name)
			}
			vals = append(vals, p.t.load(v))
		}
		return "gocuda_map(" + strings.Join(vals, ", ") + ", " + at + ")"
	}
	vectorMap := func(v int) string {
		return mapAt("gocudav_%s.v[gocuda_k]", "gocuda_j * "+strconv.Itoa(v)+" + gocuda_k")
	}
	alignedConds, vecDecl := r.vectors(buffer, width)
	aligned := strings.Join(alignedConds, " && ")
	text := reductionText{
		KernelName:  r.name,
		Acc:         r.acc.value,
		ReduceExpr:  r.reduceExpr,
		Identity:    r.identity,
		MapExpr:     r.mapExpr,
		PostMap:     r.postMap,
		MapParams:   strings.Join(decl, ", "),
		OutStorage:  r.out.t.storage,
		OutValue:    r.out.t.value,
		OutName:     r.out.name,
		OutStore:    r.out.t.store(r.out.name),
		Params:      strings.Join(params, ""),
		Args:        strings.Join(args, ""),
		Width:       width,
		VectorLoads: strings.Join(vecDecl, ""),
		Aligned:     aligned,
		Wide:        "(" + aligned + ") && cols % " + strconv.Itoa(width) + " == 0",
		VectorMap:   vectorMap(width),
		Map:         mapAt("gocudap_%s[i]", "i"),
		ColumnMap:   mapAt("gocudap_%s[r * cols + c]", "r * cols + c"),

		FoldBatch:       foldBatchOf(int(accSize(r.acc))),
		FoldBatchChunks: foldBatchChunks,
	}
	for _, kv := range []struct {
		suffix string
		cv     int
	}{{"_cols", colVector(width)}, {"_colsv", colsVector(width)}} {
		if kv.suffix == "_colsv" && kv.cv == colVector(width) {
			continue // planCols never asks for it
		}
		unroll := colsUnroll(kv.cv, width)
		colAligned, colDecl := r.vectorsFrom(buffer, kv.cv, "gocudas_%[2]s[gocuda_u]")
		stagedDecl, stagedLoads := r.stagedLoads(buffer, kv.cv, unroll)
		text.Cols = append(text.Cols, reductionCols{
			Suffix:      kv.suffix,
			Threads:     blockSize,
			MinBlocks:   colsBlocks,
			Unroll:      unroll,
			V:           kv.cv,
			Aligned:     strings.Join(colAligned, " && "),
			VectorLoads: strings.Join(colDecl, ""),
			VectorMap:   vectorMap(kv.cv),
			Map:         mapAt("gocudap_%s[gocuda_i]", "gocuda_i"),
			StagedDecl:  strings.Join(stagedDecl, ""),
			StagedLoads: strings.Join(stagedLoads, ""),
		})
	}
	return prelude + render("reduction", text)
}

// classify checks a launch's arguments against the parameters: their count
// and types, the inputs buffers or scalars, the output a buffer.
func (r *Reduction) classify(op string, s *cuda.Stream, args []any) ([]arg, error) {
	if r == nil || r.variants == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "nil or zero *Reduction: make one with NewReduction")
	}
	if err := checkStream(op, s); err != nil {
		return nil, err
	}
	ps := append(append([]param(nil), r.in...), r.out)
	if len(args) != len(ps) {
		return nil, errorf(op, cuda.ErrInvalidValue, "reduction %s takes %d arguments (%s), %d given", r.name, len(ps), paramList(ps), len(args))
	}
	as := make([]arg, len(ps))
	for j, p := range ps {
		a, err := classify(op, p, args[j], j < len(r.in))
		if err != nil {
			return nil, err
		}
		as[j] = a
	}
	return as, nil
}

// check checks the buffers of as, each named as the caller's call names
// it: of s's context, the inputs of want elements (why says why), the
// output of outN (outWhy).
func (r *Reduction) check(op string, s *cuda.Stream, as []arg, want int, why func() string, outN int, outWhy string) error {
	if err := checkBuffers(op, s, as); err != nil {
		return err
	}
	for j := range as {
		a := &as[j]
		switch {
		case !a.buffer:
		case j == len(r.in) && a.n != outN:
			return errorf(op, cuda.ErrInvalidValue, "%s has %d elements, want %d%s", a.name, a.n, outN, outWhy)
		case j < len(r.in) && a.n != want:
			return errorf(op, cuda.ErrInvalidValue, "%s has %d elements, want %d%s", a.name, a.n, want, why())
		}
	}
	out := &as[len(r.in)]
	for j, p := range r.in {
		if err := overlapError(op, as, out, &as[j], r.out.t.goType.Size(), p.t.goType.Size(), false, "a reduction's output shares no memory with its inputs"); err != nil {
			return err
		}
	}
	return nil
}

// Launch folds every element of the input buffers, which must have the same
// length (scalars may stand for inputs), into the output, a buffer of one
// element that shares no memory with them. An empty input gives the post-map of the identity.
func (r *Reduction) Launch(s *cuda.Stream, args ...any) error {
	const op = "Reduction.Launch"
	as, err := r.classify(op, s, args)
	if err != nil {
		return err
	}
	return r.launch(op, s, as)
}

// launch is Launch of checked arguments (Launch's, or a standard
// operation's): the fold of one row of n elements.
func (r *Reduction) launch(op string, s *cuda.Stream, as []arg) error {
	n, first := 0, ""
	for _, a := range as[:len(r.in)] {
		if a.buffer && a.mem != nil {
			n, first = a.n, a.name // the first buffer's length is the count
			break
		}
	}
	why := func() string {
		if first == "" {
			return ""
		}
		return " (as " + first + " has)"
	}
	if err := r.check(op, s, as, n, why, 1, ""); err != nil {
		return err
	}
	return r.foldRows(op, s, Shape{Rows: 1, Cols: n}, as)
}

// LaunchAxis folds each row (PerRow) or each column (PerColumn) of the
// input matrices, of shape, into the output: a buffer of shape.Rows or
// shape.Cols elements. Rows and columns of every length are laid over the
// device so that it is kept busy: a short row by lanes of a warp, a long
// one by a block, a few very long ones by several blocks each; columns by
// threads that read whole rows at a time. Each layout is fixed by the
// shape, so that a result is the same every time.
func (r *Reduction) LaunchAxis(s *cuda.Stream, shape Shape, axis Axis, args ...any) error {
	const op = "Reduction.LaunchAxis"
	as, err := r.classify(op, s, args)
	if err != nil {
		return err
	}
	return r.launchAxis(op, s, shape, axis, as)
}

// launchAxis is LaunchAxis of checked arguments.
func (r *Reduction) launchAxis(op string, s *cuda.Stream, shape Shape, axis Axis, as []arg) error {
	if err := checkShape(op, shape); err != nil {
		return err
	}
	var outN int
	var outWhy string
	switch axis {
	case PerRow:
		outN, outWhy = shape.Rows, ": one per row"
	case PerColumn:
		outN, outWhy = shape.Cols, ": one per column"
	default:
		return errorf(op, cuda.ErrInvalidValue, "axis %d is not an axis: want PerRow or PerColumn", int(axis))
	}
	why := func() string { return fmt.Sprintf(": a %d×%d matrix", shape.Rows, shape.Cols) }
	if err := r.check(op, s, as, shape.Rows*shape.Cols, why, outN, outWhy); err != nil {
		return err
	}
	switch {
	case outN == 0:
		return nil
	case axis == PerRow:
		return r.foldRows(op, s, shape, as)
	case shape.Rows == 1 || shape.Cols == 1:
		// A column of one row, or the one column: the rows of the
		// transposed shape, whose element (r, c) is the same i.
		return r.foldRows(op, s, Shape{Rows: shape.Cols, Cols: shape.Rows}, as)
	}
	return r.foldColumns(op, s, shape, as)
}

// checkShape returns the error for a shape of a negative dimension, or of
// more elements than an int counts.
func checkShape(op string, shape Shape) error {
	if shape.Rows < 0 || shape.Cols < 0 || shape.Cols > 0 && shape.Rows > int(^uint(0)>>1)/shape.Cols {
		return errorf(op, cuda.ErrInvalidValue, "shape %d×%d: dimensions must be zero or more, and their product an int", shape.Rows, shape.Cols)
	}
	return nil
}

// foldRows folds each row of shape (at least one) into the output, as
// planRows lays them out.
func (r *Reduction) foldRows(op string, s *cuda.Stream, shape Shape, as []arg) error {
	d, err := sizeOf(s)
	if err != nil {
		return wrap(op, err, "sizing the launch of %s", r.name)
	}
	width := r.width(as)
	l := planRows(d, shape.Rows, shape.Cols, width)
	if shape.Cols == 1 { // _rows' rows of one element: width of them a thread
		l.blocks = min(ceilDiv(ceilDiv(shape.Rows, width), l.threads), maxGrid)
	}
	out, rows, cols := as[len(r.in)].mem, int64(shape.Rows), int64(shape.Cols)
	var buf [stackArgs + 4]any
	vals := launchValues(buf[:0], as[:len(r.in)])
	if l.chunks <= 1 {
		f, err := r.functions(op, s, as, "_rows")
		if err != nil {
			return err
		}
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.blocks}, Block: cuda.Dim3{X: l.threads}, Stream: s}
		return launchError(op, f[0].Launch(cfg, append(vals, out, boxInt64(rows), boxInt64(cols), int32(l.group))...), as, r.name)
	}
	f, err := r.functions(op, s, as, "_split", "_chunks")
	if err != nil {
		return err
	}
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.chunks, Y: shape.Rows}, Block: cuda.Dim3{X: l.threads}, Stream: s}
	bytes := l.chunks * shape.Rows * int(accSize(r.acc))
	counters, partial, ok, err := streamScratch(op, s, shape.Rows, bytes)
	if err != nil {
		return err
	}
	if ok { // one launch: the last block of a row folds its chunks
		return launchError(op, f[0].Launch(cfg, append(vals, partial, rows, cols, int64(l.chunk), out, counters)...), as, r.name)
	}
	return withScratch(op, r.name, s, as, bytes, func(partial *cuda.DeviceBuffer[byte]) error {
		if err := f[0].Launch(cfg, append(vals, partial, rows, cols, int64(l.chunk), out, cuda.DevicePtr(0))...); err != nil {
			return err
		}
		return launchChunks(f[1], s, partial, l.chunks, out, shape.Rows, cols)
	})
}

// streamScratch returns the counters and the partial results of a call of
// kernels that fold their partial results themselves (the last block of a
// result folds them, then sets its counter back to zero), in s's scratch:
// ok false where the call must bring memory of its own, stream-ordered (s
// captures a graph; the call needs more than the scratch holds).
func streamScratch(op string, s *cuda.Stream, counters, bytes int) (cnt, partial cuda.DevicePtr, ok bool, err error) {
	addr, size, err := attach.StreamScratch(s)
	if err != nil {
		return 0, 0, false, wrap(op, err, "taking the stream's scratch memory")
	}
	if addr == 0 || counters > attach.ScratchCounters || 4*attach.ScratchCounters+bytes > size {
		return 0, 0, false, nil
	}
	return cuda.DevicePtr(addr), cuda.DevicePtr(addr + 4*attach.ScratchCounters), true, nil
}

// launchChunks launches _chunks: a warp per output of the outs, folding
// its chunks partial results, of n elements.
func launchChunks(f *cuda.Function, s *cuda.Stream, partial *cuda.DeviceBuffer[byte], chunks int, out any, outs int, n int64) error {
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: min(ceilDiv(outs, blockSize/32), maxGrid)}, Block: cuda.Dim3{X: blockSize}, Stream: s}
	return f.Launch(cfg, partial, int64(chunks), out, int64(outs), n)
}

// foldColumns folds the columns of shape (at least two rows and two
// columns), as planCols lays them out.
func (r *Reduction) foldColumns(op string, s *cuda.Stream, shape Shape, as []arg) error {
	d, err := sizeOf(s)
	if err != nil {
		return wrap(op, err, "sizing the launch of %s", r.name)
	}
	l := planCols(d, shape.Rows, shape.Cols, r.width(as))
	out, rows, cols := as[len(r.in)].mem, int64(shape.Rows), int64(shape.Cols)
	var buf [stackArgs + 4]any
	vals := append(launchValues(buf[:0], as[:len(r.in)]), out)
	if l.kind == "_short" {
		f, err := r.functions(op, s, as, "_short")
		if err != nil {
			return err
		}
		cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.gx}, Block: cuda.Dim3{X: blockSize}, Stream: s}
		return launchError(op, f[0].Launch(cfg, append(vals, rows, cols)...), as, r.name)
	}
	cfg := cuda.LaunchConfig{Grid: cuda.Dim3{X: l.gx, Y: l.gy}, Block: cuda.Dim3{X: l.lanes, Y: blockSize / max(1, l.lanes)}, Stream: s}
	if l.kind == "_narrow" {
		cfg.Block = cuda.Dim3{X: bigBlock}
	}
	f, err := r.functions(op, s, as, l.kind, "_chunks")
	if err != nil {
		return err
	}
	if l.chunks == 1 { // one chunk posts its results itself: no partial results (null)
		return launchError(op, f[0].Launch(cfg, append(vals, cuda.DevicePtr(0), rows, cols, cuda.DevicePtr(0))...), as, r.name)
	}
	counterCount := 1 // _narrow: one for its blocks; _cols, _colsv: one a block of columns
	if l.kind != "_narrow" {
		counterCount = l.gx
	}
	bytes := l.chunks * shape.Cols * int(accSize(r.acc))
	var counters, partial cuda.DevicePtr
	ok := false
	if l.last {
		if counters, partial, ok, err = streamScratch(op, s, counterCount, bytes); err != nil {
			return err
		}
	}
	if ok { // one launch: the last block of a result's folds its chunks
		return launchError(op, f[0].Launch(cfg, append(vals, partial, rows, cols, counters)...), as, r.name)
	}
	return withScratch(op, r.name, s, as, bytes, func(partial *cuda.DeviceBuffer[byte]) error {
		if err := f[0].Launch(cfg, append(vals, partial, rows, cols, cuda.DevicePtr(0))...); err != nil {
			return err
		}
		return launchChunks(f[1], s, partial, l.chunks, out, shape.Cols, rows)
	})
}

// width returns the elements the kernels for as's pattern load at once:
// 16 bytes of the widest buffer's type.
func (r *Reduction) width(as []arg) int {
	widest := 1
	for j, p := range r.in {
		if as[j].buffer {
			widest = max(widest, int(p.t.goType.Size()))
		}
	}
	return 16 / widest
}

// functions returns the kernels name+suffix of the variant for the inputs'
// pattern.
func (r *Reduction) functions(op string, s *cuda.Stream, as []arg, suffixes ...string) ([2]*cuda.Function, error) {
	var fs [2]*cuda.Function
	var keyBuf [stackArgs]byte
	key := keyBuf[:0]
	for j := range r.in {
		b := byte('s')
		if as[j].buffer {
			b = 'b'
		}
		key = append(key, b)
	}
	r.mu.Lock()
	v, ok := r.variants[string(key)]
	if !ok {
		pattern := make([]bool, len(r.in))
		for j := range r.in {
			pattern[j] = as[j].buffer
		}
		v = &variant{src: r.source(pattern)}
		r.variants[string(key)] = v
	}
	r.mu.Unlock()
	for i, suffix := range suffixes {
		f, err := kernel(op, s, v, r.kernelName(suffix), as)
		if err != nil {
			return fs, err
		}
		fs[i] = f
	}
	return fs, nil
}

// kernelName returns the name of r's kernel of suffix, made once.
func (r *Reduction) kernelName(suffix string) string {
	if name, ok := r.names.Load(suffix); ok {
		return name.(string)
	}
	name, _ := r.names.LoadOrStore(suffix, r.name+suffix)
	return name.(string)
}

// withScratch runs launch with n elements of stream-ordered scratch
// memory on s, freed after it in the stream's order whether it failed or
// not. A failed free leaves the memory allocated: a second try keeps a
// passing failure from leaking it (the first failure is still returned);
// if that fails too, the context is broken, and the memory goes with it.
// name names the kernel in errors, as the arguments (a closed one is
// named).
func withScratch[T any](op, name string, s *cuda.Stream, as []arg, n int, launch func(*cuda.DeviceBuffer[T]) error) error {
	scratch, err := cuda.AllocAsync[T](s, n)
	if err != nil {
		return wrap(op, err, "allocating %s's partial results", name)
	}
	launchErr := launch(scratch)
	freeErr := scratch.Free()
	if freeErr != nil && scratch.Free() != nil {
		freeErr = fmt.Errorf("%w (and again)", freeErr)
	}
	if launchErr != nil {
		return launchError(op, launchErr, as, name)
	}
	return wrap(op, freeErr, "freeing %s's partial results", name)
}

// accSize is the bytes of a reduce type's value in device memory.
func accSize(t dtype) uintptr {
	if t.half != "" {
		return 4 // folded in float
	}
	return t.goType.Size()
}

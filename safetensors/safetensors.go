// Package safetensors reads .safetensors files, the format of Hugging
// Face's safetensors library (a little-endian length, a JSON header naming
// each tensor's dtype, shape and byte range, then the bytes), and loads
// their tensors into device memory at the speed of gocuda's reader
// pipeline: the bytes go from the file straight into pinned memory, read by
// several goroutines at once, and from there by DMA.
//
// Parse and Open check the header before anything is allocated: its length
// against the file's, every tensor's dtype, shape and byte size against its
// range, ranges inside the data and not overlapping, no duplicate names. A
// malformed file is an error wrapping cuda.ErrInvalidValue that says what
// was wrong, never a panic or a huge allocation.
//
// It is a package, not an example, because loading weights is the first
// thing most GPU programs do, and the header checks are worth having once,
// fuzzed, rather than copied.
package safetensors

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/errfmt"
)

// MaxHeaderBytes is the largest header Parse accepts (the safetensors
// library's own limit is 100 MB): a length beyond it is an error, not an
// allocation.
const MaxHeaderBytes = 100 << 20

// DType is a tensor's element type, as the header names it ("F32", "BF16").
type DType string

// The dtypes of the format.
const (
	Bool   DType = "BOOL"
	U8     DType = "U8"
	I8     DType = "I8"
	F8E4M3 DType = "F8_E4M3"
	F8E5M2 DType = "F8_E5M2"
	I16    DType = "I16"
	U16    DType = "U16"
	F16    DType = "F16"
	BF16   DType = "BF16"
	I32    DType = "I32"
	U32    DType = "U32"
	F32    DType = "F32"
	F64    DType = "F64"
	I64    DType = "I64"
	U64    DType = "U64"
)

var dtypeSizes = map[DType]int64{
	Bool: 1, U8: 1, I8: 1, F8E4M3: 1, F8E5M2: 1, I16: 2, U16: 2, F16: 2, BF16: 2,
	I32: 4, U32: 4, F32: 4, F64: 8, I64: 8, U64: 8,
}

// Size returns the bytes of one element, or 0 for an unknown dtype.
func (d DType) Size() int { return int(dtypeSizes[d]) }

// Tensor is one tensor of a file: its name, dtype and shape, and where its
// bytes are, from the start of the data (after the header).
type Tensor struct {
	Name       string
	DType      DType
	Shape      []int
	Begin, End int64
}

// Elements returns the number of elements, the product of the shape.
func (t Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// Error is the error type of this package, of the same shape as
// cuda.Error.
type Error struct {
	Op     string // such as "Parse"
	Err    error  // the gocuda sentinel this error matches, or the reader's error
	Detail string // what was wrong, in words
}

func (e *Error) Error() string {
	if e == nil {
		return "safetensors: <nil>"
	}
	return errfmt.Message("safetensors", e.Op, "", "", e.Err, e.Detail)
}

// Unwrap returns the sentinel (or cause) e matches.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

func invalid(op, format string, args ...any) error {
	return &Error{Op: op, Err: cuda.ErrInvalidValue, Detail: fmt.Sprintf(format, args...)}
}

// Header is a file's parsed and checked header.
type Header struct {
	// Tensors in the order of their bytes in the file.
	Tensors []Tensor
	// Metadata is the header's free-form "__metadata__", if any.
	Metadata map[string]string
	// DataOffset is where the data starts in the file: 8 + the header's
	// length.
	DataOffset int64
}

// Tensor returns the tensor of that name.
func (h *Header) Tensor(name string) (Tensor, bool) {
	if h == nil {
		return Tensor{}, false
	}
	for _, t := range h.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// Parse reads and checks the header of the safetensors file of size bytes
// that r reads.
func Parse(r io.ReaderAt, size int64) (*Header, error) {
	const op = "Parse"
	if size < 8 {
		return nil, invalid(op, "a file of %d bytes: want at least 8 (the header's length)", size)
	}
	var lenBytes [8]byte
	if got, err := r.ReadAt(lenBytes[:], 0); got < len(lenBytes) {
		return nil, &Error{Op: op, Err: err, Detail: "reading the header's length"}
	}
	n := binary.LittleEndian.Uint64(lenBytes[:])
	switch {
	case n > MaxHeaderBytes:
		return nil, invalid(op, "the header is said to be %d bytes: more than the %d allowed", n, MaxHeaderBytes)
	case int64(n) > size-8:
		return nil, invalid(op, "the header is said to be %d bytes, but the file has %d after the length", n, size-8)
	}
	raw := make([]byte, n)
	if got, err := r.ReadAt(raw, 8); got < len(raw) {
		return nil, &Error{Op: op, Err: err, Detail: "reading the header"}
	}
	h, err := parseHeader(raw, size-8-int64(n))
	if err != nil {
		return nil, err
	}
	h.DataOffset = 8 + int64(n)
	return h, nil
}

// entry is a tensor's header entry.
type entry struct {
	DType       DType    `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// parseHeader parses the JSON header of a file with dataBytes of data.
func parseHeader(raw []byte, dataBytes int64) (*Header, error) {
	const op = "Parse"
	// The format pads the header with spaces; JSON itself begins with {.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, invalid(op, "the header is not a JSON object")
	}
	h := &Header{}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalid(op, "the header is not valid JSON: %v", err)
		}
		name := tok.(string) // an object's keys are strings
		if seen[name] {
			return nil, invalid(op, "the header names %q twice", name)
		}
		seen[name] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, invalid(op, "the header is not valid JSON at %q: %v", name, err)
		}
		if name == "__metadata__" {
			if err := json.Unmarshal(value, &h.Metadata); err != nil {
				return nil, invalid(op, "__metadata__ is not an object of strings: %v", err)
			}
			continue
		}
		t, err := parseEntry(name, value, dataBytes)
		if err != nil {
			return nil, err
		}
		h.Tensors = append(h.Tensors, t)
	}
	if _, err := dec.Token(); err != nil {
		return nil, invalid(op, "the header is not valid JSON: %v", err)
	}
	if rest, _ := io.ReadAll(dec.Buffered()); len(bytes.TrimRight(rest, " ")) != 0 {
		return nil, invalid(op, "the header has bytes after its JSON object")
	}
	// Sorted by their bytes: no overlaps, and (as the format asks) no
	// holes, so that the data is all the tensors' and nothing else.
	slices.SortFunc(h.Tensors, func(a, b Tensor) int {
		return cmp.Or(cmp.Compare(a.Begin, b.Begin), cmp.Compare(a.End, b.End))
	})
	var end int64
	for i, t := range h.Tensors {
		if t.Begin != end {
			if t.Begin < end {
				return nil, invalid(op, "tensor %q (bytes %d to %d) overlaps %q (to %d)", t.Name, t.Begin, t.End, h.Tensors[i-1].Name, end)
			}
			return nil, invalid(op, "the data has a hole from byte %d to %d, before tensor %q", end, t.Begin, t.Name)
		}
		end = t.End
	}
	if end != dataBytes {
		return nil, invalid(op, "the tensors cover %d bytes of data; the file has %d", end, dataBytes)
	}
	return h, nil
}

// parseEntry checks one tensor's entry.
func parseEntry(name string, value json.RawMessage, dataBytes int64) (Tensor, error) {
	const op = "Parse"
	var e entry
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Tensor{}, invalid(op, "tensor %q: not an entry of dtype, shape and data_offsets: %v", name, err)
	}
	size, ok := dtypeSizes[e.DType]
	if !ok {
		return Tensor{}, invalid(op, "tensor %q: unknown dtype %q", name, e.DType)
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin < 0 || end < begin || end > dataBytes {
		return Tensor{}, invalid(op, "tensor %q: bytes %d to %d are not inside the data's %d", name, begin, end, dataBytes)
	}
	t := Tensor{Name: name, DType: e.DType, Shape: make([]int, len(e.Shape)), Begin: begin, End: end}
	elems := uint64(1)
	for i, d := range e.Shape {
		if d < 0 {
			return Tensor{}, invalid(op, "tensor %q: dimension %d is %d", name, i, d)
		}
		hi, lo := bits.Mul64(elems, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return Tensor{}, invalid(op, "tensor %q: shape %v has too many elements", name, e.Shape)
		}
		elems, t.Shape[i] = lo, int(d)
	}
	if hi, want := bits.Mul64(elems, uint64(size)); hi != 0 || want != uint64(end-begin) {
		return Tensor{}, invalid(op, "tensor %q: %s of shape %v is %d bytes, but its data_offsets span %d", name, e.DType, e.Shape, elems*uint64(size), end-begin)
	}
	return t, nil
}

// File is an open safetensors file. Close it when done.
type File struct {
	Header
	f    *os.File
	size int64
}

// Open opens the safetensors file at path and parses its header.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Op: "Open", Err: err} // err names the path
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &Error{Op: "Open", Err: err, Detail: "reading its size"} // err names the path
	}
	h, err := Parse(f, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	return &File{Header: *h, f: f, size: st.Size()}, nil
}

// Tensor returns the tensor of that name.
func (f *File) Tensor(name string) (Tensor, bool) {
	if f == nil {
		return Tensor{}, false
	}
	return f.Header.Tensor(name)
}

// Close closes the file.
func (f *File) Close() error {
	if f == nil || f.f == nil {
		return nil
	}
	return f.f.Close()
}

// Weights are tensors loaded into one device allocation, each a view of it.
// Free it when done; the views are then invalid.
type Weights struct {
	mem     *cuda.DeviceBuffer[byte]
	tensors map[string]Tensor // Begin and End in mem
}

// Load reads the tensors named (every tensor when none are) into one
// allocation on ctx, through c's staging buffer and stream (cuda.ReadFrom:
// many readers at once). Every tensor of the file is one read of the whole
// data; a subset is one read per tensor, into a buffer of their sizes.
func (f *File) Load(ctx *cuda.Context, c cuda.IOConfig, names ...string) (*Weights, error) {
	const op = "Load"
	if f == nil || f.f == nil {
		return nil, invalid(op, "not an open file")
	}
	chosen := f.Tensors
	if len(names) > 0 {
		chosen = nil
		seen := map[string]bool{}
		for _, name := range names {
			t, ok := f.Tensor(name)
			if !ok {
				return nil, invalid(op, "the file has no tensor %q", name)
			}
			if !seen[name] {
				seen[name] = true
				chosen = append(chosen, t)
			}
		}
	}
	// Each tensor at an offset aligned to 256 bytes where the subset is
	// packed anew; the whole data keeps the file's offsets.
	whole := len(chosen) == len(f.Tensors)
	var total int64
	placed := make(map[string]Tensor, len(chosen))
	for _, t := range chosen {
		if whole {
			placed[t.Name] = t
			total = max(total, t.End)
			continue
		}
		total = (total + 255) &^ 255
		p := t
		p.Begin, p.End = total, total+(t.End-t.Begin)
		placed[t.Name] = p
		total = p.End
	}
	mem, err := cuda.Alloc[byte](ctx, int(max(total, 1)))
	if err != nil {
		return nil, err
	}
	w := &Weights{mem: mem, tensors: placed}
	read := func(dst *cuda.DeviceBuffer[byte], off, n int64) error {
		_, err := cuda.ReadFrom(dst, io.NewSectionReader(f.f, f.DataOffset+off, n), c)
		return err
	}
	if whole {
		if total > 0 {
			err = read(mem, 0, total)
		}
	} else {
		for _, t := range chosen {
			p := placed[t.Name]
			if p.End == p.Begin {
				continue
			}
			var view *cuda.DeviceBuffer[byte]
			if view, err = mem.Slice(int(p.Begin), int(p.End-p.Begin)); err == nil {
				err = read(view, t.Begin, t.End-t.Begin)
			}
			if err != nil {
				break
			}
		}
	}
	if err != nil {
		mem.Free()
		return nil, err
	}
	return w, nil
}

// Bytes returns the bytes of the tensor of that name, a view of the
// allocation.
func (w *Weights) Bytes(name string) (*cuda.DeviceBuffer[byte], error) {
	return w.bytes("Weights.Bytes", name)
}

// bytes is Bytes for op.
func (w *Weights) bytes(op, name string) (*cuda.DeviceBuffer[byte], error) {
	if w == nil || w.mem == nil {
		return nil, invalid(op, "no weights")
	}
	t, ok := w.tensors[name]
	if !ok {
		return nil, invalid(op, "no tensor %q was loaded", name)
	}
	return w.mem.Slice(int(t.Begin), int(t.End-t.Begin))
}

// Tensor returns the description of a loaded tensor, with Begin and End in
// the allocation.
func (w *Weights) Tensor(name string) (Tensor, bool) {
	if w == nil {
		return Tensor{}, false
	}
	t, ok := w.tensors[name]
	return t, ok
}

// Get returns the tensor of that name as a buffer of T, whose size must be
// its dtype's: float32 for F32, cuda.BFloat16 for BF16, cuda.Float16 for
// F16, and so on (any T of that size for the types Go lacks).
func Get[T any](w *Weights, name string) (*cuda.DeviceBuffer[T], error) {
	const op = "Get"
	b, err := w.bytes(op, name)
	if err != nil {
		return nil, err
	}
	t := w.tensors[name]
	var zero T
	if want := DType(goDType(zero)); want != "" && want != t.DType {
		return nil, invalid(op, "tensor %q is %s, not %T", name, t.DType, zero)
	}
	return cuda.ViewAs[T](b)
}

// goDType names the dtype of the Go types that have one.
func goDType(v any) string {
	switch v.(type) {
	case float32:
		return string(F32)
	case float64:
		return string(F64)
	case cuda.Float16:
		return string(F16)
	case cuda.BFloat16:
		return string(BF16)
	case int8:
		return string(I8)
	case uint8:
		return string(U8)
	case int16:
		return string(I16)
	case uint16:
		return string(U16)
	case int32:
		return string(I32)
	case uint32:
		return string(U32)
	case int64:
		return string(I64)
	case uint64:
		return string(U64)
	case bool:
		return string(Bool)
	}
	return ""
}

// Free frees the allocation of every tensor.
func (w *Weights) Free() error {
	if w == nil || w.mem == nil {
		return nil
	}
	return w.mem.Free()
}

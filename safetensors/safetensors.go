// Package safetensors reads .safetensors files, the format of Hugging
// Face's safetensors library (a little-endian length, a JSON header naming
// each tensor's dtype, shape and byte range, then the bytes), and loads
// their tensors into device memory at the speed of gocuda's reader
// pipeline: the bytes go from the file straight into pinned memory, read by
// several goroutines at once, and from there by DMA.
//
// Parse and Open check the header before anything is allocated: its length
// against the file's (and MaxHeaderBytes); its JSON as strictly as Hugging
// Face's reader reads it (UTF-8, beginning with {, padded only with
// spaces, each tensor's entry exactly its dtype, shape and two
// data_offsets); every tensor's dtype, shape and byte size against its
// range; the ranges covering the data, with no overlaps and no holes; no
// duplicate names. A malformed file is an error wrapping
// cuda.ErrInvalidValue that says what was wrong, never a panic or a huge
// allocation; a file shorter than it said is io.ErrUnexpectedEOF.
//
// The format promises no alignment: a tensor's bytes may start at any
// offset of the data. Load places each tensor at an address aligned for its
// dtype, so that Get of its element type always works; a file whose offsets
// are aligned already (every file Hugging Face's library writes) is read
// as it lies, in one read.
//
// Save and SaveFile write device buffers as a file laid out as Hugging
// Face's library lays it out, byte for byte.
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
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/describe"
	"github.com/gocuda/cuda/internal/errfmt"
)

// MaxHeaderBytes is the largest header Parse accepts, and Save writes:
// the safetensors library's own limit (its MAX_HEADER_SIZE, 100,000,000
// bytes, not 100 MiB: a header between the two is one the library refuses
// to read). A length beyond it is an error, not an allocation.
const MaxHeaderBytes = 100_000_000

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
	switch {
	case r == nil:
		return nil, invalid(op, "nil reader")
	case size < 8:
		return nil, invalid(op, "a file of %d bytes: want at least 8 (the header's length)", size)
	}
	var lenBytes [8]byte
	if err := readAt(r, lenBytes[:], 0); err != nil {
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
	if err := readAt(r, raw, 8); err != nil {
		return nil, &Error{Op: op, Err: err, Detail: "reading the header"}
	}
	h, err := parseHeader(raw, size-8-int64(n))
	if err != nil {
		return nil, err
	}
	h.DataOffset = 8 + int64(n)
	return h, nil
}

// loneSurrogate reports whether JSON raw has a \u escape of half of a
// UTF-16 surrogate pair without the other half after it, which is no
// character: the format's reader refuses it.
func loneSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // the escaped byte: \\u is a backslash, then u
		if i >= len(raw) || raw[i] != 'u' {
			continue
		}
		r, ok := hex4(raw[i+1:])
		if !ok {
			continue // not JSON: the decoder says so
		}
		i += 4
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return true // a second half first
		case r >= 0xd800 && r <= 0xdbff:
			if i+2 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return true
			}
			if lo, ok := hex4(raw[i+3:]); !ok || lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 6
		}
	}
	return false
}

// hex4 is the number of the 4 hex digits b begins with.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// readAt fills p from r at off. A short read is an error even where r
// gives none, and io.EOF (a file shorter than its size said: cut while
// being opened) is io.ErrUnexpectedEOF, as Load's reads say it, not the
// end of input that callers test io.EOF for.
func readAt(r io.ReaderAt, p []byte, off int64) error {
	got, err := r.ReadAt(p, off)
	switch {
	case got == len(p):
		return nil // a ReaderAt may give io.EOF with the last byte
	case err == nil || err == io.EOF:
		return fmt.Errorf("%w: %d of %d bytes at offset %d", io.ErrUnexpectedEOF, got, len(p), off)
	}
	return err
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
	// The format's header is UTF-8 JSON that begins with { (no whitespace
	// before it) and may be padded after with spaces. encoding/json would
	// take invalid UTF-8, and give its names with U+FFFD in place of the
	// bytes, names no one could ask for: Hugging Face's library refuses it.
	switch {
	case len(raw) == 0:
		return nil, invalid(op, "the header is empty: it is said to be 0 bytes (the least is {}, 2)")
	case raw[0] != '{':
		return nil, invalid(op, "the header is not a JSON object (its first byte is not {)")
	case !utf8.Valid(raw):
		return nil, invalid(op, "the header is not valid UTF-8")
	case loneSurrogate(raw):
		// As with invalid UTF-8, encoding/json would give U+FFFD for it.
		return nil, invalid(op, "the header escapes half of a UTF-16 surrogate pair alone (such as \\ud800): not a character")
	}
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
			if err := decodeMetadata(value, &h.Metadata); err != nil {
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
	// What follows the object is the rest of raw, not dec.Buffered(): the
	// decoder reads ahead only so far, and bytes past its buffer would go
	// unchecked.
	if rest := raw[dec.InputOffset():]; len(bytes.TrimRight(rest, " ")) != 0 {
		return nil, invalid(op, "the header has bytes after its JSON object (padding must be spaces)")
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
	e, err := decodeEntry(value)
	if err != nil {
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
			return Tensor{}, invalid(op, "tensor %q: shape %s has too many elements", name, shapeString(e.Shape))
		}
		elems, t.Shape[i] = lo, int(d)
	}
	switch hi, want := bits.Mul64(elems, uint64(size)); {
	case hi != 0: // the bytes' count would wrap: say so, not the wrapped count
		return Tensor{}, invalid(op, "tensor %q: %s of shape %s is more than 2^64 bytes, but its data_offsets span %d", name, e.DType, shapeString(e.Shape), end-begin)
	case want != uint64(end-begin):
		return Tensor{}, invalid(op, "tensor %q: %s of shape %s is %d bytes, but its data_offsets span %d", name, e.DType, shapeString(e.Shape), want, end-begin)
	}
	return t, nil
}

// decodeEntry decodes a tensor's entry as strictly as the format's own
// reader (serde) does, where encoding/json into a struct would not: the
// three fields, each named exactly (encoding/json takes "DTYPE" or
// "Shape"), each once (it keeps the last of two), none missing (it leaves
// a missing one zero: no data_offsets read as [0, 0]), shape an array and
// not null (which read as a scalar's shape), data_offsets exactly two
// numbers (into a Go array, [0, 16, 99] lost its 99, and [0] gained a 0).
func decodeEntry(value json.RawMessage) (entry, error) {
	var e entry
	dec := json.NewDecoder(bytes.NewReader(value))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return e, fmt.Errorf("%s is not an object", clip(value))
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return e, err
		}
		key := tok.(string) // an object's keys are strings
		if seen[key] {
			return e, fmt.Errorf("%q is given twice", key)
		}
		seen[key] = true
		var field json.RawMessage
		if err := dec.Decode(&field); err != nil {
			return e, err
		}
		switch key {
		case "dtype":
			if len(field) == 0 || field[0] != '"' {
				return e, fmt.Errorf("dtype %s is not a string", clip(field))
			}
			err = json.Unmarshal(field, &e.DType)
		case "shape":
			err = decodeInts("shape", field, &e.Shape)
		case "data_offsets":
			var offsets []int64
			if err = decodeInts("data_offsets", field, &offsets); err == nil && len(offsets) != 2 {
				err = fmt.Errorf("data_offsets %s: want 2 numbers, begin and end", clip(field))
			}
			if err == nil {
				e.DataOffsets = [2]int64(offsets)
			}
		default:
			err = fmt.Errorf("unknown field %q", key)
		}
		if err != nil {
			return e, err
		}
	}
	for _, key := range [...]string{"dtype", "shape", "data_offsets"} {
		if !seen[key] {
			return e, fmt.Errorf("no %q", key)
		}
	}
	return e, nil
}

// decodeMetadata decodes __metadata__'s value into m as the format's
// reader (an Option<HashMap<String, String>>) takes it: null is no
// metadata, and every value a string. encoding/json into a
// map[string]string would take a null value as "", a string the file
// does not hold.
func decodeMetadata(value json.RawMessage, m *map[string]string) error {
	var ptrs map[string]*string
	if err := json.Unmarshal(value, &ptrs); err != nil {
		return err
	}
	if ptrs == nil {
		return nil // null: no metadata
	}
	*m = make(map[string]string, len(ptrs))
	for k, v := range ptrs {
		if v == nil {
			return fmt.Errorf("%q is null", k)
		}
		(*m)[k] = *v
	}
	return nil
}

// decodeInts decodes field, the JSON of the entry's key, as an array of
// integers (null is not one).
func decodeInts(key string, field json.RawMessage, v *[]int64) error {
	if len(field) == 0 || field[0] != '[' {
		return fmt.Errorf("%s %s is not an array", key, clip(field))
	}
	if err := json.Unmarshal(field, v); err != nil {
		return fmt.Errorf("%s %s: %v", key, clip(field), err)
	}
	return nil
}

// shapeString is shape as an error says it: [2 3], the first dimensions
// only of a shape of thousands (a hostile header's), not megabytes of them.
func shapeString(shape []int64) string {
	const most = 8
	if len(shape) <= most {
		return fmt.Sprint(shape)
	}
	return strings.TrimSuffix(fmt.Sprint(shape[:most]), "]") + fmt.Sprintf(" ...] (%d dimensions)", len(shape))
}

// clip is field as an error quotes it: its first bytes, not the megabytes
// a hostile header can put in one value.
func clip(field json.RawMessage) string {
	const most = 40
	if len(field) <= most {
		return string(field)
	}
	n := most
	for n > 0 && !utf8.RuneStart(field[n]) {
		n-- // whole characters
	}
	return string(field[:n]) + "..."
}

// File is an open safetensors file. Close it when done.
type File struct {
	Header
	f      *os.File
	size   int64
	closed atomic.Bool // Close was called: Load says so rather than the os's "file already closed"
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

// Close closes the file. Closing it again does nothing.
func (f *File) Close() error {
	if f == nil || f.f == nil || f.closed.Swap(true) {
		return nil
	}
	return f.f.Close()
}

// String describes the file: `safetensors.File{model.safetensors, 3
// tensors, 1.2 MiB}` (the path as given to Open), "closed" once closed, as
// package cuda's objects print.
func (f *File) String() string {
	switch {
	case f == nil:
		return "safetensors.File(nil)"
	case f.f == nil:
		return "safetensors.File{zero}"
	}
	state := ""
	if f.closed.Load() {
		state = ", closed"
	}
	return "safetensors.File{" + f.f.Name() + ", " + f.Header.describe() + state + "}"
}

// String describes the header: `safetensors.Header{3 tensors, 1.2 MiB}`.
func (h *Header) String() string {
	if h == nil {
		return "safetensors.Header(nil)"
	}
	return "safetensors.Header{" + h.describe() + "}"
}

// describe says how many tensors h has and how many bytes of data.
func (h *Header) describe() string {
	var n int64
	for _, t := range h.Tensors {
		n += t.End - t.Begin
	}
	return countOf(int64(len(h.Tensors)), "tensor") + ", " + describe.Bytes(n)
}

// Weights are tensors loaded into one device allocation, each a view of it.
// Free it when done; the views are then invalid.
type Weights struct {
	mem     *cuda.DeviceBuffer[byte]
	tensors map[string]Tensor // Begin and End in mem
}

// runAlign is where in the allocation a run after the first starts: the
// alignment cuMemAlloc gives an allocation, which is every dtype's and
// what libraries such as cuBLAS prefer.
const runAlign = 256

// run is tensors read from the file in one read: contiguous in the data,
// and each aligned for its dtype when the run is placed at at.
type run struct {
	first, last string // the tensors' names, for errors
	begin, end  int64  // in the file's data
	at          int64  // in the allocation
}

// what names the run's tensors, for errors.
func (r run) what() string {
	if r.first == r.last {
		return fmt.Sprintf("tensor %q", r.first)
	}
	return fmt.Sprintf("tensors %q to %q (bytes %d to %d of the data)", r.first, r.last, r.begin, r.end)
}

// layout places tensors in one allocation, each at an offset aligned for
// its dtype (the allocation itself is aligned to 256 bytes): in the file's
// order, tensors contiguous in the file and aligned where they fall stay
// together, one read each run. A run starts where a tensor would fall
// misaligned, or where the file has bytes not chosen between two tensors.
// A file whose offsets are all aligned, loaded whole, is one run at 0: the
// file's own layout, read at once, with no copy more than before. Empty
// tensors take no bytes and sit at 0.
func layout(tensors []Tensor) (placed map[string]Tensor, runs []run, total int64) {
	inFile := slices.Clone(tensors)
	slices.SortFunc(inFile, func(a, b Tensor) int { return cmp.Compare(a.Begin, b.Begin) })
	placed = make(map[string]Tensor, len(tensors))
	for _, t := range inFile {
		p := t
		p.Shape = slices.Clone(t.Shape) // w's own: the header's are its caller's
		n := t.End - t.Begin
		if n == 0 {
			p.Begin, p.End = 0, 0
			placed[t.Name] = p
			continue
		}
		align := int64(t.DType.Size())
		if k := len(runs) - 1; k >= 0 && runs[k].end == t.Begin && (runs[k].at+t.Begin-runs[k].begin)%align == 0 {
			r := &runs[k]
			p.Begin = r.at + t.Begin - r.begin
			r.end, r.last = t.End, t.Name
		} else {
			p.Begin = (total + runAlign - 1) &^ (runAlign - 1)
			runs = append(runs, run{first: t.Name, last: t.Name, begin: t.Begin, end: t.End, at: p.Begin})
		}
		p.End = p.Begin + n
		placed[t.Name] = p
		total = p.End
	}
	return placed, runs, total
}

// Load reads the tensors named (every tensor when none are) into one
// allocation on ctx, through c's staging buffer and stream (cuda.ReadFrom:
// many readers at once). Each tensor is placed at an offset aligned for its
// dtype, so that Get of its element type works whatever the file's offsets
// (the format promises no alignment). Tensors contiguous in the file that
// stay aligned together are one read: every tensor of a file written by
// Hugging Face's library, whose offsets are aligned, is one read of the
// whole data, at the file's own offsets; a tensor that would fall
// misaligned, or a subset's tensors apart in the file, start a read of
// their own, at an offset aligned to 256 bytes.
func (f *File) Load(ctx *cuda.Context, c cuda.IOConfig, names ...string) (*Weights, error) {
	const op = "Load"
	switch {
	case f == nil || f.f == nil:
		return nil, invalid(op, "not an open file")
	case f.closed.Load():
		return nil, &Error{Op: op, Err: cuda.ErrClosed, Detail: "the file is closed"}
	}
	chosen := f.Tensors
	if len(names) > 0 {
		// By a map, not f.Tensor's walk of the list: names of every tensor
		// of a file of many would take time of the square of their number.
		byName := make(map[string]int, len(f.Tensors))
		for i, t := range f.Tensors {
			byName[t.Name] = i
		}
		chosen = nil
		seen := make(map[string]bool, len(names))
		for _, name := range names {
			i, ok := byName[name]
			if !ok {
				return nil, invalid(op, "the file has no tensor %q", name)
			}
			if !seen[name] {
				seen[name] = true
				chosen = append(chosen, f.Tensors[i])
			}
		}
	}
	placed, runs, total := layout(chosen)
	mem, err := cuda.Alloc[byte](ctx, int(max(total, 1)))
	if err != nil {
		return nil, &Error{Op: op, Err: err, Detail: fmt.Sprintf("allocating %s for %s", describe.Bytes(total), countOf(int64(len(chosen)), "tensor"))}
	}
	if len(runs) == 0 {
		// Nothing to read (every tensor empty): what a read holds is
		// held all the same, so that a closed c.Stream is ErrClosed here
		// too.
		if err := idle(mem, c); err != nil {
			mem.Free()
			return nil, &Error{Op: op, Err: err, Detail: "the tensors are empty: nothing to read"}
		}
	}
	for _, r := range runs {
		var view *cuda.DeviceBuffer[byte]
		if view, err = mem.Slice(int(r.at), int(r.end-r.begin)); err == nil {
			_, err = cuda.ReadFrom(view, io.NewSectionReader(f.f, f.DataOffset+r.begin, r.end-r.begin), c)
		}
		if err != nil {
			mem.Free()
			if f.closed.Load() && errors.Is(err, os.ErrClosed) {
				// Closed while this Load read it: ErrClosed, as for a
				// Load after Close, not the os's "file already closed".
				return nil, &Error{Op: op, Err: cuda.ErrClosed, Detail: "the file was closed while reading " + r.what()}
			}
			return nil, &Error{Op: op, Err: err, Detail: "reading " + r.what()}
		}
	}
	return &Weights{mem: mem, tensors: placed}, nil
}

// Bytes returns the bytes of the tensor of that name, a view of the
// allocation.
func (w *Weights) Bytes(name string) (*cuda.DeviceBuffer[byte], error) {
	b, _, err := w.bytes("Weights.Bytes", name)
	return b, err
}

// bytes is Bytes for op, with the tensor's description.
func (w *Weights) bytes(op, name string) (*cuda.DeviceBuffer[byte], Tensor, error) {
	if w == nil || w.mem == nil {
		return nil, Tensor{}, invalid(op, "tensor %q: no weights: load them with File.Load", name)
	}
	t, ok := w.tensors[name]
	if !ok {
		return nil, Tensor{}, invalid(op, "no tensor %q was loaded", name)
	}
	b, err := w.mem.Slice(int(t.Begin), int(t.End-t.Begin))
	switch {
	case errors.Is(err, cuda.ErrClosed): // the Slice is ours, not the caller's: say what it means to them
		return nil, Tensor{}, &Error{Op: op, Err: cuda.ErrClosed, Detail: fmt.Sprintf("tensor %q: the weights are freed (or their context closed)", name)}
	case err != nil:
		return nil, Tensor{}, &Error{Op: op, Err: err, Detail: fmt.Sprintf("tensor %q", name)}
	}
	return b, t, nil
}

// Tensor returns the description of a loaded tensor, with Begin and End in
// the allocation. Its Shape is the caller's own: changing it changes
// nothing of w.
func (w *Weights) Tensor(name string) (Tensor, bool) {
	if w == nil {
		return Tensor{}, false
	}
	t, ok := w.tensors[name]
	t.Shape = slices.Clone(t.Shape)
	return t, ok
}

// Get returns the tensor of that name as a buffer of T, which must be its
// dtype's type: float32 for F32, cuda.BFloat16 for BF16, cuda.Float16 for
// F16, int8 for I8, and so on. The dtypes Go has no type for (BOOL,
// F8_E4M3, F8_E5M2) read as uint8; a BOOL cannot read as bool, since a
// file's bytes are not all valid bools. A T of none of these types (an
// array, a struct, a type defined on a number) reads any dtype of its size.
func Get[T any](w *Weights, name string) (*cuda.DeviceBuffer[T], error) {
	const op = "Get"
	b, t, err := w.bytes(op, name)
	if err != nil {
		return nil, err
	}
	if why := misfit[T](t.DType); why != "" {
		return nil, invalid(op, "tensor %q: %s", name, why)
	}
	v, err := cuda.ViewAs[T](b)
	if err != nil {
		return nil, &Error{Op: op, Err: err, Detail: fmt.Sprintf("tensor %q", name)}
	}
	return v, nil
}

// misfit says why elements of type T cannot hold dtype d ("" if they can).
func misfit[T any](d DType) string {
	typ := reflect.TypeFor[T]()
	own := DType(goDType(*new(T)))
	switch {
	case own == Bool && d == Bool:
		return "dtype BOOL cannot be read as bool (a file's bytes are not all valid bools): read it as uint8"
	case own == d || own == U8 && noGoType[d]:
		return ""
	case own != "":
		return fmt.Sprintf("dtype %s is not %v", d, typ)
	case typ.Size() != uintptr(d.Size()):
		return fmt.Sprintf("dtype %s has %d-byte elements; %v has %d", d, d.Size(), typ, typ.Size())
	}
	return ""
}

// noGoType are the dtypes Go has no type for, which read as uint8.
var noGoType = map[DType]bool{Bool: true, F8E4M3: true, F8E5M2: true}

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

// String describes the weights: `safetensors.Weights{3 tensors, 1.2 MiB,
// cuda:0}` (the tensors' bytes, without the padding between them),
// "closed" once freed, as package cuda's objects print.
func (w *Weights) String() string {
	switch {
	case w == nil:
		return "safetensors.Weights(nil)"
	case w.mem == nil:
		return "safetensors.Weights{zero}"
	}
	var n int64
	for _, t := range w.tensors {
		n += t.End - t.Begin
	}
	state := ""
	if _, err := w.mem.Slice(0, 0); err != nil { // the allocation is closed: freed, or its context closed
		state = ", closed"
	}
	return fmt.Sprintf("safetensors.Weights{%s, %s, %v%s}", countOf(int64(len(w.tensors)), "tensor"), describe.Bytes(n), w.mem.Context().Device(), state)
}

// countOf is n things, in words.
func countOf(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

package safetensors

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"math/bits"
	"os"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/closed"
)

// Source is a tensor for Save: a device buffer's bytes, with the name,
// dtype and shape the file gives them. Make one with From; set DType after
// it where the buffer's element type has no dtype of its own (a uint8
// buffer of F8_E4M3 or BOOL values, an array type), or to write the
// buffer's bytes as another dtype of its element size.
type Source struct {
	Name  string
	DType DType
	Shape []int

	data *cuda.DeviceBuffer[byte] // the buffer, as bytes
	elem reflect.Type             // the buffer's element type
	err  error                    // why From could not view the buffer
}

// From names device buffer b as the tensor name of that shape (none for a
// scalar), of the dtype of b's element type (F32 for float32, BF16 for
// cuda.BFloat16, BOOL for bool, and so on as Get reads them; none for a
// type Go has no dtype for: set Source.DType). Save checks that the shape
// covers the buffer.
func From[T any](name string, b *cuda.DeviceBuffer[T], shape ...int) Source {
	s := Source{Name: name, DType: DType(goDType(*new(T))), Shape: slices.Clone(shape), elem: reflect.TypeFor[T]()}
	s.data, s.err = cuda.ViewAs[byte](b)
	return s
}

// dtypeOrder is the order of Hugging Face's Dtype enum, which its writer
// sorts tensors by (descending, then by name): the enum lists the dtypes by
// increasing alignment, so that the data, sorted so, keeps every tensor
// aligned for its dtype.
var dtypeOrder = map[DType]int{
	Bool: 0, U8: 1, I8: 2, F8E5M2: 3, F8E4M3: 4, I16: 5, U16: 6, F16: 7, BF16: 8,
	I32: 9, U32: 10, F32: 11, F64: 12, I64: 13, U64: 14,
}

// Save writes the tensors, and metadata as the header's "__metadata__"
// (none when metadata is nil; an empty one when it is empty, as the library
// writes metadata={}), to w as a .safetensors file laid out as
// Hugging Face's library (safetensors.torch.save_file) lays it out: the
// tensors sorted by dtype, the widest first (in the library's order of
// dtypes), then by name; their bytes contiguous in that order; the header's
// JSON written as the library's serde_json writes it (no spaces, tensor
// entries as dtype, shape, data_offsets) and padded with spaces to a
// multiple of 8 bytes, so that every tensor is aligned for its dtype. Its
// metadata is written sorted by key, where the library's order of more
// than one key follows its hash map.
//
// Every tensor is checked before anything is written: a name non-empty,
// valid UTF-8, not "__metadata__" and not given twice; a known dtype of the
// buffer's element size; a shape whose elements times the dtype's size are
// the buffer's bytes; a buffer of c.Stream's context, where c has a stream.
// An error names the tensor, wraps cuda.ErrInvalidValue (ErrClosed for a
// buffer freed before From), and leaves w untouched.
//
// The bytes come from the device through c's staging buffer and stream
// (cuda.WriteTo), one tensor after another: with no stream in c, each copy
// first waits for the work gocuda queued on its buffer; with one, it is
// queued there, after the work already queued. A failure partway (the
// device's, w's) leaves w holding part of the file.
func Save(w io.Writer, tensors []Source, metadata map[string]string, c cuda.IOConfig) error {
	const op = "Save"
	if w == nil {
		return invalid(op, "nil writer")
	}
	header, order, err := prepare(op, tensors, metadata, c)
	if err != nil {
		return err
	}
	return write(op, w, header, order, c)
}

// SaveFile is Save to the file at path, created or truncated. The tensors
// are checked before the file is touched; a failure after leaves no file.
func SaveFile(path string, tensors []Source, metadata map[string]string, c cuda.IOConfig) error {
	const op = "SaveFile"
	header, order, err := prepare(op, tensors, metadata, c)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return &Error{Op: op, Err: err} // err names the path
	}
	err = write(op, f, header, order, c)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = &Error{Op: op, Err: cerr} // cerr names the path
	}
	if err != nil {
		os.Remove(path) // a part of a file is no file
	}
	return err
}

// prepare checks the tensors and metadata, for copies by c, and returns
// the header (with its length before it) and the tensors in the order of
// their bytes.
func prepare(op string, tensors []Source, metadata map[string]string, c cuda.IOConfig) ([]byte, []Source, error) {
	seen := make(map[string]int, len(tensors))
	for i, s := range tensors {
		if err := s.check(op, i); err != nil {
			return nil, nil, err
		}
		if c.Stream != nil && c.Stream.Context() != s.data.Context() {
			// WriteTo would refuse it, with part of the file written.
			return nil, nil, invalid(op, "tensor %q: its buffer belongs to another context than c.Stream", s.Name)
		}
		if j, ok := seen[s.Name]; ok {
			return nil, nil, invalid(op, "tensor %q is given twice (tensors[%d] and tensors[%d])", s.Name, j, i)
		}
		seen[s.Name] = i
	}
	for k, v := range metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, nil, invalid(op, "metadata %q: %q: not valid UTF-8, which JSON cannot hold", k, v)
		}
	}
	order := slices.Clone(tensors)
	slices.SortFunc(order, func(a, b Source) int {
		return cmp.Or(cmp.Compare(dtypeOrder[b.DType], dtypeOrder[a.DType]), cmp.Compare(a.Name, b.Name))
	})

	h := make([]byte, 8, 8+64*(len(order)+1))
	h = append(h, '{')
	if metadata != nil {
		h = appendString(h, "__metadata__")
		h = append(h, ":{"...)
		for i, k := range slices.Sorted(maps.Keys(metadata)) {
			if i > 0 {
				h = append(h, ',')
			}
			h = append(appendString(h, k), ':')
			h = appendString(h, metadata[k])
		}
		h = append(h, '}')
	}
	var offset int64
	for i, s := range order {
		if i > 0 || metadata != nil {
			h = append(h, ',')
		}
		h = append(appendString(h, s.Name), `:{"dtype":`...)
		h = appendString(h, string(s.DType))
		h = append(h, `,"shape":[`...)
		for j, d := range s.Shape {
			if j > 0 {
				h = append(h, ',')
			}
			h = strconv.AppendInt(h, int64(d), 10)
		}
		h = append(h, `],"data_offsets":[`...)
		h = strconv.AppendInt(h, offset, 10)
		offset += int64(s.data.ByteSize())
		h = append(h, ',')
		h = strconv.AppendInt(h, offset, 10)
		h = append(h, "]}"...)
	}
	h = append(h, '}')
	for len(h)%8 != 0 { // the length's 8 bytes and the header: a multiple of 8
		h = append(h, ' ')
	}
	if n := len(h) - 8; n > MaxHeaderBytes {
		return nil, nil, invalid(op, "the header would be %d bytes: more than the %d a reader accepts", n, MaxHeaderBytes)
	}
	binary.LittleEndian.PutUint64(h, uint64(len(h)-8))
	return h, order, nil
}

// check checks tensors[i] for op.
func (s Source) check(op string, i int) error {
	what := fmt.Sprintf("tensor %q", s.Name)
	if s.Name == "" {
		what = fmt.Sprintf("tensors[%d]", i)
	}
	switch {
	case s.err != nil:
		return &Error{Op: op, Err: s.err, Detail: what}
	case s.data == nil:
		return invalid(op, "%s: no buffer: make the Source with From", what)
	case s.Name == "":
		return invalid(op, "%s: an empty name", what)
	case s.Name == "__metadata__":
		return invalid(op, "%s: the name of the header's metadata", what)
	case !utf8.ValidString(s.Name):
		return invalid(op, "%s: the name is not valid UTF-8, which JSON cannot hold", what)
	case s.DType == "":
		return invalid(op, "%s: %v has no dtype of its own: set Source.DType", what, s.elem)
	}
	size, ok := dtypeSizes[s.DType]
	switch {
	case !ok:
		return invalid(op, "%s: unknown dtype %q", what, s.DType)
	case uintptr(size) != s.elem.Size():
		return invalid(op, "%s: dtype %s has %d-byte elements; the buffer's %v has %d", what, s.DType, size, s.elem, s.elem.Size())
	}
	elems := uint64(1)
	for j, d := range s.Shape {
		if d < 0 {
			return invalid(op, "%s: dimension %d is %d", what, j, d)
		}
		hi, lo := bits.Mul64(elems, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return invalid(op, "%s: shape %v has too many elements", what, s.Shape)
		}
		elems = lo
	}
	if hi, n := bits.Mul64(elems, uint64(size)); hi != 0 || n != uint64(s.data.ByteSize()) {
		return invalid(op, "%s: %s of shape %v is %s; the buffer has %d", what, s.DType, s.Shape, countOf(int64(elems), "element"), s.data.ByteSize()/int(size))
	}
	return nil
}

// write writes the header and the tensors' bytes to w.
func write(op string, w io.Writer, header []byte, order []Source, c cuda.IOConfig) error {
	// Small tensors (biases, norms) are many writes of a few bytes each:
	// buffered, they are few; a large tensor's chunks pass straight through.
	bw := bufio.NewWriterSize(w, 256<<10)
	if _, err := bw.Write(header); err != nil {
		return &Error{Op: op, Err: err, Detail: "writing the header"}
	}
	for _, s := range order {
		if s.data.ByteSize() == 0 {
			// Nothing to copy, and no stream to make for it; but what a
			// copy holds is held all the same (a buffer freed after From,
			// a closed c.Stream, is ErrClosed), as WriteTo's would be.
			if err := idle(s.data, c); err != nil {
				return &Error{Op: op, Err: err, Detail: fmt.Sprintf("writing tensor %q", s.Name)}
			}
			continue
		}
		if _, err := cuda.WriteTo(s.data, bw, c); err != nil {
			return &Error{Op: op, Err: err, Detail: fmt.Sprintf("writing tensor %q", s.Name)}
		}
	}
	if err := bw.Flush(); err != nil {
		return &Error{Op: op, Err: err, Detail: "writing the file's last bytes"}
	}
	return nil
}

// idle holds, for a copy of no bytes that is not made, what cuda.WriteTo
// or ReadFrom of b with c would: c.Stream and b where c has a stream (a
// closed or zero one, or a buffer freed or of another context, is an
// error), else b alone, whose closure is cuda.ErrClosed.
func idle(b *cuda.DeviceBuffer[byte], c cuda.IOConfig) error {
	if c.Stream != nil {
		return c.Stream.Do(func(uintptr) error { return nil }, b)
	}
	if closed.Buffer(b) {
		return cuda.ErrClosed
	}
	return nil
}

// appendString appends s as JSON, escaped as serde_json (the Hugging Face
// library's JSON) escapes it: the quote, the backslash and the control
// characters only (the short forms where JSON has one, \u00xx with
// lowercase digits otherwise), where encoding/json would also escape <, >,
// & and U+2028/U+2029, and the file's header would differ.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

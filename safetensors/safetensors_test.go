package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/safetensors"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

// build returns a safetensors file of the given header (marshalled as is)
// and data.
func build(t testing.TB, header any, data []byte) []byte {
	t.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ') // as the safetensors library pads it
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

type entry struct {
	DType       string   `json:"dtype"`
	Shape       []int    `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// sample is a file of three tensors: an F32 2×3 matrix, a BF16 vector of 4
// and an empty I64 tensor, with metadata.
func sample(t testing.TB) (file, data []byte) {
	var d []byte
	for i := range 6 {
		d = binary.LittleEndian.AppendUint32(d, math.Float32bits(float32(i)+0.5))
	}
	for i := range 4 {
		d = binary.LittleEndian.AppendUint16(d, uint16(cuda.NewBFloat16(float32(-i))))
	}
	header := map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"w":            entry{"F32", []int{2, 3}, [2]int64{0, 24}},
		"b":            entry{"BF16", []int{4}, [2]int64{24, 32}},
		"none":         entry{"I64", []int{0, 5}, [2]int64{32, 32}},
	}
	return build(t, header, d), d
}

func TestParse(t *testing.T) {
	file, _ := sample(t)
	h, err := safetensors.Parse(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata["format"] != "pt" {
		t.Errorf("metadata %v", h.Metadata)
	}
	var names []string
	for _, tn := range h.Tensors {
		names = append(names, tn.Name)
	}
	if strings.Join(names, ",") != "w,b,none" {
		t.Errorf("tensors in the order %v, want the order of their bytes: w,b,none", names)
	}
	w, _ := h.Tensor("w")
	if w.DType != safetensors.F32 || w.Elements() != 6 || w.Begin != 0 || w.End != 24 {
		t.Errorf("w is %+v", w)
	}
}

func TestParseErrors(t *testing.T) {
	data := make([]byte, 16)
	ok := entry{"F32", []int{4}, [2]int64{0, 16}}
	hdr := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	raw := func(header string, data []byte) []byte {
		out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		return append(append(out, header...), data...)
	}
	for _, tc := range []struct {
		name, says string
		file       []byte
	}{
		{"too short", "want at least 8", []byte{1, 2, 3}},
		{"huge header", "more than the", binary.LittleEndian.AppendUint64(nil, 1<<40)},
		{"header of 2^63", "more than the", binary.LittleEndian.AppendUint64(nil, 1<<63)},
		{"header of 2^64-1", "more than the", binary.LittleEndian.AppendUint64(nil, math.MaxUint64)},
		{"header past the end", "but the file has 4 after the length", append(binary.LittleEndian.AppendUint64(nil, 100), "{}  "...)},
		{"not JSON", "not a JSON object", raw("nope", nil)},
		{"an array", "not a JSON object", raw("[1, 2]", nil)},
		{"broken JSON", "not valid JSON", raw(`{"a": {"dtype": "F32",`, nil)},
		{"duplicate", `names "a" twice`, raw(`{"a": {"dtype":"F32","shape":[4],"data_offsets":[0,16]}, "a": {"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, data)},
		{"unknown dtype", `unknown dtype "F128"`, build(t, hdr("a", entry{"F128", []int{4}, [2]int64{0, 16}}), data)},
		{"unknown field", "not an entry", raw(`{"a": {"dtype":"F32","shape":[4],"data_offsets":[0,16],"extra":1}}`, data)},
		// What encoding/json into a struct takes and the format does not.
		{"three offsets", "data_offsets [0,16,99]: want 2 numbers", raw(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16,99]}}`, data)},
		{"one offset", "data_offsets [0]: want 2 numbers", raw(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[0]}}`, nil)},
		{"no offsets", `tensor "a": not an entry of dtype, shape and data_offsets: no "data_offsets"`, raw(`{"a":{"dtype":"F32","shape":[0]}}`, nil)},
		{"null offsets", "data_offsets null is not an array", raw(`{"a":{"dtype":"F32","shape":[0],"data_offsets":null}}`, nil)},
		{"no shape", `no "shape"`, raw(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, data[:4])},
		{"null shape", "shape null is not an array", raw(`{"a":{"dtype":"F32","shape":null,"data_offsets":[0,4]}}`, data[:4])},
		{"no dtype", `no "dtype"`, raw(`{"a":{"shape":[0],"data_offsets":[0,0]}}`, nil)},
		{"dtype not a string", "dtype 4 is not a string", raw(`{"a":{"dtype":4,"shape":[0],"data_offsets":[0,0]}}`, nil)},
		{"keys of another case", `unknown field "DTYPE"`, raw(`{"a":{"DTYPE":"F32","Shape":[4],"DATA_OFFSETS":[0,16]}}`, data)},
		{"a field twice", `"dtype" is given twice`, raw(`{"a":{"dtype":"I64","dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, data)},
		{"entry null", "null is not an object", raw(`{"a":null}`, nil)},
		{"entry an array", "is not an object", raw(`{"a":["F32",[4],[0,16]]}`, data)},
		{"fractional dimension", "shape [1.5]", raw(`{"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,0]}}`, nil)},
		{"dimension past int64", "shape [9223372036854775808]", raw(`{"a":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,0]}}`, nil)},
		{"offset past int64", "data_offsets [0,18446744073709551616]", raw(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,18446744073709551616]}}`, nil)},
		{"a long value quoted short", "data_offsets [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0...: want 2", raw(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[`+strings.Repeat("0,", 1000)+`0]}}`, nil)},
		{"negative offset", "bytes -4 to 16 are not inside", build(t, hdr("a", entry{"F32", []int{5}, [2]int64{-4, 16}}), data)},
		{"end before begin", "bytes 16 to 0", build(t, hdr("a", entry{"F32", []int{4}, [2]int64{16, 0}}), data)},
		{"past the data", "bytes 0 to 32 are not inside the data's 16", build(t, hdr("a", entry{"F32", []int{8}, [2]int64{0, 32}}), data)},
		{"size", "F32 of shape [3] is 12 bytes, but its data_offsets span 16", build(t, hdr("a", entry{"F32", []int{3}, [2]int64{0, 16}}), data)},
		{"negative dimension", "dimension 0 is -4", build(t, hdr("a", entry{"F32", []int{-4}, [2]int64{0, 16}}), data)},
		{"overflow", "too many elements", build(t, hdr("a", entry{"F32", []int{1 << 40, 1 << 40}, [2]int64{0, 16}}), data)},
		{"bytes overflow", "F64 of shape [4611686018427387904] is more than 2^64 bytes, but its data_offsets span 16", build(t, hdr("a", entry{"F64", []int{1 << 62}, [2]int64{0, 16}}), data)},
		{"bytes past int64", "U16 of shape [4611686018427387904] is 9223372036854775808 bytes", build(t, hdr("a", entry{"U16", []int{1 << 62}, [2]int64{0, 16}}), data)},
		{"many dimensions", "F32 of shape [1 1 1 1 1 1 1 1 ...] (100000 dimensions) is 4 bytes, but its data_offsets span 16", build(t, hdr("a", entry{"F32", slices.Repeat([]int{1}, 100000), [2]int64{0, 16}}), data)},
		{"many dimensions overflow", "shape [65536 65536 65536 65536 65536 65536 65536 65536 ...] (1000 dimensions) has too many elements", build(t, hdr("a", entry{"F32", slices.Repeat([]int{1 << 16}, 1000), [2]int64{0, 16}}), data)},
		{"overlap", "overlaps", build(t, hdr("a", ok, "b", entry{"F32", []int{2}, [2]int64{8, 16}}), data)},
		{"hole", "a hole from byte 8 to 12", build(t, hdr("a", entry{"F32", []int{2}, [2]int64{0, 8}}, "b", entry{"F32", []int{1}, [2]int64{12, 16}}), data)},
		{"uncovered", "cover 8 bytes of data; the file has 16", build(t, hdr("a", entry{"F32", []int{2}, [2]int64{0, 8}}), data)},
		{"metadata", "__metadata__ is not an object of strings", raw(`{"__metadata__": {"a": 1}}`, nil)},
		{"trailing", "bytes after its JSON object", raw(`{}x`, nil)},
		{"trailing far", "bytes after its JSON object", raw(`{}`+strings.Repeat(" ", 4096)+"x", nil)},
		{"trailing after a long header", "bytes after its JSON object", raw(`{"__metadata__":{"k":"`+strings.Repeat("v", 1000)+`"}}   x`, nil)},
		{"trailing tab", "padding must be spaces", raw("{}\t", nil)},
		{"empty header", "the header is empty: it is said to be 0 bytes", raw("", nil)},
		{"empty header and data", "the header is empty", raw("", make([]byte, 8))},
		{"leading space", "its first byte is not {", raw(" {}", nil)},
		{"leading newline", "its first byte is not {", raw("\n{}", nil)},
		{"invalid UTF-8 name", "not valid UTF-8", raw("{\"a\xff\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", data)},
		{"lone surrogate", "half of a UTF-16 surrogate pair alone", raw(`{"a\ud800":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, data)},
		{"lone second half", "half of a UTF-16 surrogate pair alone", raw(`{"a\uDC00":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, data)},
		{"surrogate then another escape", "half of a UTF-16 surrogate pair alone", raw(`{"a\ud800\u0041":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, data)},
		{"surrogate at the end", "half of a UTF-16 surrogate pair alone", raw(`{"__metadata__":{"k":"\udbff"}}`, nil)},
		{"invalid UTF-8 metadata", "not valid UTF-8", raw("{\"__metadata__\":{\"k\":\"\xc3\"}}", nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := safetensors.Parse(bytes.NewReader(tc.file), int64(len(tc.file)))
			if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want an ErrInvalidValue saying %q", err, tc.says)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	file, _ := sample(f)
	f.Add(file)
	f.Add([]byte{})
	f.Add(binary.LittleEndian.AppendUint64(nil, 2))
	raw := func(header string, data []byte) []byte {
		out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		return append(append(out, header...), data...)
	}
	for _, header := range []string{
		`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16,99]}}`,
		`{"a":{"dtype":"F32","shape":null,"data_offsets":[0,16]}}`,
		`{"a":{"DTYPE":"F32","shape":[4],"data_offsets":[0,16]}}`,
		`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},"b":{"dtype":"I64","shape":[0,2],"data_offsets":[0,0]},"c":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}`,
		`{"__metadata__":{"k":"v"},"a\u0000\"":{"dtype":"BF16","shape":[2,3,1],"data_offsets":[0,12]}}` + "    ",
		" {}",
		"{}" + strings.Repeat(" ", 600) + "x",
	} {
		f.Add(raw(header, make([]byte, 16)))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		h, err := safetensors.Parse(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			if !errors.Is(err, cuda.ErrInvalidValue) {
				t.Fatalf("an error that is not ErrInvalidValue: %v", err)
			}
			return
		}
		// What parses is consistent: tensors tile the data, each its
		// dtype's size times its elements.
		var end int64
		for _, tn := range h.Tensors {
			if tn.Begin != end || tn.End-tn.Begin != tn.Elements()*int64(tn.DType.Size()) {
				t.Fatalf("tensor %+v after byte %d", tn, end)
			}
			end = tn.End
		}
		if h.DataOffset+end != int64(len(file)) {
			t.Fatalf("the tensors end at %d of a file of %d", h.DataOffset+end, len(file))
		}
	})
}

func TestLoad(t *testing.T) {
	ctx := cudatest.Context(t)
	file, data := sample(t)
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sb := new(cuda.StagingBuffer)
	defer sb.Close()
	for _, names := range [][]string{nil, {"b"}, {"b", "w", "b"}} {
		t.Run(strings.Join(names, ","), func(t *testing.T) {
			w, err := f.Load(ctx, cuda.IOConfig{Staging: sb}, names...)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Free()
			b, err := safetensors.Get[cuda.BFloat16](w, "b")
			if err != nil {
				t.Fatal(err)
			}
			got := make([]cuda.BFloat16, 4)
			if err := b.CopyToHost(got); err != nil {
				t.Fatal(err)
			}
			for i, v := range got {
				if v.Float32() != float32(-i) {
					t.Fatalf("b = %v", got)
				}
			}
			if _, err := safetensors.Get[float32](w, "b"); !errors.Is(err, cuda.ErrInvalidValue) {
				t.Errorf("b as float32: %v", err)
			}
			if names != nil && len(names) < 2 {
				if _, err := w.Bytes("w"); !errors.Is(err, cuda.ErrInvalidValue) || !strings.HasPrefix(err.Error(), "safetensors: Weights.Bytes:") {
					t.Errorf("Bytes of w, not loaded: %v", err)
				}
				if _, err := safetensors.Get[float32](w, "w"); !errors.Is(err, cuda.ErrInvalidValue) || !strings.HasPrefix(err.Error(), "safetensors: Get:") {
					t.Errorf("Get of w, not loaded: %v; want ErrInvalidValue naming Get", err)
				}
				return
			}
			wv, err := safetensors.Get[float32](w, "w")
			if err != nil {
				t.Fatal(err)
			}
			gw := make([]float32, 6)
			if err := wv.CopyToHost(gw); err != nil {
				t.Fatal(err)
			}
			for i, v := range gw {
				if v != float32(i)+0.5 {
					t.Fatalf("w = %v", gw)
				}
			}
			_ = data
		})
	}
	if _, err := f.Load(ctx, cuda.IOConfig{}, "missing"); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Load of a missing tensor: %v", err)
	}
}

// TestOpenMissing: the error of a file that is not there names its path
// once, and wraps the os error.
func TestOpenMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nothere.safetensors")
	_, err := safetensors.Open(path)
	if !errors.Is(err, os.ErrNotExist) || strings.Count(err.Error(), path) != 1 {
		t.Errorf("Open of a missing file: %v; want os.ErrNotExist naming %s once", err, path)
	}
}

// zeros reads as a header's length then zero bytes.
type zeros struct{ length uint64 }

func (z zeros) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	if off == 0 && len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, z.length)
	}
	return len(p), nil
}

// TestParseHeaderLimit: the largest header is the safetensors library's
// MAX_HEADER_SIZE, 100,000,000 bytes; one byte more is refused before it
// is read (it was read, and 100 MiB taken).
func TestParseHeaderLimit(t *testing.T) {
	if safetensors.MaxHeaderBytes != 100_000_000 {
		t.Errorf("MaxHeaderBytes is %d, want the library's 100000000", safetensors.MaxHeaderBytes)
	}
	const n = 100_000_001
	_, err := safetensors.Parse(zeros{n}, 8+int64(n))
	if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "the header is said to be 100000001 bytes: more than the 100000000 allowed") {
		t.Errorf("a header of %d bytes: %v", n, err)
	}
}

// TestParseNames: names of any characters parse as they were escaped: a
// surrogate pair is its character, an escaped backslash before u is a
// backslash, a NUL and a quote are themselves.
func TestParseNames(t *testing.T) {
	for _, tc := range []struct{ json, name string }{
		{`"\ud83d\ude00"`, "\U0001F600"},
		{`"\\ud800"`, `\ud800`},
		{`"a\u0000\"b"`, "a\x00\"b"},
		{`"é\u00e9"`, "éé"},
		{`""`, ""},
	} {
		header := `{` + tc.json + `:{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`
		file := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		file = append(append(file, header...), 1, 2)
		h, err := safetensors.Parse(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			t.Errorf("%s: %v", tc.json, err)
			continue
		}
		if _, ok := h.Tensor(tc.name); !ok || len(h.Tensors) != 1 {
			t.Errorf("%s parsed as %q, want %q", tc.json, h.Tensors[0].Name, tc.name)
		}
	}
}

// shortReader is a misbehaving io.ReaderAt: it gives at most n bytes a
// read, and no error for the rest.
type shortReader struct {
	b []byte
	n int
}

func (r shortReader) ReadAt(p []byte, off int64) (int, error) {
	return copy(p[:min(len(p), r.n)], r.b[off:]), nil
}

// TestParseReader: a nil reader is an error, not a panic; a reader with
// fewer bytes than size says (a file cut while being opened), or one that
// reads short with no error, is io.ErrUnexpectedEOF, never io.EOF (the
// end of input that callers test for) or no error at all.
func TestParseReader(t *testing.T) {
	file, _ := sample(t)
	for _, tc := range []struct {
		name     string
		r        io.ReaderAt
		size     int64
		sentinel error
		says     string
	}{
		{"nil reader", nil, 100, cuda.ErrInvalidValue, "safetensors: Parse: invalid value: nil reader"},
		{"cut in the length", bytes.NewReader(file[:4]), int64(len(file)), io.ErrUnexpectedEOF, "reading the header's length"},
		{"cut in the header", bytes.NewReader(file[:20]), int64(len(file)), io.ErrUnexpectedEOF, "reading the header"},
		{"short read, no error", shortReader{file, 4}, int64(len(file)), io.ErrUnexpectedEOF, "4 of 8 bytes at offset 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := safetensors.Parse(tc.r, tc.size)
			if !errors.Is(err, tc.sentinel) || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want an error wrapping %v (not io.EOF) saying %q", err, tc.sentinel, tc.says)
			}
		})
	}
}

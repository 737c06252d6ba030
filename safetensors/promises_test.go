package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/safetensors"
)

// The docs' promises at their edges, as an outside reader of them tests
// them: headers Hugging Face's reader refuses, odd names through Save and
// Parse, freed buffers and closed streams where nothing is copied, and
// the zero values.

// rawFile is a file of the header's JSON as given, padded with spaces,
// and data.
func rawFile(header string, data []byte) []byte {
	h := []byte(header)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	return append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...), data...)
}

// TestPromisesParseMetadata: __metadata__ is an object of strings (or
// null, no metadata), as Hugging Face's reader (a HashMap<String,
// String>) takes it: a null value is no string, and is refused, not read
// as "".
func TestPromisesParseMetadata(t *testing.T) {
	const w = `"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}`
	for _, tc := range []struct {
		name, header, says string
	}{
		{"a null value", `{"__metadata__":{"k":null},` + w + `}`, "__metadata__ is not an object of strings"},
		{"a number", `{"__metadata__":{"k":1},` + w + `}`, "__metadata__ is not an object of strings"},
		{"an array", `{"__metadata__":["k"],` + w + `}`, "__metadata__ is not an object of strings"},
		{"twice", `{"__metadata__":{},"__metadata__":{},` + w + `}`, `names "__metadata__" twice`},
		{"a name twice, once escaped", `{"w":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"\u0077":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, `names "w" twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := rawFile(tc.header, []byte{1, 2})
			_, err := safetensors.Parse(bytes.NewReader(f), int64(len(f)))
			cudatest.WantErr(t, "Parse of a header with "+tc.name, err, cuda.ErrInvalidValue, tc.says)
		})
	}
	for _, tc := range []struct {
		name, metadata string
		want           map[string]string
	}{
		{"null", `null`, nil},
		{"empty", `{}`, map[string]string{}},
		{"strings", `{"":"","k":"v\u0000"}`, map[string]string{"": "", "k": "v\x00"}},
	} {
		t.Run("metadata "+tc.name, func(t *testing.T) {
			f := rawFile(`{"__metadata__":`+tc.metadata+`,`+w+`}`, []byte{1, 2})
			h, err := safetensors.Parse(bytes.NewReader(f), int64(len(f)))
			if err != nil {
				t.Fatal(err)
			}
			if (h.Metadata == nil) != (tc.want == nil) || len(h.Metadata) != len(tc.want) {
				t.Fatalf("Metadata %#v, want %#v", h.Metadata, tc.want)
			}
			for k, v := range tc.want {
				if h.Metadata[k] != v {
					t.Errorf("Metadata[%q] = %q, want %q", k, h.Metadata[k], v)
				}
			}
		})
	}
}

// TestPromisesOddNames: names of any characters (quotes, backslashes,
// control characters, what encoding/json would escape, beyond the BMP)
// come back from Parse as Save was given them, and so does metadata.
func TestPromisesOddNames(t *testing.T) {
	ctx := cudatest.Context(t)
	names := []string{"a\"b", `c\d`, "e\nf\x00\x1f\x7f", "<&>", "\u2028\u2029", "😀", " ", "__metadata__ ", "\\u0041"}
	var srcs []safetensors.Source
	for i, n := range names {
		srcs = append(srcs, sourceAs[uint8](t, ctx, n, []byte{byte(i)}, 1))
	}
	meta := map[string]string{"\"": "\n", "k\x01": "<>"}
	var buf bytes.Buffer
	if err := safetensors.Save(&buf, srcs, meta, cuda.IOConfig{}); err != nil {
		t.Fatal(err)
	}
	h := must(safetensors.Parse(bytes.NewReader(buf.Bytes()), int64(buf.Len())))(t)
	var got []string
	for _, tn := range h.Tensors {
		got = append(got, tn.Name)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
	for k, v := range meta {
		if h.Metadata[k] != v {
			t.Errorf("metadata %q: %q, want %q", k, h.Metadata[k], v)
		}
	}
}

// TestPromisesEmptyClosed: a tensor of no bytes, which nothing is copied
// for, from a buffer freed after From is cuda.ErrClosed, as one of some
// bytes is; so is a closed c.Stream in Save and Load where every tensor
// is empty.
func TestPromisesEmptyClosed(t *testing.T) {
	ctx := cudatest.Context(t)
	b := must(cuda.Alloc[float32](ctx, 1))(t)
	empty := safetensors.From("empty", must(b.Slice(0, 0))(t), 0)
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
	err := safetensors.Save(&bytes.Buffer{}, []safetensors.Source{empty}, nil, cuda.IOConfig{})
	cudatest.WantErr(t, "Save of an empty tensor freed after From", err, cuda.ErrClosed, `tensor "empty"`)

	s := must(ctx.NewStream())(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	live := must(cuda.Alloc[float32](ctx, 1))(t)
	defer live.Free()
	none := safetensors.From("none", must(live.Slice(0, 0))(t), 2, 0)
	err = safetensors.Save(&bytes.Buffer{}, []safetensors.Source{none}, nil, cuda.IOConfig{Stream: s})
	cudatest.WantErr(t, "Save of an empty tensor on a closed stream", err, cuda.ErrClosed, "closed")

	f, _ := fileOf(t, tensorSpec{"none", safetensors.F32, 0})
	w, err := f.Load(ctx, cuda.IOConfig{Stream: s})
	if err == nil {
		w.Free()
	}
	cudatest.WantErr(t, "Load of an empty tensor on a closed stream", err, cuda.ErrClosed, "closed")
}

// TestPromisesZeroValues: the zero File, Header, Weights and Source
// answer what needs nothing, and refuse the rest with an error; Free and
// Close twice are nil; freed weights are cuda.ErrClosed, an empty
// tensor's too.
func TestPromisesZeroValues(t *testing.T) {
	var f safetensors.File
	if _, ok := f.Tensor("x"); ok {
		t.Errorf("a zero File has a tensor")
	}
	if _, err := f.Load(cudatest.Context(t), cuda.IOConfig{}); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Load of a zero File: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close of a zero File: %v", err)
	}
	var h safetensors.Header
	if _, ok := h.Tensor("x"); ok || h.String() == "" {
		t.Errorf("a zero Header: %q", h.String())
	}
	var w safetensors.Weights
	if _, err := w.Bytes("x"); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Bytes of zero Weights: %v", err)
	}
	if _, err := safetensors.Get[float32](nil, "x"); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Get of nil Weights: %v", err)
	}
	if _, ok := w.Tensor("x"); ok {
		t.Errorf("zero Weights have a tensor")
	}
	if err := w.Free(); err != nil {
		t.Errorf("Free of zero Weights: %v", err)
	}
	if err := safetensors.Save(&bytes.Buffer{}, []safetensors.Source{{}}, nil, cuda.IOConfig{}); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Save of a zero Source: %v", err)
	}
	var e *safetensors.Error
	_ = e.Error()
	_ = (&safetensors.Error{}).Error()
	if safetensors.DType("F128").Size() != 0 {
		t.Errorf("an unknown dtype's Size is not 0")
	}

	ctx := cudatest.Context(t)
	file, _ := fileOf(t, tensorSpec{"w", safetensors.F32, 3}, tensorSpec{"none", safetensors.I8, 0})
	loaded := must(file.Load(ctx, cuda.IOConfig{}))(t)
	for range 2 {
		if err := loaded.Free(); err != nil {
			t.Errorf("Free of Weights: %v", err)
		}
	}
	_, err := safetensors.Get[float32](loaded, "w")
	cudatest.WantErr(t, "Get of freed weights", err, cuda.ErrClosed, "freed")
	_, err = safetensors.Get[int8](loaded, "none")
	cudatest.WantErr(t, "Get of an empty tensor of freed weights", err, cuda.ErrClosed, "freed")
	for range 2 {
		if err := file.Close(); err != nil {
			t.Errorf("Close of a File: %v", err)
		}
	}
	_, err = file.Load(ctx, cuda.IOConfig{})
	cudatest.WantErr(t, "Load after Close", err, cuda.ErrClosed, "closed")
}

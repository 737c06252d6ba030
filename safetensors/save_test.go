package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/safetensors"
)

// hfFile is a file as Hugging Face's library writes it: the header's
// length, the header padded with spaces to a multiple of 8, the data.
func hfFile(header string, data []byte) []byte {
	header += strings.Repeat(" ", (8-len(header)%8)%8)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(out, header...), data...)
}

// f32s is the little-endian bytes of vs.
func f32s(vs ...float32) []byte {
	var out []byte
	for _, v := range vs {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out
}

// saved is what Save writes of the tensors and metadata.
func saved(t *testing.T, tensors []safetensors.Source, metadata map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := safetensors.Save(&buf, tensors, metadata, cuda.IOConfig{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSaveLayout: Save writes what Hugging Face's library writes, byte for
// byte: the cases of its own tests (safetensors/src/tensor.rs:
// test_serialization, test_empty, test_serialization_forced_alignement),
// then its order of dtypes, metadata, names JSON escapes, scalars and empty
// tensors.
func TestSaveLayout(t *testing.T) {
	ctx := cudatest.Context(t)
	f32 := func(name string, vs []float32, shape ...int) safetensors.Source {
		return sourceAs[float32](t, ctx, name, f32s(vs...), shape...)
	}
	src := func(d safetensors.DType, name string, n int, shape ...int) safetensors.Source {
		for _, dc := range dtypeCases {
			if dc.dtype == d {
				return dc.source(t, ctx, name, pattern(d, n*d.Size(), len(name)), shape...)
			}
		}
		t.Fatalf("no dtype %s", d)
		return safetensors.Source{}
	}
	six := []float32{0, 1, 2, 3, 4, 5}
	for _, tc := range []struct {
		name     string
		tensors  []safetensors.Source
		metadata map[string]string
		header   string // as the library writes it, before its padding
	}{
		{"serialization", []safetensors.Source{f32("attn.0", six, 1, 2, 3)}, nil,
			`{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`},
		{"forced alignment", []safetensors.Source{f32("attn0", six, 1, 1, 2, 3)}, nil,
			`{"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}`},
		{"empty", nil, nil, `{}`},
		{"empty with metadata", nil, map[string]string{"framework": "pt"}, `{"__metadata__":{"framework":"pt"}}`},
		{"empty metadata", nil, map[string]string{}, `{"__metadata__":{}}`},
		{"metadata sorted", []safetensors.Source{f32("w", six[:1])}, map[string]string{"z": "1", "a": "2", "m": ""},
			`{"__metadata__":{"a":"2","m":"","z":"1"},"w":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`},
		{"dtype order", []safetensors.Source{
			src(safetensors.Bool, "mask", 3, 3), src(safetensors.F32, "b", 2, 2), src(safetensors.F32, "a", 1, 1),
			src(safetensors.I64, "ids", 2, 2), src(safetensors.F16, "h", 1, 1), src(safetensors.BF16, "w", 2, 1, 2),
			src(safetensors.U64, "u", 1, 1), src(safetensors.F64, "f64", 1, 1), src(safetensors.F8E4M3, "q", 1, 1),
			src(safetensors.F8E5M2, "r", 1, 1), src(safetensors.I8, "i8", 1, 1), src(safetensors.U8, "u8", 1, 1),
			src(safetensors.I16, "i16", 1, 1), src(safetensors.U16, "u16", 1, 1), src(safetensors.I32, "i32", 1, 1),
			src(safetensors.U32, "u32", 1, 1),
		}, map[string]string{"format": "pt"},
			`{"__metadata__":{"format":"pt"},` +
				`"u":{"dtype":"U64","shape":[1],"data_offsets":[0,8]},` +
				`"ids":{"dtype":"I64","shape":[2],"data_offsets":[8,24]},` +
				`"f64":{"dtype":"F64","shape":[1],"data_offsets":[24,32]},` +
				`"a":{"dtype":"F32","shape":[1],"data_offsets":[32,36]},` +
				`"b":{"dtype":"F32","shape":[2],"data_offsets":[36,44]},` +
				`"u32":{"dtype":"U32","shape":[1],"data_offsets":[44,48]},` +
				`"i32":{"dtype":"I32","shape":[1],"data_offsets":[48,52]},` +
				`"w":{"dtype":"BF16","shape":[1,2],"data_offsets":[52,56]},` +
				`"h":{"dtype":"F16","shape":[1],"data_offsets":[56,58]},` +
				`"u16":{"dtype":"U16","shape":[1],"data_offsets":[58,60]},` +
				`"i16":{"dtype":"I16","shape":[1],"data_offsets":[60,62]},` +
				`"q":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[62,63]},` +
				`"r":{"dtype":"F8_E5M2","shape":[1],"data_offsets":[63,64]},` +
				`"i8":{"dtype":"I8","shape":[1],"data_offsets":[64,65]},` +
				`"u8":{"dtype":"U8","shape":[1],"data_offsets":[65,66]},` +
				`"mask":{"dtype":"BOOL","shape":[3],"data_offsets":[66,69]}}`},
		{"names by bytes", []safetensors.Source{src(safetensors.U8, "b", 1), src(safetensors.U8, "B", 1), src(safetensors.U8, "a.10", 1), src(safetensors.U8, "a.9", 1)}, nil,
			`{"B":{"dtype":"U8","shape":[],"data_offsets":[0,1]},"a.10":{"dtype":"U8","shape":[],"data_offsets":[1,2]},` +
				`"a.9":{"dtype":"U8","shape":[],"data_offsets":[2,3]},"b":{"dtype":"U8","shape":[],"data_offsets":[3,4]}}`},
		{"escapes", []safetensors.Source{src(safetensors.U8, "a\"b\\c\n\t\x01\x1f\x7fé<>&\u2028", 1, 1)}, map[string]string{"k\r": "v\b\f"},
			`{"__metadata__":{"k\r":"v\b\f"},"a\"b\\c\n\t\u0001\u001f` + "\x7fé<>&\u2028" + `":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`},
		{"empty tensors", []safetensors.Source{src(safetensors.F32, "e", 0, 0, 3), src(safetensors.F32, "d", 1), src(safetensors.I64, "z", 0, 0)}, nil,
			`{"z":{"dtype":"I64","shape":[0],"data_offsets":[0,0]},"d":{"dtype":"F32","shape":[],"data_offsets":[0,4]},` +
				`"e":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := saved(t, tc.tensors, tc.metadata)
			// The data: each tensor's bytes, in the header's order.
			h := must(safetensors.Parse(bytes.NewReader(got), int64(len(got))))(t)
			var data []byte
			for _, ht := range h.Tensors {
				i := slices.IndexFunc(tc.tensors, func(s safetensors.Source) bool { return s.Name == ht.Name })
				data = append(data, hostBytes(t, tc.tensors[i])...)
			}
			if want := hfFile(tc.header, data); !bytes.Equal(got, want) {
				t.Errorf("Save wrote\n%q\nthe library writes\n%q", got, want)
			}
		})
	}
	// The library's own bytes for test_serialization, data and all.
	want := hfFile(`{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}`, f32s(six...))
	if got := saved(t, []safetensors.Source{f32("attn.0", six, 1, 2, 3)}, nil); !bytes.Equal(got, want) || len(got) != 8+64+24 || got[0] != 64 {
		t.Errorf("Save wrote %v, want %v", got, want)
	}
}

// hostBytes reads back the bytes of a Source's buffer: Save itself.
func hostBytes(t *testing.T, s safetensors.Source) []byte {
	t.Helper()
	s.Name = "x"
	got := saved(t, []safetensors.Source{s}, nil)
	h := must(safetensors.Parse(bytes.NewReader(got), int64(len(got))))(t)
	return got[h.DataOffset:]
}

// TestSaveRoundTrip: a file Save writes, of every dtype, empty tensors and
// scalars, opens, loads and reads back with Get of each type as it was
// written: bytes, shapes, dtypes and metadata.
func TestSaveRoundTrip(t *testing.T) {
	ctx := cudatest.Context(t)
	sb := new(cuda.StagingBuffer)
	defer sb.Close()
	s := cudatest.Stream(t, ctx)
	shapes := [][]int{{3}, {2, 3}, {}, {0}, {4, 0, 2}, {1, 1, 5}}
	var tensors []safetensors.Source
	want := map[string][]byte{}
	for i, dc := range dtypeCases {
		for j, shape := range shapes {
			n := 1
			for _, d := range shape {
				n *= d
			}
			name := fmt.Sprintf("%s.%d", strings.ToLower(string(dc.dtype)), j)
			raw := pattern(dc.dtype, n*dc.dtype.Size(), i*len(shapes)+j)
			tensors = append(tensors, dc.source(t, ctx, name, raw, shape...))
			want[name] = raw
		}
	}
	metadata := map[string]string{"format": "pt", "note": "round trip"}
	for _, tc := range []struct {
		name string
		c    cuda.IOConfig
		file bool
	}{
		{"Save", cuda.IOConfig{}, false},
		{"Save on a stream", cuda.IOConfig{Staging: sb, Stream: s}, false},
		{"SaveFile", cuda.IOConfig{}, true},
		{"SaveFile on a stream", cuda.IOConfig{Staging: sb, Stream: s}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "saved.safetensors")
			if tc.file {
				if err := safetensors.SaveFile(path, tensors, metadata, tc.c); err != nil {
					t.Fatal(err)
				}
			} else {
				var buf bytes.Buffer
				if err := safetensors.Save(&buf, tensors, metadata, tc.c); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f := must(safetensors.Open(path))(t)
			defer f.Close()
			if fmt.Sprint(f.Metadata) != fmt.Sprint(metadata) {
				t.Errorf("metadata %v, want %v", f.Metadata, metadata)
			}
			if len(f.Tensors) != len(tensors) {
				t.Fatalf("%d tensors, want %d", len(f.Tensors), len(tensors))
			}
			for _, ft := range f.Tensors { // as the library writes them: aligned in the file
				if (f.DataOffset+ft.Begin)%int64(ft.DType.Size()) != 0 {
					t.Errorf("%s (%s) at byte %d of the file", ft.Name, ft.DType, f.DataOffset+ft.Begin)
				}
			}
			for _, names := range [][]string{nil, {"f32.1", "bool.0", "i64.2"}} {
				w := must(f.Load(ctx, cuda.IOConfig{}, names...))(t)
				for _, src := range tensors {
					if names != nil && !slices.Contains(names, src.Name) {
						continue
					}
					ft, _ := f.Tensor(src.Name)
					if ft.DType != src.DType || fmt.Sprint(ft.Shape) != fmt.Sprint(src.Shape) {
						t.Errorf("%s is %s %v, written as %s %v", src.Name, ft.DType, ft.Shape, src.DType, src.Shape)
					}
					checkLoaded(t, f, w, want, src.Name)
				}
				w.Free()
			}
		})
	}
}

// TestSaveAfterQueuedWork: Save's copies come after the work queued on the
// buffers: with no stream, any stream's; with one, that stream's.
func TestSaveAfterQueuedWork(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	for _, c := range []cuda.IOConfig{{}, {Stream: s}} {
		b := must(cuda.Alloc[float32](ctx, 1<<16))(t)
		host := make([]float32, b.Len())
		for i := range host {
			host[i] = float32(i)
		}
		if err := b.CopyFromHostAsync(host, s); err != nil {
			t.Fatal(err)
		}
		got := saved(t, []safetensors.Source{safetensors.From("b", b, b.Len())}, nil)
		// saved used IOConfig{}; and with c:
		var buf bytes.Buffer
		if err := safetensors.Save(&buf, []safetensors.Source{safetensors.From("b", b, b.Len())}, nil, c); err != nil {
			t.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		for _, out := range [][]byte{got, buf.Bytes()} {
			if data := out[len(out)-4*len(host):]; !bytes.Equal(data, f32s(host...)) {
				t.Errorf("stream %v: Save wrote the buffer before the copy queued into it", c.Stream != nil)
			}
		}
		b.Free()
	}
}

// failingWriter fails after n bytes.
type failingWriter struct{ n int }

var errWriter = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, errWriter
	}
	w.n -= len(p)
	return len(p), nil
}

// TestSaveErrors: Save refuses what the format cannot hold, or what does
// not match its buffer, naming the tensor, before writing anything.
func TestSaveErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	f32 := func(name string, n int, shape ...int) safetensors.Source {
		return sourceAs[float32](t, ctx, name, make([]byte, 4*n), shape...)
	}
	freed := must(cuda.Alloc[float32](ctx, 4))(t)
	freed.Free()
	withDType := func(s safetensors.Source, d safetensors.DType) safetensors.Source { s.DType = d; return s }
	for _, tc := range []struct {
		name, says string
		sentinel   error
		tensors    []safetensors.Source
		metadata   map[string]string
	}{
		{"zero Source", `tensors[0]: no buffer: make the Source with From`, cuda.ErrInvalidValue, []safetensors.Source{{}}, nil},
		{"zero Source named", `tensor "w": no buffer`, cuda.ErrInvalidValue, []safetensors.Source{{Name: "w", DType: safetensors.F32}}, nil},
		{"nil buffer", `tensor "w"`, cuda.ErrInvalidValue, []safetensors.Source{safetensors.From[float32]("w", nil, 1)}, nil},
		{"freed buffer", `tensor "w"`, cuda.ErrClosed, []safetensors.Source{safetensors.From("w", freed, 4)}, nil},
		{"empty name", `safetensors: Save: invalid value: tensors[1]: an empty name`, cuda.ErrInvalidValue, []safetensors.Source{f32("a", 1), f32("", 1)}, nil},
		{"metadata name", `tensor "__metadata__": the name of the header's metadata`, cuda.ErrInvalidValue, []safetensors.Source{f32("__metadata__", 1)}, nil},
		{"twice", `tensor "a" is given twice (tensors[0] and tensors[2])`, cuda.ErrInvalidValue, []safetensors.Source{f32("a", 1), f32("b", 1), f32("a", 1)}, nil},
		{"bad UTF-8 name", `tensor "a\xff": the name is not valid UTF-8`, cuda.ErrInvalidValue, []safetensors.Source{f32("a\xff", 1)}, nil},
		{"bad UTF-8 metadata", `metadata "k": "\xfe": not valid UTF-8`, cuda.ErrInvalidValue, []safetensors.Source{f32("a", 1)}, map[string]string{"k": "\xfe"}},
		{"no dtype", `tensor "r": [2]uint8 has no dtype of its own: set Source.DType`, cuda.ErrInvalidValue, []safetensors.Source{sourceAs[[2]byte](t, ctx, "r", make([]byte, 4), 2)}, nil},
		{"unknown dtype", `tensor "w": unknown dtype "F128"`, cuda.ErrInvalidValue, []safetensors.Source{withDType(f32("w", 1), "F128")}, nil},
		{"dtype size", `tensor "w": dtype F64 has 8-byte elements; the buffer's float32 has 4`, cuda.ErrInvalidValue, []safetensors.Source{withDType(f32("w", 2, 1), safetensors.F64)}, nil},
		{"shape", `tensor "w": F32 of shape [2 3] is 6 elements; the buffer has 4`, cuda.ErrInvalidValue, []safetensors.Source{f32("w", 4, 2, 3)}, nil},
		{"shape of a scalar", `tensor "w": F32 of shape [] is 1 element; the buffer has 4`, cuda.ErrInvalidValue, []safetensors.Source{f32("w", 4)}, nil},
		{"negative dimension", `tensor "w": dimension 1 is -4`, cuda.ErrInvalidValue, []safetensors.Source{f32("w", 4, 2, -4)}, nil},
		{"overflow", `tensor "w": shape [4294967296 4294967296] has too many elements`, cuda.ErrInvalidValue, []safetensors.Source{f32("w", 4, 1<<32, 1<<32)}, nil},
		{"size overflow", `tensor "w": F32 of shape [4611686018427387904]`, cuda.ErrInvalidValue, []safetensors.Source{f32("w", 4, 1<<62)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := safetensors.Save(&buf, tc.tensors, tc.metadata, cuda.IOConfig{})
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want an error wrapping %v saying %q", err, tc.sentinel, tc.says)
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes written before the error", buf.Len())
			}
			path := filepath.Join(t.TempDir(), "x.safetensors")
			err = safetensors.SaveFile(path, tc.tensors, tc.metadata, cuda.IOConfig{})
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), "safetensors: SaveFile: ") {
				t.Errorf("SaveFile: %v", err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("SaveFile refused the tensors but made the file: %v", err)
			}
		})
	}
	if err := safetensors.Save(nil, nil, nil, cuda.IOConfig{}); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "nil writer") {
		t.Errorf("Save to nil: %v", err)
	}
	// A stream of another context than a buffer's: refused before a byte.
	other := must(cuda.NewContext(ctx.Device()))(t)
	defer other.Close()
	s := must(other.NewStream())(t)
	defer s.Close()
	var buf bytes.Buffer
	err := safetensors.Save(&buf, []safetensors.Source{f32("a", 1), f32("w", 1)}, nil, cuda.IOConfig{Stream: s})
	if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), `tensor "a": its buffer belongs to another context than c.Stream`) || buf.Len() != 0 {
		t.Errorf("Save on another context's stream: %v, %d bytes written", err, buf.Len())
	}
}

// TestSaveWriteErrors: a failure while writing names what was being
// written; SaveFile then leaves no file.
func TestSaveWriteErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	big := sourceAs[float32](t, ctx, "big", make([]byte, 1<<20), 1<<18)
	small := sourceAs[uint8](t, ctx, "small", []byte{1, 2, 3}, 3)
	tensors := []safetensors.Source{big, small}
	for _, n := range []int{0, 100, 1 << 19} {
		err := safetensors.Save(&failingWriter{n: n}, tensors, nil, cuda.IOConfig{})
		if !errors.Is(err, errWriter) || !strings.HasPrefix(err.Error(), "safetensors: Save: ") {
			t.Errorf("a writer failing after %d bytes: %v", n, err)
		}
		if n == 1<<19 && !strings.Contains(err.Error(), `writing tensor "big"`) {
			t.Errorf("a writer failing in the middle of big: %v names no tensor", err)
		}
	}
	// A buffer freed after From fails its copy: SaveFile removes the part
	// it wrote.
	b := must(cuda.FromHost(ctx, []int32{1, 2, 3}))(t)
	late := safetensors.From("late", b, 3)
	b.Free()
	path := filepath.Join(t.TempDir(), "part.safetensors")
	err := safetensors.SaveFile(path, []safetensors.Source{small, late}, nil, cuda.IOConfig{})
	if !errors.Is(err, cuda.ErrClosed) || !strings.Contains(err.Error(), `writing tensor "late"`) {
		t.Errorf("SaveFile of a freed buffer: %v; want ErrClosed naming it", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed SaveFile left its file: %v", err)
	}
	err = safetensors.SaveFile(filepath.Join(t.TempDir(), "no", "such", "dir.safetensors"), []safetensors.Source{small}, nil, cuda.IOConfig{})
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "safetensors: SaveFile: ") {
		t.Errorf("SaveFile into a missing folder: %v", err)
	}
}

// envPython names a python with torch and safetensors, which
// TestSavePython reads Save's file with (scripts/gpu-run.sh sets it on the
// GPU machine).
const envPython = "GOCUDA_TEST_PYTHON"

// TestSavePython: Hugging Face's own library reads what Save wrote
// (safetensors.torch.load_file), with the values, dtypes, shapes and
// metadata written, and writes the same tensors back byte for byte
// (bench/pyref/safetensors_check.py).
func TestSavePython(t *testing.T) {
	py := os.Getenv(envPython)
	if py == "" {
		t.Skip("set " + envPython + " to a python with torch and safetensors")
	}
	ctx := cudatest.Context(t)
	// The dtypes every torch that safetensors supports has.
	var tensors []safetensors.Source
	want := map[string][]byte{}
	for i, d := range []safetensors.DType{safetensors.F64, safetensors.F32, safetensors.F16, safetensors.BF16, safetensors.I64,
		safetensors.I32, safetensors.I16, safetensors.I8, safetensors.U8, safetensors.Bool} {
		for j, shape := range [][]int{{2, 3}, {}, {0, 4}} {
			n := 1
			for _, x := range shape {
				n *= x
			}
			name := fmt.Sprintf("t%d.%s", j, d)
			raw := pattern(d, n*d.Size(), i*3+j)
			if d == safetensors.F16 || d == safetensors.BF16 || d == safetensors.F32 || d == safetensors.F64 {
				raw = finite(d, n)
			}
			for _, dc := range dtypeCases {
				if dc.dtype == d {
					tensors = append(tensors, dc.source(t, ctx, name, raw, shape...))
				}
			}
			want[name] = raw
		}
	}
	metadata := map[string]string{"format": "pt"} // one key: the library orders more by its hash map
	path := filepath.Join(t.TempDir(), "go.safetensors")
	if err := safetensors.SaveFile(path, tensors, metadata, cuda.IOConfig{}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, filepath.Join("..", "bench", "pyref", "safetensors_check.py"), path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s bench/pyref/safetensors_check.py: %v\n%s", py, err, stderr.Bytes())
	}
	var got struct {
		Torch, Safetensors string
		Metadata           map[string]string
		SameBytes          bool `json:"same_bytes"`
		Tensors            map[string]struct {
			DType string
			Shape []int
			Hex   string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the script's output: %v\n%s", err, out)
	}
	t.Logf("torch %s, safetensors %s", got.Torch, got.Safetensors)
	if fmt.Sprint(got.Metadata) != fmt.Sprint(metadata) {
		t.Errorf("metadata %v, want %v", got.Metadata, metadata)
	}
	if !got.SameBytes {
		t.Errorf("safetensors.torch.save of what load_file read is not the file Save wrote")
	}
	if len(got.Tensors) != len(tensors) {
		t.Errorf("%d tensors, want %d", len(got.Tensors), len(tensors))
	}
	for _, s := range tensors {
		g, ok := got.Tensors[s.Name]
		switch {
		case !ok:
			t.Errorf("%s: not read", s.Name)
		case g.DType != string(s.DType) || fmt.Sprint(g.Shape) != fmt.Sprint(s.Shape):
			t.Errorf("%s: read as %s %v, written as %s %v", s.Name, g.DType, g.Shape, s.DType, s.Shape)
		case g.Hex != hex.EncodeToString(want[s.Name]):
			t.Errorf("%s: read %s, written %x", s.Name, g.Hex, want[s.Name])
		}
	}
}

// finite is n elements of float dtype d, finite numbers (the byte
// patterns may be NaNs, whose bits PyTorch need not keep).
func finite(d safetensors.DType, n int) []byte {
	var out []byte
	for i := range n {
		v := float32(i)*1.25 - 3
		switch d {
		case safetensors.F64:
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(float64(v)))
		case safetensors.F32:
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		case safetensors.F16:
			out = binary.LittleEndian.AppendUint16(out, uint16(cuda.NewFloat16(v)))
		case safetensors.BF16:
			out = binary.LittleEndian.AppendUint16(out, uint16(cuda.NewBFloat16(v)))
		}
	}
	return out
}

// FuzzSaveNames: any name and metadata Save takes (valid UTF-8, not empty,
// not __metadata__) Parse reads back as it was: Save's JSON escaping and
// Parse's reading agree on every string.
func FuzzSaveNames(f *testing.F) {
	ctx := cudatest.Context(f)
	b := must(cuda.FromHost(ctx, []byte{1, 2, 3, 4}))(f)
	f.Cleanup(func() { b.Free() })
	for _, seed := range [][2]string{{"w", "pt"}, {"a\"b\\c\n\t\x01\x1f\x7f", "\u2028<>&"}, {`\ud800`, "\ufffd"}, {"\U0001F600", ""}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		var buf bytes.Buffer
		err := safetensors.Save(&buf, []safetensors.Source{safetensors.From(name, b, 2, 2)}, map[string]string{name: value}, cuda.IOConfig{})
		if err != nil {
			if !errors.Is(err, cuda.ErrInvalidValue) || utf8.ValidString(name) && utf8.ValidString(value) && name != "" && name != "__metadata__" {
				t.Fatalf("Save of %q, %q: %v", name, value, err)
			}
			return
		}
		file := buf.Bytes()
		h, err := safetensors.Parse(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			t.Fatalf("Parse of what Save wrote for %q, %q: %v", name, value, err)
		}
		if tn, ok := h.Tensor(name); !ok || len(h.Tensors) != 1 || tn.End != 4 || h.Metadata[name] != value || len(h.Metadata) != 1 {
			t.Fatalf("%q, %q read back as %+v, %q", name, value, h.Tensors, h.Metadata)
		}
		if h.DataOffset%8 != 0 {
			t.Fatalf("the data starts at %d", h.DataOffset)
		}
	})
}

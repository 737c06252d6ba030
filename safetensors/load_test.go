package safetensors_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/safetensors"
)

// tensorSpec is one tensor of a file made by fileOf.
type tensorSpec struct {
	name  string
	dtype safetensors.DType
	n     int // elements
}

// writeFile writes a file of the tensors, their bytes in that order from
// offset 0, each its own pattern; data holds each tensor's bytes.
func writeFile(t testing.TB, specs ...tensorSpec) (path string, data map[string][]byte) {
	t.Helper()
	header := map[string]any{}
	data = map[string][]byte{}
	var all []byte
	for i, s := range specs {
		b := pattern(s.dtype, s.n*s.dtype.Size(), i)
		header[s.name] = entry{string(s.dtype), []int{s.n}, [2]int64{int64(len(all)), int64(len(all) + len(b))}}
		data[s.name] = b
		all = append(all, b...)
	}
	path = filepath.Join(t.TempDir(), "f.safetensors")
	if err := os.WriteFile(path, build(t, header, all), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// fileOf is writeFile's file, open (and closed when the test ends).
func fileOf(t testing.TB, specs ...tensorSpec) (f *safetensors.File, data map[string][]byte) {
	t.Helper()
	path, data := writeFile(t, specs...)
	f = must(safetensors.Open(path))(t)
	t.Cleanup(func() { f.Close() })
	return f, data
}

// reader returns the read function of dtype d.
func reader(t *testing.T, d safetensors.DType) func(*safetensors.Weights, string) ([]byte, cuda.DevicePtr, error) {
	for _, c := range dtypeCases {
		if c.dtype == d {
			return c.read
		}
	}
	t.Fatalf("no case for dtype %s", d)
	return nil
}

// checkLoaded checks that every tensor named is in w, aligned for its dtype,
// and reads (with Get of its element type) the bytes of data.
func checkLoaded(t *testing.T, f *safetensors.File, w *safetensors.Weights, data map[string][]byte, names ...string) {
	t.Helper()
	for _, name := range names {
		ft, _ := f.Tensor(name)
		got, ptr, err := reader(t, ft.DType)(w, name)
		if err != nil {
			t.Errorf("Get of %s (%s): %v", name, ft.DType, err)
			continue
		}
		if uint64(ptr)%uint64(ft.DType.Size()) != 0 {
			t.Errorf("%s (%s) is at %#x, not aligned", name, ft.DType, ptr)
		}
		if !bytes.Equal(got, data[name]) {
			t.Errorf("%s (%s) reads %v, want %v", name, ft.DType, got, data[name])
		}
		if lt, ok := w.Tensor(name); !ok || lt.DType != ft.DType || fmt.Sprint(lt.Shape) != fmt.Sprint(ft.Shape) || lt.End-lt.Begin != ft.End-ft.Begin {
			t.Errorf("loaded %s is %+v, in the file %+v", name, lt, ft)
		} else if len(lt.Shape) > 0 {
			// The shape handed out is the caller's: writing it changes
			// nothing of w.
			want := fmt.Sprint(lt.Shape)
			lt.Shape[0]++
			if again, _ := w.Tensor(name); fmt.Sprint(again.Shape) != want {
				t.Errorf("%s: a change to the shape Tensor returned reached w: %v", name, again.Shape)
			}
		}
	}
}

// TestLoadMisaligned: a tensor of each dtype, 1 to 7 bytes past an offset
// aligned for it, loads whole and by name and reads with Get of its type.
func TestLoadMisaligned(t *testing.T) {
	ctx := cudatest.Context(t)
	sb := new(cuda.StagingBuffer)
	defer sb.Close()
	c := cuda.IOConfig{Staging: sb}
	for _, dc := range dtypeCases {
		for off := 1; off <= 7; off++ {
			t.Run(fmt.Sprintf("%s+%d", dc.dtype, off), func(t *testing.T) {
				f, data := fileOf(t, tensorSpec{"pad", safetensors.U8, off}, tensorSpec{"x", dc.dtype, 5}, tensorSpec{"tail", safetensors.U8, 3})
				for _, names := range [][]string{nil, {"x"}, {"tail", "x"}} {
					w, err := f.Load(ctx, c, names...)
					if err != nil {
						t.Fatalf("Load %v: %v", names, err)
					}
					loaded := names
					if loaded == nil {
						loaded = []string{"pad", "x", "tail"}
					}
					checkLoaded(t, f, w, data, loaded...)
					if err := w.Free(); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// TestLoadMixed: a file of aligned and misaligned tensors, and an empty
// one at an odd offset, whole and in subsets.
func TestLoadMixed(t *testing.T) {
	ctx := cudatest.Context(t)
	f, data := fileOf(t,
		tensorSpec{"f64", safetensors.F64, 2},   // 0: aligned
		tensorSpec{"i32", safetensors.I32, 3},   // 16: aligned
		tensorSpec{"u8", safetensors.U8, 3},     // 28
		tensorSpec{"bf16", safetensors.BF16, 2}, // 31: misaligned
		tensorSpec{"f16", safetensors.F16, 1},   // 35: misaligned, aligned beside bf16
		tensorSpec{"i64", safetensors.I64, 1},   // 37: misaligned
		tensorSpec{"empty", safetensors.I64, 0}, // 45: misaligned, empty
		tensorSpec{"f32", safetensors.F32, 2},   // 45: misaligned, aligned beside i64
		tensorSpec{"bool", safetensors.Bool, 3}, // 53
		tensorSpec{"u64", safetensors.U64, 2},   // 56: aligned in the file, not beside bool
	)
	all := []string{"f64", "i32", "u8", "bf16", "f16", "i64", "empty", "f32", "bool", "u64"}
	for _, names := range [][]string{nil, {"i64"}, {"bf16", "f16"}, {"empty"}, {"f32", "u8", "i64", "f32"}, {"u64", "f64"}, all} {
		t.Run(strings.Join(names, ","), func(t *testing.T) {
			w, err := f.Load(ctx, cuda.IOConfig{}, names...)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Free()
			if names == nil {
				names = all
			}
			checkLoaded(t, f, w, data, names...)
			if names[0] == "f64" {
				// The aligned start of the file keeps its offsets: one read.
				for _, name := range []string{"f64", "i32", "u8"} {
					ft, _ := f.Tensor(name)
					if lt, _ := w.Tensor(name); lt.Begin != ft.Begin {
						t.Errorf("%s at %d of the allocation, %d of the file: the aligned tensors were moved", name, lt.Begin, ft.Begin)
					}
				}
			}
		})
	}
}

// TestLoadAlignedOneRead: a file whose offsets are aligned loads whole as
// it lies, at its own offsets, in one read (one DMA on the fake): the
// common case pays nothing for the misaligned one.
func TestLoadAlignedOneRead(t *testing.T) {
	fake := cudatest.Fake(t)
	if fake == nil {
		return
	}
	ctx := cudatest.Context(t)
	f, data := fileOf(t,
		tensorSpec{"a", safetensors.I64, 3}, tensorSpec{"b", safetensors.F32, 3}, tensorSpec{"c", safetensors.BF16, 1},
		tensorSpec{"z", safetensors.F64, 0}, tensorSpec{"d", safetensors.U8, 3})
	sb := new(cuda.StagingBuffer)
	defer sb.Close()
	s := cudatest.Stream(t, ctx)
	c := cuda.IOConfig{Staging: sb, Stream: s}
	w := must(f.Load(ctx, c))(t) // the staging buffer's memory, once
	w.Free()
	fake.ResetCounts()
	w = must(f.Load(ctx, c))(t)
	defer w.Free()
	counts := fake.Counts()
	if n := counts["cuMemcpyHtoDAsync_v2"]; n != 1 {
		t.Errorf("%d DMAs to the device, want 1 (all the data at once): %v", n, counts)
	}
	for _, ft := range f.Tensors {
		if lt, _ := w.Tensor(ft.Name); ft.End > ft.Begin && (lt.Begin != ft.Begin || lt.End != ft.End) {
			t.Errorf("%s at %d to %d of the allocation, %d to %d of the file", ft.Name, lt.Begin, lt.End, ft.Begin, ft.End)
		}
	}
	checkLoaded(t, f, w, data, "a", "b", "c", "z", "d")
}

// TestLoadEmptyTensors: tensors of no elements, of every dtype, alone in a
// file and beside others, load and read as empty buffers.
func TestLoadEmptyTensors(t *testing.T) {
	ctx := cudatest.Context(t)
	var specs []tensorSpec
	for _, dc := range dtypeCases {
		specs = append(specs, tensorSpec{"empty-" + string(dc.dtype), dc.dtype, 0})
	}
	for _, withData := range []bool{false, true} {
		t.Run(fmt.Sprint("with data ", withData), func(t *testing.T) {
			s := specs
			if withData {
				s = append([]tensorSpec{{"odd", safetensors.U8, 3}}, specs...)
			}
			f, data := fileOf(t, s...)
			w := must(f.Load(ctx, cuda.IOConfig{}))(t)
			defer w.Free()
			for _, sp := range s {
				checkLoaded(t, f, w, data, sp.name)
			}
			b := must(safetensors.Get[float64](w, "empty-F64"))(t)
			if b.Len() != 0 {
				t.Errorf("an empty F64 tensor has %d elements", b.Len())
			}
		})
	}
}

// TestGetTypes: Get takes each dtype's own type; uint8 for those Go has no
// type for; a type of no dtype for any dtype of its size.
func TestGetTypes(t *testing.T) {
	ctx := cudatest.Context(t)
	f, data := fileOf(t, tensorSpec{"f32", safetensors.F32, 2}, tensorSpec{"bool", safetensors.Bool, 2}, tensorSpec{"f8", safetensors.F8E4M3, 2}, tensorSpec{"i8", safetensors.I8, 2})
	w := must(f.Load(ctx, cuda.IOConfig{}))(t)
	defer w.Free()
	type celsius float32
	for _, tc := range []struct {
		name string
		read func(*safetensors.Weights, string) ([]byte, cuda.DevicePtr, error)
	}{
		{"f32", readAs[float32]}, {"f32", readAs[celsius]}, {"f32", readAs[[4]byte]}, {"f32", readAs[[2]cuda.Float16]},
		{"bool", readAs[uint8]}, {"f8", readAs[uint8]}, {"f8", readAs[[1]byte]}, {"i8", readAs[int8]},
	} {
		got, _, err := tc.read(w, tc.name)
		if err != nil || !bytes.Equal(got, data[tc.name]) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, data[tc.name])
		}
	}
}

// TestLoadErrors: every error of Load, Get and Bytes names the tensor and
// says what was wrong, wrapping the sentinel it is.
func TestLoadErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	f, _ := fileOf(t, tensorSpec{"w", safetensors.I64, 2}, tensorSpec{"b", safetensors.Bool, 2}, tensorSpec{"h", safetensors.F16, 2})
	w := must(f.Load(ctx, cuda.IOConfig{}))(t)
	freed := must(f.Load(ctx, cuda.IOConfig{}))(t)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	defer w.Free()
	for _, tc := range []struct {
		name, says string
		sentinel   error
		err        func() error
	}{
		{"wrong type", `safetensors: Get: invalid value: tensor "w": dtype I64 is not int32`, cuda.ErrInvalidValue,
			func() error { _, err := safetensors.Get[int32](w, "w"); return err }},
		{"unsigned for signed", `tensor "w": dtype I64 is not uint64`, cuda.ErrInvalidValue,
			func() error { _, err := safetensors.Get[uint64](w, "w"); return err }},
		{"wrong size", `tensor "h": dtype F16 has 2-byte elements; [4]uint8 has 4`, cuda.ErrInvalidValue,
			func() error { _, err := safetensors.Get[[4]byte](w, "h"); return err }},
		{"bool", `tensor "b": dtype BOOL cannot be read as bool`, cuda.ErrInvalidValue,
			func() error { _, err := safetensors.Get[bool](w, "b"); return err }},
		{"uint16 for F16", `tensor "h": dtype F16 is not uint16`, cuda.ErrInvalidValue,
			func() error { _, err := safetensors.Get[uint16](w, "h"); return err }},
		{"not loaded", `safetensors: Get: invalid value: no tensor "x" was loaded`, cuda.ErrInvalidValue,
			func() error { _, err := safetensors.Get[float32](w, "x"); return err }},
		{"no weights", `safetensors: Get: invalid value: tensor "w": no weights`, cuda.ErrInvalidValue,
			func() error { _, err := safetensors.Get[int64](nil, "w"); return err }},
		{"freed", `tensor "w"`, cuda.ErrClosed,
			func() error { _, err := safetensors.Get[int64](freed, "w"); return err }},
		{"Bytes freed", `safetensors: Weights.Bytes: `, cuda.ErrClosed,
			func() error { _, err := freed.Bytes("h"); return err }},
		{"Bytes missing", `safetensors: Weights.Bytes: invalid value: no tensor "x" was loaded`, cuda.ErrInvalidValue,
			func() error { _, err := w.Bytes("x"); return err }},
		{"Load missing", `safetensors: Load: invalid value: the file has no tensor "x"`, cuda.ErrInvalidValue,
			func() error { _, err := f.Load(ctx, cuda.IOConfig{}, "w", "x"); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want an error wrapping %v saying %q", err, tc.sentinel, tc.says)
			}
			if tc.sentinel == cuda.ErrClosed && !strings.Contains(err.Error(), `tensor "`) {
				t.Errorf("%v names no tensor", err)
			}
		})
	}
}

// TestLoadReadErrors: a file cut short after Open fails Load with an error
// naming the tensors it was reading; a closed file is ErrClosed.
func TestLoadReadErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	path, _ := writeFile(t, tensorSpec{"pad", safetensors.U8, 1}, tensorSpec{"x", safetensors.F32, 4}, tensorSpec{"y", safetensors.F32, 4})
	f := must(safetensors.Open(path))(t)
	defer f.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()-4); err != nil {
		t.Fatal(err)
	}
	_, err = f.Load(ctx, cuda.IOConfig{})
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), `safetensors: Load: `) || !strings.Contains(err.Error(), `reading tensors "x" to "y"`) {
		t.Errorf("Load of a file cut short: %v; want io.ErrUnexpectedEOF naming x to y", err)
	}
	_, err = f.Load(ctx, cuda.IOConfig{}, "y")
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), `reading tensor "y"`) {
		t.Errorf("Load of y cut short: %v; want io.ErrUnexpectedEOF naming y", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if _, err := f.Load(ctx, cuda.IOConfig{}); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Load of a closed file: %v; want ErrClosed", err)
	}
}

// TestStrings: every object prints what it is, in use, closed, zero and
// nil, as package cuda's objects print.
func TestStrings(t *testing.T) {
	ctx := cudatest.Context(t)
	path, _ := writeFile(t, tensorSpec{"a", safetensors.F32, 3}, tensorSpec{"b", safetensors.U8, 1})
	f := must(safetensors.Open(path))(t)
	defer f.Close()
	w := must(f.Load(ctx, cuda.IOConfig{}))(t)
	one := must(f.Load(ctx, cuda.IOConfig{}, "b"))(t)
	defer one.Free()
	var nilFile *safetensors.File
	var nilHeader *safetensors.Header
	var nilWeights *safetensors.Weights
	dev := ctx.Device().String()
	for _, tc := range []struct {
		got  fmt.Stringer
		want string
	}{
		{&f.Header, "safetensors.Header{2 tensors, 13 bytes}"},
		{f, "safetensors.File{" + path + ", 2 tensors, 13 bytes}"},
		{w, "safetensors.Weights{2 tensors, 13 bytes, " + dev + "}"},
		{one, "safetensors.Weights{1 tensor, 1 byte, " + dev + "}"},
		{new(safetensors.Header), "safetensors.Header{0 tensors, 0 bytes}"},
		{new(safetensors.File), "safetensors.File{zero}"},
		{new(safetensors.Weights), "safetensors.Weights{zero}"},
		{nilHeader, "safetensors.Header(nil)"},
		{nilFile, "safetensors.File(nil)"},
		{nilWeights, "safetensors.Weights(nil)"},
	} {
		if s := tc.got.String(); s != tc.want || fmt.Sprint(tc.got) != s {
			t.Errorf("String() = %q, fmt.Sprint %q, want %q", s, fmt.Sprint(tc.got), tc.want)
		}
	}
	w.Free()
	f.Close()
	if s, want := w.String(), "safetensors.Weights{2 tensors, 13 bytes, "+dev+", closed}"; s != want {
		t.Errorf("freed weights: %q, want %q", s, want)
	}
	if s, want := f.String(), "safetensors.File{"+path+", 2 tensors, 13 bytes, closed}"; s != want {
		t.Errorf("closed file: %q, want %q", s, want)
	}
}

// TestLoadManyNames: Load of every tensor by name, of a file of many, gives
// each its place, as a Load of them all unnamed does.
func TestLoadManyNames(t *testing.T) {
	ctx := cudatest.Context(t)
	const n = 3000
	specs, names := manyTensors(n)
	f, _ := fileOf(t, specs...)
	all := must(f.Load(ctx, cuda.IOConfig{}))(t)
	defer all.Free()
	named := must(f.Load(ctx, cuda.IOConfig{}, names...))(t)
	defer named.Free()
	for _, name := range names {
		a, ok1 := all.Tensor(name)
		b, ok2 := named.Tensor(name)
		if !ok1 || !ok2 || a.End-a.Begin != 1 || b.End-b.Begin != 1 {
			t.Fatalf("%s: %+v (%v) unnamed, %+v (%v) named", name, a, ok1, b, ok2)
		}
	}
}

// BenchmarkLoadManyNames is a Load of 30,000 one-byte tensors by name: its
// time grows with their number, not its square (each name was looked up by
// a walk of the file's list: 30,000 names took 2 s, 50,000 5 s; now tens
// of milliseconds).
func BenchmarkLoadManyNames(b *testing.B) {
	ctx := cudatest.Context(b)
	specs, names := manyTensors(30000)
	f, _ := fileOf(b, specs...)
	for b.Loop() {
		w := must(f.Load(ctx, cuda.IOConfig{}, names...))(b)
		w.Free()
	}
}

// manyTensors are n one-byte U8 tensors and their names.
func manyTensors(n int) ([]tensorSpec, []string) {
	specs := make([]tensorSpec, n)
	names := make([]string, n)
	for i := range specs {
		names[i] = fmt.Sprintf("layers.%d.w", i)
		specs[i] = tensorSpec{names[i], safetensors.U8, 1}
	}
	return specs, names
}

// TestLoadConcurrent: one open File loads from many goroutines at once,
// each its own tensors or all, each its own staging buffer or none, and
// every Weights reads back its bytes (run with -race).
func TestLoadConcurrent(t *testing.T) {
	ctx := cudatest.Context(t)
	f, data := fileOf(t, tensorSpec{"a", safetensors.F32, 1000}, tensorSpec{"odd", safetensors.U8, 3},
		tensorSpec{"b", safetensors.BF16, 777}, tensorSpec{"c", safetensors.I64, 5})
	subsets := [][]string{nil, {"a"}, {"b", "c"}, {"c", "odd", "a"}}
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(subsets))
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c cuda.IOConfig
			if g%2 == 1 {
				sb := new(cuda.StagingBuffer)
				defer sb.Close()
				c.Staging = sb
			}
			for _, names := range subsets {
				w, err := f.Load(ctx, c, names...)
				if err != nil {
					errs <- err
					continue
				}
				if names == nil {
					names = []string{"a", "odd", "b", "c"}
				}
				for _, name := range names {
					b, err := w.Bytes(name)
					if err == nil {
						got := make([]byte, b.Len())
						if err = b.CopyToHost(got); err == nil && !bytes.Equal(got, data[name]) {
							err = fmt.Errorf("%s: read %v, want %v", name, got, data[name])
						}
					}
					if err != nil {
						errs <- err
					}
				}
				if err := w.Free(); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestLoadWhileClosed: a File closed while Loads read it fails them with
// cuda.ErrClosed, as a Load after Close, not the os's "file already
// closed"; those done before succeed.
func TestLoadWhileClosed(t *testing.T) {
	ctx := cudatest.Context(t)
	sb := new(cuda.StagingBuffer)
	defer sb.Close()
	f, _ := fileOf(t, tensorSpec{"big", safetensors.F32, 8 << 20})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cuda.IOConfig{}
			if i == 0 {
				c.Staging = sb
			}
			w, err := f.Load(ctx, c)
			if err == nil {
				w.Free()
			}
			errs[i] = err
		}()
	}
	time.Sleep(5 * time.Millisecond)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// A Load cut short says so; one that began after the Close (a slow
	// machine's goroutine) finds the file closed. Either is ErrClosed,
	// never the system's "file already closed".
	for i, err := range errs {
		if err != nil && (!errors.Is(err, cuda.ErrClosed) || !strings.Contains(err.Error(), `closed while reading tensor "big"`) && !strings.Contains(err.Error(), "the file is closed")) {
			t.Errorf("Load %d: %v; want cuda.ErrClosed", i, err)
		}
	}
}

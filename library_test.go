package cuda_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// loadLibrary loads testdata/kernels.ptx as a Library, closed when the
// test ends.
func loadLibrary(t *testing.T) *cuda.Library {
	t.Helper()
	ptx, err := os.ReadFile("testdata/kernels.ptx")
	if err != nil {
		t.Fatal(err)
	}
	lib, err := cuda.LoadLibrary(ptx, cuda.JITLineInfo())
	if err != nil {
		t.Fatalf("LoadLibrary: %v", err)
	}
	t.Cleanup(func() {
		if err := lib.Close(); err != nil {
			t.Errorf("Library.Close: %v", err)
		}
	})
	return lib
}

// vaddIn launches the library's vadd_f32 in ctx over n elements and checks
// the sums.
func vaddIn(t *testing.T, lib *cuda.Library, ctx *cuda.Context, n int) {
	t.Helper()
	s := cudatest.Stream(t, ctx)
	m := must(lib.Module(ctx))(t)
	if again := must(lib.Module(ctx))(t); again != m {
		t.Errorf("Library.Module gave another Module for the same context")
	}
	vadd := must(m.Function("vadd_f32"))(t)
	ha, hb, hc := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range n {
		ha[i], hb[i] = float32(i), float32(3*i+1)
	}
	a := must(cuda.FromHost(ctx, ha))(t)
	defer a.Free()
	b := must(cuda.FromHost(ctx, hb))(t)
	defer b.Free()
	c := must(cuda.Alloc[float32](ctx, n))(t)
	defer c.Free()
	if err := vadd.Launch(cuda.LaunchConfigFor(n, s), a, b, c, uint32(n)); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyToHost(hc); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if hc[i] != ha[i]+hb[i] {
			t.Fatalf("%v: c[%d] = %v, want %v", ctx.Device(), i, hc[i], ha[i]+hb[i])
		}
	}
	// Its kernels describe themselves as a loaded module's: the launch
	// checks their arguments from the PTX.
	if err := vadd.Launch(cuda.LaunchConfigFor(n, s), a, b, c, float32(1)); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("a float32 for the .u32 count: %v, want ErrInvalidValue", err)
	}
	// Globals too, each context its own.
	g := must(cuda.Global[uint32](m, "table"))(t)
	want := []uint32{uint32(ctx.Device().Ordinal()), 2, 3, 4}
	if err := g.CopyFromHost(want); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, 4)
	if err := g.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("table = %v, want %v", got, want)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}

// TestLibrary: a library's kernel runs in a context, and after Close
// every use of its modules and kernels is refused as closed.
func TestLibrary(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	lib := loadLibrary(t)
	vaddIn(t, lib, ctx, 1000)
	m := must(lib.Module(ctx))(t)
	empty := must(m.Function("empty"))(t)
	if _, err := m.Function("no_such_kernel"); err == nil || !strings.Contains(err.Error(), "no_such_kernel") {
		t.Errorf("a kernel the library lacks: %v; want an error naming it", err)
	}
	if err := lib.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lib.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for name, err := range map[string]error{
		"Launch":          empty.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 1}, Stream: s}),
		"Module.Function": func() error { _, err := m.Function("empty"); return err }(),
		"Library.Module":  func() error { _, err := lib.Module(ctx); return err }(),
	} {
		if !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("%s after Library.Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestLibraryContexts: one library, loaded once, runs in the contexts of
// two devices; closing one context's module leaves the other's, and the
// next Library.Module gives a new one.
func TestLibraryContexts(t *testing.T) {
	ctxs := cudatest.Contexts(t, 2)
	if ctxs == nil {
		return
	}
	lib := loadLibrary(t)
	for _, ctx := range ctxs {
		vaddIn(t, lib, ctx, 300)
	}
	m0 := must(lib.Module(ctxs[0]))(t)
	if err := m0.Close(); err != nil {
		t.Fatal(err)
	}
	if again := must(lib.Module(ctxs[0]))(t); again == m0 {
		t.Errorf("Library.Module gave the closed Module again")
	}
	vaddIn(t, lib, ctxs[0], 300)
	vaddIn(t, lib, ctxs[1], 300)
	if f := cudatest.Fake(t); f != nil {
		before := f.Live("library")
		if err := lib.Close(); err != nil {
			t.Fatal(err)
		}
		if f.Live("library") != before-1 {
			t.Errorf("%d libraries loaded after Close, want %d", f.Live("library"), before-1)
		}
	}
}

// TestLibraryInGraph: a graph that launches a library's kernel keeps the
// library open (Close fails, and the library still works), until the
// graph is closed.
func TestLibraryInGraph(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	lib := loadLibrary(t)
	empty := must(must(lib.Module(ctx))(t).Function("empty"))(t)
	g := must(s.Capture(cuda.CaptureGlobal, func() error {
		return empty.Launch(cuda.LaunchConfig{Grid: cuda.Dim3{X: 1}, Block: cuda.Dim3{X: 1}, Stream: s})
	}))(t)
	if err := lib.Close(); err == nil || !strings.Contains(err.Error(), "still open") {
		t.Errorf("Library.Close with a graph using it: %v; want an error saying it is still open", err)
	}
	vaddIn(t, lib, ctx, 100)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lib.Close(); err != nil {
		t.Errorf("Library.Close after the graph's: %v", err)
	}
}

// TestLibraryErrors: bad images and zero values refused in words.
func TestLibraryErrors(t *testing.T) {
	cudatest.Context(t) // the driver is open
	for _, tt := range []struct {
		name  string
		image []byte
		opts  []cuda.JITOption
		want  string
	}{
		{"empty", nil, nil, "empty image"},
		{"JIT option", []byte(".version 7.0\n.target sm_50\n"), []cuda.JITOption{cuda.JITOptimizationLevel(9)}, "out of range"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lib, err := cuda.LoadLibrary(tt.image, tt.opts...)
			if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadLibrary: %v; want ErrInvalidValue saying %q", err, tt.want)
			}
			if lib != nil {
				t.Errorf("a Library with the error")
			}
		})
	}
	// An image that is not code: refused at load, or where the driver
	// loads lazily, at the first kernel asked for.
	ctx := cudatest.Context(t)
	if lib, err := cuda.LoadLibrary([]byte("hello")); err != nil {
		if !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("LoadLibrary(not code): %v; want ErrInvalidValue", err)
		}
	} else {
		_, err := must(lib.Module(ctx))(t).Function("empty")
		if !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "image") {
			t.Errorf("the first kernel of a library of no code: %v; want ErrInvalidValue about the image", err)
		}
		if err := lib.Close(); err != nil {
			t.Errorf("Close of a library of no code: %v", err)
		}
	}
	var zero cuda.Library
	if _, err := zero.Module(ctx); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("zero Library's Module: %v", err)
	}
	lib := loadLibrary(t)
	if _, err := lib.Module(nil); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("Module(nil): %v", err)
	}
	// Names the library lacks, short and as long as C++'s mangled ones.
	m := must(lib.Module(ctx))(t)
	for _, name := range []string{"no_such_kernel", strings.Repeat("_ZN5outer", 12)} {
		_, err := m.Function(name)
		if !errors.Is(err, cuda.ErrInvalidValue) || !errors.Is(err, cuda.Result(500)) || !strings.Contains(err.Error(), "no kernel named") {
			t.Errorf("Function(%q): %v; want CUDA_ERROR_NOT_FOUND, ErrInvalidValue, saying so", name, err)
		}
		_, err = cuda.Global[uint32](m, name)
		if !errors.Is(err, cuda.ErrInvalidValue) || !errors.Is(err, cuda.Result(500)) || !strings.Contains(err.Error(), "no global named") {
			t.Errorf("Global(%q): %v; want CUDA_ERROR_NOT_FOUND, ErrInvalidValue, saying so", name, err)
		}
	}
}

// A library loaded once, its kernel launched in a context.
func ExampleLoadLibrary() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	lib, err := cuda.LoadLibrary([]byte(vaddPTX)) // for every context of the process
	if err != nil {
		log.Fatal(err) // ErrNotSupported before CUDA 12.0
	}
	defer lib.Close()
	mod, err := lib.Module(ctx) // the library in ctx
	if err != nil {
		log.Fatal(err)
	}
	vadd, err := mod.Function("vadd_f32")
	if err != nil {
		log.Fatal(err)
	}
	a, err := cuda.FromHost(ctx, []float32{1, 2, 3})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Free()
	c, err := cuda.Alloc[float32](ctx, 3)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Free()
	if err := vadd.Launch(cuda.LaunchConfigFor(3, s), a, a, c, uint32(3)); err != nil {
		log.Fatal(err)
	}
	out := make([]float32, 3)
	if err := c.CopyToHost(out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out)
	// Output: [2 4 6]
}

// TestLibraryManyContexts: a library used in context after context, each
// closed, keeps nothing of those closed (its modules there, and through
// them the contexts).
func TestLibraryManyContexts(t *testing.T) {
	lib := loadLibrary(t)
	for range 20 {
		ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
		m := must(lib.Module(ctx))(t)
		if _, err := m.Function("vadd_f32"); err != nil {
			t.Fatal(err)
		}
		if err := ctx.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := cuda.LibraryViews(lib); n > 1 {
		t.Errorf("the library keeps %d modules after 20 contexts, each closed; want at most 1", n)
	}
}

package cuda_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/hostcopy"
	"github.com/gocuda/cuda/internal/track"
)

// must is cudatest.Must: buf := must(cuda.Alloc[float32](ctx, n))(t).
func must[T any](v T, err error) func(testing.TB) T { return cudatest.Must(v, err) }

// holdCopyWorkers keeps the copy workers looking for work, as a pipelined
// transfer does, until the function it returns is called.
func holdCopyWorkers() (release func()) {
	if !hostcopy.Hold() {
		return func() {}
	}
	return hostcopy.Release
}

// random returns n elements of T of random bytes.
func random[T any](n int) []T {
	s := make([]T, n)
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(rand.Uint32())
	}
	rand.NewChaCha8(seed).Read(bytesOf(s))
	return s
}

func bytesOf[T any](s []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(*new(T))))
}

// equal compares bytes, so that NaNs of random floats compare equal.
func equal[T any](a, b []T) bool { return len(a) == len(b) && slices.Equal(bytesOf(a), bytesOf(b)) }

// within fails t if fn does not return within d: a deadlock.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not finish within %v: deadlock", what, d)
	}
}

// second returns the last of two results: the error.
func second[T any](_ T, err error) error { return err }

// third returns the last of three results: the error.
func third[T, U any](_ T, _ U, err error) error { return err }

// wantErrors fails t for each named error that does not wrap want.
func wantErrors(t *testing.T, want error, errs map[string]error) {
	t.Helper()
	for name, err := range errs {
		if !errors.Is(err, want) {
			t.Errorf("%s: %v; want %v", name, err, want)
		}
	}
}

// loadKernels loads testdata/kernels.ptx, closed when the test ends.
func loadKernels(t testing.TB, ctx *cuda.Context) *cuda.Module {
	t.Helper()
	ptx, err := os.ReadFile("testdata/kernels.ptx")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ctx.LoadModule(ptx)
	if err != nil {
		t.Fatalf("LoadModule: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func closeTo(got, want float32) bool {
	return math.Abs(float64(got-want)) <= 1e-5*math.Max(1, math.Abs(float64(want)))
}

// eachGoroutine runs fn(0) to fn(n-1) on n goroutines at once and returns
// the first error.
func eachGoroutine(n int, fn func(g int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = fn(g)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func trackForgotten() int64 {
	var n int64
	for _, v := range track.Take().Forgotten {
		n += v
	}
	return n
}

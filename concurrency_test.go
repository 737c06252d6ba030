package cuda_test

import (
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestGlobalsConcurrent: globals obtained from many goroutines at once are
// all closed with their module.
func TestGlobalsConcurrent(t *testing.T) {
	ctx := cudatest.Context(t)
	m := loadKernels(t, ctx)
	const n = 400
	globals := make([]*cuda.DeviceBuffer[uint32], n)
	var wg sync.WaitGroup
	for i := range globals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := cuda.Global[uint32](m, "table")
			if err != nil {
				t.Error(err) // not Fatal: this is not the test's goroutine
				return
			}
			globals[i] = g
		}()
	}
	wg.Wait()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	open := 0
	for _, g := range globals {
		if err := g.CopyFromHost(make([]uint32, 4)); !errors.Is(err, cuda.ErrClosed) {
			open++
		}
	}
	if open > 0 {
		t.Fatalf("%d of %d globals still usable after their module was unloaded", open, n)
	}
}

// TestCloseWhileCopying: closing a module while other goroutines copy
// into its global, with the context's Close waiting too, ends; every copy
// either works or reports ErrClosed.
func TestCloseWhileCopying(t *testing.T) {
	ptx, err := os.ReadFile("testdata/kernels.ptx")
	if err != nil {
		t.Fatal(err)
	}
	cudatest.CheckLeaks(t)
	for range 8 {
		ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
		m := must(ctx.LoadModule(ptx))(t)
		g := must(cuda.Global[uint32](m, "table"))(t)
		within(t, 10*time.Second, "Module.Close and Context.Close beside copies into a global", func() {
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 200 {
						if err := g.CopyFromHost([]uint32{1, 2, 3, 4}); err != nil && !errors.Is(err, cuda.ErrClosed) {
							t.Errorf("copy into the global: %v", err)
							return
						}
					}
				}()
			}
			wg.Add(2)
			go func() { defer wg.Done(); m.Close() }()
			go func() { defer wg.Done(); time.Sleep(time.Millisecond); ctx.Close() }()
			wg.Wait()
		})
		m.Close()
		ctx.Close()
	}
}

// TestCallInsideDoWhileClosing: a gocuda call made inside Context.Do's
// function while Context.Close waits for it returns ErrClosed at once
// rather than waiting for the Close, which waits for Do.
func TestCallInsideDoWhileClosing(t *testing.T) {
	ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
	defer ctx.Close()
	// Outside a Close, calls inside Do work.
	if err := ctx.Do(func() error { _, _, err := ctx.MemInfo(); return err }); err != nil {
		t.Fatalf("MemInfo inside Do: %v", err)
	}
	closed := make(chan error, 1)
	within(t, 10*time.Second, "a call inside Do while Close waits", func() {
		err := ctx.Do(func() error {
			go func() { closed <- ctx.Close() }()
			time.Sleep(20 * time.Millisecond) // Close is waiting for Do
			b, err := cuda.Alloc[byte](ctx, 16)
			if err == nil {
				b.Free()
			}
			return err
		})
		if !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("Alloc inside Do with Close waiting: %v; want ErrClosed", err)
		}
		if err := <-closed; err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

package cuda_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestContext(t *testing.T) {
	ctx := cudatest.Context(t)
	free, total, err := ctx.MemInfo()
	if err != nil || total == 0 || free > total {
		t.Errorf("MemInfo() = %d, %d, %v", free, total, err)
	}
	if err := ctx.Synchronize(); err != nil {
		t.Errorf("Synchronize: %v", err)
	}
	least, greatest, err := ctx.StreamPriorityRange()
	if err != nil || greatest > least {
		t.Errorf("StreamPriorityRange() = %d, %d, %v", least, greatest, err)
	}
	if ctx.Device().Ordinal() != 0 {
		t.Errorf("Device() = %v", ctx.Device())
	}
}

func TestContextClose(t *testing.T) {
	cudatest.CheckLeaks(t)
	ctx, err := cuda.NewContext(cudatest.Device(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := ctx.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	checks := map[string]error{
		"Synchronize": ctx.Synchronize(),
		"MemInfo":     third(ctx.MemInfo()),
		"NewStream":   second(ctx.NewStream()),
		"NewEvent":    second(ctx.NewEvent()),
	}
	for name, err := range checks {
		if !errors.Is(err, cuda.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

func TestNilContext(t *testing.T) {
	var ctx *cuda.Context
	if err := ctx.Close(); err != nil {
		t.Errorf("nil Close: %v", err)
	}
	if err := ctx.Synchronize(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("nil Synchronize: %v, want ErrInvalidValue", err)
	}
	if _, err := ctx.NewStream(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("nil NewStream: %v, want ErrInvalidValue", err)
	}
}

// TestContextForgotten checks the cleanup backstop releases a context nobody
// closed.
func TestContextForgotten(t *testing.T) {
	before := trackForgotten()
	func() {
		if _, err := cuda.NewContext(cudatest.Device(t)); err != nil {
			t.Fatal(err)
		}
	}()
	if !cudatest.GC(func() bool { return trackForgotten() > before }) {
		t.Fatal("the cleanup of an unreachable Context did not run")
	}
}

package cuda_test

import (
	"bytes"
	"fmt"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// churn runs goroutines, each with its own stream and StagingBuffer,
// making rounds of round trips of every size in sizes, then closes
// everything.
func churn(ctx *cuda.Context, goroutines, rounds int, sizes []int) error {
	return eachGoroutine(goroutines, func(int) error {
		s, err := ctx.NewStream()
		if err != nil {
			return err
		}
		defer s.Close()
		var sb cuda.StagingBuffer
		defer sb.Close()
		for range rounds {
			for _, n := range sizes {
				b, err := cuda.Alloc[byte](ctx, n)
				if err != nil {
					return err
				}
				src, got := random[byte](n), make([]byte, n)
				err = cuda.Upload(&sb, b, src, s)
				if err == nil {
					err = cuda.Download(&sb, got, b, s)
				}
				if ferr := b.Free(); err == nil {
					err = ferr
				}
				if err != nil {
					return err
				}
				if !bytes.Equal(got, src) {
					return fmt.Errorf("round trip of %d bytes: data differs", n)
				}
			}
		}
		return nil
	})
}

// TestDeviceMemoryAfterChurn: once every stream, staging buffer and device
// buffer of many goroutines is closed, gocuda holds no device memory. On
// the fake the free memory returns exactly to where it was. On a GPU the
// driver keeps about half a MiB for each thread that used the context at
// once (bench/cref/memchurn.c makes the same calls from C and loses as
// much: docs/performance.md); a second churn must then not lower it
// further.
func TestDeviceMemoryAfterChurn(t *testing.T) {
	ctx := cudatest.Context(t)
	goroutines, rounds, sizes := 64, 50, []int{1, 4 << 10, 64 << 10, 1 << 20, 4 << 20, 8 << 20}
	if cudatest.IsFake() {
		goroutines, rounds, sizes = 16, 3, []int{1, 4 << 10, 64 << 10, 3 << 20}
	}
	free := func() uint64 {
		t.Helper()
		if err := ctx.Synchronize(); err != nil {
			t.Fatal(err)
		}
		f, _, err := ctx.MemInfo()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	before := free()
	if err := churn(ctx, goroutines, rounds, sizes); err != nil {
		t.Fatal(err)
	}
	first := free()
	if err := churn(ctx, goroutines, rounds, sizes); err != nil {
		t.Fatal(err)
	}
	second := free()
	t.Logf("device memory free: %d MiB before, %d MiB lower after a churn of %d goroutines, %d MiB lower after a second",
		before>>20, (int64(before)-int64(first))>>20, goroutines, (int64(before)-int64(second))>>20)
	switch {
	case cudatest.IsFake() && (first != before || second != before):
		t.Errorf("free device memory %d before, %d and %d after: gocuda holds memory", before, first, second)
	case second < first && first-second > 4<<20:
		t.Errorf("a second churn lowered free device memory by %d MiB more: memory held grows with use", (first-second)>>20)
	}
}

package cuda_test

import (
	"errors"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestFakeFaultsUseAfterFree: the fake is as strict as a GPU where work
// outlives the memory it touches, so that a test of gocuda's ordering can
// fail on it: a kernel, a memset or a copy queued on one stream, its
// buffer freed in stream order on another before it ran, faults its
// context (CUDA_ERROR_ILLEGAL_ADDRESS) instead of touching freed memory.
// The misuse is the test's own (the use goes through an alias gocuda
// cannot tell for the freed buffer, whose uses Free waits for); on a GPU
// the result would be undefined, so it runs on the fake only.
func TestFakeFaultsUseAfterFree(t *testing.T) {
	if !cudatest.IsFake() {
		t.Skip("a deliberate use after free: the fake's fault only")
	}
	const n = 1 << 12
	for _, tt := range bufferUses(n) {
		t.Run(tt.name, func(t *testing.T) {
			ctx := must(cuda.NewContext(cudatest.Device(t)))(t)
			defer ctx.Close()
			s := must(ctx.NewStream())(t)
			y := must(cuda.AllocAsync[float32](s, n))(t)
			if err := s.Synchronize(); err != nil {
				t.Fatal(err)
			}
			// The use runs late, after the free, which s runs at once.
			other := busyStream(t, ctx)
			// Through an alias gocuda does not know for y's (FromRaw):
			// Free orders itself after the uses it knows of.
			alias := must(cuda.FromRaw[float32](ctx, y.Ptr(), n))(t)
			if err := tt.use(t, ctx, alias, other); err != nil {
				t.Fatal(err)
			}
			if err := y.Free(); err != nil { // on s, not ordered after other's work
				t.Fatal(err)
			}
			var e *cuda.Error
			if err := other.Synchronize(); !errors.As(err, &e) || e.Code != cuda.Result(700) {
				t.Errorf("Synchronize after the %s ran on freed memory: %v; want CUDA_ERROR_ILLEGAL_ADDRESS", tt.name, err)
			}
		})
	}
}

package cufft_test

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/internal/cudatest"
)

// freedAt returns, of a block of memory freed, a buffer of n Fs from
// byte off, freed with it, and a live one of m Ls from byte at (FromRaw):
// memory the allocator could hand out again at once, which a comparison
// of addresses alone takes for the freed buffer's.
func freedAt[F, L any](t testing.TB, ctx *cuda.Context, off, n, at, m int) (freed *cuda.DeviceBuffer[F], live *cuda.DeviceBuffer[L]) {
	t.Helper()
	block := must(cuda.Alloc[byte](ctx, 256))(t)
	freed = must(cuda.ViewAs[F](must(block.Slice(off, n*int(unsafe.Sizeof(*new(F)))))(t)))(t)
	if err := block.Free(); err != nil {
		t.Fatal(err)
	}
	return freed, must(cuda.FromRaw[L](ctx, block.Ptr()+cuda.DevicePtr(at), m))(t)
}

// TestOverlapFreed: a transform whose dst or src was freed, while the
// other names memory at the freed one's address, returns cuda.ErrClosed
// naming the freed one, not the overlap a comparison of addresses alone
// finds (as cuda's copies do: TestCopyFromFreedBuffer).
func TestOverlapFreed(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	plan := func(typ cufft.Type) *cufft.Plan {
		p := must(cufft.NewPlan(s, typ, []int{8}, 1))(t)
		t.Cleanup(func() { p.Close() })
		return p
	}
	c2c, r2c, c2r := plan(cufft.C2C), plan(cufft.R2C), plan(cufft.C2R)
	// Each transform with dst or src freed (from byte 8 of a block), the
	// other live over the block: from byte 16 for C2C (one element on: not
	// in place), from byte 8 for the out-of-place R2C and C2R.
	for _, tc := range []struct {
		name, freed string
		call        func(t *testing.T) error
	}{
		{"ExecC2C", "dst", func(t *testing.T) error { // one element apart: not in place
			dst, src := freedAt[complex64, complex64](t, ctx, 8, 8, 16, 8)
			return c2c.ExecC2C(dst, src, cufft.Forward)
		}},
		{"ExecC2C", "src", func(t *testing.T) error {
			src, dst := freedAt[complex64, complex64](t, ctx, 8, 8, 16, 8)
			return c2c.ExecC2C(dst, src, cufft.Inverse)
		}},
		{"ExecR2C", "dst", func(t *testing.T) error {
			dst, src := freedAt[complex64, float32](t, ctx, 8, 5, 8, 8)
			return r2c.ExecR2C(dst, src)
		}},
		{"ExecR2C", "src", func(t *testing.T) error {
			src, dst := freedAt[float32, complex64](t, ctx, 8, 8, 8, 5)
			return r2c.ExecR2C(dst, src)
		}},
		{"ExecC2R", "dst", func(t *testing.T) error {
			dst, src := freedAt[float32, complex64](t, ctx, 8, 8, 8, 5)
			return c2r.ExecC2R(dst, src)
		}},
		{"ExecC2R", "src", func(t *testing.T) error {
			src, dst := freedAt[complex64, float32](t, ctx, 8, 5, 8, 8)
			return c2r.ExecC2R(dst, src)
		}},
	} {
		t.Run(tc.name+"/"+tc.freed+" freed", func(t *testing.T) {
			err := tc.call(t)
			if want := tc.freed + " is closed"; !errors.Is(err, cuda.ErrClosed) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s with %s freed and its memory another buffer's: %v; want cuda.ErrClosed saying %q", tc.name, tc.freed, err, want)
			}
		})
	}
}

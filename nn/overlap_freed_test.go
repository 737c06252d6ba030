package nn_test

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
	"github.com/gocuda/cuda/nn"
)

// span is the elements from off of a block of memory.
type span struct{ off, n int }

// freedAt returns, of a block of memory freed, an array over f, freed
// with it, and a live one over l (of a FromRaw buffer), each of shape:
// memory the allocator could hand out again at once, which a comparison
// of addresses alone takes for the freed array's.
func freedAt(t testing.TB, s *cuda.Stream, f, l span, shape ...int) (freed, live *nd.Array[float32]) {
	t.Helper()
	block := must(cuda.Alloc[float32](s.Context(), 128))(t)
	freed = must(nd.FromBuffer(s, must(block.Slice(f.off, f.n))(t), shape...))(t)
	if err := block.Free(); err != nil {
		t.Fatal(err)
	}
	return freed, liveAt(t, s, block.Ptr()+cuda.DevicePtr(4*l.off), shape...)
}

// liveAt returns a live array of shape over the memory at p (FromRaw).
func liveAt(t testing.TB, s *cuda.Stream, p cuda.DevicePtr, shape ...int) *nd.Array[float32] {
	t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	return must(nd.FromBuffer(s, must(cuda.FromRaw[float32](s.Context(), p, n))(t), shape...))(t)
}

// TestAliasFreed: a call whose output or input was freed (an array, or a
// KVCache), while the other names memory at the freed one's address,
// returns cuda.ErrClosed naming the freed one, not the overlap a
// comparison of addresses alone finds (as cuda's copies do:
// TestCopyFromFreedBuffer).
func TestAliasFreed(t *testing.T) {
	s := layerStream(t)
	// The other operands, live, made first: memory freed later is not
	// theirs.
	other := layerUp[float32](t, s, layerData(32, 2, -1, 1), 4, 8)
	q := layerUp[float32](t, s, layerData(32, 3, -1, 1), 1, 1, 4, 8)
	kv := layerUp[float32](t, s, layerData(16, 4, -1, 1), 1, 1, 2, 8)
	ids := layerFree(t, must(nd.FromSlice(s, []int32{0, 1, 2, 3}, 4))(t))
	mat, row := span{0, 32}, span{8, 32}
	// freedCache returns a KVCache, freed, and a live array at its K's
	// memory, of shape.
	freedCache := func(t *testing.T, shape ...int) (*nn.KVCache[float32], *nd.Array[float32]) {
		t.Helper()
		c := must(nn.NewKVCache[float32](s, 1, 1, 8, 8))(t)
		k := must(c.K().Buffer())(t).Ptr()
		if err := c.Free(); err != nil {
			t.Fatal(err)
		}
		return c, liveAt(t, s, k, shape...)
	}
	for _, tc := range []struct {
		name, freed string
		call        func(t *testing.T) error
	}{
		{"LayerNormInto", "dst", func(t *testing.T) error {
			dst, x := freedAt(t, s, mat, row, 4, 8)
			return nn.LayerNormInto(dst, x, nil, nil, 1e-5)
		}},
		{"LayerNormInto", "x", func(t *testing.T) error {
			x, dst := freedAt(t, s, mat, row, 4, 8)
			return nn.LayerNormInto(dst, x, nil, nil, 1e-5)
		}},
		{"GELUInto", "dst", func(t *testing.T) error {
			dst, x := freedAt(t, s, mat, row, 4, 8)
			return nn.GELUInto(dst, x)
		}},
		{"SwiGLUInto", "up", func(t *testing.T) error {
			up, dst := freedAt(t, s, mat, row, 4, 8)
			return nn.SwiGLUInto(dst, other, up)
		}},
		{"SoftmaxInto", "x", func(t *testing.T) error {
			x, dst := freedAt(t, s, mat, row, 4, 8)
			return nn.SoftmaxInto(dst, x, 1, nn.Mask{})
		}},
		{"EmbeddingInto", "table", func(t *testing.T) error {
			table, dst := freedAt(t, s, mat, mat, 4, 8)
			return nn.EmbeddingInto(dst, table, ids)
		}},
		{"AttentionInto", "out", func(t *testing.T) error {
			out, v := freedAt(t, s, mat, row, 1, 1, 4, 8)
			return nn.AttentionInto(out, q, q, v, nn.AttentionOptions{})
		}},
		{"KVCache.Append", "the cache's K", func(t *testing.T) error {
			c, k := freedCache(t, 1, 1, 2, 8)
			return c.Append(k, kv)
		}},
		{"KVCache.AttentionInto", "the cache's K", func(t *testing.T) error {
			c, out := freedCache(t, 1, 1, 4, 8)
			return c.AttentionInto(out, q, nn.AttentionOptions{})
		}},
	} {
		t.Run(tc.name+"/"+tc.freed+" freed", func(t *testing.T) {
			err := tc.call(t)
			if !errors.Is(err, cuda.ErrClosed) || !strings.Contains(err.Error(), tc.freed) {
				t.Errorf("%s with %s freed and its memory another array's: %v; want cuda.ErrClosed naming %s", tc.name, tc.freed, err, tc.freed)
			}
		})
	}
}

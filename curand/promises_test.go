package curand_test

import (
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/cudatest"
)

// The docs' promises at their edges, as an outside reader of them tests
// them: empty and odd fills on closed generators and streams and into
// freed buffers, the zero values, and seeds.

// fills are a call of each filling function into buffers of n elements
// that buf makes, on g; odd and unaligned counts go through scratch
// memory.
func fills(g *curand.Generator, f func(n int) *cuda.DeviceBuffer[float32], u func(n int) *cuda.DeviceBuffer[uint32]) []struct {
	name string
	call func() error
} {
	return []struct {
		name string
		call func() error
	}{
		{"Uniform of none", func() error { return curand.Uniform(g, f(0)) }},
		{"Normal of none", func() error { return curand.Normal(g, f(0), 0, 1) }},
		{"Normal of 3", func() error { return curand.Normal(g, f(3), 0, 1) }},
		{"LogNormal of 1", func() error { return curand.LogNormal(g, f(1), 0, 1) }},
		{"Poisson of none", func() error { return g.Poisson(u(0), 2) }},
		{"Bits of none", func() error { return g.Bits(u(0)) }},
		{"Bits of 5", func() error { return g.Bits(u(5)) }},
	}
}

// TestPromisesClosed: a closed generator, one whose stream is closed, and
// a freed buffer are cuda.ErrClosed, for a fill of no numbers too; a
// generator whose stream is closed still closes.
func TestPromisesClosed(t *testing.T) {
	ctx := cudatest.Context(t)
	f := func(n int) *cuda.DeviceBuffer[float32] { return cudatest.Upload(t, ctx, make([]float32, n)) }
	u := func(n int) *cuda.DeviceBuffer[uint32] { return cudatest.Upload(t, ctx, make([]uint32, n)) }
	closedGen := must(curand.New(cudatest.Stream(t, ctx), curand.Philox4x32_10, 1))(t)
	if err := closedGen.Close(); err != nil {
		t.Fatal(err)
	}
	s := must(ctx.NewStream())(t)
	onClosed := must(curand.New(s, curand.XORWOW, 1))(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct {
		name string
		g    *curand.Generator
	}{{"closed generator", closedGen}, {"closed stream", onClosed}} {
		for _, tc := range fills(g.g, f, u) {
			t.Run(g.name+"/"+tc.name, func(t *testing.T) { cudatest.WantErr(t, tc.name+" on a "+g.name, tc.call(), cuda.ErrClosed, "closed") })
		}
		cudatest.WantErr(t, "SetSeed on a "+g.name, g.g.SetSeed(2), cuda.ErrClosed, "closed")
		cudatest.WantErr(t, "SetOffset on a "+g.name, g.g.SetOffset(2), cuda.ErrClosed, "closed")
		cudatest.WantErr(t, "SetOrdering on a "+g.name, g.g.SetOrdering(curand.OrderingSeeded), cuda.ErrClosed, "closed")
	}
	if err := onClosed.Close(); err != nil {
		t.Errorf("Close of a generator whose stream is closed: %v", err)
	}
	if err := onClosed.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	g := generatorOn(t, cudatest.Stream(t, ctx), curand.Philox4x32_10, 1)
	freedF := func(n int) *cuda.DeviceBuffer[float32] {
		b := must(cuda.Alloc[float32](ctx, n+2))(t)
		v := must(b.Slice(1, n))(t) // odd counts, unaligned: the scratch paths
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
		return v
	}
	freedU := func(n int) *cuda.DeviceBuffer[uint32] {
		b := must(cuda.Alloc[uint32](ctx, n+1))(t)
		v := must(b.Slice(0, n))(t)
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range fills(g, freedF, freedU) {
		t.Run("freed/"+tc.name, func(t *testing.T) {
			cudatest.WantErr(t, tc.name+" into a freed buffer", tc.call(), cuda.ErrClosed, "closed")
		})
	}
	// Still usable, and nothing left behind by the failed calls.
	if err := curand.Normal(g, f(3), 0, 1); err != nil {
		t.Errorf("Normal after the failed calls: %v", err)
	}
}

// TestPromisesZeroValues: the zero Generator answers what calls nothing,
// and refuses the rest with cuda.ErrInvalidValue.
func TestPromisesZeroValues(t *testing.T) {
	var g curand.Generator
	if g.Stream() != nil || g.RNG() != 0 || !strings.Contains(g.String(), "zero") {
		t.Errorf("a zero Generator's Stream, RNG and String: %v, %v, %q", g.Stream(), g.RNG(), g.String())
	}
	u := cudatest.Upload(t, cudatest.Context(t), make([]uint32, 2))
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"Close", g.Close()},
		{"SetOffset", g.SetOffset(1)},
		{"SetOrdering", g.SetOrdering(curand.OrderingDefault)},
		{"Poisson", g.Poisson(u, 1)},
		{"Normal", curand.Normal(&g, must(cuda.ViewAs[float32](u))(t), 0, 1)},
	} {
		cudatest.WantErr(t, tc.name+" of a zero Generator", tc.err, cuda.ErrInvalidValue, "zero")
	}
	if s := curand.RNG(5).String(); !strings.Contains(s, "5") {
		t.Errorf("RNG(5): %q", s)
	}
	var e *curand.Error
	_ = e.Error()
	_ = (&curand.Error{}).Error()
}

// TestPromisesSeeds: a seed set again, with the offset set to 0 after it
// (as SetSeed says), gives a fresh generator's numbers of that seed, for
// every pseudo-random generator that has offsets; normal numbers too.
func TestPromisesSeeds(t *testing.T) {
	for _, rng := range []curand.RNG{curand.Philox4x32_10, curand.XORWOW, curand.MRG32k3a} {
		t.Run(rng.String(), func(t *testing.T) {
			s, g := generator(t, rng, 11)
			ctx := s.Context()
			first := must(cuda.Alloc[float32](ctx, 6))(t)
			defer first.Free()
			if err := curand.Normal(g, first, 0, 1); err != nil {
				t.Fatal(err)
			}
			want := cudatest.Download(t, first)
			if err := g.SetSeed(11); err != nil {
				t.Fatal(err)
			}
			if err := g.SetOffset(0); err != nil {
				t.Fatal(err)
			}
			if err := curand.Normal(g, first, 0, 1); err != nil {
				t.Fatal(err)
			}
			if got := cudatest.Download(t, first); !slices.Equal(got, want) {
				t.Errorf("seed 11 again, offset 0: %v, want %v", got, want)
			}
			fresh := generatorOn(t, s, rng, 11)
			if err := curand.Normal(fresh, first, 0, 1); err != nil {
				t.Fatal(err)
			}
			if got := cudatest.Download(t, first); !slices.Equal(got, want) {
				t.Errorf("a fresh generator of seed 11: %v, want %v", got, want)
			}
			if !strings.Contains(g.String(), "seed 11") {
				t.Errorf("String: %q", g.String())
			}
		})
	}
}

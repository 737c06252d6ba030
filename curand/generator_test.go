package curand_test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/internal/cudatest"
)

var pseudo = []curand.RNG{curand.Philox4x32_10, curand.XORWOW, curand.MRG32k3a, curand.MTGP32, curand.MT19937}

// ks returns the Kolmogorov-Smirnov distance between the sample and cdf.
func ks(sample []float64, cdf func(float64) float64) float64 {
	s := slices.Clone(sample)
	slices.Sort(s)
	d, n := 0.0, float64(len(s))
	for i, x := range s {
		f := cdf(x)
		d = max(d, math.Abs(f-float64(i)/n), math.Abs(float64(i+1)/n-f))
	}
	return d
}

// moments returns the sample's mean and variance.
func moments(s []float64) (mean, variance float64) {
	for _, x := range s {
		mean += x
	}
	mean /= float64(len(s))
	for _, x := range s {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(s)-1)
}

func floats[T float32 | float64](s []T) []float64 {
	out := make([]float64, len(s))
	for i, x := range s {
		out[i] = float64(x)
	}
	return out
}

// checkDistribution fails t unless the sample has the mean, variance and
// distribution given, within what 2^16 numbers allow (a KS distance past
// 1.95/sqrt(n): p < 0.001).
func checkDistribution(t *testing.T, what string, s []float64, mean, variance float64, cdf func(float64) float64) {
	t.Helper()
	n := float64(len(s))
	m, v := moments(s)
	if math.Abs(m-mean) > 5*math.Sqrt(variance/n) {
		t.Errorf("%s: mean %.5f, want %.5f", what, m, mean)
	}
	if math.Abs(v-variance) > 0.05*variance {
		t.Errorf("%s: variance %.5f, want %.5f", what, v, variance)
	}
	if cdf != nil {
		if d := ks(s, cdf); d > 1.95/math.Sqrt(n) {
			t.Errorf("%s: Kolmogorov-Smirnov distance %.5f, past %.5f", what, d, 1.95/math.Sqrt(n))
		}
	}
}

func normalCDF(mean, sd float64) func(float64) float64 {
	return func(x float64) float64 { return 0.5 * math.Erfc(-(x-mean)/(sd*math.Sqrt2)) }
}

// TestDistributions: every generator's uniform, normal, log-normal and
// Poisson numbers, float32 and float64, have their distribution's mean,
// variance and shape.
func TestDistributions(t *testing.T) {
	const n = 1 << 16
	for _, rng := range append(slices.Clone(pseudo), curand.Sobol32, curand.ScrambledSobol32) {
		t.Run(rng.String(), func(t *testing.T) {
			seed := uint64(1234)
			if rng == curand.Sobol32 || rng == curand.ScrambledSobol32 {
				seed = 0
			}
			s, g := generator(t, rng, seed)
			ctx := s.Context()
			u32 := must(cuda.Alloc[float32](ctx, n))(t)
			defer u32.Free()
			u64 := must(cuda.Alloc[float64](ctx, n))(t)
			defer u64.Free()
			if err := curand.Uniform(g, u32); err != nil {
				t.Fatal(err)
			}
			if err := curand.Uniform(g, u64); err != nil {
				t.Fatal(err)
			}
			for name, sample := range map[string][]float64{"float32": floats(cudatest.Download(t, u32)), "float64": floats(cudatest.Download(t, u64))} {
				if i := slices.IndexFunc(sample, func(x float64) bool { return !(x > 0 && x <= 1) }); i >= 0 {
					t.Errorf("uniform %s: %v outside (0, 1]", name, sample[i])
				}
				checkDistribution(t, "uniform "+name, sample, 0.5, 1.0/12, func(x float64) float64 { return min(max(x, 0), 1) })
			}
			if err := curand.Normal(g, u32, 2, 3); err != nil {
				t.Fatal(err)
			}
			if err := curand.Normal(g, u64, -1, 0.5); err != nil {
				t.Fatal(err)
			}
			checkDistribution(t, "normal float32", floats(cudatest.Download(t, u32)), 2, 9, normalCDF(2, 3))
			checkDistribution(t, "normal float64", floats(cudatest.Download(t, u64)), -1, 0.25, normalCDF(-1, 0.5))
			if err := curand.LogNormal(g, u64, 0.5, 0.25); err != nil {
				t.Fatal(err)
			}
			logs := floats(cudatest.Download(t, u64))
			for i := range logs {
				logs[i] = math.Log(logs[i])
			}
			checkDistribution(t, "log-normal float64 (its logarithms)", logs, 0.5, 0.0625, normalCDF(0.5, 0.25))
			p := must(cuda.Alloc[uint32](ctx, n))(t)
			defer p.Free()
			for _, lambda := range []float64{4, 1000} {
				if err := g.Poisson(p, lambda); err != nil {
					t.Fatal(err)
				}
				var sample []float64
				for _, x := range cudatest.Download(t, p) {
					sample = append(sample, float64(x))
				}
				checkDistribution(t, fmt.Sprintf("Poisson %v", lambda), sample, lambda, lambda, nil)
			}
		})
	}
}

// TestSequence: a seed gives the same numbers again; two calls continue
// the sequence one call of both sizes gives; SetOffset skips ahead;
// SetSeed starts over.
func TestSequence(t *testing.T) {
	for _, rng := range []curand.RNG{curand.Philox4x32_10, curand.XORWOW, curand.MRG32k3a} {
		t.Run(rng.String(), func(t *testing.T) {
			const n = 4096
			s, g := generator(t, rng, 7)
			ctx := s.Context()
			whole := must(cuda.Alloc[uint32](ctx, 2*n))(t)
			defer whole.Free()
			if err := g.Bits(whole); err != nil {
				t.Fatal(err)
			}
			want := cudatest.Download(t, whole)
			g2 := generatorOn(t, s, rng, 7)
			half := must(cuda.Alloc[uint32](ctx, n))(t)
			defer half.Free()
			var got []uint32
			for range 2 {
				if err := g2.Bits(half); err != nil {
					t.Fatal(err)
				}
				got = append(got, cudatest.Download(t, half)...)
			}
			if !slices.Equal(got, want) {
				t.Errorf("two calls of %d differ from one of %d", n, 2*n)
			}
			if err := g2.SetOrdering(curand.OrderingDefault); err != nil { // starts over
				t.Fatal(err)
			}
			if err := g2.SetSeed(7); err != nil {
				t.Fatal(err)
			}
			if err := g2.SetOffset(n); err != nil {
				t.Fatal(err)
			}
			if err := g2.Bits(half); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cudatest.Download(t, half), want[n:]) {
				t.Errorf("after SetOffset(%d): not the sequence's numbers from %d on", n, n)
			}
			if err := g2.SetSeed(8); err != nil {
				t.Fatal(err)
			}
			if err := g2.SetOffset(0); err != nil {
				t.Fatal(err)
			}
			if err := g2.Bits(half); err != nil {
				t.Fatal(err)
			}
			if slices.Equal(cudatest.Download(t, half), want[:n]) {
				t.Errorf("seed 8 gave seed 7's numbers")
			}
		})
	}
}

// TestOddNormal: an odd count of normal numbers from a pseudo-random
// generator: the first n-1 are those of an even call, the last is a number
// of the distribution too, and no number is left unwritten.
func TestOddNormal(t *testing.T) {
	for _, n := range []int{1, 3, 1001} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s, g := generator(t, curand.Philox4x32_10, 99)
			ctx := s.Context()
			odd := must(cuda.Alloc[float64](ctx, n))(t)
			defer odd.Free()
			if err := odd.Memset32(0xffffffff); err != nil { // NaNs
				t.Fatal(err)
			}
			if err := curand.Normal(g, odd, 0, 1); err != nil {
				t.Fatal(err)
			}
			got := cudatest.Download(t, odd)
			for i, x := range got {
				if math.IsNaN(x) || math.Abs(x) > 8 {
					t.Fatalf("number %d of %d is %v", i, n, x)
				}
			}
			if n > 1 {
				g2 := generatorOn(t, s, curand.Philox4x32_10, 99)
				even := must(cuda.Alloc[float64](ctx, n-1))(t)
				defer even.Free()
				if err := curand.Normal(g2, even, 0, 1); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(cudatest.Download(t, even), got[:n-1]) {
					t.Errorf("the first %d numbers differ from an even call's", n-1)
				}
			}
		})
	}
}

// TestConcurrent: goroutines sharing a generator take turns; together they
// get the numbers one call of all their sizes gives, each exactly once.
func TestConcurrent(t *testing.T) {
	const goroutines, n = 8, 1 << 12
	s, g := generator(t, curand.Philox4x32_10, 5)
	ctx := s.Context()
	bufs := make([]*cuda.DeviceBuffer[uint32], goroutines)
	for i := range bufs {
		bufs[i] = must(cuda.Alloc[uint32](ctx, n))(t)
		defer bufs[i].Free()
	}
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			if err := g.Bits(bufs[i]); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var got []uint32
	for _, b := range bufs {
		got = append(got, cudatest.Download(t, b)...)
	}
	one := generatorOn(t, s, curand.Philox4x32_10, 5)
	all := must(cuda.Alloc[uint32](ctx, goroutines*n))(t)
	defer all.Free()
	if err := one.Bits(all); err != nil {
		t.Fatal(err)
	}
	want := cudatest.Download(t, all)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the goroutines' numbers are not one sequence's")
	}
}

// TestErrors: bad input refused in words, closed and zero generators.
func TestErrors(t *testing.T) {
	s, g := generator(t, curand.Philox4x32_10, 1)
	ctx := s.Context()
	if _, err := curand.New(nil, curand.XORWOW, 1); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("New(nil stream): %v", err)
	}
	if _, err := curand.New(s, curand.RNG(7), 1); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "unknown generator") {
		t.Errorf("New(RNG 7): %v", err)
	}
	if _, err := curand.New(s, curand.Sobol32, 1); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "no seed") {
		t.Errorf("New(Sobol32, seed 1): %v", err)
	}
	f := must(cuda.Alloc[float32](ctx, 16))(t)
	defer f.Free()
	u := must(cuda.Alloc[uint32](ctx, 16))(t)
	defer u.Free()
	for name, err := range map[string]error{
		"nil buffer":            curand.Uniform[float32](g, nil),
		"negative deviation":    curand.Normal(g, f, 0, -1),
		"NaN mean":              curand.LogNormal(g, f, float32(math.NaN()), 1),
		"lambda 0":              g.Poisson(u, 0),
		"lambda +Inf":           g.Poisson(u, math.Inf(1)),
		"lambda NaN":            g.Poisson(u, math.NaN()),
		"infinite deviation":    curand.Normal(g, f, 0, float32(math.Inf(1))),
		"infinite mean":         curand.LogNormal(g, f, float32(math.Inf(-1)), 1),
		"SetSeed of a Sobol32":  generatorOn(t, s, curand.Sobol32, 0).SetSeed(1),
		"zero generator":        (&curand.Generator{}).Bits(u),
		"nil generator":         (*curand.Generator)(nil).Bits(u),
		"zero generator's seed": (&curand.Generator{}).SetSeed(1),
		"unknown ordering":      g.SetOrdering(7),
		"ordering of a Sobol32": generatorOn(t, s, curand.Sobol32, 0).SetOrdering(curand.OrderingDefault),
	} {
		if !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("%s: %v, want ErrInvalidValue", name, err)
		}
	}
	other := cudatest.Context(t)
	if other != ctx {
		ob := must(cuda.Alloc[float32](other, 4))(t)
		defer ob.Free()
		if err := curand.Uniform(g, ob); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("a buffer of another context: %v", err)
		}
	}
	if err := curand.Uniform(g, must(f.Slice(0, 0))(t)); err != nil {
		t.Errorf("an empty buffer: %v", err)
	}
	g2 := must(curand.New(s, curand.XORWOW, 1))(t)
	if err := g2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g2.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := curand.Uniform(g2, f); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("Uniform on a closed generator: %v, want ErrClosed", err)
	}
	if v, err := curand.Version(); err != nil || v.Major < 10 {
		t.Errorf("Version() = %v, %v", v, err)
	}
}

// Normal numbers of mean 0 and deviation 1, from Philox4x32-10 seeded with
// 42.
func Example() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	g, err := curand.New(s, curand.Philox4x32_10, 42)
	if err != nil {
		log.Fatal(err) // ErrNotSupported without cuRAND, naming the paths tried
	}
	defer g.Close()
	x, err := cuda.Alloc[float32](ctx, 1<<20)
	if err != nil {
		log.Fatal(err)
	}
	defer x.Free()
	if err := curand.Normal(g, x, 0, 1); err != nil {
		log.Fatal(err)
	}
	out := make([]float32, x.Len())
	if err := x.CopyToHost(out); err != nil { // waits for the generator's work
		log.Fatal(err)
	}
	var sum float64
	for _, v := range out {
		sum += float64(v)
	}
	fmt.Printf("mean within 0.01 of 0: %v\n", math.Abs(sum/float64(len(out))) < 0.01)
	// Output: mean within 0.01 of 0: true
}

// TestMatchesC: gocuda's numbers are cuRAND's from C, bit for bit, for
// every generator type and distribution (bench/cref/curand.c, whose output
// GOCUDA_CREF_CURAND names: scripts/gpu-run.sh builds and runs it on the
// GPU machine).
func TestMatchesC(t *testing.T) {
	path := os.Getenv("GOCUDA_CREF_CURAND")
	if path == "" {
		t.Skip("GOCUDA_CREF_CURAND names no output of bench/cref/curand.c")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	var order []string
	for line := range strings.Lines(string(data)) {
		var rng int
		var dist, hash string
		var n int
		if _, err := fmt.Sscan(line, &rng, &dist, &n, &hash); err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		key := fmt.Sprintf("%d %s %d", rng, dist, n)
		want[key] = hash
		order = append(order, key)
	}
	s := cudatest.Stream(t, cudatest.Context(t))
	ctx := s.Context()
	b32 := must(cuda.Alloc[uint32](ctx, 4096))(t)
	defer b32.Free()
	f32 := must(cuda.ViewAs[float32](b32))(t)
	f64 := must(cuda.Alloc[float64](ctx, 2048))(t)
	defer f64.Free()
	got := map[string]string{}
	for _, rng := range append(slices.Clone(pseudo), curand.Sobol32, curand.ScrambledSobol32) {
		seed := uint64(1234)
		if rng >= 200 {
			seed = 0
		}
		g := generatorOn(t, s, rng, seed)
		hash := func(dist string, b []byte) {
			h := fnv.New64a()
			h.Write(b)
			got[fmt.Sprintf("%d %s %d", int(rng), dist, len(b)/map[bool]int{true: 8, false: 4}[strings.HasSuffix(dist, "64")])] = fmt.Sprintf("%016x", h.Sum64())
		}
		steps := []struct {
			dist string
			gen  func() error
			read func() []byte
		}{
			{"bits", func() error { return g.Bits(b32) }, func() []byte { return bytesOf(cudatest.Download(t, b32)) }},
			{"uniform32", func() error { return curand.Uniform(g, f32) }, func() []byte { return bytesOf(cudatest.Download(t, f32)) }},
			{"normal32", func() error { return curand.Normal(g, f32, 0, 1) }, func() []byte { return bytesOf(cudatest.Download(t, f32)) }},
			{"uniform64", func() error { return curand.Uniform(g, f64) }, func() []byte { return bytesOf(cudatest.Download(t, f64)) }},
			{"normal64", func() error { return curand.Normal(g, f64, 1, 2) }, func() []byte { return bytesOf(cudatest.Download(t, f64)) }},
			{"lognormal32", func() error { return curand.LogNormal(g, f32, 0, 0.5) }, func() []byte { return bytesOf(cudatest.Download(t, f32)) }},
			{"poisson", func() error { return g.Poisson(b32, 5.5) }, func() []byte { return bytesOf(cudatest.Download(t, b32)) }},
		}
		for _, st := range steps {
			if err := st.gen(); err != nil {
				t.Fatalf("%v %s: %v", rng, st.dist, err)
			}
			hash(st.dist, st.read())
		}
	}
	for _, key := range order {
		if got[key] != want[key] {
			t.Errorf("%s: gocuda's numbers hash to %s, C's to %s", key, got[key], want[key])
		}
	}
	if len(order) != 7*7 {
		t.Errorf("%s has %d lines, want 49: 7 generators × 7 distributions", path, len(order))
	}
	t.Logf("%d sequences compared with C's", len(order))
}

func bytesOf[T any](s []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(*new(T))))
}

// TestDefaultRNG: the zero RNG, DefaultRNG, is Philox4x32-10, as the
// package says: the same numbers for the same seed.
func TestDefaultRNG(t *testing.T) {
	const n = 1024
	s, philox := generator(t, curand.Philox4x32_10, 42)
	ctx := s.Context()
	want := must(cuda.Alloc[uint32](ctx, n))(t)
	defer want.Free()
	if err := philox.Bits(want); err != nil {
		t.Fatal(err)
	}
	for _, rng := range []curand.RNG{0, curand.DefaultRNG} {
		g := generatorOn(t, s, rng, 42)
		if g.RNG() != curand.Philox4x32_10 {
			t.Errorf("New(s, %d, 42).RNG() = %v, want Philox4x32-10", int(rng), g.RNG())
		}
		got := must(cuda.Alloc[uint32](ctx, n))(t)
		defer got.Free()
		if err := g.Bits(got); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cudatest.Download(t, got), cudatest.Download(t, want)) {
			t.Errorf("New(s, %d, 42) gave other numbers than Philox4x32-10's", int(rng))
		}
	}
	if got := curand.DefaultRNG.String(); got != "Philox4x32-10" {
		t.Errorf("DefaultRNG.String() = %q", got)
	}
}

// celsius and metres are element types defined on float32 and float64,
// as a user's program would define them.
type (
	celsius float32
	metres  float64
)

// TestNamedFloats: buffers of types defined on float32 and float64 get the
// numbers a float32 or float64 buffer gets, bit for bit.
func TestNamedFloats(t *testing.T) {
	t.Run("celsius", func(t *testing.T) { namedFloats[celsius, float32](t) })
	t.Run("metres", func(t *testing.T) { namedFloats[metres, float64](t) })
}

func namedFloats[N, F cuda.Float](t *testing.T) {
	const n = 1001 // odd: Normal's last number from a pair of its own
	s, g := generator(t, curand.Philox4x32_10, 3)
	ref := generatorOn(t, s, curand.Philox4x32_10, 3)
	ctx := s.Context()
	named := must(cuda.Alloc[N](ctx, n))(t)
	defer named.Free()
	plain := must(cuda.Alloc[F](ctx, n))(t)
	defer plain.Free()
	for _, step := range []struct {
		name          string
		gen, genPlain func() error
	}{
		{"Uniform", func() error { return curand.Uniform(g, named) }, func() error { return curand.Uniform(ref, plain) }},
		{"Normal", func() error { return curand.Normal(g, named, 5, 2) }, func() error { return curand.Normal(ref, plain, 5, 2) }},
		{"LogNormal", func() error { return curand.LogNormal(g, named, 0, 0.5) }, func() error { return curand.LogNormal(ref, plain, 0, 0.5) }},
	} {
		if err := step.gen(); err != nil {
			t.Fatalf("%s into %T: %v", step.name, named, err)
		}
		if err := step.genPlain(); err != nil {
			t.Fatal(err)
		}
		got, want := cudatest.Download(t, named), cudatest.Download(t, plain)
		for i := range want {
			if F(got[i]) != want[i] {
				t.Fatalf("%s: element %d is %v, a %T buffer's %v", step.name, i, got[i], want[i], want[i])
			}
		}
	}
}

// TestString: a Generator says what it is, nil, zero and closed ones too,
// as package cuda's objects do.
func TestString(t *testing.T) {
	s, g := generator(t, curand.Philox4x32_10, 42)
	dev := s.Context().Device().String()
	if got, want := fmt.Sprint(g), "curand.Generator{Philox4x32-10, seed 42, "+dev+"}"; got != want {
		t.Errorf("String: %q, want %q", got, want)
	}
	if err := g.SetSeed(7); err != nil {
		t.Fatal(err)
	}
	sobol := generatorOn(t, s, curand.ScrambledSobol32, 0)
	closed := must(curand.New(s, curand.XORWOW, 1))(t)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		g    *curand.Generator
		want string
	}{
		{g, "curand.Generator{Philox4x32-10, seed 7, " + dev + "}"},
		{sobol, "curand.Generator{scrambled Sobol32, " + dev + "}"},
		{closed, "curand.Generator{XORWOW, seed 1, " + dev + ", closed}"},
		{new(curand.Generator), "curand.Generator{zero}"},
		{nil, "curand.Generator(nil)"},
	} {
		if got := tc.g.String(); got != tc.want {
			t.Errorf("String: %q, want %q", got, tc.want)
		}
	}
}

// TestFaults: an error names the call the user made, also where a call of
// package cuda made for it failed; a Close that fails leaves the generator
// usable, and a second one closes it.
func TestFaults(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	s, g := generator(t, curand.Philox4x32_10, 1)
	odd := must(cuda.Alloc[float32](s.Context(), 3))(t)
	defer odd.Free()
	f.Fail("cuMemAllocAsync", 1, 2)
	if err := curand.Normal(g, odd, 0, 1); !errors.Is(err, cuda.ErrOutOfMemory) || !strings.Contains(err.Error(), ": Normal: cuMemAllocAsync") {
		t.Errorf("Normal with its scratch memory's allocation failing: %v", err)
	}
	if err := g.Poisson(nil, 1); err == nil || !strings.Contains(err.Error(), "curand: Generator.Poisson: invalid value: dst is a nil") {
		t.Errorf("Poisson into nil: %v", err)
	}
	closing := must(curand.New(s, curand.XORWOW, 1))(t)
	f.Fail("curandDestroyGenerator", 1, int(curand.ResultInternalError))
	if err := closing.Close(); !errors.Is(err, curand.ResultInternalError) || !strings.Contains(err.Error(), "Generator.Close") {
		t.Fatalf("Close with curandDestroyGenerator failing: %v", err)
	}
	if err := curand.Uniform(closing, odd); err != nil {
		t.Errorf("Uniform after the failed Close: %v", err)
	}
	if err := closing.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if n := f.Live("rand"); n != 1 {
		t.Errorf("%d cuRAND generators alive, want 1 (the test's)", n)
	}
}

// The zero RNG is Philox4x32-10, the generator PyTorch and JAX use on the
// GPU; a Generator prints what it is.
func ExampleNew_default() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	g, err := curand.New(s, 0, 42)
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	fmt.Println(g)
	// Output: curand.Generator{Philox4x32-10, seed 42, cuda:0}
}

// TestUnalignedOutputs: a dst that starts one element into its allocation
// (a DeviceBuffer.Slice) gets the numbers an allocation of its own gets,
// for every distribution and generator type, odd and even counts. cuRAND
// stores normals in pairs (XORWOW's into a float32 one element in: a
// misaligned address on the H100, which ends the context), so the package
// takes any element-aligned output. One subtest per call, so that a GPU
// run can take each in a process of its own.
func TestUnalignedOutputs(t *testing.T) {
	gens := []struct {
		name string
		run  func(t *testing.T, rng curand.RNG, seed uint64, n int)
	}{
		{"Uniform32", func(t *testing.T, rng curand.RNG, seed uint64, n int) {
			unaligned[float32](t, rng, seed, n, func(g *curand.Generator, d *cuda.DeviceBuffer[float32]) error { return curand.Uniform(g, d) })
		}},
		{"Normal32", func(t *testing.T, rng curand.RNG, seed uint64, n int) {
			unaligned[float32](t, rng, seed, n, func(g *curand.Generator, d *cuda.DeviceBuffer[float32]) error { return curand.Normal(g, d, 1, 2) })
		}},
		{"Normal64", func(t *testing.T, rng curand.RNG, seed uint64, n int) {
			unaligned[float64](t, rng, seed, n, func(g *curand.Generator, d *cuda.DeviceBuffer[float64]) error { return curand.Normal(g, d, 1, 2) })
		}},
		{"LogNormal64", func(t *testing.T, rng curand.RNG, seed uint64, n int) {
			unaligned[float64](t, rng, seed, n, func(g *curand.Generator, d *cuda.DeviceBuffer[float64]) error { return curand.LogNormal(g, d, 0, 1) })
		}},
		{"Bits", func(t *testing.T, rng curand.RNG, seed uint64, n int) {
			unaligned[uint32](t, rng, seed, n, func(g *curand.Generator, d *cuda.DeviceBuffer[uint32]) error { return g.Bits(d) })
		}},
		{"Poisson", func(t *testing.T, rng curand.RNG, seed uint64, n int) {
			unaligned[uint32](t, rng, seed, n, func(g *curand.Generator, d *cuda.DeviceBuffer[uint32]) error { return g.Poisson(d, 3.5) })
		}},
	}
	for _, rng := range []curand.RNG{curand.Philox4x32_10, curand.XORWOW, curand.MRG32k3a, curand.MTGP32, curand.Sobol32} {
		for _, gen := range gens {
			for _, n := range []int{4, 5, 1000, 1001} {
				t.Run(fmt.Sprintf("%v/%s/%d", rng, gen.name, n), func(t *testing.T) {
					seed := uint64(7)
					if rng == curand.Sobol32 {
						seed = 0
					}
					gen.run(t, rng, seed, n)
				})
			}
		}
	}
}

func unaligned[T float32 | float64 | uint32](t *testing.T, rng curand.RNG, seed uint64, n int, gen func(*curand.Generator, *cuda.DeviceBuffer[T]) error) {
	t.Helper()
	s := cudatest.Stream(t, cudatest.Context(t))
	ctx := s.Context()
	whole := must(cuda.Alloc[T](ctx, n+2))(t)
	defer whole.Free()
	if err := whole.Memset8(0); err != nil {
		t.Fatal(err)
	}
	own := must(cuda.Alloc[T](ctx, n))(t)
	defer own.Free()
	if err := gen(generatorOn(t, s, rng, seed), must(whole.Slice(1, n))(t)); err != nil {
		t.Fatalf("into a slice one element in: %v", err)
	}
	if err := gen(generatorOn(t, s, rng, seed), own); err != nil {
		t.Fatal(err)
	}
	got, want := cudatest.Download(t, whole), cudatest.Download(t, own)
	if got[0] != 0 || got[n+1] != 0 {
		t.Errorf("the elements around the slice changed: %v and %v", got[0], got[n+1])
	}
	if !slices.Equal(got[1:n+1], want) {
		t.Errorf("a slice one element in got other numbers than an allocation of its own")
	}
}

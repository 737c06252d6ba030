package curand

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/attach"
	"github.com/gocuda/cuda/internal/calledas"
	"github.com/gocuda/cuda/internal/capturegate"
	"github.com/gocuda/cuda/internal/describe"
	clib "github.com/gocuda/cuda/internal/lib/curand"
	"github.com/gocuda/cuda/internal/lifetime"
	"github.com/gocuda/cuda/internal/track"
)

// RNG is a cuRAND generator type (curandRngType_t).
type RNG int

// The generators. The pseudo-random ones take a seed; Sobol's are
// quasi-random, one dimension, and take none. The zero RNG, DefaultRNG, is
// Philox4x32-10.
const (
	DefaultRNG       RNG = 0 // Philox4x32-10: New(s, 0, seed) makes one
	XORWOW           RNG = 101
	MRG32k3a         RNG = 121
	MTGP32           RNG = 141
	MT19937          RNG = 142
	Philox4x32_10    RNG = 161 // the default of PyTorch and JAX on the GPU
	Sobol32          RNG = 201
	ScrambledSobol32 RNG = 202
)

var rngNames = map[RNG]string{
	XORWOW: "XORWOW", MRG32k3a: "MRG32k3a", MTGP32: "MTGP32", MT19937: "MT19937",
	Philox4x32_10: "Philox4x32-10", Sobol32: "Sobol32", ScrambledSobol32: "scrambled Sobol32",
}

func (r RNG) String() string {
	if r == DefaultRNG {
		r = Philox4x32_10
	}
	if s, ok := rngNames[r]; ok {
		return s
	}
	return fmt.Sprintf("RNG(%d)", int(r))
}

// quasi reports whether r is a quasi-random generator.
func (r RNG) quasi() bool { return r == Sobol32 || r == ScrambledSobol32 }

// Generator is a cuRAND generator for one stream: every call queues its
// work on that stream, in the stream's order, and continues the
// generator's sequence. It is safe for use by many goroutines, whose calls
// take turns (the sequence follows their order). Close it when done. The
// zero Generator is not usable: its methods return cuda.ErrInvalidValue.
type Generator struct {
	// life is held by every call and closed by Close, which waits for the
	// calls in flight (internal/lifetime).
	life lifetime.Life
	// mu makes calls take turns: a cuRAND generator is not for concurrent
	// use. Lock order: life's hold, then mu, then the holds Stream.Do takes.
	mu     sync.Mutex
	stream *cuda.Stream
	rng    RNG
	seed   uint64 // the last seed set, for String; guarded by mu
	raw    *raw
	owner  *attach.Owner // its tie to its context's Close
}

// raw is the library's generator, shared with the cleanup of a Generator
// nobody closed.
type raw struct {
	ctx *cuda.Context
	h   clib.Generator
}

func (r *raw) destroy(op string) error {
	if r.h == 0 {
		return nil
	}
	if err := check(op, "curandDestroyGenerator", clib.DestroyGenerator(r.h)); err != nil {
		return err
	}
	r.h = 0
	return nil
}

// New makes a generator of type rng (DefaultRNG, the zero RNG, is
// Philox4x32-10) that queues its work on s, seeded with seed (a
// pseudo-random generator; a quasi-random one takes no seed: pass 0).
func New(s *cuda.Stream, rng RNG, seed uint64) (*Generator, error) {
	const op = "New"
	if s == nil {
		return nil, errorf(op, cuda.ErrInvalidValue, "s is a nil *cuda.Stream")
	}
	if rng == DefaultRNG {
		rng = Philox4x32_10
	}
	if _, ok := rngNames[rng]; !ok {
		return nil, errorf(op, cuda.ErrInvalidValue, "rng is %d: an unknown generator type", int(rng))
	}
	if rng.quasi() && seed != 0 {
		return nil, errorf(op, cuda.ErrInvalidValue, "seed is %d, but %v is quasi-random and takes no seed: pass 0", seed, rng)
	}
	if err := open(op); err != nil {
		return nil, err
	}
	r := &raw{ctx: s.Context()}
	err := s.Do(func(stream uintptr) error {
		if err := check(op, "curandCreateGenerator", clib.CreateGenerator(&r.h, int32(rng))); err != nil {
			return err
		}
		err := check(op, "curandSetStream", clib.SetStream(r.h, stream))
		if err == nil && !rng.quasi() {
			err = check(op, "curandSetPseudoRandomGeneratorSeed", clib.SetPseudoRandomGeneratorSeed(r.h, seed))
		}
		if err != nil {
			lifetime.CloseTemp(&err, func() error { return r.destroy(op) })
		}
		return err
	})
	if err != nil {
		return nil, calledas.Op(op, err)
	}
	g := &Generator{stream: s, rng: rng, seed: seed, raw: r}
	// The driver does not destroy a generator with its context: the
	// context's Close closes one still open.
	g.owner = attach.NewOwner(r.ctx, g, (*Generator).Close, func() error {
		if err := r.ctx.Do(func() error { return r.destroy("Generator cleanup") }); !errors.Is(err, cuda.ErrClosed) {
			return err
		}
		return nil
	})
	g.life.Arm(track.RandGenerator, runtime.AddCleanup(g, func(o *attach.Owner) {
		track.Forgotten(track.RandGenerator)
		capturegate.Cleanup(o.Destroy)
	}, g.owner))
	if err := g.owner.Register(); err != nil { // the context is closing
		return nil, calledas.Op(op, errors.Join(err, g.Close()))
	}
	return g, nil
}

// valid returns the error for a nil or zero Generator.
func (g *Generator) valid(op string) error {
	switch {
	case g == nil:
		return errorf(op, cuda.ErrInvalidValue, "nil *Generator")
	case g.life.Status() == lifetime.Zero:
		return errorf(op, cuda.ErrInvalidValue, "a zero Generator: make one with New")
	}
	return nil
}

// do runs queue with g held, its turn taken, and g's stream and mem held
// open with their context current (Stream.Do).
func (g *Generator) do(op string, mem []cuda.Memory, queue func(stream uintptr) error) error {
	if err := g.valid(op); err != nil {
		return err
	}
	if g.life.Hold() != lifetime.Held {
		return errorf(op, cuda.ErrClosed, "the generator is closed")
	}
	defer g.life.Release()
	g.mu.Lock()
	defer g.mu.Unlock()
	return calledas.Op(op, g.stream.Do(queue, mem...))
}

// Stream returns the stream g queues its work on.
func (g *Generator) Stream() *cuda.Stream {
	if g == nil {
		return nil
	}
	return g.stream
}

// RNG returns g's generator type (Philox4x32_10 for one New made of
// DefaultRNG).
func (g *Generator) RNG() RNG {
	if g == nil {
		return 0
	}
	return g.rng
}

// String describes g, as package cuda's objects print: its generator
// type, its seed (a pseudo-random generator's, as last set) and its
// device, as `curand.Generator{Philox4x32-10, seed 42, cuda:0}`, with
// "closed" once closed. It calls neither cuRAND nor the driver.
func (g *Generator) String() string {
	const kind = "curand.Generator"
	if g == nil {
		return kind + "(nil)"
	}
	st := g.life.Status()
	if st == lifetime.Zero {
		return describe.Object(kind, st)
	}
	parts := []string{g.rng.String()}
	if !g.rng.quasi() {
		g.mu.Lock()
		parts = append(parts, fmt.Sprintf("seed %d", g.seed))
		g.mu.Unlock()
	}
	return describe.Object(kind, st, append(parts, g.raw.ctx.Device().String())...)
}

// SetSeed seeds a pseudo-random generator again. Set the offset after it
// (SetOffset) to say where in the new seed's sequence the next call
// starts.
func (g *Generator) SetSeed(seed uint64) error {
	const op = "Generator.SetSeed"
	if err := g.valid(op); err != nil {
		return err
	}
	if g.rng.quasi() {
		return errorf(op, cuda.ErrInvalidValue, "%v is quasi-random and takes no seed", g.rng)
	}
	return g.do(op, nil, func(uintptr) error {
		if err := check(op, "curandSetPseudoRandomGeneratorSeed", clib.SetPseudoRandomGeneratorSeed(g.raw.h, seed)); err != nil {
			return err
		}
		g.seed = seed
		return nil
	})
}

// SetOffset moves g to the offset-th number of its sequence: the next
// call's numbers are those a fresh generator would give after skipping
// offset of them. (MTGP32 and MT19937 have no offsets: cuRAND's
// CURAND_STATUS_TYPE_ERROR.)
func (g *Generator) SetOffset(offset uint64) error {
	const op = "Generator.SetOffset"
	return g.do(op, nil, func(uintptr) error {
		return check(op, "curandSetGeneratorOffset", clib.SetGeneratorOffset(g.raw.h, offset))
	})
}

// Ordering is how a generator lays its numbers out in memory
// (curandOrdering_t), trading reproducibility across GPUs for speed.
type Ordering int

// The orderings. A pseudo-random generator's default is OrderingDefault;
// OrderingDynamic lets cuRAND pick the fastest layout for the GPU, whose
// numbers then differ from one kind of GPU to another (Philox4x32-10
// only).
const (
	OrderingDefault Ordering = 100
	OrderingBest    Ordering = 101
	OrderingSeeded  Ordering = 102
	OrderingLegacy  Ordering = 103
	OrderingDynamic Ordering = 104
)

// SetOrdering sets how a pseudo-random generator lays its numbers out.
// Set the offset after it (SetOffset) to say where the next call starts.
func (g *Generator) SetOrdering(ordering Ordering) error {
	const op = "Generator.SetOrdering"
	if err := g.valid(op); err != nil {
		return err
	}
	if ordering < OrderingDefault || ordering > OrderingDynamic || g.rng.quasi() {
		return errorf(op, cuda.ErrInvalidValue, "ordering %d for %v: want OrderingDefault to OrderingDynamic, for a pseudo-random generator", int(ordering), g.rng)
	}
	return g.do(op, nil, func(uintptr) error {
		return check(op, "curandSetGeneratorOrdering", clib.SetGeneratorOrdering(g.raw.h, int32(ordering)))
	})
}

// Close waits for the calls in flight and destroys the generator (cuRAND
// waits for its work on the device first). A Close that fails (the library
// refused, or the context could not be made current) leaves g usable and
// may be tried again: the generator is g's one resource, released last or
// not at all. Close of a closed Generator returns nil. Once g's context is
// closed, the library's generator went with it.
func (g *Generator) Close() error {
	const op = "Generator.Close"
	if err := g.valid(op); err != nil {
		return err
	}
	_, err := g.life.Close(func() (bool, error) {
		// Context.Close closes the generator first; one made while it
		// ran has nothing left to be destroyed with.
		if err := g.raw.ctx.Do(func() error { return g.raw.destroy(op) }); err != nil && !errors.Is(err, cuda.ErrClosed) {
			return false, calledas.Op(op, err)
		}
		g.owner.Closed()
		return true, nil
	})
	return err
}

package main

import (
	"errors"
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// Decoder is greedy decoding of b sequences with a key/value cache: the
// prompt's pass, then one step per new token, each step's work queued
// with no host synchronisation: the position and the last tokens stay in
// device memory, so that one CUDA graph of the step, captured once,
// serves every position.
type Decoder[T Float] struct {
	m       *Model[T]
	c       *Cache[T]
	pre, st *work[T]
	pos     *cuda.DeviceBuffer[int32] // the position the next step reads and writes
	out     *cuda.DeviceBuffer[int64] // [b, n]: the new tokens
	arrays  []*nd.Array[int64]
	b, p, n int

	graph *cuda.Graph
	exec  *cuda.GraphExec
}

// NewDecoder makes a decoder of b sequences with prompts of p tokens and n
// new tokens.
func (m *Model[T]) NewDecoder(b, p, n int) (d *Decoder[T], err error) {
	if b < 1 || b > 1024 || p < 1 || n < 1 || p+n > m.Context {
		return nil, fmt.Errorf("gpt2: %d sequences of %d tokens and %d more: want 1-1024 sequences, and at most the context's %d positions", b, p, n, m.Context)
	}
	d = &Decoder[T]{m: m, b: b, p: p, n: n}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if d.c, err = m.NewCache(b, p+n); err != nil {
		return nil, err
	}
	if d.pre, err = m.newWork(b, p, true); err != nil {
		return nil, err
	}
	if d.st, err = m.newWork(b, 1, true); err != nil {
		return nil, err
	}
	if d.pos, err = cuda.Zeroed[int32](m.s.Context(), 1); err != nil {
		return nil, err
	}
	out, err := nd.Zeros[int64](m.s, b, n)
	if err != nil {
		return nil, err
	}
	d.arrays = append(d.arrays, out)
	d.out, err = out.Buffer()
	return d, err
}

// Close frees the decoder's memory and graph.
func (d *Decoder[T]) Close() error {
	var errs []error
	if d.exec != nil {
		errs = append(errs, d.exec.Close())
	}
	if d.graph != nil {
		errs = append(errs, d.graph.Close())
	}
	for _, w := range []*work[T]{d.pre, d.st} {
		if w != nil {
			errs = append(errs, w.free())
		}
	}
	if d.c != nil {
		errs = append(errs, d.c.Free())
	}
	for _, a := range d.arrays {
		errs = append(errs, a.Free())
	}
	if d.pos != nil {
		errs = append(errs, d.pos.Free())
	}
	return errors.Join(errs...)
}

// Prefill queues the prompts' pass (b×p tokens, row-major), its keys and
// values into the emptied cache, and the first new tokens; the next step
// is at position p. Prefill again starts over (the graph stays valid: it
// reads the position, the tokens and the caches' lengths on the device).
func (d *Decoder[T]) Prefill(prompt []int64) error {
	if len(prompt) != d.b*d.p {
		return fmt.Errorf("gpt2: %d prompt tokens for %d sequences of %d", len(prompt), d.b, d.p)
	}
	for _, t := range prompt {
		if t < 0 || t >= int64(d.m.Vocab) {
			return fmt.Errorf("gpt2: token %d is not in the vocabulary of %d", t, d.m.Vocab)
		}
	}
	if err := d.pre.tok.CopyFromHostAsync(prompt, d.m.s); err != nil {
		return err
	}
	if err := d.m.forward(d.pre, d.c); err != nil {
		return err
	}
	if err := d.m.k.argmax.Launch(rows(d.b, 1024, d.m.s), d.pre.logits, d.st.tok, int32(d.m.Vocab)); err != nil {
		return err
	}
	if err := d.pos.CopyFromHostAsync([]int32{int32(d.p - 1)}, d.m.s); err != nil {
		return err
	}
	return d.advance()
}

// advance queues out[:, pos-(p-1)] = the last tokens, and pos += 1.
func (d *Decoder[T]) advance() error {
	return d.m.k.advance.Launch(rows(1, (d.b+31)/32*32, d.m.s), d.st.tok, d.out, d.pos, int32(d.p-1), int32(d.b), int32(d.n))
}

// step queues one decoding step: the last tokens at position pos through
// the model, the next tokens chosen (argmax), pos moved on.
func (d *Decoder[T]) step() error {
	if err := d.m.pass(d.st, d.c, d.pos); err != nil {
		return err
	}
	if err := d.m.k.argmax.Launch(rows(d.b, 1024, d.m.s), d.st.logits, d.st.tok, int32(d.m.Vocab)); err != nil {
		return err
	}
	return d.advance()
}

// Steps queues k steps: eagerly (graph false), or as replays of the step's
// graph, captured on first use (after an eager step has compiled the
// kernels and made cuBLAS's plans: a capture compiles nothing).
func (d *Decoder[T]) Steps(k int, graph bool) error {
	if k <= 0 {
		return nil
	}
	if !graph {
		for range k {
			if err := d.step(); err != nil {
				return err
			}
		}
		return nil
	}
	if d.exec == nil {
		if err := d.step(); err != nil { // the warm step is the first of the k
			return err
		}
		k--
		if err := d.Capture(); err != nil {
			return err
		}
	}
	for range k {
		if err := d.exec.Launch(d.m.s); err != nil {
			return err
		}
	}
	return nil
}

// Capture captures the step as a graph and instantiates it (no work
// runs). The kernels must have run once (a capture compiles nothing).
func (d *Decoder[T]) Capture() error {
	g, err := d.m.s.Capture(cuda.CaptureGlobal, d.step)
	if err != nil {
		return err
	}
	exec, err := g.Instantiate()
	if err != nil {
		g.Close()
		return err
	}
	d.graph, d.exec = g, exec
	return nil
}

// Generate returns n new tokens for each of b prompts (b×p tokens,
// row-major): the prompts' pass, then n-1 steps, replays of the step's
// graph where graph is set.
func (d *Decoder[T]) Generate(prompt []int64, graph bool) ([]int64, error) {
	if err := d.Prefill(prompt); err != nil {
		return nil, err
	}
	if err := d.Steps(d.n-1, graph); err != nil {
		return nil, err
	}
	return d.Tokens()
}

// Tokens waits for the queued steps and returns the new tokens, [b, n]
// row-major.
func (d *Decoder[T]) Tokens() ([]int64, error) {
	out := make([]int64, d.b*d.n)
	if err := d.m.s.Synchronize(); err != nil {
		return nil, err
	}
	return out, d.out.CopyToHost(out)
}

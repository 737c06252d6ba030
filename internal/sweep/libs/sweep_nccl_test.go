package libs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/sweep"
	"github.com/gocuda/cuda/nccl"
)

// allReduces checks that c still all-reduces b on s, in place.
func allReduces(c *nccl.Comm, b *cuda.DeviceBuffer[float32], s *cuda.Stream) error {
	return sweep.FirstErr(func() error { return nccl.AllReduce(c, b, b, nccl.Sum, s) }, s.Synchronize)
}

// stillRegistered checks that b is registered with a communicator: its
// Free is refused.
func stillRegistered(b *cuda.DeviceBuffer[float32]) error {
	if err := b.Free(); !errors.Is(err, cuda.ErrInvalidValue) {
		return fmt.Errorf("the buffer is no longer registered: its Free returned %v", err)
	}
	return nil
}

// sweepNCCL is the fault sweep's rows of NCCL's communicators, collectives and registrations.
func sweepNCCL() []sweep.Case {
	return []sweep.Case{
		{Name: "nccl", Covers: []string{"nccl.NewComms", "nccl.NewUniqueID", "nccl.NewComm", "nccl.AllReduce", "nccl.Broadcast",
			"nccl.Reduce", "nccl.AllGather", "nccl.ReduceScatter", "nccl.Group", "nccl.Version", "Comm.Close",
			"nccl.ShareUniqueID", "nccl.NewCommFromLaunch", "nccl.Send", "nccl.Recv", "nccl.AllToAll", "nccl.NewCommContext", "Comm.Split",
			"Comm.Register", "Registration.Close", "nccl.Alloc", "Allocation.Free", "Comm.Err", "Comm.Wait"},
			// The collectives run on a communicator of one rank: in one of
			// two, a rank whose call fails leaves the other's waiting for
			// it, as NCCL's do (Comm.Abort is the way out, not Close).
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var comms []*nccl.Comm
				var one, launched, split, lsplit *nccl.Comm
				var reg *nccl.Registration
				var mem *nccl.Allocation
				b, g := must(cuda.FromHost(e.Ctx, []float32{1, 2}))(t), must(cuda.Alloc[float32](e.Ctx, 2))(t)
				return func() error {
						return sweep.FirstErr(
							func() error { _, err := nccl.Version(); return err },
							func() (err error) { comms, err = nccl.NewComms([]*cuda.Context{e.Ctx, e.Ctx1}); return err },
							func() error { return sweep.FirstErr(comms[0].Close, comms[1].Close) },
							func() error {
								id, err := nccl.NewUniqueID()
								if err != nil {
									return err
								}
								one, err = nccl.NewComm(e.Ctx, id, 1, 0)
								return err
							},
							func() (err error) { reg, err = one.Register(b); return err },
							func() (err error) { mem, err = nccl.Alloc(e.Ctx, 256); return err },
							func() error {
								return nccl.Group(func() error {
									return sweep.FirstErr(
										func() error { return nccl.AllReduce(one, b, b, nccl.Sum, e.S) },
										func() error { return nccl.Broadcast(one, b, b, 0, e.S) },
										func() error { return nccl.Reduce(one, b, b, nccl.Max, 0, e.S) },
										func() error { return nccl.AllGather(one, g, b, e.S) },
										func() error { return nccl.ReduceScatter(one, b, g, nccl.Sum, e.S) },
										func() error { return nccl.AllToAll(one, g, b, e.S) },
										// A receive only after its send: a receive
										// without one waits for ever, as NCCL's.
										func() error { return nccl.Send(one, b, 0, e.S) },
										func() error { return nccl.Recv(one, g, 0, e.S) })
								})
							},
							func() error { return e.S.Synchronize() },
							// On an idle stream: one query, one look at the
							// communicator, as many calls each run.
							func() error { return one.Wait(context.Background(), e.S) },
							func() error { return one.Err() },
							func() error { return reg.Close() },
							func() error { return mem.Free() },
							func() (err error) { split, err = one.Split(0, 0); return err },
							func() error { return split.Close() },
							func() error { return one.Close() },
							// A job of one rank: the rendezvous makes the id
							// and listens for nobody.
							func() (err error) {
								launched, err = nccl.NewCommFromLaunch(context.Background(), e.Ctx, nccl.Launch{Size: 1, Addr: "127.0.0.1:1"})
								return err
							},
							// It is non-blocking: NCCL may leave each call
							// in progress, and gocuda waits.
							func() error { return nccl.AllReduce(launched, b, b, nccl.Sum, e.S) },
							func() error {
								return nccl.Group(func() error { return nccl.AllReduce(launched, b, b, nccl.Sum, e.S) })
							},
							func() (err error) { lsplit, err = launched.Split(0, 0); return err },
							func() error { return nccl.AllReduce(lsplit, b, b, nccl.Sum, e.S) },
							func() error { return e.S.Synchronize() },
							func() error { return lsplit.Close() },
							func() error { return launched.Close() },
						)
					}, func(t *testing.T, _ error) {
						e.S.Synchronize()
						if err := errors.Join(reg.Close(), mem.Free()); err != nil {
							t.Errorf("cleanup: %v", err)
						}
						for _, c := range append(comms, one, launched, split, lsplit) {
							if c != nil && c.Close() != nil {
								if err := c.Close(); err != nil {
									t.Errorf("closing a communicator again: %v", err)
								}
							}
						}
						b.Free()
						g.Free()
					}
			}},
		// A communicator's Close and Abort, a registration's Close and an
		// allocation's Free that fail leave it whole: a registered buffer
		// stays registered (its Free refused), an allocation's buffer
		// usable.
		{Name: "Comm.Close", Covers: []string{"Comm.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				c := must(nccl.NewComm(e.Ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
				b := must(cuda.FromHost(e.Ctx, []float32{1, 2}))(t)
				must(c.Register(b))(t)
				return c.Close, func(t *testing.T, err error) {
					sweep.CloseAgain(func() error { return allReduces(c, b, e.S) }, c.Close)(t, err)
					if err := b.Free(); err != nil {
						t.Errorf("the buffer once its communicator is closed: %v", err)
					}
				}
			}},
		{Name: "Comm.Abort", Covers: []string{"Comm.Abort"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				c := must(nccl.NewComm(e.Ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
				b := must(cuda.FromHost(e.Ctx, []float32{1, 2}))(t)
				must(c.Register(b))(t)
				return c.Abort, func(t *testing.T, err error) {
					sweep.CloseAgain(func() error {
						return sweep.FirstErr(func() error { return allReduces(c, b, e.S) }, func() error { return stillRegistered(b) })
					}, c.Abort)(t, err)
					if err := b.Free(); err != nil {
						t.Errorf("the buffer once its communicator is aborted: %v", err)
					}
				}
			}},
		{Name: "Registration.Close", Covers: []string{"Registration.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				c := must(nccl.NewComm(e.Ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
				b := must(cuda.FromHost(e.Ctx, []float32{1, 2}))(t)
				r := must(c.Register(b))(t)
				return r.Close, func(t *testing.T, err error) {
					sweep.CloseAgain(func() error { return stillRegistered(b) }, r.Close)(t, err)
					if err := errors.Join(b.Free(), c.Close()); err != nil {
						t.Errorf("cleanup: %v", err)
					}
				}
			}},
		{Name: "Allocation.Free", Covers: []string{"Allocation.Free"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				mem := must(nccl.Alloc(e.Ctx, 256))(t)
				return mem.Free, sweep.CloseAgain(func() error { return mem.Buffer().CopyFromHost(make([]byte, 256)) }, mem.Free)
			}},
	}
}

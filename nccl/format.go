package nccl

import (
	"fmt"

	"github.com/gocuda/cuda/internal/describe"
	"github.com/gocuda/cuda/internal/lifetime"
)

// What this package's objects print (fmt's %v and Println), as package
// cuda's do: the type, what it is, its device and its state, from what
// gocuda knows, without calling NCCL or the driver.

// String describes c: `nccl.Comm{rank 0 of 2, cuda:0}`, with
// "non-blocking" for a communicator made without blocking
// (NewCommContext), and "closed" once closed or aborted.
func (c *Comm) String() string {
	if c == nil {
		return "nccl.Comm(nil)"
	}
	st := c.life.Status()
	if st == lifetime.Zero {
		return describe.Object("nccl.Comm", st)
	}
	parts := []string{fmt.Sprintf("rank %d of %d", c.rank, c.size), c.ctx.Device().String()}
	if c.nonBlocking {
		parts = append(parts, "non-blocking")
	}
	return describe.Object("nccl.Comm", st, parts...)
}

// String describes r: `nccl.Registration{4.0 KiB, rank 0 of 2, cuda:0}`,
// "closed" once closed, as its communicator's Close and Abort close it.
func (r *Registration) String() string {
	if r == nil {
		return "nccl.Registration(nil)"
	}
	st := r.life.Status()
	if st == lifetime.Zero {
		return describe.Object("nccl.Registration", st)
	}
	return describe.Object("nccl.Registration", st, describe.Bytes(int64(r.bytes)), fmt.Sprintf("rank %d of %d", r.c.rank, r.c.size), r.c.ctx.Device().String())
}

// String describes a: `nccl.Allocation{4.0 KiB, cuda:0}`, "closed" once
// freed.
func (a *Allocation) String() string {
	if a == nil {
		return "nccl.Allocation(nil)"
	}
	st := a.life.Status()
	if st == lifetime.Zero {
		return describe.Object("nccl.Allocation", st)
	}
	return describe.Object("nccl.Allocation", st, describe.Bytes(int64(a.bytes)), a.ctx.Device().String())
}

// String describes id by its size alone, `nccl.UniqueID{128 bytes}`
// (`nccl.UniqueID{zero}` before NewUniqueID): whoever has its bytes can
// join the communicator, so a log line must not give them away.
// MarshalText is for handing it to the other ranks.
func (id UniqueID) String() string {
	if id == (UniqueID{}) {
		return "nccl.UniqueID{zero}"
	}
	return fmt.Sprintf("nccl.UniqueID{%d bytes}", len(id))
}

// GoString is String, for %#v, which would otherwise print the bytes
// (as %d and the other verbs for numbers still do).
func (id UniqueID) GoString() string { return id.String() }

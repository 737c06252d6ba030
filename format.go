package cuda

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/gocuda/cuda/internal/describe"
	"github.com/gocuda/cuda/internal/lifetime"
)

// What gocuda's objects print (fmt's %v and Println): the type, what it
// is, its device and its state, so that a log line says which object it
// was. None of them calls the driver: printing a closed object, or one on
// a device that has failed, prints what gocuda knows.

// device names the device of the context l was made in.
func (l *life) device() string {
	if l.ctx == nil {
		return "no device"
	}
	return l.ctx.dev.String()
}

func typeName[T any]() string { return reflect.TypeFor[T]().String() }

// String describes b: `cuda.DeviceBuffer[float32]{1024 elements, 4.0 KiB,
// cuda:0}`, with "view" for a slice or view of another buffer and "closed"
// once freed.
func (b *DeviceBuffer[T]) String() string {
	kind := "cuda.DeviceBuffer[" + typeName[T]() + "]"
	switch {
	case b == nil:
		return kind + "(nil)"
	case b.mem == nil:
		return describe.Object(kind, lifetime.Zero)
	}
	parts := []string{fmt.Sprintf("%d elements", b.n), formatBytes(uintptr(b.ByteSize())), b.mem.device()}
	if !b.frees {
		parts = append(parts, "view")
	}
	return describe.Object(kind, b.mem.status(), parts...)
}

// String describes c: `cuda.Context{cuda:0}`, "closed" once closed.
func (c *Context) String() string {
	if c == nil {
		return "cuda.Context(nil)"
	}
	if c.life.Status() == lifetime.Zero {
		return describe.Object("cuda.Context", lifetime.Zero)
	}
	return describe.Object("cuda.Context", c.life.Status(), c.dev.String())
}

// String describes s: `cuda.Stream{cuda:0, priority 0}`.
func (s *Stream) String() string {
	if s == nil {
		return "cuda.Stream(nil)"
	}
	if s.status() == lifetime.Zero {
		return describe.Object("cuda.Stream", lifetime.Zero)
	}
	return describe.Object("cuda.Stream", s.status(), s.device(), fmt.Sprintf("priority %d", s.priority))
}

// String describes e: `cuda.Event{cuda:0, timed}`.
func (e *Event) String() string {
	if e == nil {
		return "cuda.Event(nil)"
	}
	if e.status() == lifetime.Zero {
		return describe.Object("cuda.Event", lifetime.Zero)
	}
	parts := []string{e.device()}
	if e.timing {
		parts = append(parts, "timed")
	}
	if e.interprocess {
		parts = append(parts, "interprocess")
	}
	return describe.Object("cuda.Event", e.status(), parts...)
}

// String describes m: `cuda.Module{cuda:0}`, with its kernels' names where
// it was loaded from PTX.
func (m *Module) String() string {
	if m == nil {
		return "cuda.Module(nil)"
	}
	if m.status() == lifetime.Zero {
		return describe.Object("cuda.Module", lifetime.Zero)
	}
	parts := []string{m.device()}
	if len(m.params) > 0 {
		names := make([]string, 0, len(m.params))
		for name := range m.params {
			names = append(names, name)
		}
		slices.Sort(names)
		parts = append(parts, "kernels "+strings.Join(names, " "))
	}
	return describe.Object("cuda.Module", m.status(), parts...)
}

// String describes f: `cuda.Function{saxpy, cuda:0}`.
func (f *Function) String() string {
	switch {
	case f == nil:
		return "cuda.Function(nil)"
	case f.mod == nil:
		return describe.Object("cuda.Function", lifetime.Zero)
	}
	return describe.Object("cuda.Function", f.mod.status(), f.name, f.mod.device())
}

// String describes b: `cuda.PinnedBuffer[float32]{1024 elements, 4.0 KiB,
// cuda:0}`.
func (b *PinnedBuffer[T]) String() string {
	kind := "cuda.PinnedBuffer[" + typeName[T]() + "]"
	if b == nil {
		return kind + "(nil)"
	}
	if b.status() == lifetime.Zero {
		return describe.Object(kind, lifetime.Zero)
	}
	n := len(b.data)
	return describe.Object(kind, b.status(), fmt.Sprintf("%d elements", n), formatBytes(uintptr(n)*sizeOf[T]()), b.device())
}

// String describes p: `cuda.MemPool{cuda:0, 2 buffers}`, "default" for a
// device's own pool.
func (p *MemPool) String() string {
	if p == nil {
		return "cuda.MemPool(nil)"
	}
	if p.status() == lifetime.Zero {
		return describe.Object("cuda.MemPool", lifetime.Zero)
	}
	parts := []string{p.dev.String(), fmt.Sprintf("%d buffers", p.outstanding.Load())}
	if !p.owned {
		parts = append(parts, "default")
	}
	return describe.Object("cuda.MemPool", p.status(), parts...)
}

// String describes g: `cuda.Graph{cuda:0}`, or `cuda.Graph{cuda:0,
// conditional body}` for the body of a conditional node.
func (g *Graph) String() string {
	if g == nil {
		return "cuda.Graph(nil)"
	}
	// A body has no lifetime of its own: it lives and is closed with
	// the graph it is part of, whose state and device it prints.
	r := g.root()
	if r.status() == lifetime.Zero {
		return describe.Object("cuda.Graph", lifetime.Zero)
	}
	if g.parent != nil {
		return describe.Object("cuda.Graph", r.status(), r.device(), "conditional body")
	}
	return describe.Object("cuda.Graph", r.status(), r.device())
}

// String describes e: `cuda.GraphExec{cuda:0}`.
func (e *GraphExec) String() string {
	if e == nil {
		return "cuda.GraphExec(nil)"
	}
	if e.status() == lifetime.Zero {
		return describe.Object("cuda.GraphExec", lifetime.Zero)
	}
	return describe.Object("cuda.GraphExec", e.status(), e.device())
}

// String describes sb: `cuda.StagingBuffer{64.0 MiB pinned}`. A zero
// StagingBuffer is a usable one that holds no memory yet.
func (sb *StagingBuffer) String() string {
	if sb == nil {
		return "cuda.StagingBuffer(nil)"
	}
	sb.mu.Lock()
	held := sb.capacity
	sb.mu.Unlock()
	return "cuda.StagingBuffer{" + describe.Bytes(int64(held)) + " pinned}"
}

// String describes b: `cuda.ManagedBuffer[float32]{1024 elements, 4.0 KiB,
// cuda:0}`.
func (b *ManagedBuffer[T]) String() string {
	kind := "cuda.ManagedBuffer[" + typeName[T]() + "]"
	switch {
	case b == nil:
		return kind + "(nil)"
	case b.buf == nil:
		return describe.Object(kind, lifetime.Zero)
	}
	return describe.Object(kind, b.buf.mem.status(), fmt.Sprintf("%d elements", b.buf.n), formatBytes(uintptr(b.buf.ByteSize())), b.buf.mem.device())
}

// String describes b: `cuda.Registered[byte]{4096 elements, 4.0 KiB,
// cuda:0}`.
func (b *Registered[T]) String() string {
	kind := "cuda.Registered[" + typeName[T]() + "]"
	if b == nil {
		return kind + "(nil)"
	}
	if b.status() == lifetime.Zero {
		return describe.Object(kind, lifetime.Zero)
	}
	return describe.Object(kind, b.status(), fmt.Sprintf("%d elements", b.n), formatBytes(uintptr(b.n)*sizeOf[T]()), b.device())
}

// String describes b: `cuda.GrowableBuffer[float32]{1024 elements, 4.0 KiB
// mapped of 1.0 GiB reserved, cuda:0}`.
func (b *GrowableBuffer[T]) String() string {
	kind := "cuda.GrowableBuffer[" + typeName[T]() + "]"
	if b == nil {
		return kind + "(nil)"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.vmmRange == nil || b.ctx == nil {
		return describe.Object(kind, lifetime.Zero)
	}
	st := lifetime.Held
	if b.freed {
		st = lifetime.Closed
	}
	return describe.Object(kind, st, fmt.Sprintf("%d elements", b.n),
		describe.Bytes(int64(b.mapped))+" mapped of "+describe.Bytes(int64(b.reserved))+" reserved", b.ctx.dev.String())
}

// String describes l: `cuda.Library{kernels saxpy, 2 contexts}`.
func (l *Library) String() string {
	if l == nil {
		return "cuda.Library(nil)"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == 0 && !l.closed {
		return describe.Object("cuda.Library", lifetime.Zero)
	}
	var parts []string
	if len(l.params) > 0 {
		names := make([]string, 0, len(l.params))
		for name := range l.params {
			names = append(names, name)
		}
		slices.Sort(names)
		parts = append(parts, "kernels "+strings.Join(names, " "))
	}
	parts = append(parts, fmt.Sprintf("%d contexts", len(l.views)))
	st := lifetime.Held
	if l.closed {
		st = lifetime.Closed
	}
	return describe.Object("cuda.Library", st, parts...)
}

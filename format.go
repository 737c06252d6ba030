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

package cuda_test

import (
	"errors"
	"fmt"
	"regexp"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

// TestStrings: every object prints what it is (its type, size, device and
// state), in use, closed, zero and nil, as fmt.Println shows it.
func TestStrings(t *testing.T) {
	ctx := cudatest.Context(t)
	s := must(ctx.NewStream())(t)
	defer s.Close()
	ev := must(ctx.NewEvent())(t)
	defer ev.Close()
	mod := loadKernels(t, ctx)
	fn := must(mod.Function("saxpy"))(t)
	buf := must(cuda.Alloc[float32](ctx, 1024))(t)
	defer buf.Free()
	view := must(buf.Slice(0, 10))(t)
	pinned := must(cuda.AllocPinned[int64](ctx, 3))(t)
	defer pinned.Free()
	freed := must(cuda.Alloc[uint8](ctx, 3))(t)
	must(0, freed.Free())(t)
	closedStream := must(ctx.NewStream())(t)
	must(0, closedStream.Close())(t)
	dev := ctx.Device().String()
	pool := must(ctx.NewMemPool())(t)
	defer pool.Close()
	graph := must(ctx.NewGraph())(t)
	defer graph.Close()
	staging := must(cuda.NewStagingBuffer(ctx, 1<<20))(t)
	defer staging.Close()
	managed := must(cuda.AllocManaged[uint16](ctx, 5, cuda.AttachGlobal))(t)
	defer managed.Free()
	registered := must(cuda.Register(ctx, make([]float32, 1024)))(t)
	defer registered.Close()

	for _, c := range []struct {
		name string
		v    fmt.Stringer
		want string // a regular expression matching all of it
	}{
		{"buffer", buf, `^cuda\.DeviceBuffer\[float32\]\{1024 elements, 4\.0 KiB, ` + dev + `\}$`},
		{"view", view, `^cuda\.DeviceBuffer\[float32\]\{10 elements, 40 bytes, ` + dev + `, view\}$`},
		{"freed buffer", freed, `^cuda\.DeviceBuffer\[uint8\]\{3 elements, 3 bytes, ` + dev + `, closed\}$`},
		{"zero buffer", new(cuda.DeviceBuffer[int32]), `^cuda\.DeviceBuffer\[int32\]\{zero\}$`},
		{"nil buffer", (*cuda.DeviceBuffer[int32])(nil), `^cuda\.DeviceBuffer\[int32\]\(nil\)$`},
		{"context", ctx, `^cuda\.Context\{` + dev + `\}$`},
		{"zero context", new(cuda.Context), `^cuda\.Context\{zero\}$`},
		{"stream", s, `^cuda\.Stream\{` + dev + `, priority 0\}$`},
		{"closed stream", closedStream, `^cuda\.Stream\{` + dev + `, priority 0, closed\}$`},
		{"nil stream", (*cuda.Stream)(nil), `^cuda\.Stream\(nil\)$`},
		{"event", ev, `^cuda\.Event\{` + dev + `, timed\}$`},
		{"module", mod, `^cuda\.Module\{` + dev + `, kernels .*saxpy.*\}$`},
		{"function", fn, `^cuda\.Function\{saxpy, ` + dev + `\}$`},
		{"pinned", pinned, `^cuda\.PinnedBuffer\[int64\]\{3 elements, 24 bytes, ` + dev + `\}$`},
		{"pool", pool, `^cuda\.MemPool\{` + dev + `, 0 buffers\}$`},
		{"zero pool", new(cuda.MemPool), `^cuda\.MemPool\{zero\}$`},
		{"graph", graph, `^cuda\.Graph\{` + dev + `\}$`},
		{"nil graph exec", (*cuda.GraphExec)(nil), `^cuda\.GraphExec\(nil\)$`},
		{"staging", staging, `^cuda\.StagingBuffer\{[0-9.]+ (KiB|MiB) pinned\}$`},
		{"zero staging", new(cuda.StagingBuffer), `^cuda\.StagingBuffer\{0 bytes pinned\}$`},
		{"managed", managed, `^cuda\.ManagedBuffer\[uint16\]\{5 elements, 10 bytes, ` + dev + `\}$`},
		{"registered", registered, `^cuda\.Registered\[float32\]\{1024 elements, 4\.0 KiB, ` + dev + `\}$`},
		{"zero growable", new(cuda.GrowableBuffer[int32]), `^cuda\.GrowableBuffer\[int32\]\{zero\}$`},
		{"zero library", new(cuda.Library), `^cuda\.Library\{zero\}$`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.v.String()
			if !regexp.MustCompile(c.want).MatchString(got) {
				t.Errorf("String() = %q, want %s", got, c.want)
			}
			if p := fmt.Sprint(c.v); p != got {
				t.Errorf("fmt.Sprint = %q, String() = %q", p, got)
			}
		})
	}
}

// TestToHost: ToHost returns a new slice with the buffer's elements, after
// the work queued on it; an empty buffer gives an empty slice; a freed one
// ErrClosed, named as ToHost.
func TestToHost(t *testing.T) {
	ctx := cudatest.Context(t)
	s := must(ctx.NewStream())(t)
	defer s.Close()
	want := random[float64](1000)
	b := must(cuda.Alloc[float64](ctx, len(want)))(t)
	defer b.Free()
	must(0, b.CopyFromHostAsync(want, s))(t) // queued: ToHost must wait for it
	got := must(b.ToHost())(t)
	if !equal(got, want) {
		t.Errorf("ToHost after an asynchronous upload differs from what was uploaded")
	}
	sl := must(b.Slice(10, 3))(t)
	if got := must(sl.ToHost())(t); !equal(got, want[10:13]) {
		t.Errorf("ToHost of a slice = %v, want %v", got, want[10:13])
	}
	empty := must(cuda.Alloc[int8](ctx, 0))(t)
	defer empty.Free()
	if got, err := empty.ToHost(); err != nil || got == nil || len(got) != 0 {
		t.Errorf("ToHost of an empty buffer = %v, %v; want an empty slice", got, err)
	}
	must(0, b.Free())(t)
	if got, err := b.ToHost(); !errors.Is(err, cuda.ErrClosed) || got != nil || !regexp.MustCompile(`ToHost`).MatchString(err.Error()) {
		t.Errorf("ToHost of a freed buffer = %v, %v; want ErrClosed naming ToHost", got, err)
	}
	var zero *cuda.DeviceBuffer[int8]
	if _, err := zero.ToHost(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("ToHost of a nil buffer: %v, want ErrInvalidValue", err)
	}
}

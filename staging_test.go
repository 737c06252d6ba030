package cuda_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/hostcopy"
)

func TestStagingZeroValue(t *testing.T) {
	var sb cuda.StagingBuffer
	if sb.Capacity() != 0 || sb.Stats() != (cuda.StagingStats{}) {
		t.Errorf("zero value: capacity %d, stats %+v", sb.Capacity(), sb.Stats())
	}
	if o := sb.Options(); o != cuda.DefaultStagingOptions() || o.UploadStageMaxBytes != 0 || o.DownloadStageMaxBytes != 0 {
		t.Errorf("Options() = %+v; want the defaults, staging nothing", o)
	}
	if sb.AutoStageMaxBytes() != 0 {
		t.Errorf("AutoStageMaxBytes() = %d", sb.AutoStageMaxBytes())
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	defer sb.Close()
	b := must(cuda.Alloc[int32](ctx, 1000))(t)
	defer b.Free()
	src := random[int32](1000)
	if err := cuda.Upload(&sb, b, src, s); err != nil {
		t.Fatal(err)
	}
	wantStaged := sb.AutoStageMaxBytes() >= 4000
	if st := sb.Stats(); st.BytesUp != 4000 || (st.Staged == 1) != wantStaged || (sb.Capacity() != 0) != wantStaged {
		t.Errorf("after one small upload: capacity %d, stats %+v", sb.Capacity(), st)
	}
	sb.SetAutoStageMaxBytes(4000)
	if err := cuda.Upload(&sb, b, src, s); err != nil {
		t.Fatal(err)
	}
	if sb.Capacity() != cuda.StagingGranularity || sb.Stats().Allocations != 1 || sb.Stats().Staged < 1 {
		t.Errorf("after a staged upload: capacity %d, stats %+v", sb.Capacity(), sb.Stats())
	}
	got := make([]int32, 1000)
	b.CopyToHost(got)
	if !equal(got, src) {
		t.Error("Upload: data differs")
	}
}

func TestStagingReserve(t *testing.T) {
	ctx := cudatest.Context(t)
	if _, err := cuda.NewStagingBuffer(ctx, 0); !errors.Is(err, cuda.ErrInvalidValue) || !strings.HasPrefix(err.Error(), "cuda: NewStagingBuffer:") {
		t.Errorf("NewStagingBuffer(0): %v; want ErrInvalidValue naming NewStagingBuffer", err)
	}
	sb, err := cuda.NewStagingBuffer(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if sb.Capacity() != 64<<10 || sb.Stats().Allocations != 1 {
		t.Errorf("NewStagingBuffer(100): capacity %d, allocations %d", sb.Capacity(), sb.Stats().Allocations)
	}
	if err := sb.Reserve(ctx, 1000); err != nil || sb.Capacity() != 64<<10 || sb.Stats().Allocations != 1 {
		t.Errorf("smaller Reserve: %v, capacity %d", err, sb.Capacity())
	}
	if err := sb.Reserve(ctx, 64<<10+1); err != nil || sb.Capacity() != 128<<10 || sb.Stats().Allocations != 2 {
		t.Errorf("growing Reserve: %v, capacity %d, allocations %d", err, sb.Capacity(), sb.Stats().Allocations)
	}
	for _, bad := range []int{0, -1, math.MaxInt} {
		if err := sb.Reserve(ctx, bad); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("Reserve(%d): %v", bad, err)
		}
	}
	// A context that cannot allocate is refused before the memory held is
	// discarded.
	closed := must(cuda.NewContext(ctx.Device()))(t)
	closed.Close()
	for name, c := range map[string]*cuda.Context{"nil": nil, "zero": {}, "closed": closed} {
		if err := sb.Reserve(c, 1<<20); err == nil {
			t.Errorf("Reserve in a %s context succeeded", name)
		}
		if sb.Capacity() != 128<<10 {
			t.Errorf("Reserve in a %s context: capacity %d; want the 128 KiB held", name, sb.Capacity())
		}
	}
	if sb.Capacity() != 128<<10 {
		t.Error("a failed Reserve changed the capacity")
	}
	sb.ShrinkToFit()
	if sb.Capacity() != 0 || sb.Stats().Allocations != 2 {
		t.Errorf("after ShrinkToFit: capacity %d, stats %+v", sb.Capacity(), sb.Stats())
	}
}

func TestUploadWithDownloadInto(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	var sb cuda.StagingBuffer
	defer sb.Close()
	for _, n := range []int{1, 1000, 150 << 10 / 8, 1<<20 + 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			b := must(cuda.Alloc[float64](ctx, n))(t)
			defer b.Free()
			want := random[float64](n)
			err := cuda.UploadWith(&sb, b, n, s, func(p []float64) {
				if len(p) != n {
					t.Errorf("fill got %d elements, want %d", len(p), n)
				}
				copy(p, want)
			})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float64, n)
			b.CopyToHost(got)
			if !equal(got, want) {
				t.Fatal("UploadWith: data differs")
			}
			b.Memset32(0x3f800000) // each word 1.0f: new data to download
			in, err := cuda.DownloadInto(&sb, b, n, s)
			if err != nil {
				t.Fatal(err)
			}
			b.CopyToHost(got)
			if len(in) != n || !equal(in, got) {
				t.Fatal("DownloadInto: data differs")
			}
		})
	}
	b := must(cuda.Alloc[float64](ctx, 10))(t)
	defer b.Free()
	wantErrors(t, cuda.ErrInvalidValue, map[string]error{
		"n mismatch":      cuda.UploadWith(&sb, b, 9, s, func([]float64) {}),
		"n zero":          cuda.UploadWith(&sb, b, 0, s, func([]float64) {}),
		"nil fill":        cuda.UploadWith(&sb, b, 10, s, nil),
		"nil stream":      cuda.UploadWith(&sb, b, 10, nil, func([]float64) {}),
		"nil staging":     cuda.UploadWith(nil, b, 10, s, func([]float64) {}),
		"download n":      second(cuda.DownloadInto(&sb, b, 11, s)),
		"download nil":    second(cuda.DownloadInto[float64](&sb, nil, 1, s)),
		"upload length":   cuda.Upload(&sb, b, make([]float64, 9), s),
		"upload empty":    cuda.Upload(&sb, b, nil, s),
		"download length": cuda.Download(&sb, make([]float64, 11), b, s),
	})
	if err := cuda.UploadWith(&sb, b, 9, s, func([]float64) {}); !strings.Contains(err.Error(), "9") || !strings.Contains(err.Error(), "10") {
		t.Errorf("message %q lacks both lengths", err)
	}
}

// TestUploadDownloadRoutes moves data along each path: staged, direct,
// pipelined, and direct from page-locked memory.
func TestUploadDownloadRoutes(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	sb := must(cuda.NewStagingBufferOptions(nil, 0, cuda.StagingOptions{
		AutoStageMaxBytes: 64 << 10,
		Pipeline:          cuda.StagingPipeline{UploadMinBytes: 1 << 20, DownloadMinBytes: 1 << 20, ChunkBytes: 256 << 10, Slots: 3, Workers: 4},
	}))(t)
	defer sb.Close()
	tests := []struct {
		name  string
		bytes int
		want  func(cuda.StagingStats) int
	}{
		{"staged", 4 << 10, func(st cuda.StagingStats) int { return st.Staged }},
		{"staged at the threshold", 64 << 10, func(st cuda.StagingStats) int { return st.Staged }},
		{"direct", 64<<10 + 4, func(st cuda.StagingStats) int { return st.Direct }},
		{"pipelined", 1 << 20, func(st cuda.StagingStats) int { return st.Pipelined }},
		{"pipelined odd", 3<<20 + 12, func(st cuda.StagingStats) int { return st.Pipelined }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.bytes / 4
			b := must(cuda.Alloc[uint32](ctx, n))(t)
			defer b.Free()
			before := sb.Stats()
			src := random[uint32](n)
			if err := cuda.Upload(sb, b, src, s); err != nil {
				t.Fatal(err)
			}
			got := make([]uint32, n)
			b.CopyToHost(got)
			if !equal(got, src) {
				t.Fatal("Upload: data differs")
			}
			b.Memset32(0xa5a5a5a5)
			if err := cuda.Download(sb, got, b, s); err != nil {
				t.Fatal(err)
			}
			for i, v := range got {
				if v != 0xa5a5a5a5 {
					t.Fatalf("Download: element %d = %#x", i, v)
				}
			}
			after := sb.Stats()
			if tt.want(after)-tt.want(before) != 2 {
				t.Errorf("stats before %+v after %+v: want 2 more on this path", before, after)
			}
			if after.BytesUp-before.BytesUp != int64(tt.bytes) || after.BytesDown-before.BytesDown != int64(tt.bytes) {
				t.Errorf("bytes counted: %+v", after)
			}
		})
	}
	t.Run("page-locked source", func(t *testing.T) {
		p := must(cuda.AllocPinned[uint32](ctx, 1024))(t)
		defer p.Free()
		copy(p.Data(), random[uint32](1024))
		b := must(cuda.Alloc[uint32](ctx, 1024))(t)
		defer b.Free()
		before := sb.Stats()
		if err := cuda.Upload(sb, b, p.Data(), s); err != nil {
			t.Fatal(err)
		}
		if sb.Stats().Direct != before.Direct+1 {
			t.Errorf("an upload from pinned memory was not direct: %+v", sb.Stats())
		}
		got := make([]uint32, 1024)
		b.CopyToHost(got)
		if !equal(got, p.Data()) {
			t.Error("data differs")
		}
	})
	if sb.Capacity() > 64<<20 {
		t.Errorf("capacity %d over 64 MiB", sb.Capacity())
	}
}

func TestStagingThreshold(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	one := must(cuda.Alloc[byte](ctx, 1))(t)
	defer one.Free()
	big := must(cuda.Alloc[byte](ctx, 100<<10))(t)
	defer big.Free()
	var never, always cuda.StagingBuffer
	defer never.Close()
	defer always.Close()
	never.SetAutoStageMaxBytes(0)
	always.SetAutoStageMaxBytes(math.MaxInt)
	if always.AutoStageMaxBytes() != math.MaxInt || always.Options().AutoStageMaxBytes != 0 {
		t.Errorf("after SetAutoStageMaxBytes(math.MaxInt): AutoStageMaxBytes() %d, Options() %+v; want math.MaxInt and the options it was built with", always.AutoStageMaxBytes(), always.Options())
	}
	for _, b := range []*cuda.DeviceBuffer[byte]{one, big} {
		src := random[byte](b.Len())
		if err := cuda.Upload(&never, b, src, s); err != nil {
			t.Fatal(err)
		}
		if err := cuda.Upload(&always, b, src, s); err != nil {
			t.Fatal(err)
		}
	}
	if st := never.Stats(); st.Staged != 0 || st.Direct != 2 || never.Capacity() != 0 {
		t.Errorf("threshold 0 staged: %+v, capacity %d", st, never.Capacity())
	}
	if st := always.Stats(); st.Staged != 2 || st.Direct != 0 {
		t.Errorf("threshold MaxInt did not stage: %+v", st)
	}
	// Per direction: one of its own, or AutoStageMaxBytes where it is 0.
	for _, tt := range []struct {
		name       string
		opts       cuda.StagingOptions
		up, down   string // "staged" or "direct"
		autoStaged int    // AutoStageMaxBytes()
	}{
		{"downloads only", cuda.StagingOptions{DownloadStageMaxBytes: math.MaxInt}, "direct", "staged", math.MaxInt},
		{"uploads only", cuda.StagingOptions{UploadStageMaxBytes: math.MaxInt}, "staged", "direct", math.MaxInt},
		{"both from auto", cuda.StagingOptions{AutoStageMaxBytes: math.MaxInt}, "staged", "staged", math.MaxInt},
		{"a direction's own below auto", cuda.StagingOptions{AutoStageMaxBytes: math.MaxInt, UploadStageMaxBytes: 1}, "direct", "staged", math.MaxInt},
		{"a direction's own above auto", cuda.StagingOptions{AutoStageMaxBytes: 1, DownloadStageMaxBytes: math.MaxInt}, "direct", "staged", math.MaxInt},
		{"neither", cuda.StagingOptions{}, "direct", "direct", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			split := must(cuda.NewStagingBufferOptions(nil, 0, tt.opts))(t)
			defer split.Close()
			h := random[byte](big.Len())
			if err := cuda.Upload(split, big, h, s); err != nil {
				t.Fatal(err)
			}
			up := split.Stats()
			if err := cuda.Download(split, h, big, s); err != nil {
				t.Fatal(err)
			}
			down := split.Stats()
			route := func(staged int) string {
				if staged == 1 {
					return "staged"
				}
				return "direct"
			}
			gotUp, gotDown := route(up.Staged), route(down.Staged-up.Staged)
			if gotUp != tt.up || gotDown != tt.down || split.AutoStageMaxBytes() != tt.autoStaged {
				t.Errorf("upload %s, download %s, AutoStageMaxBytes %d; want %s, %s, %d", gotUp, gotDown, split.AutoStageMaxBytes(), tt.up, tt.down, tt.autoStaged)
			}
			want := tt.opts
			want.Pipeline = cuda.DefaultStagingPipeline()
			if split.Options() != want {
				t.Errorf("Options() = %+v; want what it was built with, the default pipeline", split.Options())
			}
			split.SetAutoStageMaxBytes(0)
			if err := cuda.Upload(split, big, h, s); err != nil {
				t.Fatal(err)
			}
			if err := cuda.Download(split, h, big, s); err != nil {
				t.Fatal(err)
			}
			if st := split.Stats(); st.Direct != down.Direct+2 || split.AutoStageMaxBytes() != 0 {
				t.Errorf("after SetAutoStageMaxBytes(0): %+v, AutoStageMaxBytes %d; want both ways direct", st, split.AutoStageMaxBytes())
			}
		})
	}
}

// TestStagingOptionsChecked: NewStagingBufferOptions refuses every field
// out of range, naming it, before it allocates anything; the zero options
// and the defaults are accepted, and a buffer reports what it was built
// with.
func TestStagingOptionsChecked(t *testing.T) {
	ctx := cudatest.Context(t)
	pipe := func(p cuda.StagingPipeline) cuda.StagingOptions { return cuda.StagingOptions{Pipeline: p} }
	for _, tt := range []struct {
		opts  cuda.StagingOptions
		field string // named in the error; "" for valid options
	}{
		{cuda.StagingOptions{}, ""},
		{cuda.DefaultStagingOptions(), ""},
		{cuda.StagingOptions{AutoStageMaxBytes: math.MaxInt, UploadStageMaxBytes: 1, DownloadStageMaxBytes: 64 << 10}, ""},
		{pipe(cuda.StagingPipeline{UploadMinBytes: math.MaxInt, DownloadMinBytes: 1, ChunkBytes: 64 << 10, Slots: 2, Workers: 1}), ""},
		{cuda.StagingOptions{AutoStageMaxBytes: -1}, "AutoStageMaxBytes"},
		{cuda.StagingOptions{UploadStageMaxBytes: -1}, "UploadStageMaxBytes"},
		{cuda.StagingOptions{DownloadStageMaxBytes: math.MinInt}, "DownloadStageMaxBytes"},
		{pipe(cuda.StagingPipeline{UploadMinBytes: 0, DownloadMinBytes: 0, ChunkBytes: 1 << 20, Slots: 3, Workers: 2}), "Pipeline.UploadMinBytes"},
		{pipe(cuda.StagingPipeline{UploadMinBytes: 1, DownloadMinBytes: -1, ChunkBytes: 1 << 20, Slots: 3, Workers: 2}), "Pipeline.DownloadMinBytes"},
		{pipe(cuda.StagingPipeline{UploadMinBytes: 1, DownloadMinBytes: 1, ChunkBytes: 1000, Slots: 3, Workers: 2}), "Pipeline.ChunkBytes"},
		{pipe(cuda.StagingPipeline{UploadMinBytes: 1, DownloadMinBytes: 1, ChunkBytes: 1 << 20, Slots: 1, Workers: 2}), "Pipeline.Slots"},
		{pipe(cuda.StagingPipeline{UploadMinBytes: 1, DownloadMinBytes: 1, ChunkBytes: 1 << 20, Slots: 3, Workers: 0}), "Pipeline.Workers"},
		{pipe(cuda.StagingPipeline{UploadMinBytes: 1, DownloadMinBytes: 1, ChunkBytes: 1 << 20, Slots: 3, Workers: 99}), "Pipeline.Workers"},
		{pipe(cuda.StagingPipeline{UploadMinBytes: 1, DownloadMinBytes: 1, ChunkBytes: 1 << 20, Slots: 3, Workers: 2, WarmBelowBytes: -1}), "Pipeline.WarmBelowBytes"},
		{pipe(cuda.StagingPipeline{WarmBelowBytes: 1 << 20}), "Pipeline.UploadMinBytes"}, // not zero: taken whole
	} {
		name := tt.field
		if name == "" {
			name = "valid"
		}
		t.Run(name, func(t *testing.T) {
			pinned := func() int64 { return must(ctx.MemoryStats())(t).Pinned.Allocations }
			before := pinned()
			sb, err := cuda.NewStagingBufferOptions(ctx, 64<<10, tt.opts)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("valid options refused: %v", err)
				}
				defer sb.Close()
				want := tt.opts
				if want.Pipeline == (cuda.StagingPipeline{}) {
					want.Pipeline = cuda.DefaultStagingPipeline()
				}
				if sb.Options() != want || sb.Capacity() != 64<<10 {
					t.Errorf("Options() = %+v, capacity %d; want %+v, %d", sb.Options(), sb.Capacity(), want, 64<<10)
				}
				return
			}
			if !errors.Is(err, cuda.ErrInvalidValue) || sb != nil || !strings.HasPrefix(err.Error(), "cuda: NewStagingBufferOptions:") || !strings.Contains(err.Error(), " StagingOptions."+tt.field+" ") {
				t.Errorf("NewStagingBufferOptions(%+v): %v, %v; want nil and ErrInvalidValue naming StagingOptions.%s", tt.opts, sb, err, tt.field)
			}
			if after := pinned(); after != before {
				t.Errorf("refused options pinned memory: %d allocations, then %d", before, after)
			}
		})
	}
	if sb, err := cuda.NewStagingBufferOptions(ctx, -1, cuda.StagingOptions{}); !errors.Is(err, cuda.ErrInvalidValue) || sb != nil {
		t.Errorf("NewStagingBufferOptions(-1 bytes): %v, %v; want ErrInvalidValue", sb, err)
	}
	sb := must(cuda.NewStagingBufferOptions(nil, 0, cuda.StagingOptions{}))(t)
	if sb.Capacity() != 0 || sb.Stats().Allocations != 0 {
		t.Errorf("0 bytes pinned %d", sb.Capacity())
	}
}

// TestWarmBelowBytes: below WarmBelowBytes, a transfer made while the copy
// workers are blocked goes to the driver, and wakes them; one made while
// they are awake is pipelined, and so is every transfer of WarmBelowBytes
// or more, or with WarmBelowBytes 0, awake or not.
func TestWarmBelowBytes(t *testing.T) {
	if n, _, _ := hostcopy.Workers(); n == 0 {
		t.Skip("GOMAXPROCS is 1: the pool has no workers")
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	off := cuda.DefaultStagingPipeline()
	off.WarmBelowBytes = 0
	for _, tt := range []struct {
		name      string
		bytes     int
		pipe      cuda.StagingPipeline
		awake     bool
		pipelined bool
	}{
		{"asleep", 256 << 10, cuda.DefaultStagingPipeline(), false, false},
		{"awake", 256 << 10, cuda.DefaultStagingPipeline(), true, true},
		{"asleep at WarmBelowBytes", 1 << 20, cuda.DefaultStagingPipeline(), false, true},
		{"asleep with WarmBelowBytes 0", 256 << 10, off, false, true},
	} {
		for _, dir := range []cuda.Direction{cuda.HostToDevice, cuda.DeviceToHost} {
			t.Run(tt.name+"/"+dir.String(), func(t *testing.T) {
				sb := must(cuda.NewStagingBufferOptions(nil, 0, cuda.StagingOptions{Pipeline: tt.pipe}))(t)
				defer sb.Close()
				b := must(cuda.Alloc[byte](ctx, tt.bytes))(t)
				defer b.Free()
				src := random[byte](tt.bytes)
				if err := b.CopyFromHost(src); err != nil {
					t.Fatal(err)
				}
				awaitCopyWorkers(t, "every copy worker blocked", func(n, parked int) bool { return parked == n })
				_, _, wakes := hostcopy.Workers()
				if tt.awake {
					defer holdCopyWorkers()()
					awaitCopyWorkers(t, "every copy worker awake, held", func(_, parked int) bool { return parked == 0 })
				}
				var err error
				got := make([]byte, tt.bytes)
				if dir == cuda.HostToDevice {
					err = cuda.Upload(sb, b, src, s)
				} else {
					err = cuda.Download(sb, got, b, s)
				}
				if err != nil {
					t.Fatal(err)
				}
				if dir == cuda.HostToDevice {
					if err := b.CopyToHost(got); err != nil {
						t.Fatal(err)
					}
				}
				if !bytes.Equal(got, src) {
					t.Fatal("data differs")
				}
				st := sb.Stats()
				if tt.pipelined && st.Pipelined != 1 || !tt.pipelined && st.Direct != 1 {
					t.Fatalf("stats %+v; want it pipelined: %v", st, tt.pipelined)
				}
				if tt.pipelined || tt.awake {
					return
				}
				if _, _, after := hostcopy.Workers(); after == wakes {
					t.Error("a transfer sent to the driver while the copy workers were blocked did not wake them")
				}
			})
		}
	}
}

// awaitCopyWorkers waits up to 5s until cond holds of the number of copy
// workers and of those blocked, and fails the test with what otherwise.
func awaitCopyWorkers(t *testing.T, what string, cond func(n, parked int) bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		n, parked, _ := hostcopy.Workers()
		if cond(n, parked) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %d of %d copy workers blocked after 5s", what, parked, n)
		}
	}
}

// TestStagingOrderedOnStream: Download sees work queued on its stream
// without the caller synchronizing first.
func TestStagingOrderedOnStream(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	var sb cuda.StagingBuffer
	defer sb.Close()
	for _, n := range []int{1 << 10, 1 << 20, 8 << 20} {
		b := must(cuda.Alloc[uint32](ctx, n/4))(t)
		b.Memset32Async(0x12345678, s)
		got := make([]uint32, n/4)
		if err := cuda.Download(&sb, got, b, s); err != nil {
			t.Fatal(err)
		}
		b.Free()
		for i, v := range got {
			if v != 0x12345678 {
				t.Fatalf("%d bytes: element %d = %#x: Download ran before the memset queued on its stream", n, i, v)
			}
		}
	}
}

// TestStagingSteadyState: after the first reserve, mixed sizes allocate no
// more pinned memory and no Go heap memory.
func TestStagingSteadyState(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	p := cuda.DefaultStagingPipeline()
	p.UploadMinBytes, p.DownloadMinBytes = 4<<20, 4<<20
	sb, err := cuda.NewStagingBufferOptions(ctx, p.Slots*p.ChunkBytes, cuda.StagingOptions{AutoStageMaxBytes: 256 << 10, Pipeline: p})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	sizes := []int{4 << 10, 150 << 10, 196 << 10, 1 << 20, 8 << 20}
	bufs := make([]*cuda.DeviceBuffer[byte], len(sizes))
	hosts := make([][]byte, len(sizes))
	for i, n := range sizes {
		bufs[i] = must(cuda.Alloc[byte](ctx, n))(t)
		defer bufs[i].Free()
		hosts[i] = random[byte](n)
	}
	fill := func(p []byte) { p[0] = 1 }
	round := func() {
		for i, b := range bufs {
			if err := cuda.Upload(sb, b, hosts[i], s); err != nil {
				t.Fatal(err)
			}
			if err := cuda.Download(sb, hosts[i], b, s); err != nil {
				t.Fatal(err)
			}
			if err := cuda.UploadWith(sb, bufs[0], len(hosts[0]), s, fill); err != nil {
				t.Fatal(err)
			}
			if _, err := cuda.DownloadInto(sb, bufs[0], len(hosts[0]), s); err != nil {
				t.Fatal(err)
			}
		}
	}
	round() // the pipeline creates its events here
	// AllocsPerRun counts the whole process's allocations, the runtime's
	// among them. Copy workers that block take a wait record (a sudog)
	// from their processor's cache, and the runtime allocates one when
	// that cache and the central one are empty, until the caches settle,
	// or refill after a garbage collection; a collection also empties
	// sync.Pools. Seen on the H200 machine with a heap profile: 1-2
	// allocations per round in 3 runs of 80, all sudogs and sync.Pool
	// slots. So measure until a measurement shows none: an allocation of
	// gocuda's own, made at every call, shows in every one.
	const attempts = 10
	for attempt := 1; ; attempt++ {
		allocs := testing.AllocsPerRun(5, round)
		if allocs == 0 || raceEnabled {
			break
		}
		if attempt == attempts {
			t.Errorf("%v heap allocations per round of %d transfers, in each of %d measurements; want 0", allocs, 4*len(sizes), attempts)
			break
		}
		t.Logf("measurement %d: %v heap allocations per round; again", attempt, allocs)
	}
	if st := sb.Stats(); st.Allocations != 1 || st.Staged == 0 || st.Direct == 0 || st.Pipelined == 0 {
		t.Errorf("stats %+v: want one pinned allocation, and every path taken", st)
	}
	if sb.Capacity() > 64<<20 {
		t.Errorf("%d bytes pinned; want at most 64 MiB by default", sb.Capacity())
	}
	t.Logf("stats %+v, capacity %d MiB", sb.Stats(), sb.Capacity()>>20)
}

func TestStagingErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	other := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	so := cudatest.Stream(t, other)
	var sb cuda.StagingBuffer
	defer sb.Close()
	b := must(cuda.Alloc[int64](ctx, 8))(t)
	if err := cuda.Upload(&sb, b, make([]int64, 8), so); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("stream of another context: %v", err)
	}
	b.Free()
	if err := cuda.Upload(&sb, b, make([]int64, 8), s); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("freed buffer: %v; want ErrClosed", err)
	}
	if _, err := cuda.DownloadInto(&sb, b, 8, s); !errors.Is(err, cuda.ErrClosed) {
		t.Errorf("DownloadInto of a freed buffer: %v; want ErrClosed", err)
	}
	// A transfer of nothing still checks what it was given: a freed
	// buffer or a closed stream is ErrClosed, as for every method of the
	// buffer, and nothing is pinned for it.
	sb.Close()
	empty := must(cuda.Alloc[int64](ctx, 0))(t)
	empty.Free()
	closedStream := must(ctx.NewStream())(t)
	closedStream.Close()
	live := must(cuda.Alloc[int64](ctx, 0))(t)
	defer live.Free()
	for _, c := range []struct {
		name string
		buf  *cuda.DeviceBuffer[int64]
		s    *cuda.Stream
	}{
		{"empty freed buffer", empty, s},
		{"closed stream", live, closedStream},
		{"freed buffer", b, s},
	} {
		wantErrors(t, cuda.ErrClosed, map[string]error{
			c.name + ": Upload":       cuda.Upload(&sb, c.buf, make([]int64, c.buf.Len()), c.s),
			c.name + ": Download":     cuda.Download(&sb, make([]int64, c.buf.Len()), c.buf, c.s),
			c.name + ": UploadWith":   cuda.UploadWith(&sb, c.buf, c.buf.Len(), c.s, func([]int64) {}),
			c.name + ": DownloadInto": second(cuda.DownloadInto(&sb, c.buf, c.buf.Len(), c.s)),
		})
	}
	if sb.Capacity() != 0 {
		t.Error("capacity after Close")
	}
}

func TestCalibrate(t *testing.T) {
	ctx := cudatest.Context(t)
	if cudatest.IsFake() {
		// The fake's rates mean nothing: the plumbing is what is tested.
		defer cuda.SetCalibrateScale(16<<20, time.Millisecond)()
	}
	var sb cuda.StagingBuffer
	defer sb.Close()
	var calls int
	cal, err := sb.Calibrate(ctx, func(done, total int) {
		calls++
		if done != calls || total != 6 {
			t.Errorf("progress(%d, %d) on call %d", done, total, calls)
		}
	}, cuda.CalibrateSizes(4<<10, 64<<10, 2<<20))
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.Measurements) != 6 || calls != 6 {
		t.Fatalf("%d measurements, %d progress calls; want 6", len(cal.Measurements), calls)
	}
	for _, m := range cal.Measurements {
		if m.Staged <= 0 || m.Pipelined <= 0 || m.Direct <= 0 {
			t.Errorf("measurement %+v has a non-positive rate", m)
		}
	}
	want := cuda.DefaultStagingOptions()
	want.UploadStageMaxBytes, want.DownloadStageMaxBytes = cal.StageMaxBytes[cuda.HostToDevice], cal.StageMaxBytes[cuda.DeviceToHost]
	want.Pipeline.UploadMinBytes, want.Pipeline.DownloadMinBytes = cal.PipelineMinBytes[cuda.HostToDevice], cal.PipelineMinBytes[cuda.DeviceToHost]
	if cal.Options != want {
		t.Errorf("Options %+v; want the thresholds chosen, %+v", cal.Options, want)
	}
	if sb.Options() != cuda.DefaultStagingOptions() || sb.Capacity() != 0 {
		t.Errorf("Calibrate changed the buffer: %+v, capacity %d", sb.Options(), sb.Capacity())
	}
	// The options build a buffer that takes the routes chosen.
	built := must(cuda.NewStagingBufferOptions(ctx, 64<<10, cal.Options))(t)
	defer built.Close()
	if built.Options() != cal.Options || built.AutoStageMaxBytes() != max(cal.StageMaxBytes[0], cal.StageMaxBytes[1]) {
		t.Errorf("a buffer built with the options: %+v, AutoStageMaxBytes %d", built.Options(), built.AutoStageMaxBytes())
	}
	t.Logf("%s driver: stage up to %v, pipeline from %d", cudatest.Kind(), cal.StageMaxBytes, cal.PipelineMinBytes)
}

// TestCalibrateSizes: bad sizes are refused before anything is measured or
// changed, and the defaults are a fresh slice each time.
func TestCalibrateSizes(t *testing.T) {
	ctx := cudatest.Context(t)
	var sb cuda.StagingBuffer
	defer sb.Close()
	before := sb.Options()
	for _, tt := range []struct {
		name  string
		sizes []int
	}{{"none", nil}, {"zero", []int{4096, 0}}, {"negative", []int{-1}}, {"huge", []int{1 << 50}}} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sb.Calibrate(ctx, nil, cuda.CalibrateSizes(tt.sizes...))
			if !errors.Is(err, cuda.ErrInvalidValue) {
				t.Errorf("Calibrate with sizes %v: %v, want ErrInvalidValue", tt.sizes, err)
			}
			if sb.Options() != before || sb.Capacity() != 0 {
				t.Errorf("a refused Calibrate changed the buffer: %+v, capacity %d", sb.Options(), sb.Capacity())
			}
		})
	}
	d := cuda.DefaultCalibrationSizes()
	d[0] = -1
	if cuda.DefaultCalibrationSizes()[0] != 4<<10 {
		t.Error("DefaultCalibrationSizes shares its slice")
	}
}

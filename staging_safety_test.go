package cuda_test

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/hostcopy"
)

// smallPipeline pipelines transfers from 256 KiB in chunks of 64 KiB, so
// that the fake's tests move little memory.
var smallPipeline = cuda.StagingPipeline{UploadMinBytes: 256 << 10, DownloadMinBytes: 256 << 10, ChunkBytes: 64 << 10, Slots: 3, Workers: 2}

// TestFailedPipelineLeavesNoDMA: a pipelined transfer that fails part-way
// returns only once none of the copies it queued still runs: the stream is
// idle, the pinned memory the next transfer hands out does not change
// after it is handed out, and neither does the caller's slice (which the
// copy workers, slowed down here, write or read).
func TestFailedPipelineLeavesNoDMA(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s, s2 := cudatest.Stream(t, ctx), cudatest.Stream(t, ctx)
	const n = 1 << 20
	src := must(cuda.Alloc[byte](ctx, n))(t)
	defer src.Free()
	if err := src.Memset8(0xaa); err != nil {
		t.Fatal(err)
	}
	small := must(cuda.Alloc[byte](ctx, 64<<10))(t)
	defer small.Free()
	if err := small.Memset8(0x55); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, call string
		nth        int
		transfer   func(sb *cuda.StagingBuffer, host []byte) error
	}{
		{"Download/second chunk", "cuMemcpyDtoHAsync_v2", 2, func(sb *cuda.StagingBuffer, host []byte) error { return cuda.Download(sb, host, src, s) }},
		{"Download/fourth chunk", "cuMemcpyDtoHAsync_v2", 4, func(sb *cuda.StagingBuffer, host []byte) error { return cuda.Download(sb, host, src, s) }},
		{"Download/wait", "cuEventSynchronize", 2, func(sb *cuda.StagingBuffer, host []byte) error { return cuda.Download(sb, host, src, s) }},
		{"Upload/fifth chunk", "cuMemcpyHtoDAsync_v2", 5, func(sb *cuda.StagingBuffer, host []byte) error { return cuda.Upload(sb, src, host, s) }},
		{"Upload/record", "cuEventRecord", 2, func(sb *cuda.StagingBuffer, host []byte) error { return cuda.Upload(sb, src, host, s) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sb := must(cuda.NewStagingBufferOptions(nil, 0, cuda.StagingOptions{Pipeline: smallPipeline}))(t)
			defer sb.Close()
			f.Fail(tt.call, tt.nth, 999)
			host := make([]byte, n)
			old := hostcopy.SetDelay(time.Millisecond)
			err := tt.transfer(sb, host)
			hostcopy.SetDelay(old)
			if !errors.Is(err, cuda.Result(999)) {
				t.Fatalf("transfer with %s failing: %v", tt.call, err)
			}
			after := bytes.Clone(host)
			if done, err := s.Query(); !done || err != nil {
				t.Errorf("the failed transfer returned with work still queued on its stream (%v, %v)", done, err)
			}
			got, err := cuda.DownloadInto(sb, small, 64<<10, s2)
			if err != nil {
				t.Fatal(err)
			}
			first := bytes.Clone(got)
			time.Sleep(5 * time.Millisecond) // the fake's copies run 100 µs late
			if !bytes.Equal(first, got) || got[0] != 0x55 {
				t.Fatalf("memory DownloadInto returned changed after it returned (DMA of the failed transfer): first byte %#x, then %#x", first[0], got[0])
			}
			if !bytes.Equal(after, host) {
				t.Error("the failed transfer's slice changed after it returned (a copy worker still writing it)")
			}
			if st := sb.Stats(); st.Pipelined != 0 || st.BytesUp != 0 || st.BytesDown != 64<<10 {
				t.Errorf("stats %+v: the failed transfer was counted", st)
			}
		})
	}
}

// TestStagingConcurrentMisuse: a second call on a StagingBuffer while one
// is under way is an error wrapping ErrInvalidValue, not memory corruption;
// the settings and Stats may be used meanwhile.
func TestStagingConcurrentMisuse(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	var sb cuda.StagingBuffer
	defer sb.Close()
	b := must(cuda.Alloc[float32](ctx, 1024))(t)
	defer b.Free()
	inFill, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- cuda.UploadWith(&sb, b, 1024, s, func(x []float32) {
			close(inFill)
			<-release
		})
	}()
	<-inFill
	for name, call := range map[string]func() error{
		"Upload":       func() error { return cuda.Upload(&sb, b, make([]float32, 1024), s) },
		"Download":     func() error { return cuda.Download(&sb, make([]float32, 1024), b, s) },
		"UploadWith":   func() error { return cuda.UploadWith(&sb, b, 1024, s, func([]float32) {}) },
		"DownloadInto": func() error { _, err := cuda.DownloadInto(&sb, b, 1024, s); return err },
		"Reserve":      func() error { return sb.Reserve(ctx, 1<<20) },
		"ShrinkToFit":  sb.ShrinkToFit,
		"Close":        sb.Close,
	} {
		if err := call(); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "in use") {
			t.Errorf("%s while UploadWith runs: %v; want ErrInvalidValue saying the buffer is in use", name, err)
		}
	}
	sb.SetAutoStageMaxBytes(1 << 20)
	_ = sb.AutoStageMaxBytes()
	_ = sb.Options()
	_ = sb.Stats()
	_ = sb.Capacity()
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the UploadWith in flight: %v", err)
	}
	// Hammering from two goroutines: every call succeeds or is refused.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := make([]float32, 1024)
			for range 200 {
				if err := cuda.Download(&sb, host, b, s); err != nil && !errors.Is(err, cuda.ErrInvalidValue) {
					t.Errorf("Download: %v", err)
				}
			}
		}()
	}
	wg.Wait()
}

// TestStagingReleaseErrors: Reserve and Close return the errors of the
// releases they make, and leak nothing.
func TestStagingReleaseErrors(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	sb := must(cuda.NewStagingBufferOptions(ctx, 64<<10, cuda.StagingOptions{Pipeline: smallPipeline}))(t)
	hosts := f.Live("host")
	f.Fail("cuMemFreeHost", 1, 999)
	if err := sb.Reserve(ctx, 1<<20); !errors.Is(err, cuda.Result(999)) {
		t.Errorf("Reserve with the old memory's free failing: %v", err)
	}
	if sb.Capacity() != 64<<10 || f.Live("host") != hosts {
		t.Errorf("after the failed Reserve: capacity %d, %d host allocations (want %d, %d)", sb.Capacity(), f.Live("host"), 64<<10, hosts)
	}
	if err := sb.Reserve(ctx, 1<<20); err != nil || sb.Capacity() != 1<<20 || f.Live("host") != hosts {
		t.Errorf("Reserve again: %v, capacity %d, %d host allocations", err, sb.Capacity(), f.Live("host"))
	}
	b := must(cuda.Alloc[byte](ctx, 512<<10))(t)
	defer b.Free()
	if err := cuda.Upload(sb, b, make([]byte, 512<<10), s); err != nil { // makes the slots' events
		t.Fatal(err)
	}
	events := f.Live("event")
	if events < 2 {
		t.Fatalf("%d events live after a pipelined transfer, want the slots' (2 or more)", events)
	}
	f.Fail("cuEventDestroy_v2", 2, 999)
	if err := sb.Close(); !errors.Is(err, cuda.Result(999)) {
		t.Errorf("Close with an event's destroy failing: %v", err)
	}
	if f.Live("event") != 1 {
		t.Errorf("%d of %d events live after the failed Close, want 1 (the one that failed kept)", f.Live("event"), events)
	}
	if err := sb.Close(); err != nil || f.Live("event") != 0 {
		t.Errorf("second Close: %v, %d events live, want 0", err, f.Live("event"))
	}
}

// TestStagingCountsSuccesses: Stats count the transfers that succeeded,
// by every route, and nothing of those that failed.
func TestStagingCountsSuccesses(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	b := must(cuda.Alloc[byte](ctx, 512<<10))(t)
	defer b.Free()
	host := make([]byte, 512<<10)
	for _, tt := range []struct {
		name, call string
		stage      int
		transfer   func(sb *cuda.StagingBuffer) error
	}{
		{"Upload/direct", "cuMemcpyHtoD_v2", 0, func(sb *cuda.StagingBuffer) error { return cuda.Upload(sb, b, host, s) }},
		{"Upload/staged", "cuMemcpyHtoD_v2", 1 << 30, func(sb *cuda.StagingBuffer) error { return cuda.Upload(sb, b, host, s) }},
		{"Upload/pipelined", "cuMemcpyHtoDAsync_v2", -1, func(sb *cuda.StagingBuffer) error { return cuda.Upload(sb, b, host, s) }},
		{"Download/direct", "cuMemcpyDtoH_v2", 0, func(sb *cuda.StagingBuffer) error { return cuda.Download(sb, host, b, s) }},
		{"Download/staged", "cuMemcpyDtoH_v2", 1 << 30, func(sb *cuda.StagingBuffer) error { return cuda.Download(sb, host, b, s) }},
		{"Download/pipelined", "cuMemcpyDtoHAsync_v2", -1, func(sb *cuda.StagingBuffer) error { return cuda.Download(sb, host, b, s) }},
		{"UploadWith", "cuMemcpyHtoD_v2", 0, func(sb *cuda.StagingBuffer) error {
			return cuda.UploadWith(sb, b, len(host), s, func([]byte) {})
		}},
		{"DownloadInto", "cuMemcpyDtoH_v2", 0, func(sb *cuda.StagingBuffer) error {
			_, err := cuda.DownloadInto(sb, b, len(host), s)
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := cuda.StagingOptions{Pipeline: smallPipeline}
			if tt.stage >= 0 {
				o.Pipeline.UploadMinBytes, o.Pipeline.DownloadMinBytes = 1<<30, 1<<30
				o.AutoStageMaxBytes = tt.stage
			}
			sb := must(cuda.NewStagingBufferOptions(nil, 0, o))(t)
			defer sb.Close()
			f.Fail(tt.call, 1, 999)
			if err := tt.transfer(sb); !errors.Is(err, cuda.Result(999)) {
				t.Fatalf("with %s failing: %v", tt.call, err)
			}
			st := sb.Stats()
			if st.Staged+st.Pipelined+st.Direct != 0 || st.BytesUp+st.BytesDown != 0 {
				t.Errorf("after a failed transfer: %+v", st)
			}
			if err := tt.transfer(sb); err != nil {
				t.Fatal(err)
			}
			st = sb.Stats()
			if st.Staged+st.Pipelined+st.Direct != 1 || st.BytesUp+st.BytesDown != int64(len(host)) {
				t.Errorf("after a transfer that succeeded: %+v", st)
			}
		})
	}
}

// TestStagingEverySize: every size works with every configuration
// the options accept, down to a pipeline from 1 byte.
func TestStagingEverySize(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	for _, p := range []cuda.StagingPipeline{
		{UploadMinBytes: 1, DownloadMinBytes: 1, ChunkBytes: cuda.StagingGranularity, Slots: 2, Workers: 1},
		{UploadMinBytes: 1, DownloadMinBytes: 1, ChunkBytes: 2 * cuda.StagingGranularity, Slots: 3, Workers: 4},
	} {
		sb := must(cuda.NewStagingBufferOptions(nil, 0, cuda.StagingOptions{Pipeline: p}))(t)
		for _, n := range []int{1, 2, 3, 4, 5, 63, 64 << 10, 64<<10 + 1, 3*64<<10 - 1, 300 << 10} {
			b := must(cuda.Alloc[byte](ctx, n))(t)
			src := random[byte](n)
			if err := cuda.Upload(sb, b, src, s); err != nil {
				t.Fatalf("%+v: Upload of %d bytes: %v", p, n, err)
			}
			got := make([]byte, n)
			if err := cuda.Download(sb, got, b, s); err != nil {
				t.Fatalf("%+v: Download of %d bytes: %v", p, n, err)
			}
			if !bytes.Equal(got, src) {
				t.Fatalf("%+v: %d bytes: data differs", p, n)
			}
			b.Free()
		}
		if st := sb.Stats(); st.Pipelined != 20 {
			t.Errorf("%+v: %d of 20 transfers pipelined", p, st.Pipelined)
		}
		sb.Close()
	}
}

// TestReserveCoversEveryRoute: after NewStagingBuffer(ctx, n) or
// Reserve(ctx, n), no transfer of at most n bytes page-locks memory again,
// by any route.
func TestReserveCoversEveryRoute(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	const reserved = 1 << 20
	opts := cuda.StagingOptions{
		DownloadStageMaxBytes: 64 << 10,
		Pipeline:              cuda.StagingPipeline{UploadMinBytes: 256 << 10, DownloadMinBytes: 256 << 10, ChunkBytes: 16 << 20, Slots: 3, Workers: 2},
	}
	for _, tt := range []struct {
		name string
		new  func() *cuda.StagingBuffer
	}{
		{"NewStagingBufferOptions", func() *cuda.StagingBuffer { return must(cuda.NewStagingBufferOptions(ctx, reserved, opts))(t) }},
		{"Reserve", func() *cuda.StagingBuffer {
			sb := must(cuda.NewStagingBufferOptions(nil, 0, opts))(t)
			if err := sb.Reserve(ctx, reserved); err != nil {
				t.Fatal(err)
			}
			return sb
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sb := tt.new()
			defer sb.Close()
			for _, n := range []int{4 << 10, 64 << 10, 200 << 10, 256 << 10, 512 << 10, reserved} {
				b := must(cuda.Alloc[byte](ctx, n))(t)
				src := random[byte](n)
				got := make([]byte, n)
				if err := cuda.Upload(sb, b, src, s); err != nil {
					t.Fatal(err)
				}
				if err := cuda.Download(sb, got, b, s); err != nil {
					t.Fatal(err)
				}
				if _, err := cuda.DownloadInto(sb, b, n, s); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, src) {
					t.Fatalf("%d bytes: data differs", n)
				}
				b.Free()
			}
			if st := sb.Stats(); st.Allocations != 1 || sb.Capacity() != reserved || st.Pipelined == 0 {
				t.Errorf("after transfers up to the %d bytes reserved: capacity %d, stats %+v; want 1 allocation, some pipelined", reserved, sb.Capacity(), st)
			}
		})
	}
}

// TestReservedSlots: a buffer holding 1 MiB moves 1 MiB, both ways, in two
// chunks of 512 KiB cut from what it holds (the chunks it would take from
// slots of ChunkBytes), every byte right, and pins nothing more.
func TestReservedSlots(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	const n = 1 << 20
	p := cuda.DefaultStagingPipeline()
	p.WarmBelowBytes = 0
	sb := must(cuda.NewStagingBufferOptions(ctx, n, cuda.StagingOptions{Pipeline: p}))(t)
	defer sb.Close()
	b := must(cuda.Alloc[byte](ctx, n))(t)
	defer b.Free()
	chunks := 0
	cuda.TracePipeline(func(step string, chunk int, _ time.Duration) {
		if step == "done" {
			chunks = chunk + 1
		}
	})
	defer cuda.TracePipeline(nil)
	src, got := random[byte](n), make([]byte, n)
	if err := cuda.Upload(sb, b, src, s); err != nil {
		t.Fatal(err)
	}
	if chunks != 2 {
		t.Errorf("Upload of 1 MiB through 1 MiB held: %d chunks, want 2", chunks)
	}
	chunks = 0
	if err := cuda.Download(sb, got, b, s); err != nil {
		t.Fatal(err)
	}
	if chunks != 2 {
		t.Errorf("Download of 1 MiB through 1 MiB held: %d chunks, want 2", chunks)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("data differs")
	}
	if st := sb.Stats(); st.Allocations != 1 || st.Pipelined != 2 || sb.Capacity() != n {
		t.Errorf("stats %+v, capacity %d; want 1 allocation, 2 pipelined, %d bytes held", st, sb.Capacity(), n)
	}
}

// TestDownloadSlotsRotate: each pipelined download starts its slots where
// the last one's ended, wrapping to the start of the pinned memory when the
// rest is too short, and uploads leave that alone; every byte arrives.
func TestDownloadSlotsRotate(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	const chunk = 2 * cuda.StagingGranularity
	// 4 slots of 128 KiB: 512 KiB pinned.
	p := cuda.StagingPipeline{UploadMinBytes: 1, DownloadMinBytes: 1, ChunkBytes: chunk, Slots: 4, Workers: 4}
	sb := must(cuda.NewStagingBufferOptions(nil, 0, cuda.StagingOptions{Pipeline: p}))(t)
	defer sb.Close()
	for i, step := range []struct {
		up     bool
		n      int
		offset int // after the transfer
	}{
		{n: 100 << 10, offset: chunk},           // one slot, at 0
		{n: 300 << 10, offset: 4 * chunk},       // three slots, at 128 KiB
		{n: 100 << 10, offset: chunk},           // no room left: at 0
		{up: true, n: 300 << 10, offset: chunk}, // uploads do not move it
		{n: 4 * chunk, offset: 4 * chunk},       // four slots: at 0
		{n: 1 << 20, offset: 4 * chunk},         // more chunks than slots: all of them, at 0
		{n: 1, offset: chunk},                   // a 1-byte download takes a slot too, at 0
	} {
		b := must(cuda.Alloc[byte](ctx, step.n))(t)
		src, got := random[byte](step.n), make([]byte, step.n)
		op, err := "Download", error(nil)
		if step.up {
			op, err = "Upload", cuda.Upload(sb, b, src, s)
			if err == nil {
				err = b.CopyToHost(got)
			}
		} else if err = b.CopyFromHost(src); err == nil {
			err = cuda.Download(sb, got, b, s)
		}
		b.Free()
		if err != nil {
			t.Fatalf("step %d: %s of %d bytes: %v", i, op, step.n, err)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("step %d: %s of %d bytes: data differs", i, op, step.n)
		}
		if got := cuda.DownloadOffset(sb); got != step.offset {
			t.Errorf("step %d: after the %s of %d bytes the next download starts at %d, want %d", i, op, step.n, got, step.offset)
		}
	}
	if st := sb.Stats(); st.Pipelined != 7 || st.Allocations != 1 {
		t.Errorf("stats %+v: want 7 pipelined, 1 allocation", st)
	}
}

package cuda_test

import (
	"testing"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/sweep"
)

// stagingRoute is a staging case: a transfer of n bytes by route (the
// options that make Upload and Download take it), on a fresh staging
// buffer (cold) or one that made the transfer once already (warm).
func stagingRoute(name string, n int, warm bool, opts cuda.StagingOptions, transfer func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error) sweep.Case {
	return sweep.Case{
		Name:   name,
		Covers: []string{"cuda.Upload", "cuda.Download", "cuda.UploadWith", "cuda.DownloadInto"},
		Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
			sb := must(cuda.NewStagingBufferOptions(nil, 0, opts))(t)
			b := must(cuda.Alloc[byte](e.Ctx, n))(t)
			host := random[byte](n)
			if warm {
				if err := transfer(sb, b, host, e.S); err != nil {
					t.Fatalf("warming: %v", err)
				}
			}
			before := sb.Stats()
			return func() error { return transfer(sb, b, host, e.S) }, func(t *testing.T, err error) {
				t.Helper()
				st := sb.Stats()
				moved := st.BytesUp + st.BytesDown - before.BytesUp - before.BytesDown
				done := st.Staged + st.Pipelined + st.Direct - before.Staged - before.Pipelined - before.Direct
				if (err != nil && (moved != 0 || done != 0)) || (err == nil && (moved != int64(n) || done != 1)) {
					t.Errorf("%s: stats %+v after %+v (error %v): counted what failed", name, st, before, err)
				}
				// The same staging buffer still moves data correctly.
				src, got := random[byte](n), make([]byte, n)
				if err := sweep.FirstErr(
					func() error { return cuda.Upload(sb, b, src, e.S) },
					func() error { return cuda.Download(sb, got, b, e.S) },
				); err != nil || !equal(src, got) {
					t.Errorf("%s: the staging buffer after the failure: %v (data equal: %v)", name, err, equal(src, got))
				}
				if err := sb.Close(); err != nil {
					t.Errorf("closing the staging buffer: %v", err)
				}
				if err := b.Free(); err != nil {
					t.Errorf("freeing: %v", err)
				}
			}
		},
	}
}

// sweepStaging is the fault sweep's rows of the staging buffer: each route of Upload, Download, UploadWith and DownloadInto, cold and warm, and its construction, options and calibration.
func sweepStaging() []sweep.Case {
	small := cuda.StagingOptions{Pipeline: smallPipeline}
	staged := cuda.StagingOptions{AutoStageMaxBytes: 1 << 30, Pipeline: smallPipeline}
	up := func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error {
		return cuda.Upload(sb, b, host, s)
	}
	down := func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error {
		return cuda.Download(sb, host, b, s)
	}
	with := func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error {
		return cuda.UploadWith(sb, b, len(host), s, func(p []byte) { copy(p, host) })
	}
	into := func(sb *cuda.StagingBuffer, b *cuda.DeviceBuffer[byte], host []byte, s *cuda.Stream) error {
		_, err := cuda.DownloadInto(sb, b, len(host), s)
		return err
	}
	return []sweep.Case{
		stagingRoute("Upload direct cold", 16<<10, false, small, up),
		stagingRoute("Upload staged cold", 16<<10, false, staged, up),
		stagingRoute("Upload staged warm", 16<<10, true, staged, up),
		stagingRoute("Upload pipelined cold", 512<<10, false, small, up),
		stagingRoute("Upload pipelined warm", 512<<10, true, small, up),
		stagingRoute("Download direct cold", 16<<10, false, small, down),
		stagingRoute("Download staged cold", 16<<10, false, staged, down),
		stagingRoute("Download staged warm", 16<<10, true, staged, down),
		stagingRoute("Download pipelined cold", 512<<10, false, small, down),
		stagingRoute("Download pipelined warm", 512<<10, true, small, down),
		stagingRoute("UploadWith cold", 16<<10, false, small, with),
		stagingRoute("UploadWith warm", 16<<10, true, small, with),
		stagingRoute("DownloadInto cold", 16<<10, false, small, into),
		stagingRoute("DownloadInto warm", 16<<10, true, small, into),
		{Name: "staging memory", Covers: []string{"cuda.NewStagingBuffer", "StagingBuffer.Reserve", "StagingBuffer.ShrinkToFit", "StagingBuffer.Close"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var sb *cuda.StagingBuffer
				return func() error {
						return sweep.FirstErr(
							func() (err error) { sb, err = cuda.NewStagingBuffer(e.Ctx, 64<<10); return err },
							func() error { return sb.Reserve(e.Ctx, 256<<10) },
							func() error { return sb.ShrinkToFit() },
							func() error { return sb.Reserve(e.Ctx, 64<<10) },
							func() error { return sb.Close() },
						)
					}, func(t *testing.T, err error) {
						if sb != nil {
							for range 2 { // a failed Close or ShrinkToFit: again
								if sb.Close() == nil {
									break
								}
							}
							if err := sb.Close(); err != nil {
								t.Errorf("closing the staging buffer: %v", err)
							}
						}
					}
			}},
		{Name: "staging memory with options", Covers: []string{"cuda.NewStagingBufferOptions"},
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				var sb *cuda.StagingBuffer
				return func() (err error) {
						sb, err = cuda.NewStagingBufferOptions(e.Ctx, 64<<10, cuda.StagingOptions{Pipeline: smallPipeline})
						return err
					}, func(t *testing.T, err error) {
						if (sb == nil) == (err == nil) {
							t.Errorf("NewStagingBufferOptions returned %v and error %v: want one of them", sb, err)
						}
						if sb != nil {
							if sb.Options().Pipeline != smallPipeline {
								t.Errorf("options %+v: not the pipeline given", sb.Options())
							}
							if err := sb.Close(); err != nil {
								t.Errorf("closing the staging buffer: %v", err)
							}
						}
					}
			}},
		{Name: "Calibrate", Covers: []string{"StagingBuffer.Calibrate"}, MaxNth: 1,
			Prepare: func(t *testing.T, e *sweep.Env) (func() error, func(*testing.T, error)) {
				// Small: the sweep calibrates once for each failure.
				restore := cuda.SetCalibrateScale(8<<20, 100*time.Microsecond)
				sb := new(cuda.StagingBuffer)
				return func() error { _, err := sb.Calibrate(e.Ctx, nil, cuda.CalibrateSizes(64<<10, 4<<20)); return err }, func(t *testing.T, _ error) {
					restore()
					if err := sb.Close(); err != nil {
						t.Errorf("close: %v", err)
					}
				}
			}},
	}
}

package cuda

import (
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gocuda/cuda/internal/lifetime"
)

// DefaultCalibrationSizes returns the transfer sizes Calibrate measures
// unless told otherwise, in bytes: 4 KiB to 64 MiB.
func DefaultCalibrationSizes() []int {
	return []int{4 << 10, 16 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10,
		1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20, 64 << 20}
}

// CalibrateOption tunes Calibrate.
type CalibrateOption func(*calibrateConfig)

type calibrateConfig struct {
	sizes []int
}

// CalibrateSizes makes Calibrate measure at sizes (bytes, each positive)
// instead of DefaultCalibrationSizes: fewer sizes take less time.
func CalibrateSizes(sizes ...int) CalibrateOption {
	sizes = slices.Clone(sizes)
	return func(c *calibrateConfig) { c.sizes = sizes }
}

// StagingMeasurement is the throughput of each path for one size and
// direction, in bytes per second (the median of several timed runs).
type StagingMeasurement struct {
	Bytes                     int
	Upload                    bool // host to device; false: device to host
	Staged, Pipelined, Direct float64
}

// StagingCalibration is what Calibrate measured, the thresholds it chose,
// and the options that use them.
type StagingCalibration struct {
	// StageMaxBytes is, by Direction, the largest size up to which staging
	// was at least as fast as the driver and the pipeline at every size
	// measured.
	StageMaxBytes [2]int
	// PipelineMinBytes is, by Direction, the smallest size from which the
	// pipeline beat the driver at every larger size; math.MaxInt if it
	// never did.
	PipelineMinBytes [2]int
	Measurements     []StagingMeasurement
	// Options are the options to build a staging buffer with
	// (NewStagingBufferOptions): the calibrated buffer's pipeline, with
	// UploadMinBytes and DownloadMinBytes of PipelineMinBytes, staging up
	// to StageMaxBytes each way (UploadStageMaxBytes,
	// DownloadStageMaxBytes).
	Options StagingOptions
}

// Calibrate measures, on this machine's device, how fast ordinary slices move
// through each of the staging buffer's paths (staged whole, pipelined, or
// handed to the driver) at DefaultCalibrationSizes (or CalibrateSizes),
// both ways, on sb's pipeline shape, and returns the thresholds where each
// wins, as options to build a staging buffer with (StagingCalibration's
// Options): each direction's stage threshold at the largest size up to
// which staging was at least as fast as the driver and the pipeline at
// every size, and the pipeline's UploadMinBytes and DownloadMinBytes at the
// smallest size from which the pipeline was faster than the driver at every
// larger size, that way. sb itself is left as it was: its options are given
// once, when it is built. It takes a few seconds and temporarily pins
// pipeline memory of its own. progress, if not nil, is called after each
// measurement with the number done and the total.
func (sb *StagingBuffer) Calibrate(ctx *Context, progress func(done, total int), opts ...CalibrateOption) (_ StagingCalibration, err error) {
	const op = "StagingBuffer.Calibrate"
	if sb == nil {
		return StagingCalibration{}, errorf(op, ErrInvalidValue, "nil *StagingBuffer")
	}
	cfg := calibrateConfig{sizes: DefaultCalibrationSizes()}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if len(cfg.sizes) == 0 {
		return StagingCalibration{}, errorf(op, ErrInvalidValue, "no sizes to measure")
	}
	for _, n := range cfg.sizes {
		if n <= 0 || n > 1<<40 {
			return StagingCalibration{}, errorf(op, ErrInvalidValue, "calibration size %d: want 1 byte to 1 TiB", n)
		}
	}
	s, err := ctx.NewStream()
	if err != nil {
		return StagingCalibration{}, err
	}
	defer lifetime.CloseTemp(&err, s.Close)
	// Each transfer takes the next slice of arenas larger than the CPU's
	// caches: data cached from the previous transfer would flatter the
	// staged path, which copies it once more.
	arena := max(slices.Max(cfg.sizes), int(calibrateArena.Load()))
	dev, err := Alloc[byte](ctx, arena)
	if err != nil {
		return StagingCalibration{}, err
	}
	defer lifetime.CloseTemp(&err, dev.Free)
	host := make([]byte, arena)
	for i := range host {
		host[i] = byte(i*7 + 1)
	}

	// One staging buffer per path, sharing sb's pipeline shape (checked
	// when sb was built, so that these are too).
	pipe := sb.Options().Pipeline
	off, on := pipe, pipe
	off.UploadMinBytes, off.DownloadMinBytes = math.MaxInt, math.MaxInt
	on.UploadMinBytes, on.DownloadMinBytes = 1, 1
	staged := newStagingBuffer(StagingOptions{AutoStageMaxBytes: math.MaxInt, Pipeline: off})
	direct := newStagingBuffer(StagingOptions{Pipeline: off})
	piped := newStagingBuffer(StagingOptions{Pipeline: on})
	defer lifetime.CloseTemp(&err, staged.Close)
	defer lifetime.CloseTemp(&err, direct.Close)
	defer lifetime.CloseTemp(&err, piped.Close)

	var cal StagingCalibration
	total, done := 2*len(cfg.sizes), 0
	for _, up := range []bool{true, false} {
		for _, n := range cfg.sizes {
			slots := min(arena/n, 4096)
			slot := func(i int) (*DeviceBuffer[byte], []byte, error) {
				off := i % slots * n
				d, err := dev.Slice(off, n)
				return d, host[off : off+n], err
			}
			m := StagingMeasurement{Bytes: n, Upload: up}
			for _, p := range []struct {
				sb  *StagingBuffer
				out *float64
			}{{staged, &m.Staged}, {piped, &m.Pipelined}, {direct, &m.Direct}} {
				rate, err := measureTransfer(p.sb, slot, s, up)
				if err != nil {
					return StagingCalibration{}, err
				}
				*p.out = rate
			}
			cal.Measurements = append(cal.Measurements, m)
			done++
			if progress != nil {
				progress(done, total)
			}
		}
	}
	cal.StageMaxBytes, cal.PipelineMinBytes = chooseThresholds(cal.Measurements)
	pipe.UploadMinBytes, pipe.DownloadMinBytes = cal.PipelineMinBytes[HostToDevice], cal.PipelineMinBytes[DeviceToHost]
	// AutoStageMaxBytes stays 0, so that a direction that stages nothing
	// (its threshold 0) stages nothing.
	cal.Options = StagingOptions{
		UploadStageMaxBytes:   cal.StageMaxBytes[HostToDevice],
		DownloadStageMaxBytes: cal.StageMaxBytes[DeviceToHost],
		Pipeline:              pipe,
	}
	return cal, nil
}

// chooseThresholds picks, for each direction, the largest size up to which
// staging beat the driver and the pipeline at every size, and the smallest
// size from which the pipeline beat the driver at every larger size.
func chooseThresholds(ms []StagingMeasurement) (stageMax, pipeMin [2]int) {
	var sizes []int
	stagedWins := [2]map[int]bool{{}, {}}
	pipeWins := [2]map[int]bool{{}, {}}
	for _, m := range ms {
		d := HostToDevice
		if !m.Upload {
			d = DeviceToHost
		}
		if !slices.Contains(sizes, m.Bytes) {
			sizes = append(sizes, m.Bytes)
		}
		// Staging whole must beat the pipeline too: a size staged is
		// never pipelined.
		stagedWins[d][m.Bytes] = m.Staged >= m.Direct && m.Staged >= m.Pipelined
		pipeWins[d][m.Bytes] = m.Pipelined > m.Direct
	}
	slices.Sort(sizes)
	for d := range stageMax {
		for _, n := range sizes {
			if !stagedWins[d][n] {
				break
			}
			stageMax[d] = n
		}
		pipeMin[d] = math.MaxInt
		for i := len(sizes) - 1; i >= 0 && pipeWins[d][sizes[i]]; i-- {
			pipeMin[d] = sizes[i]
		}
	}
	return stageMax, pipeMin
}

// calibrateArena is the least memory Calibrate walks through, and
// calibrateRun how long each of its timed runs lasts; variables, so that
// the fault sweep, which calibrates once for every failure it injects, can
// run small ones.
var calibrateArena, calibrateRun atomic.Int64

func init() {
	calibrateArena.Store(256 << 20)
	calibrateRun.Store(int64(10 * time.Millisecond))
}

// measureTransfer returns the median throughput, in bytes per second, of
// moving slices from slot to or from the device through sb, over five runs
// of enough transfers to last about 10 ms each.
func measureTransfer(sb *StagingBuffer, slot func(int) (*DeviceBuffer[byte], []byte, error), s *Stream, up bool) (float64, error) {
	i, bytes := 0, 0
	move := func() error {
		d, h, err := slot(i)
		if err != nil {
			return err
		}
		i, bytes = i+1, len(h)
		if up {
			return Upload(sb, d, h, s)
		}
		return Download(sb, h, d, s)
	}
	if err := move(); err != nil { // warm up, and pin what the path needs
		return 0, err
	}
	reps := 1
	for {
		start := time.Now()
		for range reps {
			if err := move(); err != nil {
				return 0, err
			}
		}
		if el := time.Since(start); el > time.Duration(calibrateRun.Load()) || reps >= 1<<16 {
			break
		}
		reps *= 2
	}
	var rates []float64
	for range 5 {
		start := time.Now()
		for range reps {
			if err := move(); err != nil {
				return 0, err
			}
		}
		rates = append(rates, float64(bytes*reps)/time.Since(start).Seconds())
	}
	slices.Sort(rates)
	return rates[len(rates)/2], nil
}

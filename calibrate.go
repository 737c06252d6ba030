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

// StagingCalibration is what Calibrate measured, and the thresholds it chose.
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
}

// Calibrate measures, on this machine's device, how fast ordinary slices move
// through each of the staging buffer's paths (staged whole, pipelined, or
// handed to the driver) at DefaultCalibrationSizes (or CalibrateSizes), both ways, and sets sb's
// thresholds to where each wins: each direction's StageMaxBytes to the
// largest size up to which staging was at least as fast as the driver and
// the pipeline at every size, and the pipeline's UploadMinBytes and DownloadMinBytes to the
// smallest size from which the pipeline was faster than the driver at
// every larger size, that way. It takes a few seconds and
// temporarily pins sb's pipeline memory. progress, if not nil, is called
// after each measurement with the number done and the total.
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

	// One staging buffer per path, sharing sb's pipeline shape.
	pipe := sb.Pipeline()
	staged, direct, piped := new(StagingBuffer), new(StagingBuffer), new(StagingBuffer)
	defer lifetime.CloseTemp(&err, staged.Close)
	defer lifetime.CloseTemp(&err, direct.Close)
	defer lifetime.CloseTemp(&err, piped.Close)
	off := pipe
	off.UploadMinBytes, off.DownloadMinBytes = math.MaxInt, math.MaxInt
	staged.SetAutoStageMaxBytes(math.MaxInt)
	direct.SetAutoStageMaxBytes(0)
	piped.SetAutoStageMaxBytes(0)
	for _, b := range []*StagingBuffer{staged, direct} {
		if err := b.SetPipeline(off); err != nil {
			return StagingCalibration{}, err
		}
	}
	on := pipe
	on.UploadMinBytes, on.DownloadMinBytes = 1, 1
	if err := piped.SetPipeline(on); err != nil {
		return StagingCalibration{}, err
	}

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
	sb.SetStageMaxBytes(HostToDevice, cal.StageMaxBytes[HostToDevice])
	sb.SetStageMaxBytes(DeviceToHost, cal.StageMaxBytes[DeviceToHost])
	pipe.UploadMinBytes, pipe.DownloadMinBytes = cal.PipelineMinBytes[HostToDevice], cal.PipelineMinBytes[DeviceToHost]
	if err := sb.SetPipeline(pipe); err != nil {
		return StagingCalibration{}, err
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

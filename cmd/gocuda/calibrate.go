package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/bench/report/results"
	"golang.org/x/term"
)

func runCalibrate(args []string, w, stderr io.Writer) error {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	device := fs.Int("device", 0, "device ordinal")
	jsonPath := fs.String("json", "", "also write the measurements and the choice as JSON to this file")
	if err := parseFlags(fs, args, w); err != nil {
		return err
	}
	dev, ctx, err := openDevice(*device)
	if err != nil {
		return err
	}
	defer ctx.Close()
	var sb cuda.StagingBuffer
	defer sb.Close()
	progress := newProgress(stderr, "calibrating")
	cal, err := sb.Calibrate(ctx, progress.update)
	progress.done()
	if err != nil {
		return err
	}
	name, _ := dev.Name()
	rep := calibrationReport(dev.Ordinal(), name, cal)
	if *jsonPath != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := results.WriteFile(*jsonPath, func(f *os.File) error { _, err := f.Write(append(data, '\n')); return err }); err != nil {
			return err
		}
	}
	writeCalibration(w, rep)
	return nil
}

// writeCalibration writes the table of rep and how to use its choice.
func writeCalibration(w io.Writer, rep calibration) {
	fmt.Fprintf(w, "staging calibration on device %d (%s), GB/s:\n\n", rep.Device, rep.Name)
	fmt.Fprintf(w, "%-4s %10s %8s %10s %8s\n", "dir", "size", "staged", "pipelined", "driver")
	for _, m := range rep.Measurements {
		fmt.Fprintf(w, "%-4s %10s %8.2f %10.2f %8.2f\n", m.Direction, results.FormatSize(m.Bytes), m.StagedGBps, m.PipelinedGBps, m.DriverGBps)
	}
	fmt.Fprintf(w, "\nchosen: stage uploads %s, downloads %s; pipeline uploads %s, downloads %s\n",
		stageSize(rep.StageMaxBytes.Up), stageSize(rep.StageMaxBytes.Down), pipelineSize(rep.PipelineMinBytes.Up), pipelineSize(rep.PipelineMinBytes.Down))
	// A staging buffer's options are given once, when it is built.
	fmt.Fprintf(w, "\nto use them, build a staging buffer with them:\n\tp := cuda.DefaultStagingPipeline()\n\tp.UploadMinBytes, p.DownloadMinBytes = %s, %s\n"+
		"\tsb, err := cuda.NewStagingBufferOptions(ctx, 0, cuda.StagingOptions{\n\t\tUploadStageMaxBytes:   %s,\n\t\tDownloadStageMaxBytes: %s,\n\t\tPipeline:              p,\n\t})\n",
		goBytes(rep.PipelineMinBytes.Up), goBytes(rep.PipelineMinBytes.Down), goBytes(rep.StageMaxBytes.Up), goBytes(rep.StageMaxBytes.Down))
	fmt.Fprintf(w, "or, once at start-up, with the Options that sb.Calibrate(ctx, nil) returns.\n")
}

// calibration is what gocuda calibrate --json writes.
type calibration struct {
	Device           int                      `json:"device"`
	Name             string                   `json:"name"`
	Measurements     []calibrationMeasurement `json:"measurements"`
	StageMaxBytes    upDown                   `json:"stage_max_bytes"`    // staged up to this size; 0 never, math.MaxInt always
	PipelineMinBytes upDown                   `json:"pipeline_min_bytes"` // pipelined from this size; math.MaxInt never
}

type calibrationMeasurement struct {
	Direction     string  `json:"direction"` // "up" or "down"
	Bytes         int     `json:"bytes"`
	StagedGBps    float64 `json:"staged_gbps"`
	PipelinedGBps float64 `json:"pipelined_gbps"`
	DriverGBps    float64 `json:"driver_gbps"`
}

type upDown struct {
	Up   int `json:"up"`
	Down int `json:"down"`
}

func calibrationReport(ordinal int, name string, cal cuda.StagingCalibration) calibration {
	rep := calibration{Device: ordinal, Name: name,
		StageMaxBytes:    upDown{cal.StageMaxBytes[cuda.HostToDevice], cal.StageMaxBytes[cuda.DeviceToHost]},
		PipelineMinBytes: upDown{cal.PipelineMinBytes[cuda.HostToDevice], cal.PipelineMinBytes[cuda.DeviceToHost]},
	}
	for _, m := range cal.Measurements {
		dir := "down"
		if m.Upload {
			dir = "up"
		}
		rep.Measurements = append(rep.Measurements, calibrationMeasurement{dir, m.Bytes, m.Staged / 1e9, m.Pipelined / 1e9, m.Direct / 1e9})
	}
	return rep
}

// stageSize says in words up to which size transfers are staged.
func stageSize(n int) string {
	switch n {
	case 0:
		return "never"
	case math.MaxInt:
		return "at every size"
	}
	return "up to " + results.FormatSize(n)
}

// pipelineSize says in words from which size transfers are pipelined.
func pipelineSize(n int) string {
	if n == math.MaxInt {
		return "never"
	}
	return "from " + results.FormatSize(n)
}

// goBytes writes n as Go source: math.MaxInt by name.
func goBytes(n int) string {
	if n == math.MaxInt {
		return "math.MaxInt"
	}
	return fmt.Sprint(n)
}

// progress shows a single updating line on a terminal, and a line at each
// tenth of the work elsewhere (logs, pipes).
type progress struct {
	w      io.Writer
	label  string
	tty    bool
	tenths int // tenths already reported, off a terminal
}

func newProgress(w io.Writer, label string) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, label: label, tty: ok && term.IsTerminal(int(f.Fd()))}
}

func (p *progress) update(done, total int) {
	switch {
	case p.tty:
		fmt.Fprintf(p.w, "\r%s: %d/%d", p.label, done, total)
	case total > 0 && done*10/total > p.tenths:
		p.tenths = done * 10 / total
		fmt.Fprintf(p.w, "%s: %d/%d\n", p.label, done, total)
	}
}

func (p *progress) done() {
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/bench/results"
	"golang.org/x/term"
)

func runCalibrate(args []string, w, stderr io.Writer) error {
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	device := fs.Int("device", 0, "device ordinal")
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
	fmt.Fprintf(w, "staging calibration on device %d (%s), GB/s:\n\n", dev.Ordinal(), name)
	fmt.Fprintf(w, "%-4s %10s %8s %10s %8s\n", "dir", "size", "staged", "pipelined", "driver")
	for _, m := range cal.Measurements {
		dir := "down"
		if m.Upload {
			dir = "up"
		}
		fmt.Fprintf(w, "%-4s %10s %8.2f %10.2f %8.2f\n", dir, results.FormatSize(m.Bytes), m.Staged/1e9, m.Pipelined/1e9, m.Direct/1e9)
	}
	size := func(n int) string {
		if n == math.MaxInt {
			return "never"
		}
		return results.FormatSize(n)
	}
	up, down := cal.StageMaxBytes[cuda.HostToDevice], cal.StageMaxBytes[cuda.DeviceToHost]
	pipeUp, pipeDown := cal.PipelineMinBytes[cuda.HostToDevice], cal.PipelineMinBytes[cuda.DeviceToHost]
	fmt.Fprintf(w, "\nchosen: stage uploads up to %s, downloads up to %s; pipeline uploads from %s, downloads from %s\n",
		size(up), size(down), size(pipeUp), size(pipeDown))
	fmt.Fprintf(w, "\nto use them:\n\tsb.SetStageMaxBytes(cuda.HostToDevice, %d)\n\tsb.SetStageMaxBytes(cuda.DeviceToHost, %d)\n\tp := sb.Pipeline()\n\tp.UploadMinBytes, p.DownloadMinBytes = %d, %d\n\tsb.SetPipeline(p)\n",
		up, down, pipeUp, pipeDown)
	fmt.Fprintf(w, "or call sb.Calibrate(ctx, nil) once at start-up.\n")
	return nil
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

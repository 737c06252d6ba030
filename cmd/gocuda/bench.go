package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/bench/report/results"
	"github.com/gocuda/cuda/internal/nvml"
)

// defaultSizes are the transfer sizes gocuda bench measures unless told:
// 4 KiB to 1 GiB, with the sizes the staging buffer's specification quotes
// (150 KiB, 196 KiB, 4.7 MiB) among them.
var defaultSizes = []int{4 << 10, 16 << 10, 64 << 10, 150 << 10, 196 << 10, 256 << 10, 1 << 20,
	4928307, 16 << 20, 64 << 20, 256 << 20, 1 << 30}

type benchConfig struct {
	sizes      []int
	device     int
	reps       int
	directions []cuda.Direction
	jsonPath   string
	plotPath   string
}

func parseBenchFlags(args []string, stdout io.Writer) (benchConfig, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	sizes := fs.String("sizes", "", "comma-separated transfer sizes, such as 4KiB,1MiB,1GiB (default 4KiB to 1GiB)")
	device := fs.Int("device", 0, "device ordinal")
	reps := fs.Int("reps", 20, "timed transfers per path and size")
	direction := fs.String("direction", "both", "up (host to device), down, or both")
	jsonPath := fs.String("json", "", "also write the results as JSON to this file")
	plotPath := fs.String("plot", "", "also plot the results to this file (.svg or .png)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return benchConfig{}, err
	}
	cfg := benchConfig{sizes: defaultSizes, device: *device, reps: *reps, jsonPath: *jsonPath, plotPath: *plotPath}
	if *sizes != "" {
		var err error
		if cfg.sizes, err = parseSizes(*sizes); err != nil {
			return benchConfig{}, fmt.Errorf("%w: -sizes: %v", errUsage, err)
		}
	}
	switch *direction {
	case "up":
		cfg.directions = []cuda.Direction{cuda.HostToDevice}
	case "down":
		cfg.directions = []cuda.Direction{cuda.DeviceToHost}
	case "both":
		cfg.directions = []cuda.Direction{cuda.HostToDevice, cuda.DeviceToHost}
	default:
		return benchConfig{}, fmt.Errorf("%w: -direction %q: want up, down or both", errUsage, *direction)
	}
	if cfg.reps < 1 || cfg.reps > 100000 {
		return benchConfig{}, fmt.Errorf("%w: -reps %d: want 1 to 100000", errUsage, cfg.reps)
	}
	if cfg.device < 0 {
		return benchConfig{}, fmt.Errorf("%w: -device %d: want an ordinal from 0", errUsage, cfg.device)
	}
	if cfg.plotPath != "" {
		if ext := strings.ToLower(filepath.Ext(cfg.plotPath)); ext != ".svg" && ext != ".png" {
			return benchConfig{}, fmt.Errorf("%w: -plot %q: want a .svg or .png file", errUsage, cfg.plotPath)
		}
	}
	return cfg, nil
}

// parseSizes parses "4KiB,1MiB,1GiB": numbers with an optional unit (B,
// KiB, MiB, GiB; K, M, G and KB, MB, GB are read as binary units too).
func parseSizes(s string) ([]int, error) {
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		num := strings.TrimRightFunc(f, func(r rune) bool { return r < '0' || r > '9' && r != '.' })
		unit := strings.ToLower(strings.TrimSpace(f[len(num):]))
		mult, ok := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
			"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}[unit]
		if !ok {
			return nil, fmt.Errorf("%q: unknown unit %q (use B, KiB, MiB or GiB)", f, unit)
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v <= 0 || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q is not a positive size", f)
		}
		n := v * mult
		if n < 1 || n > 1<<40 {
			return nil, fmt.Errorf("%q: want 1 byte to 1 TiB", f)
		}
		sizes = append(sizes, int(n))
	}
	slices.Sort(sizes)
	return slices.Compact(sizes), nil
}

func runBench(args []string, w, stderr io.Writer) error {
	cfg, err := parseBenchFlags(args, w)
	if err != nil {
		return err
	}
	// Fail on an unwritable output before, not after, a long run.
	for _, p := range []string{cfg.jsonPath, cfg.plotPath} {
		if err := checkWritable(p); err != nil {
			return err
		}
	}
	dev, ctx, err := openDevice(cfg.device)
	if err != nil {
		return err
	}
	defer ctx.Close()
	rep, err := describe(dev)
	if err != nil {
		return err
	}
	prog := newProgress(stderr, "measuring")
	rep.Results, err = measureAll(ctx, cfg, prog.update)
	prog.done()
	if err != nil {
		return err
	}
	printTable(w, rep, cfg.directions)
	if cfg.jsonPath != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := results.WriteFile(cfg.jsonPath, func(f *os.File) error { _, err := f.Write(append(data, '\n')); return err }); err != nil {
			return err
		}
	}
	if cfg.plotPath != "" {
		if err := results.WriteFile(cfg.plotPath, func(f *os.File) error { return results.Plot(f, cfg.plotPath, rep, results.GocudaPaths()) }); err != nil {
			return err
		}
	}
	return nil
}

// describe fills in what the report says of the machine.
func describe(dev cuda.Device) (results.Report, error) {
	name, err := dev.Name()
	if err != nil {
		return results.Report{}, err
	}
	v, err := cuda.DriverVersion()
	if err != nil {
		return results.Report{}, err
	}
	rep := results.Report{Date: time.Now().UTC().Format("2006-01-02"), Device: name, Driver: "CUDA " + v.String()}
	if bus, err := dev.PCIBusID(); err == nil {
		if l, err := nvml.PCIeLink(bus); err == nil {
			rep.PCIe = fmt.Sprintf("Gen%d x%d", l.Gen, l.Width)
			rep.LinkGBps = pcieRate(l.Gen, l.Width)
		}
	}
	return rep, nil
}

// pcieRate is a PCIe link's raw rate each way in GB/s: transfers per second
// per lane, times lanes, less the line encoding.
func pcieRate(gen, width int) float64 {
	gts := map[int]float64{1: 2.5, 2: 5, 3: 8, 4: 16, 5: 32, 6: 64}[gen]
	enc := 128.0 / 130
	if gen <= 2 {
		enc = 0.8
	}
	return gts * enc * float64(width) / 8
}

// checkWritable makes sure a file can be created at path, leaving nothing.
func checkWritable(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".gocuda-check-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

func dirName(d cuda.Direction) string {
	if d == cuda.HostToDevice {
		return "up"
	}
	return "down"
}

// printTable prints one table per direction: median GB/s and spread of each
// path (and the fresh path's slowest transfer), the fastest marked with *.
func printTable(w io.Writer, rep results.Report, dirs []cuda.Direction) {
	fmt.Fprintf(w, "%s, %s", rep.Device, rep.Driver)
	if rep.PCIe != "" {
		fmt.Fprintf(w, ", PCIe %s (%.1f GB/s raw each way)", rep.PCIe, rep.LinkGBps)
	}
	fmt.Fprintf(w, "\nGB/s, median ±half the interquartile range; * the fastest path at each size\n")
	for _, d := range dirs {
		fmt.Fprintf(w, "\n%s\n%-10s", d, "size")
		for _, p := range results.GocudaPaths() {
			fmt.Fprintf(w, " %-22s", p)
		}
		fmt.Fprintln(w)
		var sizes []int
		for _, r := range rep.Results {
			if r.Direction == dirName(d) && !slices.Contains(sizes, r.Bytes) {
				sizes = append(sizes, r.Bytes)
			}
		}
		for _, n := range sizes {
			cells := map[string]results.Result{}
			best := ""
			for _, r := range rep.Results {
				if r.Direction == dirName(d) && r.Bytes == n {
					cells[r.Path] = r
					if best == "" || r.Median > cells[best].Median {
						best = r.Path
					}
				}
			}
			fmt.Fprintf(w, "%-10s", results.FormatSize(n))
			for _, p := range results.GocudaPaths() {
				r, ok := cells[p]
				if !ok {
					fmt.Fprintf(w, " %-22s", "-")
					continue
				}
				cell := fmt.Sprintf("%.2f ±%.0f%%", r.Median, 50*(r.P75-r.P25)/r.Median)
				if r.Route != "" {
					cell += " " + r.Route
				}
				if p == results.Fresh && r.Min > 0 {
					// Fresh slices vary most: the slowest transfer too.
					cell += fmt.Sprintf(" min %.1f", r.Min)
				}
				if p == best {
					cell += " *"
				}
				fmt.Fprintf(w, " %-22s", cell)
			}
			fmt.Fprintln(w)
		}
	}
}

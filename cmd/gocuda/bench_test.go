package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/bench/report/results"
)

func TestParseSizes(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{"4KiB,1MiB,1GiB", []int{4 << 10, 1 << 20, 1 << 30}, ""},
		{"1g, 4k ,512", []int{512, 4 << 10, 1 << 30}, ""},
		{"4.7MiB", []int{4928307}, ""},
		{"1MB,1MiB", []int{1 << 20}, ""},
		{"", nil, "not a positive size"},
		{"0", nil, "not a positive size"},
		{"-4KiB", nil, "not a positive size"},
		{"4XB", nil, "unknown unit"},
		{"4KiB,,8KiB", nil, "not a positive size"},
		{"2TiB", nil, "unknown unit"},
		{"2048GiB", nil, "1 byte to 1 TiB"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseSizes(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("parseSizes(%q) = %v, %v; want an error saying %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("parseSizes(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseBenchFlags(t *testing.T) {
	cfg, err := parseBenchFlags(nil, io.Discard)
	if err != nil || !slices.Equal(cfg.sizes, defaultSizes) || cfg.reps != 20 || len(cfg.directions) != 2 {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	cfg, err = parseBenchFlags([]string{"--sizes", "1MiB", "--direction", "down", "--reps", "3", "--device", "1", "--plot", "x.PNG", "--json", "x.json"}, io.Discard)
	if err != nil || cfg.sizes[0] != 1<<20 || cfg.directions[0] != cuda.DeviceToHost || cfg.reps != 3 || cfg.device != 1 || cfg.plotPath != "x.PNG" || cfg.jsonPath != "x.json" {
		t.Errorf("flags: %+v, %v", cfg, err)
	}
	for _, args := range [][]string{
		{"-sizes", "lots"}, {"-direction", "sideways"}, {"-reps", "0"}, {"-device", "-1"},
		{"-plot", "x.jpg"}, {"-nosuch"}, {"stray"},
	} {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"bench"}, args...), &out, &errOut); code != 2 {
			t.Errorf("bench %v: exit %d, want 2 (usage); stderr %q", args, code, errOut.String())
		}
		// A bad flag or argument is followed by the list of flags; a bad
		// value of a known flag by nothing more.
		first, rest, _ := strings.Cut(errOut.String(), "\n")
		if !strings.HasPrefix(first, "gocuda bench: ") {
			t.Errorf("bench %v: first line %q", args, first)
		}
		if wantFlags := args[0] == "-nosuch" || args[0] == "stray"; wantFlags != strings.Contains(rest, "-sizes string") {
			t.Errorf("bench %v: stderr %q: list of flags shown %v, want %v", args, errOut.String(), !wantFlags, wantFlags)
		}
	}
}

func TestBenchRuntimeErrors(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"unwritable plot": {"-plot", filepath.Join(dir, "missing", "x.svg"), "-sizes", "4KiB"},
		"no such device":  {"-device", "99", "-sizes", "4KiB"},
		"too large":       {"-sizes", "1024GiB"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(append([]string{"bench"}, args...), &out, &errOut); code != 1 {
				t.Errorf("exit %d, want 1; stderr %q", code, errOut.String())
			}
			if strings.Count(errOut.String(), "\n") != 1 {
				t.Errorf("want one line, got %q", errOut.String())
			}
			t.Log(strings.TrimSpace(errOut.String()))
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}

func TestBench(t *testing.T) {
	dir := t.TempDir()
	jsonPath, plotPath := filepath.Join(dir, "b.json"), filepath.Join(dir, "b.svg")
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "-sizes", "4KiB,200KiB", "-reps", "3", "-json", jsonPath, "-plot", plotPath}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, w := range []string{"host to device", "device to host", "copy", "pinned", "in-place", "staging", "fresh", "min ", "4 KiB", "200 KiB", "*"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, out.String())
		}
	}
	var rep results.Report
	data, err := os.ReadFile(jsonPath)
	if err != nil || json.Unmarshal(data, &rep) != nil {
		t.Fatalf("reading the JSON: %v", err)
	}
	if len(rep.Results) != 2*2*len(results.GocudaPaths()) {
		t.Errorf("%d results, want %d", len(rep.Results), 2*2*len(results.GocudaPaths()))
	}
	for _, r := range rep.Results {
		if r.Median <= 0 || r.P25 > r.Median || r.Median > r.P75 || r.Reps != 3 {
			t.Errorf("result %+v", r)
		}
		if (r.Path == results.Staging) != (r.Route != "") {
			t.Errorf("route %q on path %s", r.Route, r.Path)
		}
		if r.Min <= 0 || r.Min > r.P25 {
			t.Errorf("slowest transfer %v of %+v", r.Min, r)
		}
	}
	svg, err := os.ReadFile(plotPath)
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("plot: %v", err)
	}
	t.Log("\n" + out.String())
}

func TestWritePlot(t *testing.T) {
	rep := results.Report{Device: "test", PCIe: "Gen5 x16", LinkGBps: 63}
	for i, n := range []int{4 << 10, 1 << 20, 1 << 30} {
		for _, p := range results.GocudaPaths() {
			rep.Results = append(rep.Results, results.Result{Direction: "up", Bytes: n, Path: p, Median: float64(i + 1)})
		}
	}
	for _, name := range []string{"x.svg", "x.png"} {
		var buf bytes.Buffer
		if err := results.Plot(&buf, name, rep, results.GocudaPaths()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if buf.Len() < 1000 {
			t.Errorf("%s: only %d bytes", name, buf.Len())
		}
	}
	if err := results.Plot(new(bytes.Buffer), "x.svg", results.Report{}, results.GocudaPaths()); err == nil {
		t.Error("plotting no results succeeded")
	}
}

func TestPCIeRate(t *testing.T) {
	if r := pcieRate(5, 16); r < 62.9 || r > 63.1 {
		t.Errorf("Gen5 x16 = %.2f GB/s, want 63.0", r)
	}
	if r := pcieRate(2, 8); r != 4 {
		t.Errorf("Gen2 x8 = %.2f GB/s, want 4", r)
	}
}

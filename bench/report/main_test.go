package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gocuda/cuda/bench/report/results"
)

func TestParseCRef(t *testing.T) {
	got, err := parseCRef(strings.NewReader("pageable H2D 4096 8192.0\npinned D2H 1048576 20000\nregistered H2D 4096 1\n\n"))
	if err != nil || len(got) != 2 {
		t.Fatalf("parseCRef = %v, %v", got, err)
	}
	if r := got[0]; r.Path != results.CPageable || r.Direction != "up" || r.Bytes != 4096 || r.Median != 0.5 {
		t.Errorf("first line parsed as %+v", r)
	}
	for _, bad := range []string{"pageable H2D 4096", "pageable H2D x 1", "pageable H2D 4096 -1"} {
		if _, err := parseCRef(strings.NewReader(bad)); err == nil {
			t.Errorf("parseCRef(%q) succeeded", bad)
		}
	}
}

func writeComparison(t *testing.T, dir string) {
	t.Helper()
	rep := results.Report{Date: "2026-11-29", Device: "GPU", Driver: "CUDA 13.0", PCIe: "Gen5 x16", LinkGBps: 63}
	for _, d := range []string{"up", "down"} {
		for _, n := range []int{1 << 20, 64 << 20} {
			for i, p := range results.GocudaPaths() {
				r := results.Result{Direction: d, Bytes: n, Path: p, Median: float64(10 * (i + 1))}
				if p == results.Staging {
					r.Route = "pipelined"
				}
				rep.Results = append(rep.Results, r)
			}
		}
	}
	data, _ := json.Marshal(rep)
	os.WriteFile(filepath.Join(dir, "bench.json"), data, 0o644)
	// C pinned at 1 MiB: 1048576 bytes in 52428.8 ns = 20 GB/s.
	os.WriteFile(filepath.Join(dir, "cref.txt"), []byte("pinned H2D 1048576 52428.8\npageable H2D 67108864 6710886.4\n"), 0o644)
	torch := `{"torch": "2.11.0", "results": [{"direction": "up", "bytes": 67108864, "path": "pageable", "median_gbps": 8},
		{"direction": "up", "bytes": 67108864, "path": "pin_memory", "median_gbps": 10}, {"direction": "up", "bytes": 1048576, "path": "pin_memory", "median_gbps": 20}]}`
	os.WriteFile(filepath.Join(dir, "torch.json"), []byte(torch), 0o644)
	oneshot := `{"versions": {"cupy": "13.6.0"}, "results": [{"direction": "up", "bytes": 67108864, "path": "cupy", "median_gbps": 6}]}`
	os.WriteFile(filepath.Join(dir, "oneshot.json"), []byte(oneshot), 0o644)
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	writeComparison(t, dir)
	doc := filepath.Join(dir, "perf.md")
	os.WriteFile(doc, []byte("# Perf\n\nbefore\n"+reportBegin+"\nold text\n"+reportEnd+"\nafter\n"), 0o644)
	plotPath := filepath.Join(dir, "t.svg")
	var out, errOut bytes.Buffer
	if code := run([]string{"-dir", dir, "-doc", doc, "-plot", plotPath}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	text, _ := os.ReadFile(doc)
	s := string(text)
	for _, w := range []string{
		"before\n" + reportBegin, reportEnd + "\nafter", "Measured 2026-11-29 on GPU, CUDA 13.0, PyTorch 2.11.0, CuPy 13.6.0, PCIe Gen5 x16",
		"| 64 MiB | 10.00 | 20.00 | 30.00 | 40.00 pipelined | 10.00 | - | 8.00 | - | 10.00 | 6.00 | - | 4.00x | - |",
		"| 1 MiB | 10.00 | 20.00 | 30.00 | 40.00 pipelined | - | 20.00 | - | - | 20.00 | - | - | 2.00x | 1.00x |",
		"`Upload` of a Go slice ran at 2.00-4.00x PyTorch's fastest path for an ordinary tensor", "![GB/s against transfer size](t.svg)",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("document lacks %q:\n%s", w, s)
		}
	}
	if strings.Contains(s, "old text") {
		t.Error("the old section was kept")
	}
	if svg, err := os.ReadFile(plotPath); err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("plot: %v", err)
	}
}

func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	writeComparison(t, dir)
	noMarkers := filepath.Join(dir, "plain.md")
	os.WriteFile(noMarkers, []byte("# no markers\n"), 0o644)
	for name, tt := range map[string]struct {
		args []string
		code int
	}{
		"no dir":      {nil, 2},
		"bad flag":    {[]string{"-nope"}, 2},
		"extra args":  {[]string{"-dir", dir, "more"}, 2},
		"help":        {[]string{"-h"}, 0},
		"missing dir": {[]string{"-dir", filepath.Join(dir, "nope"), "-doc", noMarkers}, 1},
		"no markers":  {[]string{"-dir", dir, "-doc", noMarkers, "-plot", filepath.Join(dir, "x.svg")}, 1},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tt.args, &out, &errOut); code != tt.code {
				t.Errorf("exit %d, want %d: %s", code, tt.code, errOut.String())
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "x.svg")); err == nil {
		t.Error("a failed report left a plot behind")
	}
	if text, _ := os.ReadFile(noMarkers); string(text) != "# no markers\n" {
		t.Error("a failed report changed the document")
	}
}

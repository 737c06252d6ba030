package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/driver"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

func TestUsage(t *testing.T) {
	tests := []struct {
		args      []string
		code      int
		out, errs string // what stdout and stderr contain
	}{
		{nil, 2, "", "usage: gocuda"},
		{[]string{"help"}, 0, "usage: gocuda", ""},
		{[]string{"-h"}, 0, "Run gocuda <command> -h", ""},
		{[]string{"nosuch"}, 2, "", `unknown command "nosuch"`},
		{[]string{"info", "-nosuch"}, 2, "", "flag provided but not defined"},
		{[]string{"info", "extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"calibrate", "-nosuch"}, 2, "", "-device int"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tt.args, &out, &errOut); code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			if !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.errs) {
				t.Errorf("stdout %q, stderr %q; want them to hold %q and %q", out.String(), errOut.String(), tt.out, tt.errs)
			}
		})
	}
}

// TestCommandHelp: every command's -h prints its usage, what it does and
// every flag it takes, on stdout, and exits 0 without doing the work.
func TestCommandHelp(t *testing.T) {
	flags := map[string][]string{
		"bench":     {"-sizes", "-device", "-reps", "-direction", "-json", "-plot"},
		"info":      nil,
		"calibrate": {"-device", "-json"},
		"version":   nil,
	}
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			want, ok := flags[c.name]
			if !ok {
				t.Fatalf("command %s has no line in this test", c.name)
			}
			for _, h := range []string{"-h", "--help"} {
				var out, errOut bytes.Buffer
				if code := run([]string{c.name, h}, &out, &errOut); code != 0 {
					t.Errorf("%s %s: exit %d, want 0; stderr %q", c.name, h, code, errOut.String())
				}
				help := out.String()
				for _, w := range append([]string{"usage: gocuda " + c.name, c.summary}, want...) {
					if !strings.Contains(help, w) {
						t.Errorf("%s %s: help %q lacks %q", c.name, h, help, w)
					}
				}
				if errOut.Len() != 0 {
					t.Errorf("%s %s: stderr %q, want nothing", c.name, h, errOut.String())
				}
				if want == nil && strings.Contains(help, "flags") {
					t.Errorf("%s %s: help %q has a flags section, and the command has no flags", c.name, h, help)
				}
			}
		})
	}
}

func TestInfo(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"info"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, w := range []string{"CUDA driver", "device 0:", "memory", "compute", "PCI bus id", "PCIe link"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	t.Log("\n" + out.String())
}

// TestVersion: gocuda version names itself, Go, the driver and each
// library, found or not, one line each.
func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, w := range []string{"gocuda ", "go1.", "CUDA driver", "NVRTC", "cuBLAS", "NCCL", "cuRAND", "cuFFT"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	t.Log("\n" + out.String())
}

// TestInfoPCIeLineShort: without NVML, gocuda info's PCIe line says so in
// a few words, not the search's whole list of paths.
func TestInfoPCIeLineShort(t *testing.T) {
	if !cudatest.InChild(t) {
		cudatest.RunChild(t, cudatest.DriverAsIs, "GOCUDA_LIBNVML=/nonexistent/libnvidia-ml.so.1")
		return
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"info"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "PCIe link") && (len(line) > 120 || !strings.Contains(line, "NVML not found")) {
			t.Errorf("PCIe line %q: want a short note that NVML is missing", line)
		}
	}
}

func TestInfoWithoutDriver(t *testing.T) {
	if !cudatest.InChild(t) {
		cudatest.RunChild(t, cudatest.DriverAsIs, driver.EnvLibrary+"=/nonexistent/libcuda.so.1")
		return
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"info"}, &out, &errOut); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	msg := errOut.String()
	if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "no CUDA driver") {
		t.Errorf("want one line saying the driver is missing, got %q", msg)
	}
	if out.Len() != 0 {
		t.Errorf("stdout not empty: %q", out.String())
	}
}

// TestCalibrationReport: calibrate's table and advice write sizes in
// words and Go source, never math.MaxInt's digits, and --json keeps them.
func TestCalibrationReport(t *testing.T) {
	cal := cuda.StagingCalibration{
		Measurements:     []cuda.StagingMeasurement{{Bytes: 1 << 20, Upload: true, Staged: 20e9, Pipelined: 30e9, Direct: 25e9}},
		StageMaxBytes:    [2]int{cuda.HostToDevice: 0, cuda.DeviceToHost: 256 << 10},
		PipelineMinBytes: [2]int{cuda.HostToDevice: 1 << 20, cuda.DeviceToHost: math.MaxInt},
	}
	rep := calibrationReport(0, "a GPU", cal)
	var out bytes.Buffer
	writeCalibration(&out, rep)
	text := out.String()
	for _, w := range []string{"stage uploads never", "downloads up to 256 KiB", "pipeline uploads from 1 MiB", "downloads never", "p.UploadMinBytes, p.DownloadMinBytes = 1048576, math.MaxInt",
		"cuda.NewStagingBufferOptions(ctx, 0, cuda.StagingOptions{", "UploadStageMaxBytes:   0,", "DownloadStageMaxBytes: 262144,", "30.00"} {
		if !strings.Contains(text, w) {
			t.Errorf("output lacks %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, fmt.Sprint(math.MaxInt)) {
		t.Errorf("output prints math.MaxInt's digits:\n%s", text)
	}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back calibration
	if err := json.Unmarshal(data, &back); err != nil || back.PipelineMinBytes.Down != math.MaxInt || back.Measurements[0].Direction != "up" {
		t.Errorf("JSON %s read back as %+v, %v", data, back, err)
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/driver"
)

func TestMain(m *testing.M) { cudatest.Main(m) }

func TestUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: gocuda"},
		{[]string{"help"}, 0, "usage: gocuda"},
		{[]string{"nosuch"}, 2, `unknown command "nosuch"`},
		{[]string{"info", "-nosuch"}, 2, "flag provided but not defined"},
		{[]string{"info", "extra"}, 2, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tt.args, &out, &errOut); code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			if !strings.Contains(errOut.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tt.want)
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

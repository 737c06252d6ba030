package cuda_test

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestDevice(t *testing.T) {
	dev := cudatest.Device(t)
	v, err := cuda.DriverVersion()
	if err != nil || v.Major < 11 {
		t.Errorf("DriverVersion() = %v, %v; want 11.0 or later", v, err)
	}
	name, err := dev.Name()
	if err != nil || name == "" {
		t.Errorf("Name() = %q, %v", name, err)
	}
	mem, err := dev.TotalMemory()
	if err != nil || mem < 1<<30 {
		t.Errorf("TotalMemory() = %d, %v; want at least 1 GiB", mem, err)
	}
	cc, err := dev.ComputeCapability()
	if err != nil || cc.Major < 3 {
		t.Errorf("ComputeCapability() = %v, %v", cc, err)
	}
	bus, err := dev.PCIBusID()
	if err != nil || !regexp.MustCompile(`^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]$`).MatchString(bus) {
		t.Errorf("PCIBusID() = %q, %v", bus, err)
	}
	sms, err := dev.MultiprocessorCount()
	if err != nil || sms < 1 {
		t.Errorf("MultiprocessorCount() = %d, %v", sms, err)
	}
	t.Logf("%s driver: %s, %s, %d GiB, compute %v, %d SMs, bus %s, CUDA %v", cudatest.Kind(), dev, name, mem>>30, cc, sms, bus, v)
}

func TestDeviceAttributes(t *testing.T) {
	dev := cudatest.Device(t)
	for _, a := range cuda.KnownAttributes() {
		t.Run(a.String(), func(t *testing.T) {
			if _, err := dev.Attribute(a); err != nil {
				t.Errorf("Attribute(%v): %v", a, err)
			}
			got, err := cuda.ParseAttribute(strings.ToLower(a.String()))
			if err != nil || got != a {
				t.Errorf("ParseAttribute(%q) = %v, %v", a.String(), got, err)
			}
		})
	}
	if ws, _ := dev.Attribute(cuda.AttrWarpSize); ws != 32 {
		t.Errorf("warp size %d, want 32", ws)
	}
	// 1<<32 + 1 is MaxThreadsPerBlock's 1 in the driver's int32.
	for _, bad := range []cuda.Attribute{0, -1, 100000, 1<<32 + 1, math.MinInt64 + 1} {
		if _, err := dev.Attribute(bad); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), bad.String()) {
			t.Errorf("Attribute(%d): %v, want ErrInvalidValue naming it", bad, err)
		}
	}
	for _, name := range []string{"WarpSize", "warpsize", "AttrWarpSize", "attrwarpsize", "ATTRWARPSIZE", "AttrWARPSIZE"} {
		if a, err := cuda.ParseAttribute(name); a != cuda.AttrWarpSize || err != nil {
			t.Errorf("ParseAttribute(%q) = %v, %v; want WarpSize", name, a, err)
		}
	}
	for _, name := range []string{"", "Attr", "AttrAttrWarpSize", "Warp Size"} {
		if _, err := cuda.ParseAttribute(name); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("ParseAttribute(%q): %v; want ErrInvalidValue", name, err)
		}
	}
	if _, err := cuda.ParseAttribute("NoSuchThing"); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "NoSuchThing") {
		t.Errorf("ParseAttribute(NoSuchThing): %v", err)
	}
}

func TestBadOrdinal(t *testing.T) {
	n, err := cuda.DeviceCount()
	if err != nil || n < 1 {
		t.Fatalf("DeviceCount() = %d, %v", n, err)
	}
	for _, ord := range []int{-1, n, n + 100} {
		_, err := cuda.GetDevice(ord)
		if !errors.Is(err, cuda.ErrInvalidDevice) {
			t.Errorf("GetDevice(%d): %v, want ErrInvalidDevice", ord, err)
			continue
		}
		if !strings.Contains(err.Error(), "ordinals 0 to") {
			t.Errorf("GetDevice(%d): message %q does not say which ordinals exist", ord, err)
		}
	}
	devs, err := cuda.Devices()
	if err != nil || len(devs) != n {
		t.Errorf("Devices() = %d devices, %v; want %d", len(devs), err, n)
	}
}

func TestVersionString(t *testing.T) {
	for _, tt := range []struct {
		v    cuda.Version
		want string
	}{
		{cuda.Version{Major: 13}, "13.0"},
		{cuda.Version{Major: 12, Minor: 4}, "12.4"},
		{cuda.Version{Major: 2, Minor: 28, Patch: 3}, "2.28.3"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.v.String(); got != tt.want {
				t.Errorf("%#v.String() = %q, want %q", tt.v, got, tt.want)
			}
		})
	}
}

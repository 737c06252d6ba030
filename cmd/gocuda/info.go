package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
	"github.com/gocuda/cuda/internal/nvml"
)

func runInfo(args []string, w, _ io.Writer) error {
	fs := flag.NewFlagSet("info", flag.ContinueOnError)
	if err := parseFlags(fs, args, w); err != nil {
		return err
	}
	v, err := cuda.DriverVersion()
	if err != nil {
		return err
	}
	lib, _ := cuda.DriverLibrary()
	devs, err := cuda.Devices()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "CUDA driver %v (%s), %d device(s)\n", v, lib, len(devs))
	for _, d := range devs {
		if err := printDevice(w, d); err != nil {
			return err
		}
	}
	return nil
}

func printDevice(w io.Writer, d cuda.Device) error {
	name, err := d.Name()
	if err != nil {
		return err
	}
	mem, err := d.TotalMemory()
	if err != nil {
		return err
	}
	cc, err := d.ComputeCapability()
	if err != nil {
		return err
	}
	sms, err := d.MultiprocessorCount()
	if err != nil {
		return err
	}
	bus, err := d.PCIBusID()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\ndevice %d: %s\n", d.Ordinal(), name)
	fmt.Fprintf(w, "  memory        %.1f GiB\n", float64(mem)/(1<<30))
	fmt.Fprintf(w, "  compute       %v, %d multiprocessors\n", cc, sms)
	fmt.Fprintf(w, "  PCI bus id    %s\n", bus)
	if l, err := nvml.PCIeLink(bus); err == nil {
		fmt.Fprintf(w, "  PCIe link     Gen%d x%d (max Gen%d x%d)\n", l.Gen, l.Width, l.MaxGen, l.MaxWidth)
	} else {
		fmt.Fprintf(w, "  PCIe link     unknown (%s)\n", shortNVMLError(err))
	}
	return nil
}

// shortNVMLError says in a few words why NVML could not tell the link:
// its full error lists every path searched, which belongs in no table.
func shortNVMLError(err error) string {
	if errors.Is(err, dl.ErrNotFound) {
		return "NVML not found: install the driver's libnvidia-ml.so.1, or set " + nvml.EnvLibrary
	}
	msg := err.Error()
	if len(msg) > 60 {
		msg = msg[:57] + "..."
	}
	return msg
}

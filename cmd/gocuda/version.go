package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cublas"
	"github.com/gocuda/cuda/cufft"
	"github.com/gocuda/cuda/curand"
	"github.com/gocuda/cuda/nccl"
	"github.com/gocuda/cuda/nvrtc"
)

const libraryModule = "github.com/gocuda/cuda"

func runVersion(args []string, w, _ io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if err := parseFlags(fs, args, w); err != nil {
		return err
	}
	cmd, lib := "(unknown)", "(unknown)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		cmd = bi.Main.Version
		for _, d := range bi.Deps {
			if d.Path == libraryModule {
				lib = d.Version
				if d.Replace != nil {
					lib += " => " + d.Replace.Path
				}
			}
		}
	}
	fmt.Fprintf(w, "gocuda %s (library %s), %s %s/%s\n", cmd, lib, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if v, err := cuda.DriverVersion(); err != nil {
		fmt.Fprintf(w, "CUDA driver   not found: %v\n", err)
	} else {
		path, _ := cuda.DriverLibrary()
		fmt.Fprintf(w, "CUDA driver   %v (%s)\n", v, path)
	}
	libs := []struct {
		name    string
		version func() (cuda.Version, error)
		path    func() (string, error) // after version: the library is open
	}{
		{"NVRTC", nvrtc.Version, nvrtc.Library},
		{"cuBLAS", cublas.Version, func() (string, error) {
			p, lt, err := cublas.Library()
			if lt == "" {
				lt = "not found"
			}
			return p + ", cuBLASLt " + lt, err
		}},
		{"NCCL", nccl.Version, nccl.Library},
		{"cuRAND", curand.Version, curand.Library},
		{"cuFFT", cufft.Version, cufft.Library},
	}
	for _, l := range libs {
		v, err := l.version()
		switch {
		case errors.Is(err, cuda.ErrNotSupported):
			fmt.Fprintf(w, "%-13s not found: %v\n", l.name, err)
		case err != nil:
			fmt.Fprintf(w, "%-13s %v\n", l.name, err)
		default:
			p, _ := l.path()
			fmt.Fprintf(w, "%-13s %v (%s)\n", l.name, v, p)
		}
	}
	return nil
}

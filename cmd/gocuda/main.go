// Command gocuda shows what the CUDA devices of this machine are and can do.
//
//	gocuda bench      GB/s of each way to move data between host and device, at sizes from 4 KiB to 1 GiB
//	gocuda info       the driver and each device: name, memory, compute capability, PCIe link
//	gocuda calibrate  where staging and the pipeline beat the driver's copy, and how to set that
//
// Run a command with -h for its flags.
//
// Exit status: 0 on success, 1 when the work failed (no driver, no GPU), 2 on
// bad usage.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	cuda "github.com/gocuda/cuda"
)

// errUsage marks an error in how the command was called.
var errUsage = errors.New("usage")

type command struct {
	name, summary string
	run           func(args []string, stdout io.Writer) error
}

var commands = []command{
	{"bench", "measure each host-device transfer path on this machine", runBench},
	{"info", "list the CUDA driver and devices", runInfo},
	{"report", "merge gocuda bench, C and PyTorch results into docs (for contributors)", runReport},
	{"calibrate", "measure where staging and the pipeline beat the driver's copy", runCalibrate},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "gocuda %s: %v\n", c.name, err)
			return 2
		default:
			fmt.Fprintf(stderr, "gocuda %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "gocuda: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: gocuda <command> [flags]\n\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
}

// parseFlags parses a command's flags, turning a flag error into a usage
// error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// openDevice returns the device with the given ordinal and its context.
func openDevice(ordinal int) (cuda.Device, *cuda.Context, error) {
	dev, err := cuda.GetDevice(ordinal)
	if err != nil {
		return cuda.Device{}, nil, err
	}
	ctx, err := cuda.NewContext(dev)
	return dev, ctx, err
}

// Command gocuda shows what the CUDA devices of this machine are and can do.
//
//	gocuda bench      GB/s of each way to move data between host and device, at sizes from 4 KiB to 1 GiB
//	gocuda info       the driver and each device: name, memory, compute capability, PCIe link
//	gocuda calibrate  where staging and the pipeline beat the driver's copy, and the StagingOptions that use it
//	gocuda version    the versions of gocuda, Go, and the CUDA driver and libraries found
//
// Install it with
//
//	go install github.com/gocuda/cuda/cmd/gocuda@latest
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
	// run does the command: results go to stdout, progress to stderr.
	run func(args []string, stdout, stderr io.Writer) error
}

// summaries says what each command does, for the help texts. (Apart from
// commands, which the commands' own help reaches through parseFlags.)
var summaries = map[string]string{
	"bench":     "measure each host-device transfer path on this machine",
	"info":      "list the CUDA driver and devices",
	"calibrate": "measure where staging and the pipeline beat the driver's copy, and print the StagingOptions to use",
	"version":   "print the versions of gocuda, Go, the CUDA driver and the libraries found",
}

var commands = []command{
	{"bench", summaries["bench"], runBench},
	{"info", summaries["info"], runInfo},
	{"calibrate", summaries["calibrate"], runCalibrate},
	{"version", summaries["version"], runVersion},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if isHelp(args[0]) || args[0] == "help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout, stderr)
		var fe *flagError
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &fe):
			fmt.Fprintf(stderr, "gocuda %s: %v\n\n", c.name, err)
			commandUsage(stderr, fe.fs)
			return 2
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
	fmt.Fprintln(w, "\nRun gocuda <command> -h for a command's flags.")
}

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// commandUsage writes the help of the command whose flags fs holds.
func commandUsage(w io.Writer, fs *flag.FlagSet) {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		fmt.Fprintf(w, "usage: gocuda %s\n\n%s\n", fs.Name(), summaries[fs.Name()])
		return
	}
	fmt.Fprintf(w, "usage: gocuda %s [flags]\n\n%s\n\nflags:\n", fs.Name(), summaries[fs.Name()])
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// flagError is a command line a command's flags do not accept: run prints
// it with the command's help.
type flagError struct {
	err error
	fs  *flag.FlagSet
}

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return errUsage }

// parseFlags parses a command's flags. -h writes the command's help to
// stdout (flag.ErrHelp); a bad flag or argument is a flagError.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(stdout, fs)
			return err
		}
		return &flagError{err, fs}
	}
	if fs.NArg() > 0 {
		return &flagError{fmt.Errorf("unexpected argument %q", fs.Arg(0)), fs}
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

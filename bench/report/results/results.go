// Package results is the format of transfer measurements: what
// `gocuda bench -json` writes, what bench/pyref/torch_copy.py and the C reference
// (bench/cref) are merged into by bench/report, and the plot drawn from it.
package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The paths gocuda bench measures.
const (
	Copy    = "copy"     // CopyFromHost / CopyToHost from ordinary Go memory
	Pinned  = "pinned"   // the same from a PinnedBuffer
	InPlace = "in-place" // UploadWith / DownloadInto: data made or used in pinned memory
	Staging = "staging"  // StagingBuffer Upload / Download of ordinary Go memory
	// Fresh is Staging's transfer with a slice made just before it, as a
	// user reads a result (out := make([]T, n)) or fills one to send: its
	// pages are new to the process, and the transfer may pay for their
	// first touch.
	Fresh = "fresh"
)

// The paths of the other programs in the comparison.
const (
	CPageable      = "C pageable"
	CPinned        = "C pinned"
	TorchPageable  = "torch pageable"
	TorchPinned    = "torch pinned"
	TorchPinMemory = "torch pin_memory" // PyTorch's fastest path for an ordinary tensor
	CuPy           = "cupy"
	JAX            = "jax"
)

// GocudaPaths returns the paths gocuda bench measures, in its order.
func GocudaPaths() []string { return []string{Copy, Pinned, InPlace, Staging, Fresh} }

// Result is one measured cell: a path, a direction and a size.
type Result struct {
	Direction string  `json:"direction"` // "up" (host to device) or "down"
	Bytes     int     `json:"bytes"`
	Path      string  `json:"path"`
	Route     string  `json:"route,omitempty"` // for the staging path: staged, pipelined or direct
	Median    float64 `json:"median_gbps"`
	P25       float64 `json:"p25_gbps"`
	P75       float64 `json:"p75_gbps"`
	Min       float64 `json:"min_gbps,omitempty"` // the slowest single transfer
	Reps      int     `json:"reps"`
}

// Report is a run's results and the machine they came from.
type Report struct {
	Date     string   `json:"date"`
	Device   string   `json:"device"`
	Driver   string   `json:"driver"`
	PCIe     string   `json:"pcie,omitempty"`
	LinkGBps float64  `json:"link_gbps,omitempty"` // the PCIe link's raw rate, each way
	Results  []Result `json:"results"`
}

// FormatSize writes n bytes the way the tables do: 4 KiB, 4.7 MiB, 1 GiB.
func FormatSize(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// WriteFile writes a file through a temporary one renamed into place, so
// that a failure leaves nothing half-written.
func WriteFile(path string, write func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".gocuda-*"+filepath.Ext(path))
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, errors.Unwrap(err))
	}
	mode := os.FileMode(0o644) // CreateTemp's 0600 would hide the result from others
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	err = f.Chmod(mode)
	if err == nil {
		err = write(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

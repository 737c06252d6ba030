// Package nvml reads what the CUDA driver API does not say about a device,
// its PCIe link, from NVML (libnvidia-ml.so.1), opened at run time like the
// driver. It is optional: without NVML, callers show less.
package nvml

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/gocuda/cuda/internal/dl"
)

// EnvLibrary names the environment variable that overrides which NVML
// library is opened.
const EnvLibrary = "GOCUDA_LIBNVML"

// library is where NVML may be: it comes with the driver.
var library = dl.Library{
	Name:    "NVML",
	Env:     EnvLibrary,
	Sonames: []string{"libnvidia-ml.so.1"},
	DLLs:    []string{"nvml.dll"},
	Install: "install the NVIDIA driver's NVML (libnvidia-ml.so.1)",
}

var lib struct {
	once  sync.Once
	err   error
	funcs struct {
		init, byBusID, curGen, curWidth, maxGen, maxWidth uintptr
	}
}

func open() error {
	lib.once.Do(func() {
		h, path, err := library.Open(dl.ProcessEnv())
		if err != nil {
			lib.err = err
			return
		}
		funcs := &lib.funcs
		if lib.err = dl.Symbols(h, path, map[string]*uintptr{
			"nvmlInit_v2":                         &funcs.init,
			"nvmlDeviceGetHandleByPciBusId_v2":    &funcs.byBusID,
			"nvmlDeviceGetCurrPcieLinkGeneration": &funcs.curGen,
			"nvmlDeviceGetCurrPcieLinkWidth":      &funcs.curWidth,
			"nvmlDeviceGetMaxPcieLinkGeneration":  &funcs.maxGen,
			"nvmlDeviceGetMaxPcieLinkWidth":       &funcs.maxWidth,
		}); lib.err != nil {
			return
		}
		if r, _, _ := purego.SyscallN(funcs.init); r != 0 {
			lib.err = fmt.Errorf("nvmlInit_v2 returned %d", int32(r))
		}
	})
	return lib.err
}

// Link is a PCIe link: generation and lane count, now and at most.
type Link struct {
	Gen, Width, MaxGen, MaxWidth int
}

// PCIeLink returns the PCIe link of the device at the PCI bus id given (as
// cuDeviceGetPCIBusId writes it).
func PCIeLink(busID string) (Link, error) {
	if err := open(); err != nil {
		return Link{}, fmt.Errorf("nvml: %w", err)
	}
	id := append([]byte(busID), 0)
	var dev uintptr
	if r, _, _ := purego.SyscallN(lib.funcs.byBusID, uintptr(unsafe.Pointer(&id[0])), uintptr(unsafe.Pointer(&dev))); r != 0 {
		return Link{}, fmt.Errorf("nvml: no device at %s (%d)", busID, int32(r))
	}
	var l Link
	for fn, p := range map[uintptr]*int{lib.funcs.curGen: &l.Gen, lib.funcs.curWidth: &l.Width, lib.funcs.maxGen: &l.MaxGen, lib.funcs.maxWidth: &l.MaxWidth} {
		v := new(uint32)
		if r, _, _ := purego.SyscallN(fn, dev, uintptr(unsafe.Pointer(v))); r != 0 {
			return Link{}, fmt.Errorf("nvml: reading the PCIe link of %s (%d)", busID, int32(r))
		}
		*p = int(*v)
	}
	return l, nil
}

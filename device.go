package cuda

import (
	"fmt"
	"math"

	"github.com/gocuda/cuda/internal/driver"
)

// Version is a CUDA version, such as the driver's 13.0.
type Version struct{ Major, Minor, Patch int }

// String writes the version as 13.0, or 2.28.3 where it has a patch level.
func (v Version) String() string {
	if v.Patch != 0 {
		return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	}
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

// DriverVersion returns the version of CUDA the installed driver supports.
func DriverVersion() (Version, error) {
	const op = "DriverVersion"
	if err := openDriver(op); err != nil {
		return Version{}, err
	}
	var v int32
	if err := check(op, driver.DriverGetVersion(&v)); err != nil {
		return Version{}, err
	}
	return Version{Major: int(v) / 1000, Minor: int(v) % 1000 / 10}, nil
}

// DriverLibrary returns the path of the driver library gocuda opened, or an
// error saying why none could be.
func DriverLibrary() (string, error) {
	if err := openDriver("DriverLibrary"); err != nil {
		return "", err
	}
	return driver.Path(), nil
}

// DeviceCount returns the number of CUDA devices the driver sees.
func DeviceCount() (int, error) { return deviceCount("DeviceCount") }

func deviceCount(op string) (int, error) {
	if err := openDriver(op); err != nil {
		return 0, err
	}
	var n int32
	if err := check(op, driver.DeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device is a CUDA device. Its methods need no context and may be called from
// any goroutine. The zero Device is no device: its methods return
// ErrInvalidValue (GetDevice returns real ones).
type Device struct {
	ordinal int
	handle  driver.Device
	ok      bool // made by GetDevice
}

// valid returns the error for a zero Device.
func (d Device) valid(op string) error {
	if !d.ok {
		return errorf(op, ErrInvalidValue, "a zero Device: get one with GetDevice")
	}
	return nil
}

// GetDevice returns the device with the given ordinal, from 0 to
// DeviceCount()-1.
func GetDevice(ordinal int) (Device, error) { return getDevice("GetDevice", ordinal) }

func getDevice(op string, ordinal int) (Device, error) {
	n, err := deviceCount(op)
	if err != nil {
		return Device{}, err
	}
	if ordinal < 0 || ordinal >= n {
		if n == 0 {
			return Device{}, errorf(op, ErrNoDevice, "device %d requested, but the driver sees no device", ordinal)
		}
		return Device{}, errorf(op, ErrInvalidDevice, "no device %d: the driver sees %d device(s), ordinals 0 to %d", ordinal, n, n-1)
	}
	var h driver.Device
	if err := check(op, driver.DeviceGet(&h, int32(ordinal))); err != nil {
		return Device{}, err
	}
	return Device{ordinal: ordinal, handle: h, ok: true}, nil
}

// Devices returns every device the driver sees.
func Devices() ([]Device, error) {
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	devs := make([]Device, n)
	for i := range devs {
		if devs[i], err = GetDevice(i); err != nil {
			return nil, err
		}
	}
	return devs, nil
}

// Ordinal returns the device's ordinal.
func (d Device) Ordinal() int { return d.ordinal }

// String returns "cuda:N".
func (d Device) String() string { return fmt.Sprintf("cuda:%d", d.ordinal) }

// Name returns the device's name, such as "NVIDIA H200".
func (d Device) Name() (string, error) {
	if err := d.valid("Device.Name"); err != nil {
		return "", err
	}
	var buf [256]byte
	if err := check("Device.Name", driver.DeviceGetName(&buf[0], int32(len(buf)), d.handle)); err != nil {
		return "", err
	}
	return driver.GoString(&buf[0]), nil
}

// TotalMemory returns the device's memory in bytes.
func (d Device) TotalMemory() (uint64, error) {
	if err := d.valid("Device.TotalMemory"); err != nil {
		return 0, err
	}
	var n uintptr
	if err := check("Device.TotalMemory", driver.DeviceTotalMem(&n, d.handle)); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// ComputeCapability returns the device's compute capability, such as 9.0.
func (d Device) ComputeCapability() (Version, error) {
	major, err := d.Attribute(AttrComputeCapabilityMajor)
	if err != nil {
		return Version{}, err
	}
	minor, err := d.Attribute(AttrComputeCapabilityMinor)
	if err != nil {
		return Version{}, err
	}
	return Version{Major: major, Minor: minor}, nil
}

// PCIBusID returns the device's PCI address, such as "0000:1B:00.0".
func (d Device) PCIBusID() (string, error) {
	if err := d.valid("Device.PCIBusID"); err != nil {
		return "", err
	}
	var buf [64]byte
	if err := check("Device.PCIBusID", driver.DeviceGetPCIBusId(&buf[0], int32(len(buf)), d.handle)); err != nil {
		return "", err
	}
	return driver.GoString(&buf[0]), nil
}

// MultiprocessorCount returns the number of streaming multiprocessors.
func (d Device) MultiprocessorCount() (int, error) { return d.Attribute(AttrMultiprocessorCount) }

// Attribute returns one of the device's attributes.
func (d Device) Attribute(a Attribute) (int, error) {
	const op = "Device.Attribute"
	if err := d.valid(op); err != nil {
		return 0, err
	}
	if a <= 0 || a > math.MaxInt32 { // past int32, the driver's would be another
		return 0, errorf(op, ErrInvalidValue, "attribute %v does not exist", a)
	}
	var v int32
	if err := check(op, driver.DeviceGetAttribute(&v, driver.DeviceAttribute(a), d.handle)); err != nil {
		err.(*Error).Detail = "attribute " + a.String()
		return 0, err
	}
	return int(v), nil
}

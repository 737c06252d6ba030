package cuda

import (
	"errors"
	"fmt"
	"github.com/gocuda/cuda/internal/dl"
	"os"
	"strings"

	"github.com/gocuda/cuda/internal/driver"
	"github.com/gocuda/cuda/internal/errfmt"
)

// Sentinel errors. Every error this package returns wraps one of them where
// one applies, whether the driver reported it or gocuda caught it before
// calling the driver: test with errors.Is.
var (
	// ErrInvalidValue: an argument is out of range, a length does not
	// match, a type cannot live in device memory. CUDA_ERROR_INVALID_VALUE.
	ErrInvalidValue = errors.New("invalid value")
	// ErrOutOfMemory: the device (or page-locked host memory) is full.
	// CUDA_ERROR_OUT_OF_MEMORY.
	ErrOutOfMemory = errors.New("out of memory")
	// ErrNoDriver: the CUDA driver library could not be opened or
	// initialized.
	ErrNoDriver = errors.New("no CUDA driver")
	// ErrNoDevice: the driver sees no CUDA device. CUDA_ERROR_NO_DEVICE.
	ErrNoDevice = errors.New("no CUDA device")
	// ErrInvalidDevice: a device ordinal that does not exist.
	// CUDA_ERROR_INVALID_DEVICE.
	ErrInvalidDevice = errors.New("invalid device")
	// ErrNotSupported: the driver or device cannot do this, or the
	// installed driver lacks the function. CUDA_ERROR_NOT_SUPPORTED.
	ErrNotSupported = errors.New("not supported")
	// ErrClosed: the object (or the context it belongs to) was closed or
	// freed.
	ErrClosed = errors.New("use of closed object")
	// ErrInvalidContext: no valid context was current for a driver call.
	// CUDA_ERROR_INVALID_CONTEXT.
	ErrInvalidContext = errors.New("invalid context")
)

// Result is a CUresult, the driver's status code. A Result is itself an
// error value to match with errors.Is:
//
//	errors.Is(err, cuda.Result(700)) // CUDA_ERROR_ILLEGAL_ADDRESS
type Result int32

// Error returns the driver's name for r.
func (r Result) Error() string { return r.String() }

// String returns the driver's name for r, such as "CUDA_ERROR_OUT_OF_MEMORY".
func (r Result) String() string {
	if name, _ := resultText(r); name != "" {
		return name
	}
	return fmt.Sprintf("CUresult(%d)", int32(r))
}

// resultText asks the driver, when one is loaded, for r's name and text.
func resultText(r Result) (name, text string) {
	if driver.Open() != nil {
		return "", ""
	}
	return driver.ErrorName(driver.Result(r))
}

// sentinels maps driver results onto the sentinel errors.
var sentinels = map[driver.Result]error{
	driver.ErrorInvalidValue:   ErrInvalidValue,
	driver.ErrorOutOfMemory:    ErrOutOfMemory,
	driver.ErrorNoDevice:       ErrNoDevice,
	driver.ErrorInvalidDevice:  ErrInvalidDevice,
	driver.ErrorInvalidContext: ErrInvalidContext,
	driver.ErrorNotSupported:   ErrNotSupported,
	driver.ResultMissingSymbol: ErrNotSupported,
	// A launch's shape the device cannot run.
	driver.ErrorCooperativeLaunchTooLarge: ErrInvalidValue,
	driver.ErrorInvalidClusterSize:        ErrInvalidValue,
}

// Error is the error type of this package. Op names the gocuda operation
// that failed; for an error the driver returned, Call names the driver
// function and Code holds its result.
type Error struct {
	Op     string // gocuda operation, such as "Alloc" or "Stream.Synchronize"
	Call   string // driver function, such as "cuMemAlloc_v2"; "" if the driver was not called
	Code   Result // the driver's result; 0 if the driver was not called
	Err    error  // the sentinel this error matches, if any
	Detail string // what was wrong, in words
}

func (e *Error) Error() string {
	if e == nil {
		return "cuda: <nil>"
	}
	var code string
	switch {
	case e.Call != "" && e.Code == Result(driver.ResultMissingSymbol):
		return errfmt.Message("cuda", e.Op, "", "", nil, "the installed CUDA driver lacks "+e.Call+" (it is older than this call needs): "+ErrNotSupported.Error())
	case e.Call != "":
		name, text := resultText(e.Code)
		if name == "" {
			name = fmt.Sprintf("CUresult %d", int32(e.Code))
		}
		code = name
		if text != "" {
			code += " (" + text + ")"
		}
	}
	return errfmt.Message("cuda", e.Op, e.Call, code, e.Err, e.Detail)
}

// Unwrap returns the sentinel error e matches.
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Is reports whether e carries the driver result target.
func (e *Error) Is(target error) bool {
	r, ok := target.(Result)
	return ok && e != nil && e.Call != "" && e.Code == r
}

// check turns a driver call's status into an error: nil on success.
func check(op string, s driver.Status) error {
	if s.OK() {
		return nil
	}
	e := &Error{Op: op, Call: s.Func.String(), Code: Result(s.Code), Err: sentinels[s.Code]}
	if s.For != 0 {
		e.Detail = "making the context current for " + s.For.String()
	}
	return e
}

// errorf returns an error of ours, not the driver's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

// closed returns the error for a use of a closed object.
func closed(op, what string) error {
	return &Error{Op: op, Err: ErrClosed, Detail: what + " is closed"}
}

// LibraryError is the error, wrapped, of a call that needed an NVIDIA
// library gocuda could not open (NVRTC, cuBLAS, cuRAND, cuFFT, NCCL): its
// text says in one line what is missing and the one thing to do, and
// Tried lists every path tried, for a user who asks:
//
//	var le *cuda.LibraryError
//	if errors.As(err, &le) {
//		fmt.Println(le.Tried)
//	}
//
// It matches ErrNotSupported.
type LibraryError = dl.NotFoundError

// openDriver opens the driver and says how to fix it when that fails, in
// one line: what is missing and the one thing to do.
func openDriver(op string) error {
	err := driver.Open()
	if err == nil {
		return nil
	}
	var oe *driver.OpenError
	if !errors.As(err, &oe) {
		return &Error{Op: op, Err: ErrNoDriver, Detail: err.Error()}
	}
	if oe.Result == driver.ErrorNoDevice {
		return &Error{Op: op, Err: ErrNoDevice, Detail: "the NVIDIA driver is installed but sees no GPU"}
	}
	var detail string
	switch set := os.Getenv(driver.EnvLibrary); {
	case set != "":
		// The variable chose the library: it is what to fix.
		detail = fmt.Sprintf("%s=%s: %s; point it at the NVIDIA driver's libcuda.so.1, or unset it to use the system's", driver.EnvLibrary, set, oe.Reason)
	case oe.Loaded == "":
		detail = fmt.Sprintf("the NVIDIA driver is not installed (%s not found): install the NVIDIA driver (gocuda needs nothing else, not the CUDA toolkit), or set %s to the path of libcuda.so.1",
			strings.Join(oe.Tried, " or "), driver.EnvLibrary)
	default:
		detail = err.Error() + "; check the NVIDIA driver's installation (nvidia-smi)"
	}
	return &Error{Op: op, Err: ErrNoDriver, Detail: detail}
}

//go:build (!cgo || gocuda_purego) && !amd64 && !arm64

package driver

// ByValueSupported reports whether this build can pass a structure by
// value to the driver (the IPC calls).
const ByValueSupported = false

func byValue64(args []uintptr, _ int, _ *[64]byte) []uintptr { return args }

//go:build !linux

package hostcopy

import "sync/atomic"

// futexParking is Linux's (park_linux.go); elsewhere workers park on
// channels whatever it says.
var futexParking atomic.Bool

func parkFutex(*atomic.Uint32, uint32) {}

func wakeFutex(*atomic.Uint32, int) int { return 0 }

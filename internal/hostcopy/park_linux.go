package hostcopy

import (
	"math"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Parking in the kernel. A worker blocked on a channel is woken by the Go
// scheduler, which starts one idle thread at a time: fifteen workers come
// up one after another, tens of microseconds apart, and a transfer made
// after a pause waits for them. A worker parked in a futex wait, on a
// thread of its own, is woken with the rest by one system call, and each
// takes an idle processor back as its system call returns. A variable for
// the research benchmark that compares (SetFutexParking); workers that
// parked on channels are woken there still.
var futexParking atomic.Bool

const (
	futexWaitPrivate = 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 129 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
)

// parkFutex blocks the thread while *addr is seq (or until a spurious
// wake-up: the caller looks for work again either way).
func parkFutex(addr *atomic.Uint32, seq uint32) {
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitPrivate, uintptr(seq), 0, 0, 0)
}

// wakeFutex wakes up to k threads parked on addr and returns how many it
// woke.
func wakeFutex(addr *atomic.Uint32, k int) int {
	n, _, _ := syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakePrivate, uintptr(min(k, math.MaxInt32)), 0, 0, 0)
	return int(n)
}

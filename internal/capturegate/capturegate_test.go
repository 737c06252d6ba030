package capturegate

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestCleanupNow: with no global capture under way a cleanup runs at once,
// on the caller's goroutine.
func TestCleanupNow(t *testing.T) {
	ran := false
	Cleanup(func() { ran = true })
	if !ran {
		t.Fatal("Cleanup with no capture under way did not run the release")
	}
}

// TestCleanupHeld: cleanups that come during global captures run once the
// last one ends, not before.
func TestCleanupHeld(t *testing.T) {
	var ran atomic.Int32
	Begin()
	Begin()
	Cleanup(func() { ran.Add(1) })
	Cleanup(func() { ran.Add(1) })
	End()
	time.Sleep(20 * time.Millisecond)
	if n := ran.Load(); n != 0 {
		t.Fatalf("%d cleanups ran while a global capture was still under way", n)
	}
	End()
	deadline := time.Now().Add(5 * time.Second)
	for ran.Load() != 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := ran.Load(); n != 2 {
		t.Fatalf("%d of 2 held cleanups ran after the last capture ended", n)
	}
}

// TestBeginWaitsForCleanup: a capture begins only once the cleanups
// calling the driver have returned.
func TestBeginWaitsForCleanup(t *testing.T) {
	inside, release := make(chan struct{}), make(chan struct{})
	var done atomic.Bool
	go Cleanup(func() {
		close(inside)
		<-release
		done.Store(true)
	})
	<-inside
	began := make(chan bool)
	go func() {
		Begin()
		began <- done.Load()
	}()
	select {
	case <-began:
		t.Fatal("Begin returned while a cleanup was calling the driver")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	if !<-began {
		t.Fatal("Begin returned before the cleanup it waited for was done")
	}
	End()
}

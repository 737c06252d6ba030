// Package capturegate keeps the collector's cleanups of objects nobody
// closed from calling the driver while a capture of the global mode
// (cuda.CaptureGlobal) is under way in the process. Such a capture forbids
// every thread the calls that free what the cleanups free (cuMemFree,
// cuMemFreeAsync outside it, a stream's or an instance's destroy): the
// driver refuses the call and ends the capture with an error, which a
// program could not foresee, since the collector runs cleanups when it
// likes. A cleanup that comes while one is under way waits until the last
// such capture ends.
//
// Lock order: mu is a leaf; no cleanup runs under it.
package capturegate

import "sync"

var gate struct {
	mu      sync.Mutex
	idle    sync.Cond // running fell to 0
	global  int       // global captures under way
	running int       // cleanups calling the driver now
	pending []func()  // cleanups waiting for the captures to end
}

func init() { gate.idle.L = &gate.mu }

// Cleanup runs release, a cleanup's calls to the driver, now, or once no
// global capture is under way.
func Cleanup(release func()) {
	gate.mu.Lock()
	if gate.global > 0 {
		gate.pending = append(gate.pending, release)
		gate.mu.Unlock()
		return
	}
	gate.running++
	gate.mu.Unlock()
	defer func() {
		gate.mu.Lock()
		if gate.running--; gate.running == 0 {
			gate.idle.Broadcast()
		}
		gate.mu.Unlock()
	}()
	release()
}

// Begin is called before a global capture begins: it waits for the
// cleanups calling the driver to return, and holds back later ones until
// the matching End.
func Begin() {
	gate.mu.Lock()
	for gate.running > 0 {
		gate.idle.Wait()
	}
	gate.global++
	gate.mu.Unlock()
}

// End is called once a capture Begin was called for has ended, or failed
// to begin: the last one runs the cleanups held back, on a goroutine of
// their own.
func End() {
	gate.mu.Lock()
	gate.global--
	var run []func()
	if gate.global == 0 {
		run, gate.pending = gate.pending, nil
	}
	gate.mu.Unlock()
	if len(run) > 0 {
		go func() {
			for _, release := range run {
				Cleanup(release)
			}
		}()
	}
}

"""The other process of gocuda's IPC tests (TestIPCWithCuPy): CuPy, which
nobody here wrote, opening memory and events gocuda exported, and exporting
memory and an event for gocuda to open.

  ipc_peer.py open MEMHEX N EVENTHEX   open gocuda's buffer of N float32 (after
                                       waiting for its event), check it holds
                                       0..N-1, double it in place; prints ok
  ipc_peer.py export N                 allocate N float32 of zeros; queue a
                                       kernel that waits 200 ms, then the fill
                                       3*i, then an interprocess event; print
                                       the memory's and the event's handles in
                                       hex (before the fill is done: the
                                       reader must wait for the event); wait
                                       for a line on stdin
"""
import sys

import cupy
from cupy.cuda import runtime


def view(ptr, n):
    mem = cupy.cuda.UnownedMemory(ptr, n * 4, None)
    return cupy.ndarray((n,), dtype=cupy.float32, memptr=cupy.cuda.MemoryPointer(mem, 0))


def main():
    if sys.argv[1] == "open":
        n = int(sys.argv[3])
        event = runtime.ipcOpenEventHandle(bytes.fromhex(sys.argv[4]))
        runtime.eventSynchronize(event)
        ptr = runtime.ipcOpenMemHandle(bytes.fromhex(sys.argv[2]))
        a = view(ptr, n)
        want = cupy.arange(n, dtype=cupy.float32)
        if not bool((a == want).all()):
            print("wrong data: %s" % a[:8])
            sys.exit(1)
        a *= 2
        runtime.deviceSynchronize()
        runtime.ipcCloseMemHandle(ptr)
        runtime.eventDestroy(event)
        print("ok")
    else:
        n = int(sys.argv[2])
        ptr = runtime.malloc(n * 4)  # a base pointer of its own, not a pool's slice
        a = view(ptr, n)
        a[:] = 0
        runtime.deviceSynchronize()
        stream = cupy.cuda.Stream(non_blocking=True)
        event = cupy.cuda.Event(disable_timing=True, interprocess=True)
        with stream:
            wait = cupy.RawKernel(
                r'''extern "C" __global__ void wait(long long ns) {
                    for (long long i = 0; i < ns / 1000; i++) __nanosleep(1000);
                }''',
                "wait",
            )
            wait((1,), (1,), (cupy.int64(200_000_000),))
            a[:] = cupy.arange(n, dtype=cupy.float32) * 3
        event.record(stream)
        mem = bytes(runtime.ipcGetMemHandle(ptr)).hex()
        ev = bytes(runtime.ipcGetEventHandle(event.ptr)).hex()
        print(mem, ev, flush=True)
        sys.stdin.readline()
        runtime.deviceSynchronize()
        runtime.free(ptr)


if __name__ == "__main__":
    main()

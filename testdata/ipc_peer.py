"""The other process of gocuda's IPC tests (TestIPCWithCuPy): CuPy, which
nobody here wrote, opening memory and events gocuda exported, and exporting
memory for gocuda to open.

  ipc_peer.py open MEMHEX N EVENTHEX   open gocuda's buffer of N float32 (after
                                       waiting for its event), check it holds
                                       0..N-1, double it in place; prints ok
  ipc_peer.py export N                 allocate N float32 holding 3*i, print the
                                       handle in hex, wait for a line on stdin
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
        view(ptr, n)[:] = cupy.arange(n, dtype=cupy.float32) * 3
        runtime.deviceSynchronize()
        print(bytes(runtime.ipcGetMemHandle(ptr)).hex(), flush=True)
        sys.stdin.readline()
        runtime.free(ptr)


if __name__ == "__main__":
    main()

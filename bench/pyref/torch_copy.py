"""PyTorch's host-device copies at the sizes gocuda bench measures, timed the
same way (wall clock around each transfer, synchronized, median of the
repeats, walking through a 256 MiB arena, at most 4096 slices, so no cache
helps), for the comparison in docs/performance.md.

Paths, each a transfer of part of an ordinary (pageable) or pinned tensor:
  pageable    copy_ between the CUDA tensor and a pageable CPU tensor
  pinned      the same with a pinned CPU tensor (data already in pinned memory)
  pin_memory  PyTorch's fastest path for an ordinary tensor: up, t.pin_memory()
              (a block of the caching host allocator, reused) then
              copy_(non_blocking=True); down, copy_(non_blocking=True) into a
              pinned block, then copy_ out of it into the ordinary tensor

usage: python3 torch_copy.py [REPS] > torch.json
"""
import json
import statistics
import sys
import time

import torch

SIZES = [4 << 10, 16 << 10, 64 << 10, 150 << 10, 196 << 10, 256 << 10, 1 << 20,
         4 << 20, 4928307, 16 << 20, 64 << 20, 256 << 20, 1 << 30]


def main(reps):
    dev = torch.device("cuda")
    arena = max(max(SIZES), 256 << 20)
    d = torch.empty(arena, dtype=torch.uint8, device=dev)
    pageable = torch.full((arena,), 7, dtype=torch.uint8)
    pinned = torch.full((arena,), 7, dtype=torch.uint8).pin_memory()
    results = []
    for direction in ("up", "down"):
        for n in SIZES:
            slots = min(arena // n, 4096)

            def copy(h):
                def op(i):
                    off = (i % slots) * n
                    if direction == "up":
                        d[off:off + n].copy_(h[off:off + n])
                    else:
                        h[off:off + n].copy_(d[off:off + n])
                    torch.cuda.synchronize()
                return op

            def pin_memory(i):
                off = (i % slots) * n
                if direction == "up":
                    p = pageable[off:off + n].pin_memory()
                    d[off:off + n].copy_(p, non_blocking=True)
                    torch.cuda.synchronize()
                else:
                    p = torch.empty(n, dtype=torch.uint8, pin_memory=True)
                    p.copy_(d[off:off + n], non_blocking=True)
                    torch.cuda.synchronize()
                    pageable[off:off + n].copy_(p)

            for kind, op in (("pageable", copy(pageable)), ("pinned", copy(pinned)), ("pin_memory", pin_memory)):
                op(0)
                op(1)
                rates = []
                for i in range(reps):
                    t = time.perf_counter()
                    op(i + 2)
                    rates.append(n / (time.perf_counter() - t) / 1e9)
                results.append({"direction": direction, "bytes": n, "path": kind,
                                "median_gbps": statistics.median(rates), "reps": reps})
    json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
               "results": results}, sys.stdout, indent=1)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)

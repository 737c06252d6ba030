"""CuPy's and JAX's one-shot transfers of part of an ordinary NumPy array,
timed as bench/pyref/torch_copy.py times PyTorch's (wall clock around each
transfer, synchronized, median of the repeats, walking through a 256 MiB
arena): what a user of those libraries gets from the obvious call.

  cupy  up: cupy.asarray(a[off:off+n]); down: cupy.asnumpy(d[off:off+n])
  jax   up: jax.device_put(a[off:off+n]).block_until_ready();
        down: numpy.asarray of a device slice made (and finished) beforehand

A library that is not installed is left out.

usage: python3 oneshot_copy.py [REPS] > oneshot.json
"""
import json
import os
import statistics
import sys
import time

import numpy as np

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

SIZES = [4 << 10, 16 << 10, 64 << 10, 150 << 10, 196 << 10, 256 << 10, 1 << 20,
         4 << 20, 4928307, 16 << 20, 64 << 20, 256 << 20, 1 << 30]
ARENA = max(max(SIZES), 256 << 20)


def measure(name, up_op, down_prepare, down_op, reps, results):
    for direction in ("up", "down"):
        for n in SIZES:
            slots = min(ARENA // n, 4096)
            rates = []
            for i in range(reps + 2):
                off = (i % slots) * n
                if direction == "up":
                    t = time.perf_counter()
                    up_op(off, n)
                else:
                    x = down_prepare(off, n)
                    t = time.perf_counter()
                    down_op(x)
                if i >= 2:
                    rates.append(n / (time.perf_counter() - t) / 1e9)
            results.append({"direction": direction, "bytes": n, "path": name,
                            "median_gbps": statistics.median(rates), "reps": reps})


def main(reps):
    host = np.full(ARENA, 7, dtype=np.uint8)
    results, versions = [], {}
    try:
        import cupy as cp
        d = cp.zeros(ARENA, dtype=cp.uint8)

        def cupy_up(off, n):
            cp.asarray(host[off:off + n])
            cp.cuda.Device().synchronize()
        measure("cupy", cupy_up, lambda off, n: d[off:off + n], cp.asnumpy, reps, results)
        versions["cupy"] = cp.__version__
        del d
        cp.get_default_memory_pool().free_all_blocks()
    except ImportError:
        pass
    try:
        import jax
        import jax.numpy as jnp
        dj = jnp.zeros(ARENA, dtype=jnp.uint8)

        def jax_down_prepare(off, n):
            return jax.lax.dynamic_slice(dj, (off,), (n,)).block_until_ready()
        measure("jax", lambda off, n: jax.device_put(host[off:off + n]).block_until_ready(),
                jax_down_prepare, np.asarray, reps, results)
        versions["jax"] = jax.__version__
    except ImportError:
        pass
    json.dump({"versions": versions, "results": results}, sys.stdout, indent=1)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)

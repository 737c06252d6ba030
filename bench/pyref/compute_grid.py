"""Issue 48's benchmark grid in PyTorch and CuPy (each where importable): the
cells of compute/grid_bench_test.go's BenchmarkGrid, op/dtype/shape named
as there (shape n=<elements> for the whole-buffer operations, <rows>x<cols>
for the matrix ones), timed the same way: inputs of zeros, one call to warm
up, then a loop of N calls and one synchronize (timed by CUDA events for
cells of 16 Mi elements or more), the median of 3 repeats, N
chosen so that a repeat takes about 20 ms (at most MAX_CALLS). Each peer's
fastest call: out= where it has one.

The environment selects a subset as for the Go benchmark: GOCUDA_GRID_OPS,
GOCUDA_GRID_DTYPES (comma lists), GOCUDA_GRID_MAXELEMS, GOCUDA_GRID_CELLS
(a comma list of op/dtype/shape); GOCUDA_GRID_PEERS (torch,cupy) picks the
peers.

usage: python3 compute_grid.py > grid.json
Prints a JSON line per cell and peer:
{"peer": "torch"|"cupy", "op": ..., "dtype": ..., "shape": ..., "us": ...};
cells a peer cannot run go to stderr.
"""
import json
import os
import statistics
import sys
import time

DTYPES = ("f32", "f16", "bf16", "f64")
SIZES = (1 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20)
ROWS = (1, 7, 132, 4096, 65536, 1 << 20)
COLS = (1, 5, 32, 128, 1000, 8192, 65536, 1 << 20)
TARGET_S = 0.02
EVENTS = 16 << 20  # the fewest elements of a cell timed by CUDA events
MAX_CALLS = 20000
REPEATS = 3

HALVES = ("f32", "f16", "bf16")
SUMS = ("f32", "f16", "bf16", "f64")
# op: (matrix, dtypes), in compute/grid_bench_test.go's order.
OPS = {
    "add": (False, ("f32", "f16", "bf16", "f64")),
    "mul": (False, HALVES),
    "addscalar": (False, HALVES),
    "cast_f16": (False, ("f32",)),
    "cast_bf16": (False, ("f32",)),
    "cast_from_f16": (False, ("f16",)),
    "cast_from_bf16": (False, ("bf16",)),
    "exp": (False, HALVES),
    "gelu": (False, HALVES),
    "sigmoid": (False, HALVES),
    "where": (False, HALVES),
    "sum": (False, SUMS),
    "maxof": (False, ("f32",)),
    "mean": (False, ("f32",)),
    "argmax": (False, ("f32",)),
    "argmin": (False, ("f32",)),
    "softmax": (True, HALVES),
    "logsoftmax": (True, HALVES),
    "sumrows": (True, SUMS),
    "sumcols": (True, SUMS),
    "maxrows": (True, ("f32",)),
    "maxcols": (True, ("f32",)),
    "meanrows": (True, ("f32",)),
    "meancols": (True, ("f32",)),
    "transpose": (True, ("f32",)),
}


def env_set(name, known):
    v = os.environ.get(name, "").strip()
    if not v:
        return None
    got = {f.strip() for f in v.split(",") if f.strip()}
    bad = got - set(known)
    if bad:
        sys.exit(f"compute_grid.py: {name}: unknown {sorted(bad)}")
    return got


def shapes(matrix):
    if not matrix:
        return [(1, n) for n in SIZES]
    return [(r, c) for r in ROWS for c in COLS if r * c <= 1 << 27]


def shape_name(matrix, rows, cols):
    return f"{rows}x{cols}" if matrix else f"n={rows * cols}"


class Torch:
    name = "torch"

    def __init__(self):
        import torch
        self.t = torch
        self.types = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}

    def sync(self):
        self.t.cuda.synchronize()

    def event(self):
        return self.t.cuda.Event(enable_timing=True)

    def elapsed_ms(self, start, end):
        return start.elapsed_time(end)

    def free(self):
        self.t.cuda.empty_cache()

    def zeros(self, shape, dt):
        return self.t.zeros(shape, dtype=self.types[dt] if dt in self.types else dt, device="cuda")

    def cell(self, op, dt, matrix, rows, cols):
        """The call of op on new buffers, or a list of calls to try in order
        (the fastest first)."""
        t, F = self.t, self.t.nn.functional
        n = rows * cols
        if not matrix:
            x = self.zeros(n, dt)
            if op in ("add", "mul"):
                y, z = self.zeros(n, dt), self.zeros(n, dt)
                f = t.add if op == "add" else t.mul
                return lambda: f(x, y, out=z)
            if op == "addscalar":
                z = self.zeros(n, dt)
                return lambda: t.add(x, 0.0, out=z)
            if op in ("cast_f16", "cast_bf16"):
                z = self.zeros(n, "f16" if op == "cast_f16" else "bf16")
                return lambda: z.copy_(x)
            if op.startswith("cast_from_"):
                z = self.zeros(n, "f32")
                return lambda: z.copy_(x)
            if op in ("exp", "sigmoid"):
                z = self.zeros(n, dt)
                f = t.exp if op == "exp" else t.sigmoid
                return lambda: f(x, out=z)
            if op == "gelu":
                return lambda: F.gelu(x)
            if op == "where":
                mask = t.ones(n, dtype=t.bool, device="cuda")
                y, z = self.zeros(n, dt), self.zeros(n, dt)
                return [lambda: t.where(mask, x, y, out=z), lambda: t.where(mask, x, y)]
            if op in ("sum", "maxof", "mean"):
                o = self.zeros((), dt)
                f = {"sum": t.sum, "maxof": t.amax, "mean": t.mean}[op]
                return [lambda: f(x, dim=0, out=o), lambda: f(x)]
            if op in ("argmax", "argmin"):
                o = self.zeros((), t.int64)
                f = t.argmax if op == "argmax" else t.argmin
                return [lambda: f(x, out=o), lambda: f(x)]
        x = self.zeros((rows, cols), dt)
        if op == "softmax":
            return lambda: t.softmax(x, dim=-1)
        if op == "logsoftmax":
            return lambda: t.log_softmax(x, dim=-1)
        if op[:-4] in ("sum", "max", "mean"):
            dim = 1 if op.endswith("rows") else 0
            o = self.zeros(rows if dim == 1 else cols, dt)
            f = {"sum": t.sum, "max": t.amax, "mean": t.mean}[op[:-4]]
            return lambda: f(x, dim=dim, out=o)
        if op == "transpose":
            o = self.zeros((cols, rows), dt)
            return lambda: o.copy_(x.t())
        return None


class Cupy:
    name = "cupy"

    def __init__(self):
        import cupy
        self.cp = cupy
        self.types = {"f32": cupy.float32, "f16": cupy.float16, "f64": cupy.float64}
        self.gelu = cupy.ElementwiseKernel("T x", "T y", "const float v = (float)x; y = (T)(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));", "grid_gelu")
        self.sigmoid = cupy.ElementwiseKernel("T x", "T y", "const float v = (float)x; y = (T)(1.0f / (1.0f + expf(-v)));", "grid_sigmoid")
        try:
            from cupyx.scipy import special
            self.softmax, self.log_softmax = special.softmax, special.log_softmax
        except (ImportError, AttributeError):
            self.softmax = self.log_softmax = None

    def sync(self):
        self.cp.cuda.get_current_stream().synchronize()

    def event(self):
        return self.cp.cuda.Event()

    def elapsed_ms(self, start, end):
        return self.cp.cuda.get_elapsed_time(start, end)

    def free(self):
        self.cp.get_default_memory_pool().free_all_blocks()

    def zeros(self, shape, dt):
        return self.cp.zeros(shape, dtype=self.types.get(dt, dt))

    def cell(self, op, dt, matrix, rows, cols):
        cp = self.cp
        if dt == "bf16" or op.endswith("bf16"):  # CuPy has no bfloat16
            return None
        n = rows * cols
        if not matrix:
            x = self.zeros(n, dt)
            if op in ("add", "mul"):
                y, z = self.zeros(n, dt), self.zeros(n, dt)
                f = cp.add if op == "add" else cp.multiply
                return lambda: f(x, y, out=z)
            if op == "addscalar":
                z = self.zeros(n, dt)
                return lambda: cp.add(x, x.dtype.type(0), out=z)
            if op == "cast_f16" or op == "cast_from_f16":
                z = self.zeros(n, "f16" if op == "cast_f16" else "f32")
                return lambda: cp.copyto(z, x, casting="unsafe")
            if op == "exp":
                z = self.zeros(n, dt)
                return lambda: cp.exp(x, out=z)
            if op in ("gelu", "sigmoid"):
                z = self.zeros(n, dt)
                k = self.gelu if op == "gelu" else self.sigmoid
                return lambda: k(x, z)
            if op == "where":
                mask = cp.ones(n, dtype=cp.bool_)
                y = self.zeros(n, dt)
                return lambda: cp.where(mask, x, y)
            if op in ("sum", "maxof", "mean"):
                o = self.zeros((), dt)
                f = {"sum": cp.sum, "maxof": cp.amax, "mean": cp.mean}[op]
                return lambda: f(x, out=o)
            if op in ("argmax", "argmin"):
                o = self.zeros((), cp.int64)
                f = cp.argmax if op == "argmax" else cp.argmin
                return [lambda: f(x, out=o), lambda: f(x)]
        x = self.zeros((rows, cols), dt)
        if op in ("softmax", "logsoftmax"):
            f = self.softmax if op == "softmax" else self.log_softmax
            if f is not None:
                return lambda: f(x, axis=1)
            if op == "softmax":
                def softmax():
                    e = cp.exp(x - x.max(axis=1, keepdims=True))
                    return e / e.sum(axis=1, keepdims=True)
                return softmax

            def log_softmax():
                d = x - x.max(axis=1, keepdims=True)
                return d - cp.log(cp.exp(d).sum(axis=1, keepdims=True))
            return log_softmax
        if op[:-4] in ("sum", "max", "mean"):
            axis = 1 if op.endswith("rows") else 0
            o = self.zeros(rows if axis == 1 else cols, dt)
            f = {"sum": cp.sum, "max": cp.amax, "mean": cp.mean}[op[:-4]]
            return lambda: f(x, axis=axis, out=o)
        if op == "transpose":
            o = self.zeros((cols, rows), dt)
            return lambda: cp.copyto(o, x.T)
        return None


def loop(peer, call, calls, events=False):
    """Seconds of calls calls and one synchronize: by the host's clock, or
    by CUDA events recorded before and after (events)."""
    if events:
        start, end = peer.event(), peer.event()
        start.record()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    if events:
        end.record()
    peer.sync()
    if events:
        return peer.elapsed_ms(start, end) / 1e3
    return time.perf_counter() - t0


def time_us(peer, calls, events=False):
    """µs per call of the first of calls that runs: warmed up, then the
    median of REPEATS loops of N calls and one synchronize (timed by CUDA
    events where events: the large cells, as BenchmarkGrid's gridLoop)."""
    if callable(calls):
        calls = [calls]
    for i, call in enumerate(calls):
        try:
            call()
            peer.sync()
            break
        except (TypeError, RuntimeError):
            if i == len(calls) - 1:
                raise
    per = loop(peer, call, 1)
    k = 1
    while per * k < TARGET_S / 10 and k < MAX_CALLS:  # calibrate on a short loop
        k = min(k * 10, MAX_CALLS)
        per = loop(peer, call, k) / k
    n = max(1, min(MAX_CALLS, int(TARGET_S / per)))
    return statistics.median(loop(peer, call, n, events) / n for _ in range(REPEATS)) * 1e6


def main():
    ops = env_set("GOCUDA_GRID_OPS", OPS)
    dtypes = env_set("GOCUDA_GRID_DTYPES", DTYPES)
    maxel = os.environ.get("GOCUDA_GRID_MAXELEMS", "").strip()
    maxel = int(maxel, 0) if maxel else None
    want = env_set("GOCUDA_GRID_PEERS", ("torch", "cupy"))
    cells = os.environ.get("GOCUDA_GRID_CELLS", "").strip()
    cells = {c.strip() for c in cells.split(",") if c.strip()} or None
    peers = []
    for cls in (Torch, Cupy):
        if want is not None and cls.name not in want:
            continue
        try:
            peers.append(cls())
        except ImportError as e:
            print(f"compute_grid.py: no {cls.name}: {e}", file=sys.stderr)
    for op, (matrix, types) in OPS.items():
        if ops is not None and op not in ops:
            continue
        for dt in DTYPES:
            if dt not in types or dtypes is not None and dt not in dtypes:
                continue
            for rows, cols in shapes(matrix):
                if maxel is not None and rows * cols > maxel:
                    continue
                shape = shape_name(matrix, rows, cols)
                if cells is not None and f"{op}/{dt}/{shape}" not in cells:
                    continue
                for peer in peers:
                    try:
                        call = peer.cell(op, dt, matrix, rows, cols)
                        if call is None:
                            continue
                        us = time_us(peer, call, rows * cols >= EVENTS)
                    except Exception as e:  # a peer's limit: the cell is left out
                        print(f"{peer.name} {op}/{dt}/{shape}: {type(e).__name__}: {e}", file=sys.stderr)
                        continue
                    finally:
                        call = None
                        if rows * cols >= 16 << 20:
                            peer.free()
                    print(json.dumps({"peer": peer.name, "op": op, "dtype": dt, "shape": shape, "us": round(us, 3)}), flush=True)


if __name__ == "__main__":
    main()

"""Issue 50's benchmarks (item 8) in PyTorch and CuPy (each where
importable): the cases of nd/bench_test.go's BenchmarkND, named
op/dtype/shape as there, timed the same way: inputs of zeros (a take's
indices random), one call to warm up, then a loop of N calls and one
synchronize, timed by CUDA events recorded before and after the loop (the
call_* cases, the host's calls, by the host's clock), the median of 3
repeats, N chosen so that a repeat takes about 20 ms (at most MAX_CALLS).
Each peer's fastest call: out= where it has one (the Go side calls the
Into form there); PyTorch eager, torch.compile for chain_fused and
chain1_fused (eager where it fails), CuPy's cupy.fuse for them. CuPy has no bfloat16: it sits out
the bf16 cases.

The environment selects a subset as for the Go benchmark: GOCUDA_ND_OPS
(a comma list of ops); GOCUDA_ND_PEERS (torch,cupy) picks the peers.

usage: python3 nd_peers.py > nd-peers.json
       python3 nd_peers.py --list      the cases' names, one a line
Prints a JSON line per case and peer:
{"peer": "torch"|"cupy", "op": ..., "dtype": ..., "shape": ..., "us": ..., "how": ...}
("how": the call timed), after a line {"meta": {...}} naming the versions
and the device; cases a peer cannot run go to stderr.
"""
import json
import os
import statistics
import sys
import time

TARGET_S = 0.02
MAX_CALLS = 20000
REPEATS = 3

# The table of nd/bench_test.go's benchCases, in its order: (op, dtype,
# arguments). add, concat0, concat1: the two shapes; exp_t, sum_mid,
# softmax_*: the shape (exp_t reads it with its last two axes swapped); take, take_ax1: the
# table's rows and columns and the number of indices; matmul: a's shape,
# b's, and whether b is read as b.mT; call_*, chain_*, chain1_*: the
# elements (chain_*: relu(a*b + c) * d; chain1_*: relu(x*2 + 1) * 3).
CASES = [
    ("add", "f32", ((4096, 4096), (4096,))),
    ("add", "f32", ((4097, 33), (33,))),
    ("add", "f32", ((7, 1048576), (1048576,))),
    ("add", "f32", ((4096, 4096), (4096, 1))),
    ("add", "f32", ((4096, 1), (1, 4096))),
    ("add", "f32", ((64, 1024, 64), (1024, 1))),
    ("exp_t", "f32", (4096, 4096)),
    ("exp_t", "f32", (4097, 4099)),
    ("exp_t", "f32", (8, 1048576)),
    ("exp_t", "f32", (1048576, 8)),
    ("exp_t", "f16", (4096, 4096)),
    ("exp_t", "f32", (32, 512, 1024)),
    ("sum_mid", "f32", (64, 1024, 64)),
    ("sum_mid", "f32", (5, 100003, 3)),
    ("sum_mid", "f32", (1, 4096, 4096)),
    ("sum_mid", "f32", (4096, 4096, 1)),
    ("sum_mid", "f32", (2048, 3, 2048)),
    ("softmax_last", "f32", (4096, 1024)),
    ("softmax_first", "f32", (4096, 1024)),
    ("softmax_last", "f32", (4097, 33)),
    ("softmax_first", "f32", (4097, 33)),
    ("softmax_last", "f32", (262144, 16)),
    ("softmax_first", "f32", (262144, 16)),
    ("softmax_last", "f32", (16, 262144)),
    ("softmax_first", "f32", (16, 262144)),
    ("take", "f32", (1048576, 128, 1048576)),
    ("take", "f32", (1048576, 1, 1048576)),
    ("take", "f32", (1048576, 128, 7)),
    ("take", "f32", (100003, 33, 65537)),
    ("take_ax1", "f32", (4096, 4096, 1024)),
    ("concat0", "f32", ((4096, 4096), (4096, 4096))),
    ("concat0", "f32", ((4097, 33), (4097, 33))),
    ("concat0", "f32", ((1, 1048576), (7, 1048576))),
    ("concat1", "f32", ((4096, 4096), (4096, 4096))),
    ("concat1", "f32", ((4097, 33), (4097, 33))),
    ("concat1", "f32", ((1048576, 1), (1048576, 7))),
    ("matmul", "bf16", ((32, 512, 512), (32, 512, 512), False)),
    ("matmul", "bf16", ((32, 512, 512), (32, 512, 512), True)),
    ("matmul", "bf16", ((32, 512, 512), (512, 512), False)),
    ("matmul", "bf16", ((32, 513, 511), (32, 511, 509), False)),
    ("matmul", "bf16", ((4096, 4096), (4096, 4096), False)),
    ("matmul", "f16", ((32, 512, 512), (32, 512, 512), False)),
    ("call_into", "f32", (1024,)),
    ("call_alloc", "f32", (1024,)),
    ("chain_unfused", "f32", (64 << 20,)),
    ("chain_fused", "f32", (64 << 20,)),
    ("chain_unfused", "f32", (1 << 20,)),
    ("chain_fused", "f32", (1 << 20,)),
    ("chain1_unfused", "f32", (64 << 20,)),
    ("chain1_fused", "f32", (64 << 20,)),
    ("chain1_unfused", "f32", (1 << 20,)),
    ("chain1_fused", "f32", (1 << 20,)),
]
OPS = tuple(dict.fromkeys(op for op, _, _ in CASES))


def dims(shape):
    return "x".join(str(d) for d in shape)


def shape_name(op, args):
    """The shape part of a case's name, as nd/bench_test.go makes it."""
    if op in ("add", "concat0", "concat1"):
        return dims(args[0]) + "+" + dims(args[1])
    if op in ("take", "take_ax1"):
        rows, cols, n = args
        return f"{dims((rows, cols))}[{n}]"
    if op == "matmul":
        sa, sb, mt = args
        return dims(sa) + "@" + dims(sb) + (".mT" if mt else "")
    if op.startswith(("call_", "chain_", "chain1_")):
        return str(args[0])
    return dims(args)


def broadcast(sa, sb):
    if len(sa) < len(sb):
        sa, sb = sb, sa
    out = list(sa)
    for i, d in enumerate(sb):
        j = len(out) - len(sb) + i
        if out[j] == 1:
            out[j] = d
    return tuple(out)


def swapped(shape):
    """shape with its last two dims swapped: exp_t's result."""
    return tuple(shape[:-2]) + (shape[-1], shape[-2])


def indices(hi, n):
    """n random indices in [0, hi), as int64 on the host."""
    import numpy as np
    return np.random.default_rng(50).integers(0, hi, n, dtype=np.int64)


def env_set(name, known):
    v = os.environ.get(name, "").strip()
    if not v:
        return None
    got = {f.strip() for f in v.split(",") if f.strip()}
    bad = got - set(known)
    if bad:
        sys.exit(f"nd_peers.py: {name}: unknown {sorted(bad)}")
    return got


class Torch:
    name = "torch"

    def __init__(self):
        import torch
        self.t = torch
        self.types = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}
        self.compiled = None
        self.compiled1 = None

    def version(self):
        return self.t.__version__

    def device(self):
        return self.t.cuda.get_device_name()

    def sync(self):
        self.t.cuda.synchronize()

    def event(self):
        return self.t.cuda.Event(enable_timing=True)

    def elapsed_ms(self, start, end):
        return start.elapsed_time(end)

    def free(self):
        self.t.cuda.empty_cache()

    def zeros(self, shape, dt):
        return self.t.zeros(shape, dtype=self.types.get(dt, dt), device="cuda")

    def case(self, op, dt, args):
        """The calls of a case on new tensors, (how, call) each, to try in
        order (the fastest first); None where the peer has no such case."""
        t = self.t
        if op == "add":
            x, y, z = self.zeros(args[0], dt), self.zeros(args[1], dt), self.zeros(broadcast(*args), dt)
            return [("add(out=)", lambda: t.add(x, y, out=z))]
        if op == "exp_t":
            x, z = self.zeros(args, dt), self.zeros(swapped(args), dt)
            return [("exp(x.mT, out=)", lambda: t.exp(x.mT, out=z))]
        if op == "sum_mid":
            x, o = self.zeros(args, dt), self.zeros((args[0], args[2]), dt)
            return [("sum(dim=1, out=)", lambda: t.sum(x, dim=1, out=o)), ("sum(dim=1)", lambda: t.sum(x, dim=1))]
        if op.startswith("softmax_"):
            dim = -1 if op == "softmax_last" else 0
            x, o = self.zeros(args, dt), self.zeros(args, dt)
            return [("softmax(out=)", lambda: t.softmax(x, dim, out=o)), ("softmax", lambda: t.softmax(x, dim))]
        if op in ("take", "take_ax1"):
            rows, cols, n = args
            axis = 0 if op == "take" else 1
            x = self.zeros((rows, cols), dt)
            idx = t.from_numpy(indices(rows if axis == 0 else cols, n)).cuda()
            o = self.zeros((n, cols) if axis == 0 else (rows, n), dt)
            return [("index_select(out=)", lambda: t.index_select(x, axis, idx, out=o)),
                    ("index_select", lambda: t.index_select(x, axis, idx))]
        if op in ("concat0", "concat1"):
            axis = int(op[-1])
            x, y = self.zeros(args[0], dt), self.zeros(args[1], dt)
            shape = list(args[0])
            shape[axis] += args[1][axis]
            o = self.zeros(shape, dt)
            return [("cat(out=)", lambda: t.cat((x, y), dim=axis, out=o))]
        if op == "matmul":
            sa, sb, mt = args
            x, y = self.zeros(sa, dt), self.zeros(sb, dt)
            if mt:
                y = y.mT
            o = self.zeros(broadcast(sa[:-2], tuple(y.shape[:-2])) + (sa[-2], y.shape[-1]), dt)
            return [("matmul(out=)", lambda: t.matmul(x, y, out=o)), ("matmul", lambda: t.matmul(x, y))]
        if op in ("call_into", "call_alloc"):
            n = args[0]
            x, y, z = self.zeros(n, dt), self.zeros(n, dt), self.zeros(n, dt)
            if op == "call_into":
                return [("add(out=)", lambda: t.add(x, y, out=z))]
            return [("add", lambda: t.add(x, y))]
        if op in ("chain_unfused", "chain_fused"):
            n = args[0]
            a, b, c, d, o = (self.zeros(n, dt) for _ in range(5))
            if op == "chain_unfused":
                def unfused():
                    t.mul(a, b, out=o)
                    t.add(o, c, out=o)
                    t.relu_(o)
                    t.mul(o, d, out=o)
                return [("mul, add, relu_, mul (out=)", unfused)]

            def chain(a, b, c, d):
                return t.relu(a * b + c) * d
            if self.compiled is None:
                self.compiled = t.compile(chain)
            compiled = self.compiled
            return [("torch.compile", lambda: compiled(a, b, c, d)), ("eager", lambda: chain(a, b, c, d))]
        if op in ("chain1_unfused", "chain1_fused"):
            n = args[0]
            x, o = self.zeros(n, dt), self.zeros(n, dt)
            if op == "chain1_unfused":
                def unfused1():
                    t.mul(x, 2, out=o)
                    t.add(o, 1, out=o)
                    t.relu_(o)
                    t.mul(o, 3, out=o)
                return [("mul, add, relu_, mul (out=)", unfused1)]

            def chain1(x):
                return t.relu(x * 2 + 1) * 3
            if self.compiled1 is None:
                self.compiled1 = t.compile(chain1)
            compiled1 = self.compiled1
            return [("torch.compile", lambda: compiled1(x)), ("eager", lambda: chain1(x))]
        return None


class Cupy:
    name = "cupy"

    def __init__(self):
        import cupy
        self.cp = cupy
        self.types = {"f32": cupy.float32, "f16": cupy.float16, "f64": cupy.float64}
        try:
            from cupyx.scipy import special
            self.softmax = special.softmax
        except (ImportError, AttributeError):
            self.softmax = None
        self.fused = None
        self.fused1 = None

    def version(self):
        return self.cp.__version__

    def device(self):
        return self.cp.cuda.runtime.getDeviceProperties(self.cp.cuda.Device().id)["name"].decode()

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

    def case(self, op, dt, args):
        cp = self.cp
        if dt not in self.types:  # CuPy has no bfloat16
            return None
        if op == "add":
            x, y, z = self.zeros(args[0], dt), self.zeros(args[1], dt), self.zeros(broadcast(*args), dt)
            return [("add(out=)", lambda: cp.add(x, y, out=z))]
        if op == "exp_t":
            x, z = self.zeros(args, dt), self.zeros(swapped(args), dt)
            return [("exp(x.swapaxes(-1, -2), out=)", lambda: cp.exp(x.swapaxes(-1, -2), out=z))]
        if op == "sum_mid":
            x, o = self.zeros(args, dt), self.zeros((args[0], args[2]), dt)
            return [("sum(axis=1, out=)", lambda: cp.sum(x, axis=1, out=o))]
        if op.startswith("softmax_"):
            axis = -1 if op == "softmax_last" else 0
            x = self.zeros(args, dt)
            if self.softmax is not None:
                f = self.softmax
                return [("cupyx.scipy.special.softmax", lambda: f(x, axis=axis))]

            def softmax():
                e = cp.exp(x - x.max(axis=axis, keepdims=True))
                return e / e.sum(axis=axis, keepdims=True)
            return [("exp, max, sum, divide", softmax)]
        if op in ("take", "take_ax1"):
            rows, cols, n = args
            axis = 0 if op == "take" else 1
            x = self.zeros((rows, cols), dt)
            idx = cp.asarray(indices(rows if axis == 0 else cols, n))
            o = self.zeros((n, cols) if axis == 0 else (rows, n), dt)
            return [("take(out=)", lambda: cp.take(x, idx, axis=axis, out=o)), ("take", lambda: cp.take(x, idx, axis=axis))]
        if op in ("concat0", "concat1"):
            axis = int(op[-1])
            x, y = self.zeros(args[0], dt), self.zeros(args[1], dt)
            shape = list(args[0])
            shape[axis] += args[1][axis]
            o = self.zeros(shape, dt)
            return [("concatenate(out=)", lambda: cp.concatenate((x, y), axis=axis, out=o))]
        if op == "matmul":
            sa, sb, mt = args
            x, y = self.zeros(sa, dt), self.zeros(sb, dt)
            if mt:
                y = cp.swapaxes(y, -1, -2)
            o = self.zeros(broadcast(sa[:-2], tuple(y.shape[:-2])) + (sa[-2], y.shape[-1]), dt)
            return [("matmul(out=)", lambda: cp.matmul(x, y, out=o)), ("matmul", lambda: cp.matmul(x, y))]
        if op in ("call_into", "call_alloc"):
            n = args[0]
            x, y, z = self.zeros(n, dt), self.zeros(n, dt), self.zeros(n, dt)
            if op == "call_into":
                return [("add(out=)", lambda: cp.add(x, y, out=z))]
            return [("add", lambda: cp.add(x, y))]
        if op in ("chain_unfused", "chain_fused"):
            n = args[0]
            a, b, c, d, o = (self.zeros(n, dt) for _ in range(5))
            zero = o.dtype.type(0)
            if op == "chain_unfused":
                def unfused():
                    cp.multiply(a, b, out=o)
                    cp.add(o, c, out=o)
                    cp.maximum(o, zero, out=o)
                    cp.multiply(o, d, out=o)
                return [("multiply, add, maximum, multiply (out=)", unfused)]
            if self.fused is None:
                def chain(a, b, c, d):
                    return cp.maximum(a * b + c, 0) * d
                self.fused = cp.fuse(chain)
            fused = self.fused
            return [("cupy.fuse", lambda: fused(a, b, c, d))]
        if op in ("chain1_unfused", "chain1_fused"):
            n = args[0]
            x, o = self.zeros(n, dt), self.zeros(n, dt)
            zero = o.dtype.type(0)
            if op == "chain1_unfused":
                def unfused1():
                    cp.multiply(x, 2, out=o)
                    cp.add(o, 1, out=o)
                    cp.maximum(o, zero, out=o)
                    cp.multiply(o, 3, out=o)
                return [("multiply, add, maximum, multiply (out=)", unfused1)]
            if self.fused1 is None:
                def chain1(x):
                    return cp.maximum(x * 2 + 1, 0) * 3
                self.fused1 = cp.fuse(chain1)
            fused1 = self.fused1
            return [("cupy.fuse", lambda: fused1(x))]
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


def time_us(peer, calls, events):
    """µs per call of the first of calls that runs, and its how: warmed up,
    then the median of REPEATS loops of N calls and one synchronize (timed by
    CUDA events where events, as BenchmarkND's benchLoop). A call that
    fails is left for the next, its error named in how."""
    failed = []
    for i, (how, call) in enumerate(calls):
        try:
            call()
            peer.sync()
            break
        except Exception as e:
            if i == len(calls) - 1:
                raise
            failed.append(f"{how}: {type(e).__name__}")
    if failed:
        how = f"{how} ({'; '.join(failed)})"
    per = loop(peer, call, 1)
    k = 1
    while per * k < TARGET_S / 10 and k < MAX_CALLS:  # calibrate on a short loop
        k = min(k * 10, MAX_CALLS)
        per = loop(peer, call, k) / k
    n = max(1, min(MAX_CALLS, int(TARGET_S / per)))
    return statistics.median(loop(peer, call, n, events) / n for _ in range(REPEATS)) * 1e6, how


def main(argv):
    if argv[1:] == ["--list"]:
        for op, dt, args in CASES:
            print(f"{op}/{dt}/{shape_name(op, args)}")
        return
    if argv[1:]:
        sys.exit(next(l for l in __doc__.splitlines() if l.strip().startswith("usage")))
    ops = env_set("GOCUDA_ND_OPS", OPS)
    want = env_set("GOCUDA_ND_PEERS", ("torch", "cupy"))
    peers = []
    for cls in (Torch, Cupy):
        if want is not None and cls.name not in want:
            continue
        try:
            peers.append(cls())
        except ImportError as e:
            print(f"nd_peers.py: no {cls.name}: {e}", file=sys.stderr)
    meta = {}
    for peer in peers:
        try:
            meta[peer.name] = peer.version()
            meta.setdefault("device", peer.device())
        except Exception as e:
            print(f"nd_peers.py: {peer.name}'s version or device: {e}", file=sys.stderr)
    print(json.dumps({"meta": meta}), flush=True)
    for op, dt, args in CASES:
        if ops is not None and op not in ops:
            continue
        shape = shape_name(op, args)
        for peer in peers:
            calls = None
            try:
                calls = peer.case(op, dt, args)
                if calls is None:
                    continue
                us, how = time_us(peer, calls, not op.startswith("call_"))
            except Exception as e:  # a peer's limit: the case is left out
                print(f"{peer.name} {op}/{dt}/{shape}: {type(e).__name__}: {e}", file=sys.stderr)
                continue
            finally:
                calls = None
                peer.free()
            print(json.dumps({"peer": peer.name, "op": op, "dtype": dt, "shape": shape, "us": round(us, 3), "how": how}), flush=True)


if __name__ == "__main__":
    main(sys.argv)

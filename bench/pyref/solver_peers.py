"""Issue 51's dense benchmarks (item 4) in PyTorch and CuPy (each where
importable): the cases of cusolver/bench_test.go's BenchmarkSolver, named
op/dtype/shape as there, timed the same way: one call to warm up, then a
loop of N calls and one synchronize, timed by CUDA events recorded before
and after the loop, the median of 3 repeats, N chosen so that a repeat
takes about 50 ms (at least 1, at most MAX_CALLS).

Each call is the peer's own call on an input it leaves untouched (it copies
the input into the column-major matrix cuSOLVER overwrites, as the Go side
copies A into a work matrix), without a synchronize for the info where
the peer offers that (PyTorch's _ex forms; CuPy's default errstate,
linalg='ignore'):

  lu_solve          torch.linalg.solve_ex(A, b)          cupy.linalg.solve(A, b)       getrf + getrs, one right-hand side
  cholesky          torch.linalg.cholesky_ex(A)          cupy.linalg.cholesky(A)       potrf
  qr                torch.linalg.qr(A) (reduced)         cupy.linalg.qr(A)             geqrf + orgqr
  svd               torch.linalg.svd(A, driver='gesvd')  cupy.linalg.svd(A)            gesvd, U and Vᵀ in full
  eigh              torch.linalg.eigh(A)                 cupy.linalg.eigh(A)           syevd, with vectors
  cholesky_batched  torch.linalg.cholesky_ex(A)          cupy.linalg.cholesky(A)       10000 8×8: potrfBatched (or the peer's choice)
  cholesky_batched_upper  torch.linalg.cholesky_ex(A, upper=True)  (CuPy has no upper)  the same, the upper factor
  svd_batched       torch.linalg.svd(A)                  cupy.linalg.svd(A)            10000 8×8: gesvdjBatched (or the peer's choice)

The batched ops run in complex64 and complex128 too (dtypes c64, c128:
Hermitian positive definite batches for the Cholesky, potrfBatched's C
and Z; gesvdjBatched's C and Z for the SVD), after the real cases.

The inputs are those of the Go side: random in [-1, 1), symmetric for
cholesky and eigh, plus n·I for cholesky (positive definite); complex
ones random in [-1, 1) in both parts, Hermitian (a real diagonal) for
cholesky, plus n·I.

GOCUDA_SOLVER_OPS (a comma list of ops) selects a subset, as for the Go
benchmark; GOCUDA_SOLVER_MAXN leaves out matrices larger than n;
GOCUDA_SOLVER_PEERS (torch,cupy) picks the peers.

usage: python3 solver_peers.py > solver-peers.json
       python3 solver_peers.py --list      the cases' names, one a line
Prints a JSON line per case and peer:
{"peer": "torch"|"cupy", "case": "op/dtype/shape", "us": ..., "how": ...}
after a line {"meta": {...}} naming the versions and the device; cases a
peer cannot run go to stderr.
"""
import json
import os
import statistics
import sys

TARGET_S = 0.05
MAX_CALLS = 2000
REPEATS = 3

# cusolver/bench_test.go's solverCases, in its order: (op, sizes).
SQUARE = [
    ("lu_solve", (256, 1024, 4096, 8192)),
    ("cholesky", (256, 1024, 4096, 8192)),
    ("qr", (256, 1024, 4096)),
    ("svd", (256, 1024, 4096)),
    ("eigh", (256, 1024, 4096)),
]
BATCHED = ["cholesky_batched", "cholesky_batched_upper", "svd_batched"]


def cases():
    out = []
    for op, sizes in SQUARE:
        for n in sizes:
            for dt in ("f32", "f64"):
                out.append((op, dt, str(n), n, 0))
    for op in BATCHED:
        for dt in ("f32", "f64"):
            out.append((op, dt, "10000x8x8", 8, 10000))
    for op in BATCHED:
        for dt in ("c64", "c128"):
            out.append((op, dt, "10000x8x8", 8, 10000))
    return out


def env_set(name, known):
    v = os.environ.get(name, "").strip()
    if not v:
        return None
    s = {x.strip() for x in v.split(",") if x.strip()}
    bad = s - set(known)
    if bad:
        sys.exit("%s: unknown %s" % (name, sorted(bad)))
    return s


def host_matrix(np, n, count, sym, dominant, seed, cplx=False):
    """count n×n matrices (count 0: one, unbatched), as the Go side's:
    complex ones (cplx) Hermitian where sym, their diagonal real."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, size=(max(count, 1), n, n))
    if cplx:
        a = a + 1j * rng.uniform(-1, 1, size=(max(count, 1), n, n))
    if sym:
        low = np.tril(a, -1)
        diag = np.real(np.diagonal(a, axis1=1, axis2=2))
        a = low + np.conj(np.swapaxes(low, 1, 2)) + diag[:, :, None] * np.eye(n)
    if dominant:
        a = a + n * np.eye(n)
    return a if count else a[0]


DTYPES = {"f32": "float32", "f64": "float64", "c64": "complex64", "c128": "complex128"}


class Torch:
    name = "torch"

    def __init__(self):
        import torch
        self.t = torch
        self.dev = torch.device("cuda")

    def version(self):
        return self.t.__version__

    def device(self):
        return self.t.cuda.get_device_name(0)

    def sync(self):
        self.t.cuda.synchronize()

    def event(self):
        return self.t.cuda.Event(enable_timing=True)

    def record(self, e):
        e.record()

    def elapsed_ms(self, start, end):
        return start.elapsed_time(end)

    def put(self, a, dt):
        return self.t.tensor(a, dtype=getattr(self.t, DTYPES[dt]), device=self.dev)

    def case(self, op, a, b):
        L = self.t.linalg
        if op == "lu_solve":
            return "linalg.solve_ex", lambda: L.solve_ex(a, b)
        if op in ("cholesky", "cholesky_batched"):
            return "linalg.cholesky_ex", lambda: L.cholesky_ex(a)
        if op == "cholesky_batched_upper":
            return "linalg.cholesky_ex(upper=True)", lambda: L.cholesky_ex(a, upper=True)
        if op == "qr":
            return "linalg.qr(reduced)", lambda: L.qr(a)
        if op == "svd":
            return "linalg.svd(driver=gesvd)", lambda: L.svd(a, full_matrices=True, driver="gesvd")
        if op == "svd_batched":
            return "linalg.svd", lambda: L.svd(a, full_matrices=True)
        if op == "eigh":
            return "linalg.eigh", lambda: L.eigh(a)
        raise KeyError(op)


class CuPy:
    name = "cupy"

    def __init__(self):
        import cupy
        self.cp = cupy

    def version(self):
        return self.cp.__version__

    def device(self):
        return self.cp.cuda.runtime.getDeviceProperties(0)["name"].decode()

    def sync(self):
        self.cp.cuda.Device().synchronize()

    def event(self):
        return self.cp.cuda.Event()

    def record(self, e):
        e.record()

    def elapsed_ms(self, start, end):
        return self.cp.cuda.get_elapsed_time(start, end)

    def put(self, a, dt):
        return self.cp.asarray(a, dtype=getattr(self.cp, DTYPES[dt]))

    def case(self, op, a, b):
        L = self.cp.linalg
        if op == "lu_solve":
            return "linalg.solve", lambda: L.solve(a, b)
        if op in ("cholesky", "cholesky_batched"):
            return "linalg.cholesky", lambda: L.cholesky(a)
        if op == "cholesky_batched_upper":
            raise ValueError("cupy.linalg.cholesky has the lower factor only")
        if op == "qr":
            return "linalg.qr(reduced)", lambda: L.qr(a)
        if op in ("svd", "svd_batched"):
            return "linalg.svd", lambda: L.svd(a, full_matrices=True)
        if op == "eigh":
            return "linalg.eigh", lambda: L.eigh(a)
        raise KeyError(op)


def time_call(p, call):
    call()
    p.sync()
    # One call's time picks N.
    s, e = p.event(), p.event()
    p.record(s)
    call()
    p.record(e)
    p.sync()
    one = max(p.elapsed_ms(s, e) / 1e3, 1e-7)
    n = int(min(MAX_CALLS, max(1, TARGET_S / one)))
    runs = []
    for _ in range(REPEATS):
        s, e = p.event(), p.event()
        p.record(s)
        for _ in range(n):
            call()
        p.record(e)
        p.sync()
        runs.append(p.elapsed_ms(s, e) * 1e3 / n)
    return statistics.median(runs)


def main():
    all_cases = cases()
    if "--list" in sys.argv:
        for op, dt, shape, _, _ in all_cases:
            print("%s/%s/%s" % (op, dt, shape))
        return
    import numpy as np
    ops = env_set("GOCUDA_SOLVER_OPS", [c[0] for c in all_cases])
    which = env_set("GOCUDA_SOLVER_PEERS", ["torch", "cupy"])
    # GOCUDA_SOLVER_MAXN leaves out the larger matrices (an SVD of 4096
    # takes seconds a call), as the Go side's -test.bench pattern does.
    maxn = int(os.environ.get("GOCUDA_SOLVER_MAXN", "0") or 0)
    peers = []
    for cls in (Torch, CuPy):
        if which is not None and cls.name not in which:
            continue
        try:
            peers.append(cls())
        except Exception as err:  # not importable, or no GPU
            print("%s: %s" % (cls.name, err), file=sys.stderr)
    meta = {p.name: p.version() for p in peers}
    if peers:
        meta["device"] = peers[0].device()
    print(json.dumps({"meta": meta}), flush=True)
    for op, dt, shape, n, count in all_cases:
        if ops is not None and op not in ops or maxn and n > maxn:
            continue
        name = "%s/%s/%s" % (op, dt, shape)
        a = host_matrix(np, n, count, op in ("cholesky", "eigh", "cholesky_batched", "cholesky_batched_upper"), op in ("cholesky", "cholesky_batched", "cholesky_batched_upper"), n * 1000 + count, dt.startswith("c"))
        b = np.random.default_rng(1).uniform(-1, 1, size=(n,))
        for p in peers:
            try:
                da, db = p.put(a, dt), p.put(b, dt)
                how, call = p.case(op, da, db)
                us = time_call(p, call)
                print(json.dumps({"peer": p.name, "case": name, "us": round(us, 2), "how": how}), flush=True)
                del da, db
            except Exception as err:
                print("%s %s: %s" % (p.name, name, err), file=sys.stderr)


if __name__ == "__main__":
    main()

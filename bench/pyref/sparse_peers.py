"""Issue 51's sparse benchmarks (item 4) in CuPy (cupyx.scipy.sparse) and
PyTorch (torch.sparse), each where importable: the cases of
cusparse/bench_test.go's BenchmarkSparse, named as there, on the same
matrices, timed the same way: one call to warm up, then a loop of N calls
and one synchronize, CUDA events recorded before and after the loop, the
median of 3 repeats, N chosen so that a repeat takes about 20 ms (at most
MAX_CALLS, at least 1).

The matrices are 1 Mi x 1 Mi, float32, CSR with int32 indices:
"uniform16" draws 16 columns a row, "powerlaw" 1 + 1800000 // (i + 1)
(at most 4096) for row i; the k-th column drawn for row i is a hash of
(i, k) in wrapping uint64 arithmetic, the Go side's benchColumn; a column
drawn twice is stored once, its values summed; value (i + c) % 7 / 8 +
1/8. SpMV is y = A x, SpMM C = A B with B 1 Mi x 64 (row-major, as the Go
side's; column-major too, where a peer is faster so), SpGEMM A A of the
power-law matrix. Each peer's calls are tried
in turn, every one that runs is timed, and the fastest is reported with
what it was ("how"): the forms with an output given (no allocation a
call) where the peer has them.

usage: python3 sparse_peers.py > sparse-peers.json
       python3 sparse_peers.py --check   the matrices' sizes and checksums only
Prints a JSON line per case and peer:
{"peer": "torch"|"cupy", "case": "spmv/f32/uniform16", "us": ..., "how": ...}
after a line {"meta": {...}} naming the versions and the device; what a
peer cannot run goes to stderr. GOCUDA_SPARSE_PEERS (torch,cupy) picks
the peers, GOCUDA_SPARSE_CASES (a comma list of case names) the cases.
"""
import json
import os
import statistics
import sys
import time

import numpy as np

N = 1 << 20
COLS = 64
TARGET_S = 0.02
MAX_CALLS = 2000
REPEATS = 3

# The Go side's counts and checksums (sum of c * (i + 1) over the stored
# non-zeros, wrapping uint64), for --check.
EXPECT = {"uniform16": (16777100, 4611406721920334042), "powerlaw": (16298897, 1123994262337472568)}

CASES = ["spmv/f32/uniform16", "spmm64/f32/uniform16", "spmv/f32/powerlaw", "spmm64/f32/powerlaw", "spgemm/f32/powerlaw"]


def matrix(kind):
    """The kind's matrix on the host: (indptr, indices, data), int32 indices."""
    if kind == "uniform16":
        deg = np.full(N, 16, dtype=np.int64)
    else:
        deg = np.minimum(1 + 1800000 // (np.arange(N, dtype=np.int64) + 1), 4096)
    total = int(deg.sum())
    rows = np.repeat(np.arange(N, dtype=np.uint64), deg)
    starts = np.zeros(N, dtype=np.int64)
    np.cumsum(deg[:-1], out=starts[1:])
    k = (np.arange(total, dtype=np.int64) - np.repeat(starts, deg)).astype(np.uint64)
    with np.errstate(over="ignore"):
        h = ((rows << np.uint64(32)) | k) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(32)
    del k
    cols = h % np.uint64(N)
    del h
    vals = ((rows + cols) % np.uint64(7)).astype(np.float32) / np.float32(8) + np.float32(0.125)
    # Rows are in order already: sort each row's columns.
    order = np.lexsort((cols, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    del order
    keep = np.ones(total, dtype=bool)
    keep[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    group = np.cumsum(keep) - 1
    data = np.bincount(group, weights=vals.astype(np.float64)).astype(np.float32)
    rows, cols = rows[keep], cols[keep]
    indptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows.astype(np.int64), minlength=N), out=indptr[1:])
    return indptr.astype(np.int32), cols.astype(np.int32), data, rows


def check():
    for kind, (nnz, want) in EXPECT.items():
        indptr, indices, data, rows = matrix(kind)
        with np.errstate(over="ignore"):
            s = int(np.sum(indices.astype(np.uint64) * (rows + np.uint64(1)), dtype=np.uint64))
        ok = len(indices) == nnz and s == want
        print(kind, len(indices), s, "same as the Go side" if ok else "DIFFERS from the Go side (%d, %d)" % (nnz, want))
        if not ok:
            sys.exit(1)


def timed(peer, call):
    """The median over REPEATS of the µs a call takes in a loop."""
    call()
    peer.sync()
    t0 = time.perf_counter()
    call()
    peer.sync()
    one = max(time.perf_counter() - t0, 1e-6)
    n = max(1, min(MAX_CALLS, int(TARGET_S / one)))
    out = []
    for _ in range(REPEATS):
        start, end = peer.event(), peer.event()
        start.record()
        for _ in range(n):
            call()
        end.record()
        end.synchronize()
        out.append(peer.elapsed_ms(start, end) * 1e3 / n)
    return statistics.median(out)


class Torch:
    name = "torch"

    def __init__(self):
        import torch
        self.t = torch
        self.mats = {}

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

    def matrix(self, kind):
        if kind not in self.mats:
            t = self.t
            indptr, indices, data, _ = matrix(kind)
            self.mats[kind] = t.sparse_csr_tensor(t.from_numpy(indptr).cuda(), t.from_numpy(indices).cuda(),
                                                  t.from_numpy(data).cuda(), size=(N, N))
        return self.mats[kind]

    def calls(self, op, kind):
        t = self.t
        a = self.matrix(kind)
        if op == "spmv":
            x, y = t.zeros(N, device="cuda"), t.zeros(N, device="cuda")
            return [("mv(out=)", lambda: t.mv(a, x, out=y)), ("addmv(beta=0, out=)", lambda: t.addmv(y, a, x, beta=0, out=y)),
                    ("a @ x", lambda: a @ x)]
        if op == "spmm64":
            b, c = t.zeros(N, COLS, device="cuda"), t.zeros(N, COLS, device="cuda")
            # The same product on column-major B and C, where the peer is
            # faster so.
            bf, cf = t.zeros(COLS, N, device="cuda").t(), t.zeros(COLS, N, device="cuda").t()
            return [("mm(out=)", lambda: t.mm(a, b, out=c)), ("addmm(beta=0, out=)", lambda: t.addmm(c, a, b, beta=0, out=c)),
                    ("a @ b", lambda: a @ b), ("mm(out=), column-major", lambda: t.mm(a, bf, out=cf))]
        if op == "spgemm":
            return [("a @ a", lambda: a @ a), ("sparse.mm(a, a)", lambda: t.sparse.mm(a, a))]
        return []


class Cupy:
    name = "cupy"

    def __init__(self):
        import cupy
        import cupyx.scipy.sparse
        self.cp = cupy
        self.sp = cupyx.scipy.sparse
        try:
            from cupyx import cusparse
            self.cusparse = cusparse
        except ImportError:
            self.cusparse = None
        self.mats = {}

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

    def matrix(self, kind):
        if kind not in self.mats:
            cp = self.cp
            indptr, indices, data, _ = matrix(kind)
            self.mats[kind] = self.sp.csr_matrix((cp.asarray(data), cp.asarray(indices), cp.asarray(indptr)), shape=(N, N))
        return self.mats[kind]

    def calls(self, op, kind):
        cp, cs = self.cp, self.cusparse
        a = self.matrix(kind)
        out = []
        if op == "spmv":
            x, y = cp.zeros(N, dtype=cp.float32), cp.zeros(N, dtype=cp.float32)
            if cs is not None:
                out.append(("cusparse.spmv(y=)", lambda: cs.spmv(a, x, y=y)))
            out.append(("a @ x", lambda: a @ x))
        elif op == "spmm64":
            b = cp.zeros((N, COLS), dtype=cp.float32)
            c = cp.zeros((N, COLS), dtype=cp.float32)
            bf = cp.zeros((N, COLS), dtype=cp.float32, order="F")
            cf = cp.zeros((N, COLS), dtype=cp.float32, order="F")
            if cs is not None:
                out.append(("cusparse.spmm(c=)", lambda: cs.spmm(a, b, c=c)))
                out.append(("cusparse.spmm(c=), column-major", lambda: cs.spmm(a, bf, c=cf)))
            out.append(("a @ b", lambda: a @ b))
        elif op == "spgemm":
            out.append(("a @ a", lambda: a @ a))
        return out


def main():
    if "--check" in sys.argv:
        check()
        return
    want = os.environ.get("GOCUDA_SPARSE_PEERS", "torch,cupy").split(",")
    only = os.environ.get("GOCUDA_SPARSE_CASES")
    cases = [c for c in CASES if not only or c in only.split(",")]
    peers = []
    for cls in (Torch, Cupy):
        if cls.name not in want:
            continue
        try:
            peers.append(cls())
        except Exception as e:  # not installed, or no GPU
            print("%s: %s" % (cls.name, e), file=sys.stderr)
    meta = {p.name: p.version() for p in peers}
    if peers:
        meta["device"] = peers[0].device()
    print(json.dumps({"meta": meta}), flush=True)
    for peer in peers:
        for case in cases:
            op, _, kind = case.split("/")
            best = None
            try:
                calls = peer.calls(op, kind)
            except Exception as e:
                print("%s %s: %s" % (peer.name, case, e), file=sys.stderr)
                continue
            for how, call in calls:
                try:
                    us = timed(peer, call)
                except Exception as e:
                    print("%s %s %s: %s" % (peer.name, case, how, e), file=sys.stderr)
                    continue
                print("%s %s %s: %.1f us" % (peer.name, case, how, us), file=sys.stderr)
                if best is None or us < best[0]:
                    best = (us, how)
            if best is not None:
                print(json.dumps({"peer": peer.name, "case": case, "us": round(best[0], 2), "how": best[1]}), flush=True)
            peer.sync()


if __name__ == "__main__":
    main()

"""Table of issue 48's benchmark grid: gocuda (BenchmarkGrid's us/op) beside
PyTorch and CuPy (bench/pyref/compute_grid.py's JSON lines), cell by cell.

usage: python3 gridreport.py [-cells BELOW] GO_OUT[,GO_OUT...] [PEERS_JSON[,PEERS_JSON...]] > grid.md

A cell's figure is the median over the files' lines for it. The ratio is the
faster peer's µs over gocuda's (above 1: gocuda is faster); the table is
sorted worst ratio first, then the cells no peer ran. The summary names the
least cell and counts the cells below 0.9x and 1.0x. With -cells BELOW it
prints only the cells whose ratio is below BELOW, as a comma list of
op/dtype/shape for GOCUDA_GRID_CELLS: a re-run of a whole run's slow cells
(scripts/gpu-perf.sh grid with GRID_CELLS and GRID_ROUNDS).
"""
import json
import re
import statistics
import sys

GO_LINE = re.compile(r"^BenchmarkGrid/([^/\s]+)/([^/\s]+)/([^/\s]+?)(?:-\d+)?\s+\d+\s.*?([0-9.]+(?:e[-+]?\d+)?) us/op")


def read_go(paths):
    cells = {}
    for path in paths.split(","):
        with open(path) as f:
            for line in f:
                m = GO_LINE.match(line)
                if m:
                    cells.setdefault(m.group(1, 2, 3), []).append(float(m.group(4)))
    return {k: statistics.median(v) for k, v in cells.items()}


def read_peers(paths):
    cells = {}
    for path in paths.split(",") if paths else []:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    d = json.loads(line)
                    key, peer, us = (d["op"], d["dtype"], d["shape"]), d["peer"], float(d["us"])
                except (ValueError, KeyError):
                    continue
                cells.setdefault(key, {}).setdefault(peer, []).append(us)
    return {k: {p: statistics.median(v) for p, v in ps.items()} for k, ps in cells.items()}


def us(v):
    if v is None:
        return "-"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 1000 else f"{v:,.0f}"


def main(argv):
    below = None
    if len(argv) > 2 and argv[1] == "-cells":
        below = float(argv[2])
        argv = argv[:1] + argv[3:]
    if len(argv) not in (2, 3):
        sys.exit(next(l for l in __doc__.splitlines() if l.startswith("usage")))
    gocuda = read_go(argv[1])
    peers = read_peers(argv[2] if len(argv) == 3 else "")
    rows = []
    for key, g in gocuda.items():
        p = peers.get(key, {})
        torch, cupy = p.get("torch"), p.get("cupy")
        best = min((v for v in (torch, cupy) if v is not None), default=None)
        ratio = best / g if best is not None and g > 0 else None
        rows.append((key, g, torch, cupy, ratio))
    rows.sort(key=lambda r: (r[4] is None, r[4] if r[4] is not None else 0, r[0]))
    if below is not None:
        print(",".join("/".join(r[0]) for r in rows if r[4] is not None and r[4] < below))
        return
    print("| op | dtype | shape | gocuda µs | PyTorch µs | CuPy µs | ratio |")
    print("|---|---|---|---|---|---|---|")
    for (op, dt, shape), g, torch, cupy, ratio in rows:
        r = f"{ratio:.2f}x" if ratio is not None else "-"
        print(f"| {op} | {dt} | {shape} | {us(g)} | {us(torch)} | {us(cupy)} | {r} |")
    rated = [r for r in rows if r[4] is not None]
    print()
    if not rated:
        print(f"{len(rows)} cells, none with a peer's figure.")
        return
    (op, dt, shape), g, _, _, least = rated[0]
    below9 = sum(r[4] < 0.9 for r in rated)
    below10 = sum(r[4] < 1.0 for r in rated)
    print(f"{len(rated)} cells beside a peer ({len(rows) - len(rated)} without): least {least:.2f}x ({op} {dt} {shape}, "
          f"gocuda {us(g)} µs); {below9} below 0.9x, {below10} below 1.0x.")
    missing = sorted(set(peers) - set(gocuda))
    if missing:
        print(f"({len(missing)} peer cells without a gocuda figure, e.g. {'/'.join(missing[0])}.)")


if __name__ == "__main__":
    main(sys.argv)

"""The table of issue 51's dense benchmarks: cusolver's BenchmarkSolver
output (Go's benchmark lines, any number of -test.count rounds: the median
of each case's us/op) beside bench/pyref/solver_peers.py's JSON lines, as
markdown, the worst ratio first. speed is the faster peer's time over
gocuda's: 1.02 means gocuda takes 2% less time; the issue's goal is
>= 0.98 everywhere.

usage: python3 solverreport.py solver-go.txt solver-peers.json > solver.md
"""
import json
import re
import statistics
import sys

LINE = re.compile(r"^BenchmarkSolver/(\S+?)(?:-\d+)?\s+\d+\s+.*?([\d.]+) us/op")


def main(go_path, peers_path):
    go = {}
    for line in open(go_path):
        m = LINE.match(line)
        if m:
            go.setdefault(m.group(1), []).append(float(m.group(2)))
    peers, meta, hows = {}, {}, {}
    for line in open(peers_path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if "meta" in r:
            meta = r["meta"]
            continue
        peers.setdefault(r["case"], {})[r["peer"]] = r["us"]
        hows.setdefault(r["peer"], {})[r["case"].split("/")[0]] = r["how"]
    names = sorted(set(go) | set(peers))
    rows = []
    for name in names:
        g = statistics.median(go[name]) if name in go else None
        p = peers.get(name, {})
        best = min(p.values()) if p else None
        speed = best / g if g and best else None
        rows.append((speed if speed is not None else float("inf"), name, g, p.get("torch"), p.get("cupy"), speed))
    rows.sort()
    f = lambda v: "—" if v is None else ("%.1f" % v if v >= 10 else "%.2f" % v)
    print("Device: %s; %s" % (meta.get("device", "?"), ", ".join("%s %s" % (k, v) for k, v in meta.items() if k != "device")))
    print()
    print("| case | gocuda µs | PyTorch µs | CuPy µs | speed vs the faster peer |")
    print("|---|---:|---:|---:|---:|")
    for _, name, g, t, c, speed in rows:
        mark = "" if speed is None or speed >= 0.98 else " (below 0.98)"
        print("| %s | %s | %s | %s | %s%s |" % (name, f(g), f(t), f(c), "—" if speed is None else "%.2fx" % speed, mark))
    print()
    for peer, ops in sorted(hows.items()):
        print("%s: %s" % (peer, "; ".join("%s %s" % (op, how) for op, how in sorted(ops.items()))))


if __name__ == "__main__":
    main(*sys.argv[1:3])

"""Table of the call-overhead and kernel benchmarks: Go beside C
(bench/cref/kernelbench.c).

usage: python3 kernelreport.py C_OUT[,C_OUT...] GO_OUT[,GO_OUT...] [GO_OUT[,GO_OUT...]] > kernels.md

Each argument lists the outputs of the rounds (run interleaved: C, purego,
cgo, C, ...); each cell is the median over them. With two Go arguments
(purego, then cgo), both columns are shown.
"""
import re
import statistics
import sys

NAMES = ("StreamQuery", "StreamQueryRaw/unbound", "StreamQueryRaw/bound", "CopyFromHost/4B", "CopyToHost/4B", "LaunchSync", "LaunchAsync", "Saxpy", "CopyDeviceToDevice")


# StreamQueryRaw is BenchmarkStreamQuery's driver call without gocuda's
# locks and checks: beside C's StreamQuery, it shows the crossing's cost.
REFERENCE = {"StreamQueryRaw/unbound": "StreamQuery", "StreamQueryRaw/bound": "StreamQuery"}


def read(paths, pattern):
    runs = {}
    for path in paths.split(","):
        for line in open(path):
            m = pattern.match(line)
            if m:
                runs.setdefault(m.group(1), []).append(float(m.group(2)))
    return {name: statistics.median(v) for name, v in runs.items()}


C_LINE = re.compile(r"^(\S+) ([\d.]+)$")
GO_LINE = re.compile(r"^Benchmark([\w/]+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op")


def main(c_paths, *go_paths):
    c = read(c_paths, C_LINE)
    gos = [read(p, GO_LINE) for p in go_paths]
    rounds = len(c_paths.split(","))
    names = ["Go (purego)", "Go (cgo)"] if len(gos) == 2 else ["Go"]
    print(f"\nMedians of {rounds} interleaved round{'s' if rounds > 1 else ''}.")
    print("\n| benchmark | C | " + " | ".join(f"{n} | ratio | over C" for n in names) + " |")
    print("|---|---|" + "---|---|---|" * len(gos))
    for name in NAMES:
        # The raw driver call has no C program of its own: C's is the same call.
        r = c.get(REFERENCE.get(name, name))
        if not r:
            continue
        row = f"| {name} | {r / 1000:.3f} µs |"
        for go in gos:
            g = go.get(name)
            row += f" {g / 1000:.3f} µs | {g / r:.3f}x | {g - r:+.0f} ns |" if g else " - | - | - |"
        print(row)
    go = gos[-1]
    n = 16 << 20
    if go.get("Saxpy") and go.get("CopyDeviceToDevice"):
        saxpy = 12 * n / go["Saxpy"]
        copy = 2 * (256 << 20) / go["CopyDeviceToDevice"]
        print(f"\nSAXPY on 16 Mi floats from Go: {saxpy:.0f} GB/s read and written, "
              f"{100 * saxpy / copy:.0f}% of the device-to-device copy's {copy:.0f} GB/s in the same run "
              "(SAXPY's time includes the launch and the synchronize).")


if __name__ == "__main__":
    main(*sys.argv[1:])

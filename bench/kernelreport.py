"""Table of the kernel benchmarks: Go beside C (bench/cref/kernelbench.c).

usage: python3 kernelreport.py C_OUTPUT GO_BENCH_OUTPUT [GO_BENCH_OUTPUT_2] > kernels.md

With two Go outputs (purego, then cgo), both columns are shown.
"""
import re
import sys


def read_go(path):
    go = {}
    for line in open(path):
        m = re.match(r"^Benchmark(\w+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op", line)
        if m:
            go[m.group(1)] = float(m.group(3))
    return go


def main(c_path, *go_paths):
    c = {}
    for line in open(c_path):
        f = line.split()
        if len(f) == 2:
            c[f[0]] = float(f[1])
    gos = [read_go(p) for p in go_paths]
    names = ["Go (purego)", "Go (cgo)"] if len(gos) == 2 else ["Go"]
    print("\n| benchmark | C | " + " | ".join(f"{n} | ratio | over C" for n in names) + " |")
    print("|---|---|" + "---|---|---|" * len(gos))
    for name in ("StreamQuery", "LaunchSync", "LaunchAsync", "Saxpy", "CopyDeviceToDevice"):
        r = c.get(name)
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

"""Table of the kernel benchmarks: Go beside C (bench/cref/kernelbench.c).

usage: python3 kernelreport.py C_OUTPUT GO_BENCH_OUTPUT > kernels.md
"""
import re
import sys


def main(c_path, go_path):
    c = {}
    for line in open(c_path):
        f = line.split()
        if len(f) == 2:
            c[f[0]] = float(f[1])
    go = {}
    for line in open(go_path):
        m = re.match(r"^Benchmark(\w+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op", line)
        if m:
            go[m.group(1)] = float(m.group(3))
    print("\n| benchmark | Go | C | ratio (Go/C) |")
    print("|---|---|---|---|")
    for name in ("LaunchSync", "LaunchAsync", "Saxpy", "CopyDeviceToDevice"):
        g, r = go.get(name), c.get(name)
        if g and r:
            print(f"| {name} | {g / 1000:.2f} µs | {r / 1000:.2f} µs | {g / r:.3f}x |")
    n = 16 << 20
    if go.get("Saxpy") and go.get("CopyDeviceToDevice"):
        saxpy = 12 * n / go["Saxpy"]
        copy = 2 * (256 << 20) / go["CopyDeviceToDevice"]
        print(f"\nSAXPY on 16 Mi floats from Go: {saxpy:.0f} GB/s read and written, "
              f"{100 * saxpy / copy:.0f}% of the device-to-device copy's {copy:.0f} GB/s in the same run "
              "(SAXPY's time includes the launch and the synchronize).")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

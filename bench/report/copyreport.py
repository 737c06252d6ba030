"""Merges the C reference (copybench) and Go benchmark outputs into a
markdown table: GB/s of each path, Go beside C, and the ratio.

usage: python3 copyreport.py C_OUTPUT[,C_OUTPUT...] GO_BENCH_OUTPUT[,GO_BENCH_OUTPUT...] > table.md

With several outputs of each (runs interleaved C, Go, C, Go...), each cell is
the median over the runs.
"""
import statistics
import re
import sys

GO_NAMES = {
    "CopyFromHost": ("pageable", "H2D"), "CopyToHost": ("pageable", "D2H"),
    "CopyFromPinned": ("pinned", "H2D"), "CopyToPinned": ("pinned", "D2H"),
    "CopyFromRegistered": ("registered", "H2D"), "CopyToRegistered": ("registered", "D2H"),
}
SIZES = [4, 4 << 10, 16 << 10, 64 << 10, 150 << 10, 196 << 10, 256 << 10,
         1 << 20, 4928307, 16 << 20, 64 << 20, 256 << 20, 1 << 30]


def size_name(n):
    if n >= 1 << 30 and n % (1 << 30) == 0:
        return f"{n >> 30}GiB"
    if n >= 1 << 20:
        return f"{n >> 20}MiB" if n % (1 << 20) == 0 else f"{n / (1 << 20):.1f}MiB"
    if n >= 1 << 10:
        return f"{n >> 10}KiB"
    return f"{n}B"


def main(c_paths, go_paths):
    c, go = {}, {}
    for c_path in c_paths.split(","):
        for line in open(c_path):
            parts = line.split()
            if len(parts) == 4:
                c.setdefault((parts[0], parts[1], int(parts[2])), []).append(float(parts[3]))
    by_name = {size_name(n): n for n in SIZES}
    pat = re.compile(r"^Benchmark(\w+)/(\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op")
    for go_path in go_paths.split(","):
        for line in open(go_path):
            m = pat.match(line)
            if m and m.group(1) in GO_NAMES and m.group(2) in by_name:
                path, d = GO_NAMES[m.group(1)]
                go.setdefault((path, d, by_name[m.group(2)]), []).append(float(m.group(4)))
    c = {k: statistics.median(v) for k, v in c.items()}
    go = {k: statistics.median(v) for k, v in go.items()}
    for d in ("H2D", "D2H"):
        print(f"\n### {d}: GB/s (Go / C, ratio of Go's time to C's)\n")
        print("| size | pageable Go | pageable C | ratio | pinned Go | pinned C | ratio | registered Go | registered C | ratio |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for n in SIZES:
            row = [size_name(n)]
            for path in ("pageable", "pinned", "registered"):
                g, r = go.get((path, d, n)), c.get((path, d, n))
                gbs = lambda ns: f"{n / ns:.2f}" if ns else "-"
                row += [gbs(g), gbs(r), f"{g / r:.3f}x" if g and r else "-"]
            print("| " + " | ".join(row) + " |")
    lat = [(p, d, c.get((p, d, 4)), go.get((p, d, 4))) for p in ("pageable", "pinned") for d in ("H2D", "D2H")]
    print("\n### 4-byte copy latency (µs)\n")
    print("| path | Go | C | ratio |")
    print("|---|---|---|---|")
    for p, d, cr, g in lat:
        if cr and g:
            print(f"| {p} {d} | {g / 1000:.2f} | {cr / 1000:.2f} | {g / cr:.3f}x |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

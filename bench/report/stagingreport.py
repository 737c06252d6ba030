"""Tables of the staging benchmarks against the plain copy of the same run.

usage: python3 stagingreport.py GO_BENCH_OUTPUT > staging.md

Reads `go test -bench` output holding BenchmarkCopyFromHost/CopyToHost (the
plain copy), BenchmarkUpload/Download, UploadWith/DownloadInto and
Upload/DownloadRegistered, and prints GB/s with the ratio to the plain copy
(above 1: faster than the plain copy); and, where the output holds
BenchmarkStagingPaired, the speedup of Upload/Download over the plain copy
measured transfer by transfer in turns.
"""
import re
import sys

COLUMNS = {
    "up": [("CopyFromHost", "plain CopyFromHost"), ("Upload", "Upload"),
           ("UploadWith", "UploadWith"), ("UploadRegistered", "Upload, registered slice")],
    "down": [("CopyToHost", "plain CopyToHost"), ("Download", "Download"),
             ("DownloadInto", "DownloadInto"), ("DownloadRegistered", "Download, registered slice")],
}
paired = re.compile(r"^BenchmarkStagingPaired/(up|down)/(\S+?)(-\d+)?\s.*?([\d.]+) speedup")
pat = re.compile(r"^Benchmark(\w+)/(\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) MB/s")


def size_key(name):
    m = re.match(r"([\d.]+)(B|KiB|MiB|GiB)$", name)
    mult = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]
    return float(m.group(1)) * mult


def main(path):
    rates, speedups = {}, {}
    for line in open(path):
        m = pat.match(line)
        if m:
            rates[(m.group(1), m.group(2))] = float(m.group(5)) / 1000  # GB/s
        m = paired.match(line)
        if m:
            speedups[(m.group(1), m.group(2))] = float(m.group(4))
    for d, cols in COLUMNS.items():
        sizes = sorted({s for (b, s) in rates if b == cols[1][0]}, key=size_key)
        print(f"\n### {'host to device' if d == 'up' else 'device to host'}: GB/s (ratio to the plain copy)\n")
        extra = ["paired speedup"] if any(k[0] == d for k in speedups) else []
        print("| size | " + " | ".join([c[1] for c in cols] + extra) + " |")
        print("|---" * (len(cols) + len(extra) + 1) + "|")
        for s in sizes:
            base = rates.get((cols[0][0], s))
            row = [s, f"{base:.2f}" if base else "-"]
            for bench, _ in cols[1:]:
                r = rates.get((bench, s))
                if r is None:
                    row.append("")
                elif base:
                    row.append(f"{r:.2f} ({r / base:.2f}x)")
                else:
                    row.append(f"{r:.2f}")
            if extra:
                sp = speedups.get((d, s))
                row.append(f"{sp:.2f}x" if sp else "")
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main(sys.argv[1])

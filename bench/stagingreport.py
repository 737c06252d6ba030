"""Tables of the staging benchmarks against the plain copy of the same run.

usage: python3 stagingreport.py GO_BENCH_OUTPUT > staging.md

Reads `go test -bench` output holding BenchmarkCopyFromHost/CopyToHost (the
plain copy), BenchmarkUpload/Download, UploadWith/DownloadInto and
Upload/DownloadRegistered, and prints GB/s with the ratio to the plain copy
(above 1: faster than the plain copy).
"""
import re
import sys

COLUMNS = {
    "up": [("CopyFromHost", "plain CopyFromHost"), ("Upload", "Upload"),
           ("UploadWith", "UploadWith"), ("UploadRegistered", "Upload, registered slice")],
    "down": [("CopyToHost", "plain CopyToHost"), ("Download", "Download"),
             ("DownloadInto", "DownloadInto"), ("DownloadRegistered", "Download, registered slice")],
}
pat = re.compile(r"^Benchmark(\w+)/(\S+?)(-\d+)?\s+\d+\s+([\d.]+) ns/op\s+([\d.]+) MB/s")


def size_key(name):
    m = re.match(r"([\d.]+)(B|KiB|MiB|GiB)$", name)
    mult = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]
    return float(m.group(1)) * mult


def main(path):
    rates = {}
    for line in open(path):
        m = pat.match(line)
        if m:
            rates[(m.group(1), m.group(2))] = float(m.group(5)) / 1000  # GB/s
    for d, cols in COLUMNS.items():
        sizes = sorted({s for (b, s) in rates if b == cols[1][0]}, key=size_key)
        print(f"\n### {'host to device' if d == 'up' else 'device to host'}: GB/s (ratio to the plain copy)\n")
        print("| size | " + " | ".join(c[1] for c in cols) + " |")
        print("|---" * (len(cols) + 1) + "|")
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
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main(sys.argv[1])

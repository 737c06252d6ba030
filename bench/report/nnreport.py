"""Table of issue 52's layer benchmarks: package nn (BenchmarkLayers'
us/op) beside PyTorch (bench/pyref/nn_peers.py's JSON lines), case by
case.

usage: python3 nnreport.py GO_OUT PEERS_JSON > nn.md

A case's Go figure is the median over the file's lines for it (the
-test.count rounds). The ratio is PyTorch's µs over gocuda's (above 1:
gocuda is faster); the table is sorted worst ratio first, then the cases
PyTorch did not run.
"""
import json
import re
import statistics
import sys

GO_LINE = re.compile(r"^BenchmarkLayers/([^/\s]+)/([^/\s]+)/(\S+?)(?:-\d+)?\s+\d+\s.*?([0-9.]+(?:e[-+]?\d+)?) us/op")


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: python3 nnreport.py GO_OUT PEERS_JSON > nn.md")
    go = {}
    with open(argv[1]) as f:
        for line in f:
            m = GO_LINE.match(line)
            if m:
                go.setdefault(m.group(1, 2, 3), []).append(float(m.group(4)))
    peer, how, meta = {}, {}, {}
    with open(argv[2]) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            d = json.loads(line)
            if "meta" in d:
                meta = d["meta"]
                continue
            key = (d["op"], d["dtype"], d["shape"])
            peer[key] = d["us"]
            how[key] = d.get("how", "")
    rows = []
    for key, v in go.items():
        us = statistics.median(v)
        p = peer.get(key)
        rows.append((p / us if p else None, key, us, p, how.get(key, "")))
    rows.sort(key=lambda r: (r[0] is None, r[0] or 0))
    print(f"Package nn's layers beside PyTorch ({meta.get('torch', '?')}) on {meta.get('device', '?')}: µs per call, ratio PyTorch/gocuda (above 1: gocuda is faster).\n")
    print("| op | dtype | shape | gocuda µs | PyTorch µs | ratio | PyTorch's call |")
    print("|---|---|---|---:|---:|---:|---|")
    for ratio, (op, dt, shape), us, p, h in rows:
        r = f"{ratio:.2f}x" if ratio else "-"
        ps = f"{p:.1f}" if p else "-"
        print(f"| {op} | {dt} | {shape} | {us:.1f} | {ps} | {r} | {h} |")
    for key in sorted(set(peer) - set(go)):
        print(f"| {key[0]} | {key[1]} | {key[2]} | - | {peer[key]:.1f} | - | {how[key]} |")


if __name__ == "__main__":
    main(sys.argv)

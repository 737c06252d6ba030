"""Table of issue 50's benchmarks (item 8): package nd (BenchmarkND's us/op)
beside PyTorch and CuPy (bench/pyref/nd_peers.py's JSON lines), case by
case, with the issue's goals.

usage: python3 ndreport.py GO_OUT[,GO_OUT...] [PEERS_JSON[,PEERS_JSON...]] > nd.md

A case's figure is the median over the files' lines for it (the Go run's
-test.count rounds). The ratio is the faster peer's µs over gocuda's (above
1: gocuda is faster); the table is sorted worst ratio first, then the cases
no peer ran; the issue's named cases are in bold. Goals: 1.0x the faster
peer, matmul 0.98x; the call_* cases at most 0.7x PyTorch's time (a ratio
to PyTorch of 1.43x); chain_fused and chain1_fused 1.0x PyTorch's
(torch.compile where it ran), and 2.5x gocuda's own chain_unfused and
chain1_unfused respectively, which the summary gives (Fusion, for
relu(a*b + c) * d; Fusion (one input), for relu(x*2 + 1) * 3).
"""
import json
import re
import statistics
import sys

GO_LINE = re.compile(r"^BenchmarkND/([^/\s]+)/([^/\s]+)/(\S+?)(?:-\d+)?\s+\d+\s.*?([0-9.]+(?:e[-+]?\d+)?) us/op")

# The issue's named cases (item 8, and item 5's fusion goal), and the fusion
# goal's one-input chain (chain1_fused), held to the same goal.
NAMED = {
    ("add", "f32", "4096x4096+4096"),
    ("exp_t", "f32", "4096x4096"),
    ("sum_mid", "f32", "64x1024x64"),
    ("softmax_last", "f32", "4096x1024"),
    ("softmax_first", "f32", "4096x1024"),
    ("take", "f32", "1048576x128[1048576]"),
    ("concat0", "f32", "4096x4096+4096x4096"),
    ("concat1", "f32", "4096x4096+4096x4096"),
    ("matmul", "bf16", "32x512x512@32x512x512"),
    ("call_into", "f32", "1024"),
    ("call_alloc", "f32", "1024"),
    ("chain_fused", "f32", "67108864"),
    ("chain1_fused", "f32", "67108864"),
}
CALL_GOAL = 0.7  # gocuda's time over PyTorch's, at most
# chain_unfused's time over chain_fused's (and chain1_*'s), at least. Memory
# traffic bounds it: relu(a*b + c) * d moves 11 array passes unfused (mul 3,
# add 3, relu 2, mul 3) against 5 fused, at most 11/5 = 2.2x; the one-input
# chain relu(x*2 + 1) * 3 moves 8 against 2, at most 8/2 = 4x.
FUSION_GOAL = 2.5
# The fused cases, each with its unfused one and its summary line's title.
FUSED = {"chain_fused": ("chain_unfused", "Fusion"), "chain1_fused": ("chain1_unfused", "Fusion (one input)")}


def goal(op):
    """The least ratio the case must reach and the peer it is against (None:
    the faster)."""
    if op.startswith("call_"):
        return 1 / CALL_GOAL, "torch"
    if op in FUSED:
        return 1.0, "torch"
    if op == "matmul":
        return 0.98, None
    return 1.0, None


def read_go(paths):
    cases = {}
    for path in paths.split(","):
        with open(path) as f:
            for line in f:
                m = GO_LINE.match(line)
                if m:
                    cases.setdefault(m.group(1, 2, 3), []).append(float(m.group(4)))
    return {k: statistics.median(v) for k, v in cases.items()}


def read_peers(paths):
    cases, hows, meta = {}, {}, {}
    for path in paths.split(",") if paths else []:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    d = json.loads(line)
                    if "meta" in d:
                        meta.update(d["meta"])
                        continue
                    key, peer, us = (d["op"], d["dtype"], d["shape"]), d["peer"], float(d["us"])
                except (ValueError, KeyError, TypeError):
                    continue
                cases.setdefault(key, {}).setdefault(peer, []).append(us)
                if d.get("how"):
                    hows.setdefault((peer, key[0]), set()).add(d["how"])
    return {k: {p: statistics.median(v) for p, v in ps.items()} for k, ps in cases.items()}, hows, meta


def us(v):
    if v is None:
        return "-"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 1000 else f"{v:,.0f}"


def x(v):
    return "-" if v is None else f"{v:.2f}x"


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(next(l for l in __doc__.splitlines() if l.startswith("usage")))
    gocuda = read_go(argv[1])
    peers, hows, meta = read_peers(argv[2] if len(argv) == 3 else "")
    rows = []
    for key, g in gocuda.items():
        p = peers.get(key, {})
        torch, cupy = p.get("torch"), p.get("cupy")
        best = min((v for v in (torch, cupy) if v is not None), default=None)
        ratio = best / g if best is not None and g > 0 else None
        least, against = goal(key[0])
        ref = torch if against == "torch" else best
        met = None if ref is None or g <= 0 else ref / g >= least
        rows.append((key, g, torch, cupy, ratio, least, against, met))
    rows.sort(key=lambda r: (r[4] is None, r[4] if r[4] is not None else 0, r[0]))
    if meta:
        print("Peers: " + ", ".join(f"{k} {v}" for k, v in sorted(meta.items())) + ".")
        print()
    print("| case | gocuda µs | PyTorch µs | CuPy µs | ratio | goal | met |")
    print("|---|---|---|---|---|---|---|")
    for (op, dt, shape), g, torch, cupy, ratio, least, against, met in rows:
        name = f"{op}/{dt}/{shape}"
        if (op, dt, shape) in NAMED:
            name = f"**{name}**"
        want = f"≥{least:.2f}x" + (" PyTorch" if against == "torch" else "")
        ok = "-" if met is None else "yes" if met else "**no**"
        print(f"| {name} | {us(g)} | {us(torch)} | {us(cupy)} | {x(ratio)} | {want} | {ok} |")
    print()
    rated = [r for r in rows if r[4] is not None]
    if not rated:
        print(f"{len(rows)} cases, none with a peer's figure.")
    else:
        (op, dt, shape), g, _, _, worst, _, _, _ = rated[0]
        missed = [r for r in rows if r[7] is False]
        missed_named = [r for r in missed if r[0] in NAMED]
        print(f"{len(rated)} cases beside a peer ({len(rows) - len(rated)} without): least {worst:.2f}x ({op}/{dt}/{shape}, "
              f"gocuda {us(g)} µs); {sum(r[4] < 0.9 for r in rated)} below 0.9x, {sum(r[4] < 1.0 for r in rated)} below 1.0x; "
              f"goal missed by {len(missed)} ({len(missed_named)} of the named)"
              + (": " + ", ".join("/".join(r[0]) for r in missed_named) if missed_named else "") + ".")
    # Fusion: each fused chain against gocuda's own unfused one, and PyTorch's.
    fusions = sorted(((list(FUSED).index(k[0]), k), v) for k, v in gocuda.items() if k[0] in FUSED)
    for (_, (op, dt, shape)), fused in fusions:
        unfused_op, title = FUSED[op]
        unfused = gocuda.get((unfused_op, dt, shape))
        torch = peers.get((op, dt, shape), {}).get("torch")
        how = ", ".join(sorted(hows.get(("torch", op), ()))) or "PyTorch"
        line = f"{title}, {shape} {dt}: fused {us(fused)} µs"
        if unfused:
            r = unfused / fused
            line += f", {r:.2f}x gocuda's unfused ({us(unfused)} µs; goal {FUSION_GOAL}x: {'met' if r >= FUSION_GOAL else 'missed'})"
        if torch:
            line += f", {torch / fused:.2f}x {how} ({us(torch)} µs)"
        print()
        print(line + ".")
    # Call cost: gocuda's time over PyTorch's eager call.
    for (op, dt, shape), g in sorted(gocuda.items()):
        torch = peers.get((op, dt, shape), {}).get("torch")
        if op.startswith("call_") and torch:
            print()
            print(f"Call cost, {op} {dt} {shape}: gocuda {us(g)} µs, {g / torch:.2f}x PyTorch's {us(torch)} µs "
                  f"(goal at most {CALL_GOAL}x: {'met' if g / torch <= CALL_GOAL else 'missed'}).")
    missing = sorted(set(peers) - set(gocuda))
    if missing:
        print()
        print(f"({len(missing)} peer cases without a gocuda figure, e.g. {'/'.join(missing[0])}.)")
    if hows:
        print()
        print("Calls timed:")
        for name in sorted({peer for peer, _ in hows}):
            print(f"- {name}: " + "; ".join(f"{op} {', '.join(sorted(h))}" for (peer, op), h in sorted(hows.items()) if peer == name) + ".")


if __name__ == "__main__":
    main(sys.argv)

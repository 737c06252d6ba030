"""Issue 52's attention benchmarks (item 4) in PyTorch: the cases of
nn/attention_bench_test.go's BenchmarkAttention, named op/dtype/shape as
there (shape BxHxSxD), timed the same way: inputs random in [-1, 1), a
warm-up of 3 calls, then a loop of N calls and one synchronize, timed by
CUDA events recorded before and after the loop, the median of 3 repeats,
N chosen so that a repeat takes about 50 ms (at most MAX_CALLS).

Each case is torch.nn.functional.scaled_dot_product_attention on q, k, v
[B, H, S, D] (decode: q [B, H, 1, D] over k, v [B, H, S, D], without a
mask, which for one query is the causal mask aligned to the end, as
gocuda's), once under each backend that runs it:
sdpa_kernel(FLASH_ATTENTION) (the issue's bar: "us"), and the others
(EFFICIENT_ATTENTION, CUDNN_ATTENTION, MATH) and PyTorch's own choice,
the fastest of all being "best_us" with its "best_how".

usage: python3 attention_peers.py > attention-peers.json
       python3 attention_peers.py --list      the cases' names, one a line
       python3 attention_peers.py --report GO_OUT PEERS_JSON > attention.md
Prints a JSON line per case: {"peer": "torch", "op": ..., "dtype": ...,
"shape": ..., "us": ..., "how": ..., "best_us": ..., "best_how": ...,
"tflops": ...} after a line {"meta": {...}}. GOCUDA_ATTN_OPS (a comma list
of ops) selects a subset, as for the Go benchmark. --report joins the Go
benchmark's output (the median of its -test.count rounds) with these
lines: a row per case, the ratio PyTorch's µs over gocuda's (above 1:
gocuda is faster), against FlashAttention and against PyTorch's fastest.
"""
import json
import os
import re
import statistics
import sys
import time

TARGET_S = 0.05
MAX_CALLS = 2000
REPEATS = 3
GOAL = 0.9  # gocuda's speed over FlashAttention's, at least

# BenchmarkAttention's attnBenchCases, in its order: (op, dtype, B, H, S, D).
CASES = [
    ("sdpa_causal", "bf16", 8, 12, 512, 64),
    ("sdpa_causal", "bf16", 8, 12, 1024, 64),
    ("sdpa_causal", "bf16", 8, 12, 4096, 64),
    ("sdpa_causal", "bf16", 8, 16, 512, 128),
    ("sdpa_causal", "bf16", 8, 16, 1024, 128),
    ("sdpa_causal", "bf16", 8, 16, 4096, 128),
    ("sdpa", "bf16", 8, 12, 1024, 64),
    ("sdpa", "bf16", 8, 16, 1024, 128),
    ("sdpa", "bf16", 8, 16, 4096, 128),
    ("sdpa_causal", "f16", 8, 16, 1024, 128),
    ("sdpa_causal", "f32", 8, 12, 1024, 64),
    ("decode", "bf16", 8, 12, 1024, 64),
    ("decode", "bf16", 8, 16, 4096, 128),
]


def flops(op, b, h, s, d):
    f = 4.0 * b * h * s * s * d
    if op == "sdpa_causal":
        f /= 2
    if op == "decode":
        f /= s
    return f


def loop(torch, call, calls, events=False):
    if events:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    if events:
        end.record()
    torch.cuda.synchronize()
    if events:
        return start.elapsed_time(end) / 1e3
    return time.perf_counter() - t0


def time_one(torch, call):
    """µs per call: warmed up, then the median of REPEATS loops of N calls
    and one synchronize, by CUDA events."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    per = loop(torch, call, 1)
    n = max(1, min(MAX_CALLS, int(TARGET_S / max(per, 1e-7))))
    return statistics.median(loop(torch, call, n, True) / n for _ in range(REPEATS)) * 1e6


def calls(torch, F, op, dt, b, h, s, d):
    """The case's call and [(how, backend)]: each backend (entered once
    around the timing, not at every call), and PyTorch's choice (None)."""
    from torch.nn.attention import SDPBackend

    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dt]

    def rand(*shape):
        return torch.rand(*shape, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dtype)

    sq = 1 if op == "decode" else s
    q, k, v = rand(b, h, sq, d), rand(b, h, s, d), rand(b, h, s, d)
    causal = op == "sdpa_causal"

    def call():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    backends = [("flash", SDPBackend.FLASH_ATTENTION)]
    for name in ("EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH"):
        backend = getattr(SDPBackend, name, None)
        if backend is not None:
            backends.append((name.lower(), backend))
    backends.append(("auto", None))
    return call, backends


def run(argv):
    ops = None
    if os.environ.get("GOCUDA_ATTN_OPS"):
        ops = {o.strip() for o in os.environ["GOCUDA_ATTN_OPS"].split(",")}
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel
    meta = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    print(json.dumps({"meta": meta}), flush=True)
    for op, dt, b, h, s, d in CASES:
        if ops is not None and op not in ops:
            continue
        shape = f"{b}x{h}x{s}x{d}"
        times, failed = {}, []
        call = None
        try:
            call, backends = calls(torch, F, op, dt, b, h, s, d)
            for how, backend in backends:
                if how == "math" and s > 1024 and op != "decode":
                    continue  # the S x S matrix: gigabytes, and no contender
                try:
                    if backend is None:
                        times[how] = time_one(torch, call)
                    else:
                        with sdpa_kernel(backend):
                            times[how] = time_one(torch, call)
                except Exception as e:
                    failed.append(f"{how}: {type(e).__name__}")
        finally:
            call = None
            torch.cuda.empty_cache()
        if not times:
            print(f"torch {op}/{dt}/{shape}: nothing ran ({'; '.join(failed)})", file=sys.stderr)
            continue
        best_how = min(times, key=times.get)
        line = {"peer": "torch", "op": op, "dtype": dt, "shape": shape,
                "us": round(times["flash"], 3) if "flash" in times else None, "how": "flash" if "flash" in times else "",
                "best_us": round(times[best_how], 3), "best_how": best_how,
                "tflops": round(flops(op, b, h, s, d) / times[best_how] / 1e6, 1),
                "all": {k: round(v, 3) for k, v in times.items()}}
        if failed:
            line["failed"] = failed
        print(json.dumps(line), flush=True)


GO_LINE = re.compile(r"^BenchmarkAttention/([^/\s]+)/([^/\s]+)/(\S+?)(?:-\d+)?\s+\d+\s+(.*)$")


def report(go_out, peers_json):
    go, tf = {}, {}
    with open(go_out) as f:
        for line in f:
            m = GO_LINE.match(line)
            if not m:
                continue
            metrics = dict((unit, float(v)) for v, unit in re.findall(r"([0-9.]+(?:e[-+]?\d+)?) (\S+)", m.group(4)))
            if "us/op" in metrics:
                key = m.group(1, 2, 3)
                go.setdefault(key, []).append(metrics["us/op"])
                tf.setdefault(key, []).append(metrics.get("TFLOP/s", 0))
    peer, meta = {}, {}
    with open(peers_json) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            d = json.loads(line)
            if "meta" in d:
                meta = d["meta"]
                continue
            peer[(d["op"], d["dtype"], d["shape"])] = d
    print(f"Attention beside PyTorch {meta.get('torch', '?')} on {meta.get('device', '?')}: µs a call (the median of the Go run's rounds), "
          f"ratio PyTorch's µs over gocuda's (above 1: gocuda is faster); the goal is {GOAL}x FlashAttention.\n")
    print("| op | dtype | shape | gocuda µs | TFLOP/s | flash µs | vs flash | PyTorch's best µs | vs best | best |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    for key in sorted(go, key=lambda k: (k[0].split("@")[0], k[1], k[2], k[0])):
        us = statistics.median(go[key])
        p = peer.get((key[0].split("@")[0], key[1], key[2]), {})
        fl, best = p.get("us"), p.get("best_us")
        vs = f"{fl / us:.2f}x" if fl else "-"
        if fl and fl / us < GOAL:
            vs = f"**{vs}**"
        print(f"| {key[0]} | {key[1]} | {key[2]} | {us:.1f} | {statistics.median(tf[key]):.0f} | "
              f"{fl if fl else '-'} | {vs} | {best if best else '-'} | {f'{best / us:.2f}x' if best else '-'} | {p.get('best_how', '')} |")


def main(argv):
    if argv[1:] == ["--list"]:
        for op, dt, b, h, s, d in CASES:
            print(f"{op}/{dt}/{b}x{h}x{s}x{d}")
        return
    if len(argv) == 4 and argv[1] == "--report":
        report(argv[2], argv[3])
        return
    if argv[1:]:
        sys.exit(next(l for l in __doc__.splitlines() if l.strip().startswith("usage")))
    run(argv)


if __name__ == "__main__":
    main(sys.argv)

"""Issue 52's convolution benchmarks (item 4) in PyTorch: ResNet-50's
convolution layers at batch 32, forward (torch.nn.functional.conv2d) and
each gradient alone (aten's convolution_backward with one output asked
for: the input's, dgrad, or the filters', wgrad), with
torch.backends.cudnn.benchmark on (cuDNN times its algorithms once per
shape, as package cudnn's Handle.SetBenchmark), named and timed as
cudnn/bench_test.go's BenchmarkConv: one call to warm up (where cuDNN
times), then a loop of N calls between two CUDA events and one
synchronize, the median of 3 repeats, N chosen so that a repeat takes
about 50 ms (at most MAX_CALLS, at least 1). Cases: fwd/bf16/NHWC (the
tensors channels_last), fwd/bf16/NCHW, fwd/f32/NCHW (TF32 allowed,
PyTorch's default for cuDNN), dgrad/bf16/NHWC, wgrad/bf16/NHWC, each of
the shapes below; the output is allocated by each call, from PyTorch's
caching allocator.

usage: python3 conv_peers.py > conv-peers.json
       python3 conv_peers.py --report conv-go.txt conv-peers.json > conv.md
Prints a JSON line per case: {"peer": "torch", "case":
"fwd/bf16/NHWC/c64_h56_k64_r3_s1", "us": ..., "how": ...} after a line
{"meta": {...}} naming the versions and the device. GOCUDA_CONV_CASES (a
comma list of name prefixes) selects a subset, as on the Go side.
--report joins BenchmarkConv's output (any number of -test.count rounds:
the median of each case's us/op) with these lines as a markdown table, the
worst ratio first: speed is PyTorch's time over gocuda's (1.02: gocuda
takes 2% less time); the issue's goal is >= 0.98.
"""
import json
import os
import re
import statistics
import sys

TARGET_S = 0.05
MAX_CALLS = 2000
REPEATS = 3
BATCH = 32

# cudnn/bench_test.go's resnet50, in its order: input channels, size,
# filters, filter size, stride, padding.
RESNET50 = [
    (3, 224, 64, 7, 2, 3),
    (64, 56, 64, 1, 1, 0), (64, 56, 64, 3, 1, 1), (64, 56, 256, 1, 1, 0), (256, 56, 64, 1, 1, 0),
    (256, 56, 128, 1, 1, 0), (128, 56, 128, 3, 2, 1), (128, 28, 512, 1, 1, 0), (256, 56, 512, 1, 2, 0), (512, 28, 128, 1, 1, 0), (128, 28, 128, 3, 1, 1),
    (512, 28, 256, 1, 1, 0), (256, 28, 256, 3, 2, 1), (256, 14, 1024, 1, 1, 0), (512, 28, 1024, 1, 2, 0), (1024, 14, 256, 1, 1, 0), (256, 14, 256, 3, 1, 1),
    (1024, 14, 512, 1, 1, 0), (512, 14, 512, 3, 2, 1), (512, 7, 2048, 1, 1, 0), (1024, 14, 2048, 1, 2, 0), (2048, 7, 512, 1, 1, 0), (512, 7, 512, 3, 1, 1),
]

GROUPS = ["fwd/bf16/NHWC", "fwd/bf16/NCHW", "fwd/f32/NCHW", "dgrad/bf16/NHWC", "wgrad/bf16/NHWC"]


def name(c, hw, k, r, stride, pad):
    return "c%d_h%d_k%d_r%d_s%d" % (c, hw, k, r, stride)


def selected(case):
    want = os.environ.get("GOCUDA_CONV_CASES", "")
    return not want or any(case.startswith(p) for p in want.split(","))


def pattern(torch, n, dtype):
    """n values in [-1, 1), the Go side's filled pattern."""
    period = 4093
    i = torch.arange(period, dtype=torch.int64)
    pat = ((i * 2654435761) % period).double() / period * 2 - 1
    reps = (n + period - 1) // period
    return pat.repeat(reps)[:n].to(dtype).cuda()


def timed(torch, call):
    """The median over REPEATS of the µs a call takes in a loop."""
    import time
    call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t0, 1e-6)
    n = max(1, min(MAX_CALLS, int(TARGET_S / one)))
    out = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            call()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1e3 / n)
    return statistics.median(out)


def run():
    import torch
    import torch.nn.functional as F
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = True
    meta = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name()}
    print(json.dumps({"meta": meta}), flush=True)
    for group in GROUPS:
        pass_, typ, layout = group.split("/")
        dtype = torch.bfloat16 if typ == "bf16" else torch.float32
        fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
        for shape in RESNET50:
            case = group + "/" + name(*shape)
            if not selected(case):
                continue
            c, hw, k, r, stride, pad = shape
            try:
                x = pattern(torch, BATCH * c * hw * hw, dtype).view(BATCH, c, hw, hw).contiguous(memory_format=fmt)
                w = pattern(torch, k * c * r * r, dtype).view(k, c, r, r).contiguous(memory_format=fmt)
                with torch.no_grad():
                    if pass_ == "fwd":
                        call, how = (lambda: F.conv2d(x, w, stride=stride, padding=pad)), "F.conv2d"
                    else:
                        # One gradient of aten's convolution backward: the
                        # input's (dgrad) or the filters' (wgrad), from dy.
                        dy = F.conv2d(x, w, stride=stride, padding=pad)
                        mask = [pass_ == "dgrad", pass_ == "wgrad", False]
                        call = (lambda: torch.ops.aten.convolution_backward(
                            dy, x, w, None, [stride, stride], [pad, pad], [1, 1], False, [0, 0], 1, mask))
                        how = "aten.convolution_backward %s" % pass_
                    us = timed(torch, call)
                print(json.dumps({"peer": "torch", "case": case, "us": us, "how": "%s, cudnn.benchmark, %s" % (how, layout)}), flush=True)
                del x, w
            except Exception as e:  # noqa: BLE001 - a case that fails is reported, the others run
                print("%s: %s" % (case, e), file=sys.stderr)


LINE = re.compile(r"^BenchmarkConv/(\S+?)(?:-\d+)?\s+\d+\s+.*?([\d.]+) us/op")


def report(go_path, peers_path):
    go = {}
    for line in open(go_path):
        m = LINE.match(line)
        if m:
            go.setdefault(m.group(1), []).append(float(m.group(2)))
    peers, meta = {}, {}
    for line in open(peers_path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if "meta" in r:
            meta = r["meta"]
            continue
        peers[r["case"]] = r["us"]
    rows = []
    for case in sorted(set(go) | set(peers)):
        g = statistics.median(go[case]) if case in go else None
        p = peers.get(case)
        speed = p / g if g and p else None
        rows.append((speed if speed is not None else float("inf"), case, g, p, speed))
    rows.sort()
    f = lambda v: "—" if v is None else ("%.1f" % v if v >= 10 else "%.2f" % v)
    print("Device: %s; %s" % (meta.get("device", "?"), ", ".join("%s %s" % (k, v) for k, v in meta.items() if k != "device")))
    print()
    print("| case | gocuda µs | PyTorch µs | speed vs PyTorch |")
    print("|---|---:|---:|---:|")
    speeds = []
    for _, case, g, p, speed in rows:
        if speed is not None:
            speeds.append(speed)
        mark = "" if speed is None or speed >= 0.98 else " (below 0.98)"
        print("| %s | %s | %s | %s%s |" % (case, f(g), f(p), "—" if speed is None else "%.2fx" % speed, mark))
    if speeds:
        print()
        print("geometric mean of the speeds: %.3fx over %d cases; worst %.2fx" % (statistics.geometric_mean(speeds), len(speeds), min(speeds)))


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--report":
        report(sys.argv[2], sys.argv[3])
    else:
        run()

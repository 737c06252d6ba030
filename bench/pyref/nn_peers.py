"""Issue 52's layer benchmarks in PyTorch: the cases of
nn/layer_bench_test.go's BenchmarkLayers, named op/dtype/shape as there,
timed the same way: inputs random in [-1, 1), one call to warm up, then a
loop of N calls and one synchronize, timed by CUDA events recorded before
and after the loop, the median of 3 repeats, N chosen so that a repeat
takes about 20 ms (at most MAX_CALLS). PyTorch's eager calls, the fastest
of its forms of an op, out= where PyTorch has one (the Go side calls the
Into form there):

  layernorm        F.layer_norm(x, (768,), w, b, 1e-5)
  layernorm_bwd    torch.autograd.grad of it (x, w, b), the forward not timed
  rmsnorm          F.rms_norm(x, (768,), w, 1e-5)
  rmsnorm_bwd      torch.autograd.grad of it (x, w)
  add_layernorm    torch.add(x, r, out=h) then F.layer_norm(h, ...): a
                   residual add and the norm after it
  gelu, gelu_tanh  F.gelu(x), F.gelu(x, approximate='tanh')
  silu             F.silu(x)
  softmax_causal   torch.softmax(x*scale masked_fill'ed by a causal mask, -1),
                   the mask made once (as an attention's is), and
                   also the fused form where PyTorch has one
  cross_entropy    F.cross_entropy(logits, targets)
  cross_entropy_bwd torch.autograd.grad of it (the logits)

The environment selects a subset as for the Go benchmark: GOCUDA_NN_OPS (a
comma list of ops).

usage: python3 nn_peers.py > nn-peers.json
       python3 nn_peers.py --list      the cases' names, one a line
Prints a JSON line per case: {"peer": "torch", "op": ..., "dtype": ...,
"shape": ..., "us": ..., "how": ...} after a line {"meta": {...}}.
"""
import json
import os
import statistics
import sys
import time

TARGET_S = 0.02
MAX_CALLS = 2000
REPEATS = 3

ROWS, WIDTH, HIDDEN, VOCAB = 8 * 1024, 768, 4 * 768, 50257

# The table of BenchmarkLayers' cases, in its order: (op, dtype, rows, cols).
CASES = []
for _dt in ("bf16", "f32"):
    CASES += [
        ("layernorm", _dt, ROWS, WIDTH),
        ("layernorm_bwd", _dt, ROWS, WIDTH),
        ("rmsnorm", _dt, ROWS, WIDTH),
        ("rmsnorm_bwd", _dt, ROWS, WIDTH),
        ("add_layernorm", _dt, ROWS, WIDTH),
        ("gelu", _dt, ROWS, HIDDEN),
        ("gelu_tanh", _dt, ROWS, HIDDEN),
        ("silu", _dt, ROWS, HIDDEN),
        ("softmax_causal", _dt, 8 * 12 * 1024, 1024),
        ("cross_entropy", _dt, ROWS, VOCAB),
        ("cross_entropy_bwd", _dt, ROWS, VOCAB),
    ]


def cases(torch, F, op, dt, rows, cols):
    """The calls to time, [(how, call)]: PyTorch's forms of the op, the
    fastest of those that run is the peer's figure."""
    dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[dt]
    dev = "cuda"

    def rand(*shape, grad=False):
        t = torch.rand(*shape, device=dev, dtype=torch.float32).mul_(2).sub_(1).to(dtype)
        return t.requires_grad_(grad)

    def rms_norm(x, w):
        if hasattr(F, "rms_norm"):
            return F.rms_norm(x, (cols,), w, 1e-5)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w  # before PyTorch 2.4

    if op in ("layernorm", "rmsnorm"):
        x, w, b = rand(rows, cols), rand(cols), rand(cols)
        if op == "layernorm":
            return [("F.layer_norm", lambda: F.layer_norm(x, (cols,), w, b, 1e-5))]
        return [("F.rms_norm", lambda: rms_norm(x, w))]
    if op == "add_layernorm":
        x, r, w, b = rand(rows, cols), rand(rows, cols), rand(cols), rand(cols)
        h = torch.empty_like(x)

        def add_norm():
            torch.add(x, r, out=h)
            return F.layer_norm(h, (cols,), w, b, 1e-5)

        return [("torch.add(out=); F.layer_norm", add_norm)]
    if op in ("layernorm_bwd", "rmsnorm_bwd"):
        x, w, b = rand(rows, cols, grad=True), rand(cols, grad=True), rand(cols, grad=True)
        dy = rand(rows, cols)
        if op == "layernorm_bwd":
            y = F.layer_norm(x, (cols,), w, b, 1e-5)
            params = (x, w, b)
        else:
            y = rms_norm(x, w)
            params = (x, w)
        return [("torch.autograd.grad", lambda: torch.autograd.grad(y, params, dy, retain_graph=True))]
    if op in ("gelu", "gelu_tanh", "silu"):
        x = rand(rows, cols)
        y = torch.empty_like(x)
        if op == "silu":
            return [("F.silu(out=)", lambda: torch.ops.aten.silu.out(x, out=y)), ("F.silu", lambda: F.silu(x))]
        approx = "tanh" if op == "gelu_tanh" else "none"
        return [("F.gelu(out=)", lambda: torch.ops.aten.gelu.out(x, approximate=approx, out=y)),
                ("F.gelu", lambda: F.gelu(x, approximate=approx))]
    if op == "softmax_causal":
        x = rand(rows // cols, cols, cols)
        mask = torch.ones(cols, cols, device=dev, dtype=torch.bool).triu_(1)

        def masked():
            return torch.softmax((x * 0.125).masked_fill_(mask, float("-inf")), -1)

        def fused():
            # aten's _masked_softmax, what PyTorch's transformer layers
            # call on the GPU: mask_type 0, a src_mask [L, L] over a 4-d input
            return torch._masked_softmax((x * 0.125).view(1, -1, cols, cols), mask, -1, 0)

        def fused_generic():
            # mask_type 2: a mask of the input's shape
            return torch._masked_softmax(x * 0.125, mask.expand_as(x), -1, 2)

        return [("softmax(masked_fill(x*scale))", masked), ("torch._masked_softmax", fused),
                ("torch._masked_softmax generic", fused_generic)]
    if op == "cross_entropy":
        x = rand(rows, cols)
        t = (torch.arange(rows, device=dev, dtype=torch.int64) * 7919) % cols
        return [("F.cross_entropy", lambda: F.cross_entropy(x, t))]
    if op == "cross_entropy_bwd":
        x = rand(rows, cols, grad=True)
        t = (torch.arange(rows, device=dev, dtype=torch.int64) * 7919) % cols
        loss = F.cross_entropy(x, t)
        return [("torch.autograd.grad", lambda: torch.autograd.grad(loss, (x,), retain_graph=True))]
    raise ValueError(op)


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
    call()
    torch.cuda.synchronize()
    per = loop(torch, call, 1)
    k = 1
    while per * k < TARGET_S / 10 and k < MAX_CALLS:
        k = min(k * 10, MAX_CALLS)
        per = loop(torch, call, k) / k
    n = max(1, min(MAX_CALLS, int(TARGET_S / per)))
    return statistics.median(loop(torch, call, n, True) / n for _ in range(REPEATS)) * 1e6


def time_us(torch, calls):
    """The fastest of the calls that run (PyTorch's best form), and its
    how; the calls that fail are named in it."""
    best, failed = None, []
    for how, call in calls:
        try:
            us = time_one(torch, call)
        except Exception as e:
            failed.append(f"{how}: {type(e).__name__}")
            continue
        if best is None or us < best[0]:
            best = (us, how)
    if best is None:
        raise RuntimeError("; ".join(failed))
    us, how = best
    if failed:
        how = f"{how} ({'; '.join(failed)})"
    return us, how


def main(argv):
    if argv[1:] == ["--list"]:
        for op, dt, rows, cols in CASES:
            print(f"{op}/{dt}/{rows}x{cols}")
        return
    if argv[1:]:
        sys.exit(next(l for l in __doc__.splitlines() if l.strip().startswith("usage")))
    ops = None
    if os.environ.get("GOCUDA_NN_OPS"):
        ops = {o.strip() for o in os.environ["GOCUDA_NN_OPS"].split(",")}
    import torch
    import torch.nn.functional as F
    meta = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    print(json.dumps({"meta": meta}), flush=True)
    for op, dt, rows, cols in CASES:
        if ops is not None and op not in ops:
            continue
        shape = f"{rows}x{cols}"
        try:
            calls = cases(torch, F, op, dt, rows, cols)
            us, how = time_us(torch, calls)
        except Exception as e:
            print(f"torch {op}/{dt}/{shape}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        finally:
            calls = None
            torch.cuda.empty_cache()
        print(json.dumps({"peer": "torch", "op": op, "dtype": dt, "shape": shape, "us": round(us, 3), "how": how}), flush=True)


if __name__ == "__main__":
    main(sys.argv)

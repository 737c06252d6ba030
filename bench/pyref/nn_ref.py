"""PyTorch's outputs of issue 52's layers on fixed inputs, for package nn's
TestLayersAgainstPyTorch (nn/torchref_test.go): each case's inputs (made
here from a seeded generator, rounded to the case's dtype) and PyTorch's
outputs on the GPU, in the dtype, as a JSON file the Go test reads where
GOCUDA_NN_TORCH_REF names it (scripts/gpu-nn.sh writes and passes it).

  layernorm      F.layer_norm, and its gradients (x, weight, bias) by autograd
  rmsnorm        F.rms_norm (or its formula where PyTorch has none), gradients
  gelu, gelu_tanh, silu, swiglu   F.gelu (both), F.silu, F.silu(a) * b
  softmax        softmax(x*scale) with a lower-right causal mask and lengths
                 per batch row (a row with no key: zeros, as package nn)
  cross_entropy  F.cross_entropy with ignore_index=-100, its gradient
  embedding      F.embedding
  rope           Hugging Face's rotate_half rotary embedding, [B, S, H, D]
                 and [B, H, S, D], at an offset

usage: python3 nn_ref.py OUT.json
NN_REF_DEVICE=cpu runs PyTorch on the CPU (a check of the script where
there is no GPU); a case PyTorch cannot run there is left out, named on
stderr. NN_REF_SMALL=1 writes the small cases only, with 9 significant
digits: nn/testdata/torch_ref.json, which the tests read where
GOCUDA_NN_TORCH_REF names no file, was made so (on the CPU).
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def main(argv):
    if len(argv) != 2:
        sys.exit("usage: python3 nn_ref.py OUT.json")
    dev = os.environ.get("NN_REF_DEVICE", "cuda")
    gen = torch.Generator(device="cpu").manual_seed(52)
    cases = []

    def rand(dt, *shape, lo=-1.0, hi=1.0):
        t = torch.rand(*shape, generator=gen, dtype=torch.float32) * (hi - lo) + lo
        return t.to(DTYPES[dt]).to(dev)

    small = os.environ.get("NN_REF_SMALL") == "1"

    def flat(t):
        v = [float(v) for v in t.detach().float().reshape(-1).cpu()]
        return [float(f"{x:.9g}") for x in v] if small else v

    def add(op, dt, shape, inputs, outputs, **params):
        if any(not torch.isfinite(v.float()).all() and k != "t" for k, v in outputs.items()):
            print(f"nn_ref.py: {op} {dt} {list(shape)}: outputs not finite", file=sys.stderr)
        cases.append({"op": op, "dtype": dt, "shape": list(shape), "params": params,
                      "inputs": {k: flat(v) for k, v in inputs.items()},
                      "outputs": {k: flat(v) for k, v in outputs.items()}})

    def attempt(what, fn):
        try:
            fn()
        except Exception as e:  # PyTorch's limit (a dtype on the CPU): left out
            print(f"nn_ref.py: {what}: {type(e).__name__}: {e}", file=sys.stderr)

    def norms(dt, rows, cols):
        x, w, b = rand(dt, rows, cols, lo=-3, hi=5), rand(dt, cols, lo=0.5, hi=1.5), rand(dt, cols)
        dy = rand(dt, rows, cols)
        for t in (x, w, b):
            t.requires_grad_(True)
        y = F.layer_norm(x, (cols,), w, b, 1e-5)
        dx, dw, db = torch.autograd.grad(y, (x, w, b), dy)
        add("layernorm", dt, (rows, cols), {"x": x, "w": w, "b": b, "dy": dy}, {"y": y, "dx": dx, "dw": dw, "db": db}, eps=1e-5)
        if hasattr(F, "rms_norm"):
            y = F.rms_norm(x, (cols,), w, 1e-5)
        else:
            xf = x.float()
            y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * w.float()).to(x.dtype)
        dx, dw = torch.autograd.grad(y, (x, w), dy)
        add("rmsnorm", dt, (rows, cols), {"x": x, "w": w, "dy": dy}, {"y": y, "dx": dx, "dw": dw}, eps=1e-5)

    def activations(dt):
        n = 200 if small else 1000
        x, g = rand(dt, n, lo=-6, hi=6), rand(dt, n, lo=-2, hi=2)
        add("gelu", dt, (n,), {"x": x}, {"y": F.gelu(x)})
        add("gelu_tanh", dt, (n,), {"x": x}, {"y": F.gelu(x, approximate="tanh")})
        add("silu", dt, (n,), {"x": x}, {"y": F.silu(x)})
        add("swiglu", dt, (n,), {"x": x, "b": g}, {"y": F.silu(x) * g})

    def softmax(dt, q, k, causal, lengths):
        x = rand(dt, 2, q, k, lo=-4, hi=4)
        keep = torch.ones(2, q, k, dtype=torch.bool, device=dev)
        if causal:
            keep &= torch.ones(q, k, dtype=torch.bool, device=dev).tril(diagonal=k - q)
        if lengths is not None:
            keep &= (torch.arange(k, device=dev)[None, :] < torch.tensor(lengths, device=dev)[:, None])[:, None, :]
        y = torch.softmax((x.float() * 0.7).masked_fill(~keep, float("-inf")), -1).nan_to_num(0.0).to(x.dtype)
        inputs = {"x": x}
        if lengths is not None:
            inputs["lengths"] = torch.tensor(lengths)
        add("softmax", dt, (2, q, k), inputs, {"y": y}, scale=0.7, causal=causal)

    def cross_entropy(dt, n, v):
        x = rand(dt, n, v, lo=-5, hi=5).requires_grad_(True)
        t = torch.randint(0, v, (n,), generator=gen).to(dev)
        t[1] = -100
        loss = F.cross_entropy(x, t, ignore_index=-100)
        (dx,) = torch.autograd.grad(loss, (x,))
        add("cross_entropy", dt, (n, v), {"x": x, "t": t}, {"loss": loss, "dx": dx})

    def embedding(dt):
        table = rand(dt, 11, 40)
        ids = torch.tensor([3, 0, 10, 10, 5], device=dev)
        add("embedding", dt, (11, 40), {"table": table, "ids": ids}, {"y": F.embedding(ids, table)})

    def rope(dt, shape, heads_first, offset):
        x = rand(dt, *shape, lo=-2, hi=2)
        d = shape[-1]
        s = shape[-2] if heads_first else shape[-3]
        inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.int64, device=dev).float() / d))
        freqs = torch.outer(torch.arange(offset, offset + s, device=dev).float(), inv)
        emb = torch.cat((freqs, freqs), -1)
        cos, sin = emb.cos(), emb.sin()
        if not heads_first:
            cos, sin = cos[:, None, :], sin[:, None, :]
        xf = x.float()
        rot = torch.cat((-xf[..., d // 2:], xf[..., : d // 2]), -1)
        y = (xf * cos + rot * sin).to(x.dtype)
        add("rope", dt, shape, {"x": x}, {"y": y}, offset=offset, heads_first=heads_first)

    for dt in DTYPES:
        for rows, cols in ((5, 33), (2, 64)) if small else ((5, 33), (3, 1000), (4, 768)):
            attempt(f"norms {dt} {rows}x{cols}", lambda: norms(dt, rows, cols))
        attempt(f"activations {dt}", lambda: activations(dt))
        for q, k, causal, lengths in ((5, 7, True, None), (4, 33, False, [3, 0]), (7, 7, True, [5, 7]), (3, 1024, True, None))[: 3 if small else 4]:
            attempt(f"softmax {dt} {q}x{k}", lambda: softmax(dt, q, k, causal, lengths))
        for n, v in ((7, 33), (3, 300)) if small else ((7, 33), (5, 1000), (3, 50257)):
            attempt(f"cross_entropy {dt} {n}x{v}", lambda: cross_entropy(dt, n, v))
        attempt(f"embedding {dt}", lambda: embedding(dt))
        for shape, heads_first, offset in (((2, 5, 3, 8), False, 3), ((1, 2, 5, 32), True, 17)) if small else (((2, 5, 3, 8), False, 3), ((2, 3, 5, 64), True, 17), ((1, 9, 2, 128), False, 100)):
            attempt(f"rope {dt} {shape}", lambda: rope(dt, shape, heads_first, offset))
    meta = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0) if dev == "cuda" else dev}
    with open(argv[1], "w") as f:
        json.dump({"meta": meta, "cases": cases}, f, separators=(",", ":"))


if __name__ == "__main__":
    main(sys.argv)

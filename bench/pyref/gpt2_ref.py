"""GPT-2 small in PyTorch, for examples/gpt2 (issue 52, items 3 and 4).

Writes, under OUT:
  model.safetensors  a GPT-2-small-shaped model (12 layers, 12 heads, 768
                     wide, vocabulary 50257, context 1024) with random
                     weights (seeded; std 0.02, the residual projections
                     0.02/sqrt(2*layers) as GPT-2's initialisation), float32,
                     under Hugging Face's GPT-2 tensor names (wte.weight,
                     h.0.attn.c_attn.weight of [768, 2304] as its Conv1D:
                     y = x @ W + b, ...; the lm head is wte, tied).
  refs.safetensors   tokens (I64 [B, T]), PyTorch's logits of them in
                     float32 (logits_f32, F32 [B, T, V]), the top-1 token
                     of each position in bfloat16 (top1_bf16, I64 [B, T]),
                     and greedy generation in float32 with the key/value
                     cache: gen_prompt (I64 [B, P]) and gen_f32 (I64 [B, N],
                     the new tokens).
Then (unless --no-bench) benchmarks PyTorch eager in bfloat16, printing JSON
lines that scripts/gpu-gpt2.sh joins with the Go program's (same keys):
  {"impl": "pytorch-eager", "case": "prefill", "batch": 8, "tokens": 1024, "ms": .., "tokens_per_s": ..}
  {"impl": "pytorch-eager", "case": "decode", "batch": 8, "tokens": 256, "prompt": 64, "ms": .., "tokens_per_s": ..}
prefill: one forward of 8 x 1024 tokens writing the key/value cache and the
logits of every position; decode: 256 greedy steps of one token for each of
8 sequences after a prompt of 64 (the prompt's prefill off the clock), the
next token chosen on the device (no host synchronisation per step). Each is
timed with CUDA events after warm-up runs, the median of the runs.

usage: python gpt2_ref.py OUT [--seed 1] [--no-bench | --bench-only] [--runs 5]
"""
import argparse
import json
import math
import os
import statistics
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

LAYERS, HEADS, WIDTH, VOCAB, CONTEXT = 12, 12, 768, 50257, 1024


class Conv1D(nn.Module):
    """Hugging Face's GPT-2 linear layer: weight [in, out], y = x @ W + b."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.empty(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn, self.c_proj = Conv1D(WIDTH, 3 * WIDTH), Conv1D(WIDTH, WIDTH)

    def forward(self, x, cache, pos):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).view(B, T, 3, HEADS, C // HEADS).permute(2, 0, 3, 1, 4).unbind(0)
        if cache is not None:  # [B, H, CONTEXT, D] each; positions pos..pos+T written
            kc, vc = cache
            kc[:, :, pos:pos + T] = k
            vc[:, :, pos:pos + T] = v
            k, v = kc[:, :, :pos + T], vc[:, :, :pos + T]
        # Causal within the block of new tokens; a token decoded alone sees
        # every cached one (prefill starts at pos 0, so top-left is right).
        y = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc, self.c_proj = Conv1D(WIDTH, 4 * WIDTH), Conv1D(4 * WIDTH, WIDTH)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(WIDTH, eps=1e-5), Attention()
        self.ln_2, self.mlp = nn.LayerNorm(WIDTH, eps=1e-5), MLP()

    def forward(self, x, cache, pos):
        x = x + self.attn(self.ln_1(x), cache, pos)
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """The state dict's names are Hugging Face's GPT2Model's."""

    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, WIDTH), nn.Embedding(CONTEXT, WIDTH)
        self.h = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(WIDTH, eps=1e-5)

    def init(self, seed):
        g = torch.Generator().manual_seed(seed)
        for name, p in self.named_parameters():
            with torch.no_grad():
                if name.endswith("ln_1.weight") or name.endswith("ln_2.weight") or name == "ln_f.weight":
                    p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
                elif name.endswith("c_proj.weight"):
                    p.copy_(0.02 / math.sqrt(2 * LAYERS) * torch.randn(p.shape, generator=g))
                else:  # embeddings, the other weights, every bias
                    p.copy_(0.02 * torch.randn(p.shape, generator=g))
        return self

    def forward(self, idx, caches=None, pos=0):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe.weight[pos:pos + T]
        for i, block in enumerate(self.h):
            x = block(x, None if caches is None else caches[i], pos)
        return self.ln_f(x) @ self.wte.weight.T  # tied lm head


def new_caches(batch, dtype, dev):
    shape = (batch, HEADS, CONTEXT, WIDTH // HEADS)
    return [(torch.empty(shape, dtype=dtype, device=dev), torch.empty(shape, dtype=dtype, device=dev))
            for _ in range(LAYERS)]


@torch.no_grad()
def generate(model, prompt, n, caches):
    """Greedy: prefill the prompt, then n steps of one token; the new tokens."""
    P = prompt.shape[1]
    tok = model(prompt, caches, 0)[:, -1].argmax(-1)
    out = [tok]
    for i in range(n - 1):
        tok = model(tok[:, None], caches, P + i)[:, -1].argmax(-1)
        out.append(tok)
    return torch.stack(out, 1)


def timed(fn, warm, runs):
    """The median milliseconds of fn over runs, each between CUDA events, after warm runs."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


@torch.no_grad()
def bench(model, runs):
    dev = torch.device("cuda")
    m = model.to(torch.bfloat16)
    meta = {"impl": "pytorch-eager", "torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    g = torch.Generator(device=dev).manual_seed(7)
    B, T = 8, 1024
    idx = torch.randint(0, VOCAB, (B, T), device=dev, generator=g)
    caches = new_caches(B, torch.bfloat16, dev)
    ms = timed(lambda: m(idx, caches, 0), 3, runs)
    print(json.dumps(dict(meta, case="prefill", batch=B, tokens=T, ms=round(ms, 4),
                          tokens_per_s=round(B * T / (ms / 1e3), 1))), flush=True)
    del idx
    P, N = 64, 256
    prompt = torch.randint(0, VOCAB, (B, P), device=dev, generator=g)

    def decode():
        tok = first
        for i in range(N):
            tok = m(tok[:, None], caches, P + i)[:, -1].argmax(-1)

    first = m(prompt, caches, 0)[:, -1].argmax(-1)  # the prompt's prefill, off the clock
    ms = timed(decode, 2, runs)
    print(json.dumps(dict(meta, case="decode", batch=B, tokens=N, prompt=P, ms=round(ms, 4),
                          tokens_per_s=round(B * N / (ms / 1e3), 1))), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=4, help="sequences of the compared batch")
    ap.add_argument("--seq", type=int, default=128, help="tokens of each compared sequence")
    ap.add_argument("--gen", type=int, default=32, help="new tokens of the float32 greedy reference")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-bench", action="store_true", help="the files only")
    ap.add_argument("--bench-only", action="store_true", help="the benchmarks only (no files)")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    model = GPT2().init(args.seed).eval()
    if args.bench_only:
        return bench(model.to(dev), args.runs)
    os.makedirs(args.out, exist_ok=True)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, os.path.join(args.out, "model.safetensors"),
              metadata={"format": "pt", "made_by": "bench/pyref/gpt2_ref.py", "seed": str(args.seed)})
    model = model.to(dev)
    g = torch.Generator().manual_seed(args.seed + 1)
    tokens = torch.randint(0, VOCAB, (args.batch, args.seq), generator=g).to(dev)
    prompt = torch.randint(0, VOCAB, (args.batch, 16), generator=g).to(dev)
    with torch.no_grad():
        logits = model(tokens).float()
        gen = generate(model, prompt, args.gen, new_caches(args.batch, torch.float32, dev))
        m16 = GPT2().to(dev)
        m16.load_state_dict(model.state_dict())
        m16 = m16.to(torch.bfloat16)
        l16 = m16(tokens)
        top16 = l16.argmax(-1)
    same = (top16 == logits.argmax(-1)).float().mean().item()
    save_file({"tokens": tokens.cpu(), "logits_f32": logits.cpu().contiguous(), "top1_bf16": top16.cpu(),
               "gen_prompt": prompt.cpu(), "gen_f32": gen.cpu()}, os.path.join(args.out, "refs.safetensors"))
    print(json.dumps({"impl": "pytorch-eager", "case": "refs", "batch": args.batch, "seq": args.seq,
                      "top1_bf16_vs_f32": round(same, 5), "gen": args.gen}), flush=True)
    del m16, l16, logits
    if not args.no_bench:
        bench(model, args.runs)


if __name__ == "__main__":
    sys.exit(main())

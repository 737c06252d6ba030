"""PyTorch beside gocuda's safetensors loading (BenchmarkLoad in package
safetensors): makes a 2 GiB file of 16 bfloat16 tensors of 128 MiB where
none is (the path is the first argument), reads it once so that it is in
the page cache, then times safetensors.torch.load_file(path,
device="cuda"), and, for reference, reading it on the CPU and calling
.to("cuda"); best of 3 each, GB/s.

usage: python3 torch_safetensors.py PATH > torch_safetensors.json
"""
import json
import os
import sys
import time

import torch
from safetensors.torch import load_file, save_file


def best(fn, size, reps=3):
    out = 0.0
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        tensors = fn()
        torch.cuda.synchronize()
        out = max(out, size / (time.perf_counter() - t0) / 1e9)
        del tensors
        torch.cuda.empty_cache()
    return out


def main():
    path = sys.argv[1]
    if not os.path.exists(path):
        g = torch.Generator().manual_seed(1)
        save_file({"layer%02d" % i: torch.randn(8192, 8192, generator=g).to(torch.bfloat16) for i in range(16)}, path)
    size = os.path.getsize(path)
    with open(path, "rb") as f:  # into the page cache
        while f.read(64 << 20):
            pass
    out = {"file_bytes": size, "torch": torch.__version__}
    out["load_file_cuda_GBps"] = best(lambda: load_file(path, device="cuda"), size)
    out["load_file_cpu_then_to_cuda_GBps"] = best(lambda: {k: v.to("cuda") for k, v in load_file(path).items()}, size)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

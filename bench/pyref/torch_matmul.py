"""PyTorch beside gocuda's cuBLAS benchmarks (BenchmarkGemm,
BenchmarkGemmBatched, BenchmarkGemmCall in package cublas): torch.matmul of
square matrices of random numbers in float32 (TF32 off and on), bfloat16 and
float16 at 1024, 4096 and 8192, torch.bmm of 512 products of 64x64
matrices, and the time of one call of a 64x64 float32 product queued
(synchronized every 100 calls, off the clock), as the Go benchmarks do. TFLOP/s are 2n^3 per product
over the mean time of repeated products, timed with CUDA events.

usage: python3 torch_matmul.py > torch_matmul.json
"""
import json
import time

import torch


def tflops(op, flops, seconds=1.0):
    for _ in range(3):
        op()
    torch.cuda.synchronize()
    # As many products as fill about `seconds`, queued back to back and
    # synchronized once, as the Go benchmark does.
    t0 = time.perf_counter()
    for _ in range(10):
        op()
    torch.cuda.synchronize()
    reps = max(10, int(seconds / ((time.perf_counter() - t0) / 10)))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        op()
    end.record()
    torch.cuda.synchronize()
    return flops * reps / (start.elapsed_time(end) / 1e3) / 1e12


def main():
    dev = torch.device("cuda")
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    for name, dtype, tf32 in (("float32", torch.float32, False), ("TF32", torch.float32, True),
                              ("BFloat16", torch.bfloat16, False), ("Float16", torch.float16, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for n in (1024, 4096, 8192):
            a = torch.randn(n, n, device=dev, dtype=dtype)
            b = torch.randn(n, n, device=dev, dtype=dtype)
            c = torch.empty(n, n, device=dev, dtype=dtype)
            out["gemm/%s/%d" % (name, n)] = tflops(lambda: torch.matmul(a, b, out=c), 2 * n ** 3)
            del a, b, c
    torch.backends.cuda.matmul.allow_tf32 = False
    for name, dtype in (("float32", torch.float32), ("BFloat16", torch.bfloat16)):
        a = torch.randn(512, 64, 64, device=dev, dtype=dtype)
        b = torch.randn(512, 64, 64, device=dev, dtype=dtype)
        c = torch.empty(512, 64, 64, device=dev, dtype=dtype)
        out["batched/%s/512x64" % name] = tflops(lambda: torch.bmm(a, b, out=c), 512 * 2 * 64 ** 3)
    a = torch.randn(64, 64, device=dev)
    c = torch.empty(64, 64, device=dev)
    for _ in range(100):
        torch.matmul(a, a, out=c)
    torch.cuda.synchronize()
    # Synchronized every 100 calls off the clock, as the Go and C programs.
    reps, clock = 0, 0.0
    while clock < 1.0:
        t0 = time.perf_counter()
        for _ in range(100):
            torch.matmul(a, a, out=c)
        clock += time.perf_counter() - t0
        reps += 100
        torch.cuda.synchronize()
    out["call_us/float32/64"] = clock / reps * 1e6
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

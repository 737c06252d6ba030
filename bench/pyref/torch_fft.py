"""PyTorch's torch.fft of the shapes package cufft's BenchmarkFFT times,
each call then a synchronize, the median of 20 after 3 warm-up calls
(which also fill PyTorch's plan cache). Prints NAME microseconds."""
import statistics
import time

import torch

cases = (
    ("fft-2^24", torch.zeros(1 << 24, dtype=torch.complex64, device="cuda"), lambda x: torch.fft.fft(x)),
    ("fft-4096x4096-batched", torch.zeros(4096, 4096, dtype=torch.complex64, device="cuda"), lambda x: torch.fft.fft(x, dim=-1)),
    ("rfft2-8192x8192", torch.zeros(8192, 8192, dtype=torch.float32, device="cuda"), lambda x: torch.fft.rfft2(x)),
)
for name, x, fn in cases:
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        fn(x)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    print(f"torch.{name} {statistics.median(times) * 1e6:.1f}")

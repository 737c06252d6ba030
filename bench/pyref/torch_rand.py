"""PyTorch's torch.rand and torch.randn of 256 Mi float32 on the GPU, timed
as package curand's BenchmarkGenerate times its own (each call then a
synchronize), the median of 20 after 3 warm-up calls. Prints a line per
operation: NAME microseconds GB/s."""
import statistics
import time

import torch

n = 256 << 20
x = torch.empty(n, dtype=torch.float32, device="cuda")
for name, fn in (("rand", lambda: torch.rand(n, out=x)), ("randn", lambda: torch.randn(n, out=x))):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    print(f"torch.{name} {t * 1e6:.1f} {4 * n / t / 1e9:.1f}")

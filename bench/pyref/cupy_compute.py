"""The operations of package compute's benchmarks (compute/bench_test.go),
timed with CUDA events in CuPy and PyTorch on the same GPU: float32 add of
two 256 MiB buffers, a float32 to bfloat16 cast of 256 MiB (PyTorch: CuPy
has no bfloat16) and to float16 (both), the sum of 1 Gi float32, the softmax of 8192 rows of
8192 float32 (PyTorch), and the device-to-device copy of the same bytes.
Prints a line per row: name, median ms, GB/s (bytes read plus written;
for the sum, read)."""
import statistics

import cupy as cp
import torch


def timed(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def row(name, ms, nbytes):
    print(f"{name:32s} {ms:9.3f} ms {nbytes / ms / 1e6:9.1f} GB/s")


n = 64 << 20
x, y, z = cp.zeros(n, cp.float32), cp.zeros(n, cp.float32), cp.zeros(n, cp.float32)
row("cupy add f32 256MiB", timed(lambda: cp.add(x, y, out=z)), 12 * n)
tx, ty, tz = torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")
row("torch add f32 256MiB", timed(lambda: torch.add(tx, ty, out=tz)), 12 * n)
h = cp.zeros(n, cp.float16)
row("cupy cast f32->f16 256MiB", timed(lambda: h.__setitem__(slice(None), x)), 6 * n)
th = torch.zeros(n, device="cuda", dtype=torch.float16)
row("torch cast f32->f16 256MiB", timed(lambda: th.copy_(tx)), 6 * n)
tb = torch.zeros(n, device="cuda", dtype=torch.bfloat16)
row("torch cast f32->bf16 256MiB", timed(lambda: tb.copy_(tx)), 6 * n)
big = cp.zeros(1 << 30, cp.float32)
out = cp.zeros((), cp.float32)
row("cupy sum f32 1Gi", timed(lambda: cp.sum(big, out=out)), 4 << 30)
tbig = torch.zeros(1 << 30, device="cuda")
row("torch sum f32 1Gi", timed(lambda: torch.sum(tbig)), 4 << 30)
del tbig
ts = torch.zeros(8192, 8192, device="cuda")
row("torch softmax 8192x8192 f32", timed(lambda: torch.softmax(ts, dim=1)), 8 * 8192 * 8192)
b1, b2 = cp.zeros(256 << 20, cp.uint8), cp.zeros(256 << 20, cp.uint8)
row("cupy copy 256MiB", timed(lambda: b2.__setitem__(slice(None), b1)), 2 * (256 << 20))
c1, c2 = cp.zeros(4 << 30, cp.uint8), cp.zeros(4 << 30, cp.uint8)
row("cupy copy 4GiB", timed(lambda: c2.__setitem__(slice(None), c1), reps=5), 2 * (4 << 30))

"""PyTorch beside gocuda's stream-ordered memory and graph benchmarks
(bench/cref/graphbench.c, BenchmarkAllocAsync, BenchmarkGraphReplay): the
caching allocator's allocation and free of 256 B, 1 MiB and 64 MiB (an
empty tensor made and dropped), and 100 launches of a trivial kernel
(x.add_(1) on one element), eager and replayed as a CUDA graph, each
followed by a synchronize. Mean microseconds over about a second.

usage: python3 torch_graph.py > torch_graph.json
"""
import json
import sys
import time

import torch


def mean_us(op, seconds=1.0):
    op()
    torch.cuda.synchronize()
    reps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        op()
        reps += 1
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / reps * 1e6


def main():
    dev = torch.device("cuda")
    results = {}
    for name, n in (("256B", 256), ("1MiB", 1 << 20), ("64MiB", 64 << 20)):
        results["alloc_free/" + name] = mean_us(lambda: torch.empty(n, dtype=torch.uint8, device=dev))
    x = torch.zeros(1, device=dev)

    def eager():
        for _ in range(100):
            x.add_(1)

    def eager_sync():
        eager()
        torch.cuda.synchronize()

    results["launches_100_eager"] = mean_us(eager_sync)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        eager()  # warm up on the side stream, as graph capture asks
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        eager()

    def replay():
        g.replay()
        torch.cuda.synchronize()

    results["launches_100_graph"] = mean_us(replay)
    json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "us": results}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()

"""PyTorch's all-reduce over NCCL (torch.distributed), the reference for
nccl.BenchmarkAllReduce: float32 sum in place, 1 MiB to 1 GiB, one process
per GPU, each size warmed up, then ITERS all-reduces timed with CUDA events
on rank 0. Prints: allreduce BYTES algbw_GBps busbw_GBps

usage: NCCL_NVLS_ENABLE=0 python3 torch_allreduce.py [NGPUS]   (default: all)
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

ITERS = 20


def run(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    size = 1 << 20
    while size <= 1 << 30:
        x = torch.zeros(size // 4, dtype=torch.float32, device="cuda")
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        dist.barrier()
        start.record()
        for _ in range(ITERS):
            dist.all_reduce(x)
        end.record()
        torch.cuda.synchronize()
        secs = start.elapsed_time(end) / 1e3 / ITERS
        if rank == 0:
            algbw = size / secs / 1e9
            print(f"allreduce {size} {algbw:.2f} {algbw * 2 * (world - 1) / world:.2f}", flush=True)
        del x
        size *= 4
    dist.destroy_process_group()


if __name__ == "__main__":
    world = int(sys.argv[1]) if len(sys.argv) > 1 else torch.cuda.device_count()
    mp.spawn(run, args=(world,), nprocs=world)

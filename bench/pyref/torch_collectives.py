"""PyTorch's all-reduce and all-to-all over NCCL (torch.distributed), the
reference for nccl's two-process benchmark (nccl/procs_test.go,
BenchmarkProcesses): float32, in place for the all-reduce, into a second
tensor for all_to_all_single, two processes. Each size is warmed up, then
timed with CUDA events on rank 0 over enough iterations for about a second.
Prints: OP BYTES algbw_GBps busbw_GBps (busbw as nccl-tests counts it:
all-reduce 2(n-1)/n, all-to-all (n-1)/n of the algorithm's bandwidth).

With fewer GPUs than processes, the processes share GPU 0 and NCCL is told
they are on two hosts (NCCL_HOSTID differs), which it needs to accept two
ranks on one GPU; they then meet over the socket transport on the loopback
interface, standing in for two hosts. SOCKET=1 asks for the socket
transport on two GPUs too (NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1).

usage: NCCL_NVLS_ENABLE=0 python3 torch_collectives.py [SIZES_MIB...]
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD = 2


def run(rank, sizes, port):
    shared = torch.cuda.device_count() < WORLD
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    if shared:
        os.environ["NCCL_HOSTID"] = f"gocuda-rank-{rank}"
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    if shared or os.environ.get("SOCKET") == "1":
        os.environ["NCCL_P2P_DISABLE"] = "1"
        os.environ["NCCL_SHM_DISABLE"] = "1"
    dev = rank % torch.cuda.device_count()
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=WORLD, device_id=torch.device("cuda", dev))
    for size in sizes:
        x = torch.randn(size // 4, dtype=torch.float32, device="cuda")
        y = torch.empty_like(x)
        ops = {
            "allreduce": (lambda: dist.all_reduce(x), 2 * (WORLD - 1) / WORLD),
            "alltoall": (lambda: dist.all_to_all_single(y, x), (WORLD - 1) / WORLD),
        }
        for name, (op, factor) in ops.items():
            for _ in range(2):
                op()
            torch.cuda.synchronize()
            # As many iterations as take about a second, the same on both
            # ranks: rank 0 decides from one timed call.
            dist.barrier()
            t0 = time.perf_counter()
            op()
            torch.cuda.synchronize()
            n = torch.tensor([max(3, min(50, int(1 / (time.perf_counter() - t0))))], device="cuda")
            dist.broadcast(n, 0)
            iters = int(n.item())
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            dist.barrier()
            start.record()
            for _ in range(iters):
                op()
            end.record()
            torch.cuda.synchronize()
            secs = start.elapsed_time(end) / 1e3 / iters
            if rank == 0:
                algbw = size / secs / 1e9
                print(f"{name} {size} {algbw:.3f} {algbw * factor:.3f}", flush=True)
        del x, y
    dist.destroy_process_group()


if __name__ == "__main__":
    sizes = [int(a) << 20 for a in sys.argv[1:]] or [16 << 20, 64 << 20, 256 << 20]
    mp.spawn(run, args=(sizes, 29500 + os.getpid() % 1000), nprocs=WORLD)

#!/usr/bin/env bash
# gpu-probe.sh OUTDIR: what the GPU machine's toolkit says about the parts
# of the driver API and NCCL gocuda binds next, for writing the raw layer
# and the fake against: the headers' declarations of graph node parameters,
# conditional handles, programmatic dependent launch and NCCL buffer
# registration, and the PTX nvcc makes of the device calls those need.
# Run there: bash scripts/gpu-probe.sh $OUT
set -u
out=${1:?usage: gpu-probe.sh OUTDIR}
mkdir -p "$out"
inc=/usr/local/cuda/include
{
	nvidia-smi --query-gpu=name,driver_version --format=csv
	nvcc --version | tail -2
	grep -n "define CUDA_VERSION" $inc/cuda.h
} >"$out/versions.txt" 2>&1
cp $inc/cuda.h "$out/cuda.h"
cp $inc/cuda_device_runtime_api.h "$out/cuda_device_runtime_api.h" 2>/dev/null
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null || true)
find / -name nccl.h -not -path '*/proc/*' 2>/dev/null | head -3 >"$out/nccl_paths.txt"
h=$(head -1 "$out/nccl_paths.txt")
[ -n "$h" ] && cp "$h" "$out/nccl.h"
cat >/tmp/probe.cu <<'CU'
#include <cuda_runtime.h>
extern "C" __global__ void set_cond(cudaGraphConditionalHandle h, const unsigned *v) {
	cudaGraphSetConditional(h, *v);
}
extern "C" __global__ void count_down(cudaGraphConditionalHandle h, unsigned *n) {
	unsigned left = --*n;
	cudaGraphSetConditional(h, left != 0);
}
extern "C" __global__ void pdl_step(float *x, int n) {
	cudaGridDependencySynchronize();
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] += 1.0f;
	cudaTriggerProgrammaticLaunchCompletion();
}
CU
nvcc -arch=sm_90 -ptx -o "$out/probe.ptx" /tmp/probe.cu >"$out/probe.log" 2>&1
echo "probe rc=$?" >>"$out/probe.log"
ls /usr/local/cuda/lib64 | head -100 >"$out/lib64.txt"

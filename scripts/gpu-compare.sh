#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu-build.sh here: runs gocuda bench, the
# C reference (bench/cref/copybench.c, built with nvcc) and PyTorch's copies
# (bench/pyref/torch_copy.py, with its pin_memory path) and CuPy's and JAX's
# one-shot transfers (bench/pyref/oneshot_copy.py) one after the other, writing
# OUTDIR/bench.json, OUTDIR/bench.svg, OUTDIR/cref.txt, OUTDIR/torch.json and
# OUTDIR/oneshot.json. Then, here:
#
#   go run ./bench/report -dir OUTDIR
#
# merges them into docs/performance.md and docs/transfers.svg.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-compare.sh OUTDIR}
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1
nvcc -O2 -o /tmp/copybench bench/cref/copybench.c -lcuda
bin/gocuda bench -json "$out/bench.json" -plot "$out/bench.svg" >"$out/bench.txt"
/tmp/copybench pageable pinned >"$out/cref.txt"
python3 bench/pyref/torch_copy.py >"$out/torch.json"
python3 bench/pyref/oneshot_copy.py >"$out/oneshot.json" 2>"$out/oneshot.err" || echo "oneshot_copy.py failed: see oneshot.err" >&2
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader >"$out/machine.txt"
cat "$out/bench.txt"

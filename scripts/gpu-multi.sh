#!/usr/bin/env bash
# On a machine with two or more GPUs, after scripts/gpu-build.sh here: the
# multi-GPU tests (nccl and peer, with GOCUDA_REQUIRE_GPU=1) and benchmarks
# (peer copy GB/s, all-reduce bus bandwidth beside PyTorch's torch.distributed
# all-reduce in the same run). Logs and tables go to OUTDIR. NVLink multicast
# stays off (NCCL_NVLS_ENABLE=0): see CONTRIBUTING.md.
#
#   scripts/gpu-multi.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-multi.sh OUTDIR}
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
nvidia-smi topo -m >"$out/topology.txt" 2>&1
rc=0
for set in tests tests-cgo; do
	(cd nccl && ../bin/$set/nccl.test -test.v -test.count=1) >"$out/$set-nccl.log" 2>&1 || rc=1
	bin/$set/cuda.test -test.v -test.count=1 -test.run 'Peer' >"$out/$set-peer.log" 2>&1 || rc=1
	grep -E -- '^(--- |ok|FAIL)' "$out/$set-nccl.log" "$out/$set-peer.log" | grep -v -- '--- PASS' || true
done
bin/tests/nccl.test -test.run '^$' -test.bench '^BenchmarkAllReduce$' -test.benchtime 20x >"$out/go-allreduce.txt" 2>&1 || rc=1
bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkCopyPeer$' -test.benchtime 10x >"$out/go-peer.txt" 2>&1 || rc=1
python3 bench/torch_allreduce.py >"$out/torch-allreduce.txt" 2>&1 || rc=1
{
	echo "Measured $(date -u +%Y-%m-%d) on $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)"
	echo
	echo "| size | gocuda busbw GB/s | PyTorch busbw GB/s | ratio |"
	echo "|---|---|---|---|"
	python3 - "$out/go-allreduce.txt" "$out/torch-allreduce.txt" <<'PY'
import re, sys
go = {int(m.group(1)) << 20: float(m.group(2)) for m in re.finditer(r"AllReduce/(\d+)MiB\S*\s.*?([\d.]+) busbw-GB/s", open(sys.argv[1]).read())}
torch = {int(f[1]): float(f[3]) for f in (l.split() for l in open(sys.argv[2])) if f and f[0] == "allreduce"}
for size in sorted(go):
    t = torch.get(size)
    print(f"| {size >> 20} MiB | {go[size]:.1f} | {t if t is not None else '-'} | {go[size] / t:.2f}x |" if t else f"| {size >> 20} MiB | {go[size]:.1f} | - | - |")
PY
	echo
	grep -E '^BenchmarkCopyPeer' "$out/go-peer.txt" | awk '{print "peer copy", $1, $5, $6}'
} | tee "$out/multi.md"
exit $rc

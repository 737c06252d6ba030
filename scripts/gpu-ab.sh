#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu-build-ab.sh here: the speed of a
# change (issue 49's copy-engine move, say) as two builds of the same
# benchmarks in interleaved rounds, so that the machine's drift falls on
# both: Upload and Download at 64 KiB, 1, 16 and 256 MiB and AllocAsync,
# ROUNDS rounds (default 2), before and after taking turns to go first;
# then the after build's gocuda bench at 16 and 256 MiB, seven transfers
# each, its fresh-slice rows among them. Raw outputs and a table of
# medians (after / before) in OUTDIR.
#
#   scripts/gpu-ab.sh OUTDIR [ROUNDS]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-ab.sh OUTDIR [ROUNDS]}
rounds=${2:-2}
ab=$PWD/bin/ab
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=${GOCUDA_REQUIRE_GPU-1} # GOCUDA_REQUIRE_GPU= for a dry run on the fake
bench='^(BenchmarkUpload|BenchmarkDownload)$/^(64KiB|1MiB|16MiB|256MiB)$|^BenchmarkAllocAsync$'
for r in $(seq "$rounds"); do
	order="before after"
	[ $((r % 2)) -eq 0 ] && order="after before"
	for side in $order; do
		"$ab/$side.test" -test.run '^$' -test.bench "$bench" -test.benchtime "${AB_BENCHTIME:-1s}" -test.count 1 >>"$out/ab-$side.txt" 2>&1
		echo "round $r $side: exit $?" >>"$out/ab-summary.txt"
	done
done
"$ab/gocuda" bench -sizes 16MiB,256MiB -reps 7 -json "$out/fresh.json" >"$out/fresh.txt" 2>&1
echo "gocuda bench (fresh rows): exit $?" >>"$out/ab-summary.txt"
python3 - "$out" >"$out/ab.md" <<'PY'
import re, statistics, sys
out = sys.argv[1]
def read(side):
    cells = {}
    for line in open(f"{out}/ab-{side}.txt"):
        m = re.match(r"(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+([\d.]+) MB/s)?", line)
        if m:
            cells.setdefault(m.group(1), []).append(float(m.group(2)))
    return cells
before, after = read("before"), read("after")
print("| benchmark | before ns/op | after ns/op | after / before (time) |")
print("|---|---|---|---|")
for name in before:
    if name in after:
        b, a = statistics.median(before[name]), statistics.median(after[name])
        print(f"| {name} | {b:,.0f} | {a:,.0f} | {a / b:.3f} |")
PY
cat "$out/ab-summary.txt" "$out/ab.md"

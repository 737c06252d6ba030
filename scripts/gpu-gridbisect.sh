#!/usr/bin/env bash
# Compute's grid cells across several builds, on the GPU machine, in one
# call: BenchmarkGrid of every bin/ab/c-NAME.test (compute test binaries
# of earlier commits or variants, built here with
# `CGO_ENABLED=0 go test -c -o bin/ab/c-NAME.test ./compute` in a
# worktree) for the cells GOCUDA_GRID_CELLS names, in ROUNDS interleaved
# rounds (default 2), then one table: a row a cell, a column a build, the
# median µs of the rounds. For finding which commit made a cell slower
# (a bisection in one call), or which of several variants is fastest.
# Then, unless GRID_PEERS=0, the same cells in PyTorch and CuPy
# (bench/pyref/compute_grid.py, into OUT/peers.json) once, as columns of
# the table beside the builds'.
#
#   GOCUDA_GRID_CELLS=op/dtype/shape,... scripts/gpu-gridbisect.sh OUT [ROUNDS] [BENCHTIME]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-gridbisect.sh OUT [ROUNDS] [BENCHTIME]}
rounds=${2:-2} benchtime=${3:-0.1s}
[ -n "${GOCUDA_GRID_CELLS:-}" ] || { echo "gpu-gridbisect.sh: set GOCUDA_GRID_CELLS" >&2; exit 2; }
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1
for r in $(seq 1 "$rounds"); do
	for t in bin/ab/c-*.test; do
		name=$(basename "$t" .test)
		(cd compute && "../$t" -test.run '^$' -test.bench '^BenchmarkGrid$' -test.benchtime "$benchtime") >"$out/${name#c-}.$r.txt" 2>&1
	done
done
if [ "${GRID_PEERS:-1}" != 0 ]; then
	python3 bench/pyref/compute_grid.py >"$out/peers.json" 2>"$out/peers.err" || echo "compute_grid.py: exit $?" >&2
fi
python3 - "$out" <<'PY'
import glob, json, os, re, statistics, sys
out = sys.argv[1]
runs = {}
peers = {}
try:
    for line in open(os.path.join(out, "peers.json")):
        if line.strip():
            p = json.loads(line)
            peers.setdefault("%s/%s/%s" % (p["op"], p["dtype"], p["shape"]), {})[p["peer"]] = p["us"]
except FileNotFoundError:
    pass
for f in glob.glob(os.path.join(out, "*.[0-9]*.txt")):
    name = os.path.basename(f).rsplit(".", 2)[0]
    for line in open(f):
        m = re.match(r"BenchmarkGrid/(\S+?)-\d+\s.*?([0-9.]+) us/op", line)
        if m:
            runs.setdefault(m.group(1), {}).setdefault(name, []).append(float(m.group(2)))
names = sorted({n for c in runs.values() for n in c})
cols = names + (["PyTorch", "CuPy"] if peers else [])
print("| cell | " + " | ".join(cols) + " |")
print("|---|" + "---:|" * len(cols))
for cell in sorted(runs):
    row = [("%.3g" % statistics.median(runs[cell][n])) if n in runs[cell] else "-" for n in names]
    if peers:
        p = peers.get(cell, {})
        row += [("%.3g" % p[k]) if k in p else "-" for k in ("torch", "cupy")]
    print("| " + cell + " | " + " | ".join(row) + " |")
PY

#!/usr/bin/env bash
# Issue 52's GPT-2 on the GPU machine, after scripts/gpu-build.sh (which
# builds bin/gpt2, examples/gpt2): PyTorch makes the model and its
# references (bench/pyref/gpt2_ref.py), then the Go program compares its
# logits with PyTorch's (float32 and bfloat16), generates with the
# decoding step's CUDA graph (and without), and times bfloat16 prefill and
# decoding, and PyTorch eager's the same way. Logs under OUT, each step's
# JSON lines in OUT/*.jsonl, the table in OUT/summary.txt.
#
#   scripts/gpu-gpt2.sh OUT [STEP...]   steps: refs compare generate bench torch (default: all, in that order)
#
# Each step runs under its own limit in seconds (GPT2_STEP_S, default 240);
# PYTHON names the python with torch (default /opt/torch/.venv/bin/python).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu-gpt2.sh OUT [STEP...]}
shift
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(refs compare generate bench torch)
mkdir -p "$out"
py=${PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$py" ] || py=python3
limit=${GPT2_STEP_S:-240}
gpt2=bin/gpt2
model=$out/model.safetensors
run() { # run NAME COMMAND...: the command's output in OUT/NAME.log, its status noted
	local name=$1
	shift
	echo "== $name: $*" | tee -a "$out/steps.txt"
	timeout "$limit" "$@" >"$out/$name.log" 2>&1
	local rc=$?
	echo "   $name: exit $rc" | tee -a "$out/steps.txt"
	grep -h '^{' "$out/$name.log" >"$out/$name.jsonl" || true
	tail -n 20 "$out/$name.log"
}
for step in "${steps[@]}"; do
	case $step in
	refs) run refs "$py" bench/pyref/gpt2_ref.py "$out" --no-bench ;;
	compare) run compare "$gpt2" -compare "$out" ;;
	generate)
		run generate "$gpt2" -weights "$model" -refs "$out/refs.safetensors" -generate 32
		run generate-nograph "$gpt2" -weights "$model" -refs "$out/refs.safetensors" -generate 32 -nograph -dtype f32
		;;
	bench) run bench-go "$gpt2" -weights "$model" -bench ;;
	torch) run bench-torch "$py" bench/pyref/gpt2_ref.py "$out" --bench-only ;;
	*) echo "unknown step $step (refs compare generate bench torch)" >&2 ;;
	esac
done
# The table: gocuda's tokens/s beside PyTorch eager's, with the goals.
"$py" - "$out" <<'EOF' | tee "$out/summary.txt"
import glob, json, os, sys
out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
    for line in open(path):
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
goals = {"prefill": 1.0, "decode": 1.5}
by = {(r.get("impl"), r.get("case")): r for r in rows}
print("case | gocuda tokens/s | PyTorch eager tokens/s | ratio | goal")
for case in ("prefill", "decode", "decode-nograph"):
    g, t = by.get(("gocuda", case)), by.get(("pytorch-eager", case.split("-")[0]))
    if g is None:
        continue
    ratio = g["tokens_per_s"] / t["tokens_per_s"] if t else float("nan")
    goal = goals.get(case)
    met = "" if goal is None else (">= %.1fx: %s" % (goal, "met" if ratio >= goal else "NOT met"))
    print("%s | %.0f | %s | %.2fx | %s" % (case, g["tokens_per_s"], "%.0f" % t["tokens_per_s"] if t else "-", ratio, met))
for case in ("compare-f32", "compare-bf16", "generate-f32"):
    r = by.get(("gocuda", case))
    if r:
        print(case, json.dumps({k: v for k, v in r.items() if k not in ("impl", "case")}))
r = by.get(("pytorch-eager", "refs"))
if r:
    print("refs", json.dumps({k: v for k, v in r.items() if k not in ("impl", "case")}))
dev = next((r["device"] for r in rows if "device" in r), "?")
print("device:", dev)
EOF

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
# GPT2_AB names another build of the program (an earlier commit's): the
# bench step then times it too, after this one's, in OUT/bench-ab.log, for
# a before-and-after on one machine.
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
	bench)
		run bench-go "$gpt2" -weights "$model" -bench
		[ -z "${GPT2_AB:-}" ] || run bench-ab "$GPT2_AB" -weights "$model" -bench
		;;
	torch) run bench-torch "$py" bench/pyref/gpt2_ref.py "$out" --bench-only ;;
	*) echo "unknown step $step (refs compare generate bench torch)" >&2 ;;
	esac
done
# The table: gocuda's tokens/s beside PyTorch eager's, with the goals.
"$py" bench/report/gpt2report.py "$out" | tee "$out/summary.md"

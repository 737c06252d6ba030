#!/usr/bin/env bash
# Runs groups of test binaries of one set (tests: purego, tests-cgo: cgo)
# in the order given, within one time budget, on the GPU machine, and packs
# every log into OUTDIR/suite.tgz (the device tool brings back few files):
# the binaries a session most needs checked first, the long ones last.
#
#   scripts/gpu-suite.sh OUTDIR SECONDS SET [-run REGEXP] GROUP...
#
# Each GROUP is an extended regular expression over the manifest's names
# (scripts/gpu-run.sh -only); the groups share the budget, a group started
# late gets what is left, and the binary running when it ends is reported
# CUT. The summaries are printed, group by group.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-suite.sh OUTDIR SECONDS SET [-run REGEXP] GROUP...}
budget=${2:?usage: gpu-suite.sh OUTDIR SECONDS SET [-run REGEXP] GROUP...}
set=${3:?usage: gpu-suite.sh OUTDIR SECONDS SET [-run REGEXP] GROUP...}
shift 3
run=.
if [ "${1:-}" = -run ]; then
	run=$2
	shift 2
fi
end=$(($(date +%s) + budget))
mkdir -p "$out"
g=0
for group in "$@"; do
	g=$((g + 1))
	left=$((end - $(date +%s)))
	if [ $left -le 0 ]; then
		echo "== group $g ($group): not run, the budget was spent"
		continue
	fi
	echo "== group $g ($group)"
	scripts/gpu-run.sh "$out/g$g" -sets "$set" -only "$group" -run "$run" -for "$left" | sed -n '/^== test binaries/,$p' | tail -n +2
done
tar czf "$out/suite.tgz" -C "$out" $(cd "$out" && ls -d g*) && rm -rf "$out"/g*

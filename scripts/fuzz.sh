#!/usr/bin/env bash
# Runs each fuzz target of packages cuda, safetensors and internal/ndshape against the fake driver for a while
# (FUZZTIME, default 10s), one after another: go test runs one target at a
# time. The fake holds FAKECUDA_MEMORY bytes of device and of page-locked
# memory (256 MiB here), so that large generated sizes meet
# CUDA_ERROR_OUT_OF_MEMORY rather than the host's memory. A failing input is
# written to testdata/fuzz/TARGET/, where every later go test runs it.
#
# Go 1.26's fuzzing coordinator can end a run that found nothing with
# "context deadline exceeded" as -fuzztime expires (go.dev/issue/75804,
# fixed in Go 1.27): a run fails here when it wrote a failing input, or
# failed otherwise than by that message.
#
#   scripts/fuzz.sh [FUZZTIME]
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-10s}
export GOCUDA_TEST_DRIVER=fake FAKECUDA_MEMORY=$((256 << 20))
failed=0
for pkgtarget in $(for pkg in . ./safetensors ./internal/ndshape; do go test -list '^Fuzz' $pkg | grep '^Fuzz' | sed "s|^|$pkg:|"; done); do
	pkg=${pkgtarget%%:*} target=${pkgtarget#*:}
	echo "== $pkg $target ($fuzztime)"
	corpus=$pkg/testdata/fuzz/$target
	before=$(ls "$corpus" 2>/dev/null | wc -l)
	log=$(mktemp)
	go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" $pkg 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	after=$(ls "$corpus" 2>/dev/null | wc -l)
	if [ "$rc" -ne 0 ]; then
		if [ "$after" -gt "$before" ] || ! grep -q "context deadline exceeded" "$log"; then
			echo "$target FAILED (failing input in $corpus)"
			failed=1
		else
			echo "$target: the coordinator's deadline race (go.dev/issue/75804), no failing input: not a failure"
		fi
	fi
	rm -f "$log"
done
exit $failed

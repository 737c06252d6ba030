#!/usr/bin/env bash
# Checks that every figure in the README's headline (between its
# "headline" comments) appears in docs/performance.md, where the tables
# are: the README quotes them, it does not keep figures of its own. A
# figure is a number with a decimal point, or a range of them
# (1.59-2.53x, 55.27 GB/s).
set -euo pipefail
cd "$(dirname "$0")/.."
headline=$(sed -n '/<!-- headline:/,/<!-- end headline -->/p' README.md)
[ -n "$headline" ] || { echo "README.md has no headline block"; exit 1; }
missing=0
for figure in $(grep -oE '[0-9]+\.[0-9]+(-[0-9]+\.[0-9]+)?' <<<"$headline" | sort -u); do
	if ! grep -qF -- "$figure" docs/performance.md; then
		echo "README.md's headline quotes $figure, which docs/performance.md does not have"
		missing=1
	fi
done
[ $missing -eq 0 ] && echo "the README's headline figures are all in docs/performance.md"
exit $missing

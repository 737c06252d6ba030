#!/usr/bin/env bash
# Fails when git tracks a compiled program or object: an executable or
# shared library built here (a `go build` at the root leaves one named after
# its folder) belongs in .gitignore, not in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
found=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	# The first four bytes: ELF, Mach-O (both byte orders, 32 and 64 bits,
	# and fat), or a Windows PE's "MZ".
	magic=$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')
	case "$magic" in
	7f454c46 | feedface | feedfacf | cefaedfe | cffaedfe | cafebabe | 4d5a*)
		echo "git tracks a compiled binary: $f (remove it with git rm --cached, and ignore it)"
		found=1
		;;
	esac
done < <(git ls-files -z)
[ $found -eq 0 ] && echo "no compiled binary is tracked"
exit $found

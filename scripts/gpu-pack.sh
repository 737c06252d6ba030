#!/usr/bin/env bash
# Packs some of what scripts/gpu-build.sh built into bin.txz, for a device
# call whose carry (64 MiB) cannot hold the whole of bin/ (about 72 MB
# compressed): the test binaries whose manifest names the extended regular
# expression matches in full, of both sets, with their manifests cut to
# match, the fake driver and the gocuda command.
#
#   scripts/gpu-pack.sh REGEXP
#
# On the GPU machine: tar xJf bin.txz, then scripts/gpu-run.sh or
# scripts/gpu-suite.sh as usual.
set -euo pipefail
cd "$(dirname "$0")/.."
re=${1:?usage: gpu-pack.sh REGEXP}
pack=$(mktemp -d)
trap 'rm -rf "$pack"' EXIT
mkdir -p "$pack/bin"
for f in bin/*; do
	[ -f "$f" ] && cp -al "$f" "$pack/bin/"
done
for set in tests tests-cgo; do
	[ -d "bin/$set" ] || continue
	mkdir -p "$pack/bin/$set"
	: >"$pack/bin/$set/manifest"
	while read -r name dir; do
		if [[ $name =~ ^($re)$ ]] && [ -f "bin/$set/$name.test" ]; then
			cp -al "bin/$set/$name.test" "$pack/bin/$set/"
			echo "$name $dir" >>"$pack/bin/$set/manifest"
		fi
	done <"bin/$set/manifest"
done
tar cf - -C "$pack" bin | xz -T0 -6 >bin.txz
echo "bin.txz: $(du -h bin.txz | cut -f1), $(cat "$pack"/bin/*/manifest | wc -l) test binaries"

#!/usr/bin/env bash
# Fetches NVRTC 11.8 and the CUDA 11.8 binary tools (cuobjdump, nvdisasm,
# ptxas) from Debian 12's non-free archive into DIR, without installing
# them, for the compile checks a machine without a GPU can make: the
# templates' compile tests (compute's TestTemplatesCompile,
# TestSoftmaxRegsCompile, TestColumnKernelsRegsCompile: ptxas's registers
# and spills) and the machine code of a kernel (TestWriteCubins, then
# cuobjdump -sass). NVRTC 11.8 knows sm_90; the GPU machine's is newer,
# and its code may differ in detail: a check here, a measure there.
#
#   scripts/offline-nvrtc.sh DIR      then, as it prints:
#   export GOCUDA_LIBNVRTC=DIR/lib/libnvrtc.so.11.2 LD_LIBRARY_PATH=DIR/lib
#   go test ./compute -run 'TestSoftmaxRegsCompile|TestColumnKernelsRegsCompile' -v
#   GOCUDA_CUBIN_DIR=/tmp/cubins go test ./compute -run TestWriteCubins
#   DIR/bin/cuobjdump -sass /tmp/cubins/sum_float16.cubin
set -euo pipefail
dir=${1:?usage: offline-nvrtc.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/nonfree.sources" <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
# apt's own state in $work, so that the system's sources stay as they are.
apt=(-o Dir::Etc::sourcelist="$work/nonfree.sources" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache")
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
apt-get "${apt[@]}" update >/dev/null 2>&1
(cd "$work" && apt-get "${apt[@]}" download libnvrtc11.2 libnvrtc-builtins11.8 nvidia-cuda-toolkit >/dev/null 2>&1)
for deb in "$work"/*.deb; do
	dpkg-deb -x "$deb" "$work/root"
done
mkdir -p "$dir/lib" "$dir/bin"
cp -a "$work"/root/usr/lib/x86_64-linux-gnu/libnvrtc* "$dir/lib/"
cp -a "$work"/root/usr/bin/{cuobjdump,nvdisasm,ptxas} "$dir/bin/"
echo "export GOCUDA_LIBNVRTC=$dir/lib/libnvrtc.so.11.2 LD_LIBRARY_PATH=$dir/lib"

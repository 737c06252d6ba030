# Sourced by the GPU machine's NCCL scripts (gpu-multi.sh, gpu-torchrun.sh):
# points GOCUDA_LIBNCCL at the NCCL library PyTorch's wheels installed, so
# that gocuda and PyTorch run the same NCCL; left unset where there is none.
torchnccl=$(python3 -c 'import glob, os, nvidia; print(next(iter(sorted(p for d in nvidia.__path__ for p in glob.glob(os.path.join(d, "*", "lib", "libnccl.so*")))), ""))' 2>/dev/null)
if [ -n "$torchnccl" ]; then
	export GOCUDA_LIBNCCL=$torchnccl
fi

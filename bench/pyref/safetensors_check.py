"""Hugging Face's safetensors library reading a file gocuda's
safetensors.Save wrote (TestSavePython in package safetensors runs it when
GOCUDA_TEST_PYTHON names a python with torch and safetensors): loads it with
safetensors.torch.load_file, writes the tensors back with
safetensors.torch.save and the file's metadata, and prints a JSON summary:
the versions, the metadata, each tensor's dtype (as the file names it),
shape and bytes (hex, little-endian as in the file), and same_bytes,
whether the library's own file of those tensors is the file read, byte for
byte. An error is an exception: a non-zero exit.

usage: python3 safetensors_check.py FILE
"""
import json
import sys

import safetensors
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save

# The file's dtype names of torch's dtypes (the float8 and unsigned ones
# where this torch has them).
DTYPES = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
for attr, name in [("float8_e4m3fn", "F8_E4M3"), ("float8_e5m2", "F8_E5M2"),
                   ("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64")]:
    if hasattr(torch, attr):
        DTYPES[getattr(torch, attr)] = name


def main():
    path = sys.argv[1]
    tensors = load_file(path)
    with safe_open(path, framework="pt") as f:
        metadata = f.metadata()
    with open(path, "rb") as f:
        raw = f.read()
    out = {
        "torch": torch.__version__,
        "safetensors": safetensors.__version__,
        "metadata": metadata,
        "same_bytes": save(tensors, metadata=metadata) == raw,
        "tensors": {
            # reshape(-1): a scalar (no dimensions) views as bytes too.
            name: {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                   "hex": t.reshape(-1).view(torch.uint8).numpy().tobytes().hex()}
            for name, t in tensors.items()
        },
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

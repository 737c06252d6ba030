"""PyTorch's forward convolution of cudnn's TestConvBenchmarkEveryCase
float32_TF32 cases, with cudnn.benchmark and TF32 on (PyTorch's
defaults for training scripts), to tell whether cuDNN faults there
outside gocuda too. Prints one line a case, and the exception if any.

    python3 bench/pyref/conv_tf32_probe.py
"""
import torch
import torch.nn.functional as F

torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = True
torch.backends.cuda.matmul.allow_tf32 = True

# (name, x shape NCHW, w shape, stride, padding, dilation, groups)
CASES = [
    ("7x7 stride 2 pad 3", (1, 3, 13, 11), (2, 3, 7, 7), 2, 3, 1, 1),
    ("3x3 pad 1 batch 3", (3, 4, 9, 8), (5, 4, 3, 3), 1, 1, 1, 1),
    ("dilation 2", (2, 3, 12, 12), (4, 3, 3, 3), 1, 2, 2, 1),
]

print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name())
for name, xs, ws, stride, pad, dil, groups in CASES:
    for fmt in ("NCHW", "NHWC"):
        try:
            x = torch.randn(xs, device="cuda")
            w = torch.randn(ws, device="cuda")
            if fmt == "NHWC":
                x = x.to(memory_format=torch.channels_last)
                w = w.to(memory_format=torch.channels_last)
            y = F.conv2d(x, w, stride=stride, padding=pad, dilation=dil, groups=groups)
            torch.cuda.synchronize()
            ref = F.conv2d(x.double(), w.double(), stride=stride, padding=pad, dilation=dil, groups=groups)
            err = ((y.double() - ref).abs().max() / ref.abs().max()).item()
            print(f"{name} {fmt}: ok, max relative error {err:.2e}")
        except Exception as e:  # a fault poisons the context: report it and stop
            print(f"{name} {fmt}: FAILED: {e}")
            raise SystemExit(1)

"""Table of issue 52's GPT-2 figures: examples/gpt2's JSON lines (-compare,
-generate, -bench) beside bench/pyref/gpt2_ref.py's (its references and
PyTorch eager's benchmarks), as scripts/gpu-gpt2.sh leaves them in OUT.

usage: python3 gpt2report.py OUT > OUT/summary.md

Rows are joined on "case": gocuda's prefill, decode and decode-nograph
beside PyTorch eager's prefill and decode (the same work: 8 sequences x
1024 tokens of prefill writing the key/value cache and every position's
logits; 256 greedy steps of 8 sequences after a 64-token prompt), in
tokens/s, with the ratio gocuda/PyTorch and the issue's goals (prefill
>= 1.0x, decode >= 1.5x).
"""
import glob
import json
import os
import sys

GOALS = {"prefill": 1.0, "decode": 1.5}


def rows(out):
    found = []
    for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
        with open(path) as f:
            for line in f:
                try:
                    found.append(json.loads(line))
                except ValueError:
                    pass
    return found


def main():
    out = sys.argv[1]
    all_rows = rows(out)
    by = {(r.get("impl"), r.get("case")): r for r in all_rows}
    devices = sorted({r["device"] for r in all_rows if "device" in r})
    print("# GPT-2 small (random weights), bfloat16: examples/gpt2 beside PyTorch eager\n")
    print("Device: %s\n" % (", ".join(devices) or "?"))
    print("| case | gocuda tokens/s | PyTorch eager tokens/s | ratio | goal |")
    print("|---|---|---|---|---|")
    for case in ("prefill", "decode", "decode-nograph"):
        g, t = by.get(("gocuda", case)), by.get(("pytorch-eager", case.split("-")[0]))
        if g is None and t is None:
            continue
        gt = g["tokens_per_s"] if g else None
        tt = t["tokens_per_s"] if t else None
        ratio = gt / tt if gt and tt else None
        goal = GOALS.get(case)
        met = ""
        if goal is not None and ratio is not None:
            met = ">= %.1fx: %s" % (goal, "met" if ratio >= goal else "**not met**")
        print("| %s | %s | %s | %s | %s |" % (case, "%.0f" % gt if gt else "-", "%.0f" % tt if tt else "-",
                                              "%.2fx" % ratio if ratio else "-", met))
    print()
    for case, what in (("compare-f32", "float32 logits against PyTorch's (max |Δ| / max |logit| per position; goal <= 1e-4)"),
                       ("compare-bf16", "bfloat16 top-1 against PyTorch bfloat16's (goal >= 0.99)"),
                       ("generate-f32", "float32 greedy tokens against PyTorch's")):
        r = by.get(("gocuda", case))
        if r:
            print("- %s, %s: `%s`" % (case, what, json.dumps({k: v for k, v in r.items() if k not in ("impl", "case")})))
    r = by.get(("pytorch-eager", "refs"))
    if r:
        print("- PyTorch's references: `%s`" % json.dumps({k: v for k, v in r.items() if k not in ("impl", "case")}))


if __name__ == "__main__":
    main()

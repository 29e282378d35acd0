"""Attention forward, the FlashAttention-3 paper sweep: 16k tokens, hidden 2048, H = 2048/d,
B = 16384/S, bf16, BSHD. deepwell vs SDPA (cuDNN, flash, mem-efficient backends) and compiled
flex_attention, all timed in this process. --cpu: 1k tokens, hidden 256, deepwell's CPU backend
vs SDPA's CPU flash and math backends."""
from __future__ import annotations

import common
from common import Variant
from suites import _attention as A

NAME = "attention_fa3_sweep"
METRIC = "tflops"
CASE_KEYS = ["d", "causal", "S", "B", "H"]


def cases(smoke: bool, cpu: bool = False):
    if cpu:
        tokens, hidden = 1024, 256
        grid = [(d, S) for d in (64, 128) for S in ((256,) if smoke else (128, 512))]
    else:
        tokens, hidden = 16384, 2048
        if smoke:
            grid = [(64, 4096), (128, 2048), (128, 8192), (256, 4096)]
        else:
            grid = [(d, S) for d in (64, 128, 256) for S in (512, 1024, 2048, 4096, 8192, 16384)]
    for d in sorted({d for d, _ in grid}):
        for causal in (False, True):
            for S in [S for dd, S in grid if dd == d]:
                # flex compiles once per shape (seconds each): the smoke set times it at one
                yield {"d": d, "causal": causal, "S": S, "B": tokens // S, "H": hidden // d,
                       "device": "cpu" if cpu else "cuda",
                       "flex": not smoke or cpu or (d, S) == (128, 8192)}


def run(case: dict) -> dict:
    B, S, H, d, causal, dev = (case[k] for k in ("B", "S", "H", "d", "causal", "device"))
    gen, nbytes = A.inputs(B, S, H, d, dev)
    chk = A.check(causal)
    out_bytes = nbytes // 3
    variants = [A.deepwell_variant(causal, gen, nbytes, out_bytes)]
    if dev == "cpu":
        baselines = ["flash", "math"]
        variants += [Variant("flash", A.sdpa("FLASH_ATTENTION", causal), gen, chk, nbytes),
                     Variant("math", A.sdpa("MATH", causal), gen, chk, nbytes)]
    else:
        baselines = ["cudnn", "flash", "efficient"]
        variants += [Variant(n, A.sdpa(be, causal), gen, chk, nbytes, out_bytes)
                     for n, be in (("cudnn", "CUDNN_ATTENTION"), ("flash", "FLASH_ATTENTION"),
                                   ("efficient", "EFFICIENT_ATTENTION"))]
    skip = None
    if not common.OPTIONS["flex"]:
        skip = "skipped (--no-flex)"
    elif dev == "cpu" and not common.OPTIONS["compile_on_cpu"]:
        skip = "skipped in --cpu mode (torch.compile; --compile-on-cpu runs it)"
    elif not case["flex"]:
        skip = "skipped in the smoke set (compiles per shape; timed at d=128 S=8192)"
    variants.append(Variant("flex", A.flex(S, causal, dev), gen, chk, nbytes, out_bytes,
                            unavailable=skip))
    baselines.append("flex")

    fl = A.flops(B, H, S, d, causal)
    label = f"S={S} d={d}{' causal' if causal else ''}"
    res = common.run_variants(variants, dev, fl, label)
    dw = common.metric(res["deepwell"], "tflops")
    best_name, best = common.best_of(res, baselines, "tflops")
    ratios = {"deepwell/best": common.ratio(dw, best)}
    if dev != "cpu":
        ratios["deepwell/cudnn"] = common.ratio(dw, common.metric(res["cudnn"], "tflops"))
    return {"case": {k: case[k] for k in CASE_KEYS}, "label": label, "flops": fl,
            "variants": res, "best_baseline": best_name, "ratios": ratios}


def plot(doc: dict, path):
    """TFLOP/s vs S, one panel per (d, causal), one line per variant."""
    import plots

    plots.lines(doc, path, panel_keys=("d", "causal"), x_key="S", y=doc["metric"],
                ylabel=common.UNITS[doc["metric"]], logx=True)

"""FP8 (e4m3) GEMM at small M (decoding and small batches) with bf16 output: deepwell.gemm_fp8 at
tensor, row and 1x128 / 128x128 block scaling against torch._scaled_mm at the same granularity, on
the Llama-3-8B projections (N, K) for M = 1, 16, 64, 128. Operands, scale layouts and the float64
check are the gemm_fp8 suite's (bench/suites/gemm_fp8.py).

Timing: replays of CUDA graphs of the calls (common.run_variants(graph=True),
timing.measure_graph), the input sets rotated past the L2 as in every suite, so each weight comes
from DRAM: kernel time only. An eager call here costs 15-40 µs of host time, as much as or more
than its kernel (the own and cuBLAS kernels both), so event timing of single calls would measure
the host (docs/perf-notes.md, GEMM session 41). Cells: median µs per call; ratios: torch time /
deepwell time at each granularity (> 1: deepwell faster)."""
from __future__ import annotations

import common
from common import Variant
from suites import gemm_fp8 as F

NAME = "gemm_fp8_small"
METRIC = "median_us"
TIMER = "graph"  # run_variants(graph=True) below; recorded in the JSON's "timing"
CASE_KEYS = ["shape", "M", "N", "K"]
PROJECTIONS = [("8B qkv", 6144, 4096), ("8B o", 4096, 4096), ("8B up+gate", 28672, 4096),
               ("8B down", 4096, 14336)]
GRANS = ("tensor", "row", "block")


def cases(smoke: bool, cpu: bool = False):
    dev = "cpu" if cpu else "cuda"
    if cpu:  # the CPU reference: sizes / 32, one M
        for name, N, K in PROJECTIONS[:2]:
            yield {"shape": name + " /32", "M": 16, "N": N // 32, "K": K // 32, "device": dev}
        return
    ms = [1, 128] if smoke else [1, 16, 64, 128]
    for name, N, K in PROJECTIONS:
        for M in ms:
            yield {"shape": name, "M": M, "N": N, "K": K, "device": dev}


def run(case: dict) -> dict:
    import torch

    M, N, K, dev = (case[k] for k in ("M", "N", "K", "device"))
    out_bytes = 2 * M * N

    def scaled_mm(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)

    variants = []
    for gran in GRANS:
        gen, nbytes = F._inputs(M, N, K, gran, dev, for_torch=True)
        variants.append(Variant(f"torch_{gran}", scaled_mm, gen, F._check(gran, M, N, K, True),
                                nbytes, out_bytes))
    dw, err = common.deepwell_module()
    if dw is not None and not hasattr(dw, "gemm_fp8"):
        err = "not available: deepwell.gemm_fp8 is not in this build"
    for gran in GRANS:
        gen, nbytes = F._inputs(M, N, K, gran, dev, for_torch=False)
        fn = (lambda g: lambda a, b, sa, sb: dw.gemm_fp8(a, b, sa, sb, granularity=g))(gran)
        variants.append(Variant(f"deepwell_{gran}", fn, gen, F._check(gran, M, N, K, False),
                                nbytes, out_bytes, unavailable=err, ours=True))
    fl = 2.0 * M * N * K
    label = f"{case['shape']} M={M}"
    res = common.run_variants(variants, dev, fl, label, graph=True)
    us = {n: common.metric(r, "median_us") for n, r in res.items()}
    ratios = {f"torch/deepwell_{g}": common.ratio(us[f"torch_{g}"], us[f"deepwell_{g}"])
              for g in GRANS}
    return {"case": {k: case[k] for k in CASE_KEYS}, "label": label, "flops": fl,
            "variants": res, "ratios": ratios}


def plot(doc: dict, path):
    import plots

    plots.bars(doc, path, y="median_us", ylabel="median time per call, µs (lower is better)")

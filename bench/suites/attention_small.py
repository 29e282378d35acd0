"""Attention forward at small shapes, where launch and binding overhead matter: deepwell's Python
API on BSHD tensors vs SDPA eager (PyTorch's default backend selection) on (B, H, S, d) views of
the same data, and vs torch.compile'd SDPA. bf16, non-causal. Ratios are SDPA time / deepwell
time (> 1: deepwell faster).

These calls are host-bound (their host cost is about their GPU time), so each variant is timed in
blocks of its own calls, not interleaved call by call with the others: a variant whose host cost
exceeds its GPU time drains the stream, and the call timed after it then pays its whole host
latency on an idle GPU. Interleaved on an H100 host (2026-11-21), deepwell at (8,16,512,128)
measured 82 us after SDPA against 43 us in its own block (docs/benchmarking.md, "Timing"). The
variants' blocks take turns four times (timing.measure_blocks), so a slow spell of the host hits
them alike."""
from __future__ import annotations

import functools

import common
from common import Variant
from suites import _attention as A

NAME = "attention_small"
METRIC = "median_us"
CASE_KEYS = ["B", "H", "S", "d"]
SHAPES = [(1, 8, 128, 64), (2, 8, 256, 64), (4, 16, 256, 128), (8, 16, 512, 128),
          (1, 32, 1024, 128)]


def cases(smoke: bool, cpu: bool = False):
    shapes = SHAPES[:3] if cpu else SHAPES  # the CPU reference is slow on the larger ones
    for B, H, S, d in shapes:
        yield {"B": B, "H": H, "S": S, "d": d, "device": "cpu" if cpu else "cuda"}


@functools.cache
def _compiled_sdpa():
    import torch

    A.raise_recompile_limits()
    return torch.compile(A.sdpa(None, False), dynamic=False)


def run(case: dict) -> dict:
    B, H, S, d, dev = (case[k] for k in ("B", "H", "S", "d", "device"))
    gen, nbytes = A.inputs(B, S, H, d, dev)
    chk = A.check(False)
    out_bytes = nbytes // 3
    skip = None
    if dev == "cpu" and not common.OPTIONS["compile_on_cpu"]:
        skip = "skipped in --cpu mode (torch.compile; --compile-on-cpu runs it)"
    variants = [
        A.deepwell_variant(False, gen, nbytes, out_bytes),
        Variant("sdpa", A.sdpa(None, False), gen, chk, nbytes, out_bytes),
        Variant("sdpa_compiled", lambda q, k, v: _compiled_sdpa()(q, k, v), gen, chk, nbytes,
                out_bytes, unavailable=skip),
    ]
    label = f"({B},{H},{S},{d})"
    res = common.run_variants(variants, dev, A.flops(B, H, S, d, False), label, interleave=False)
    dw = common.metric(res["deepwell"], "median_us")
    ratios = {"sdpa/deepwell": common.ratio(common.metric(res["sdpa"], "median_us"), dw),
              "compiled/deepwell": common.ratio(common.metric(res["sdpa_compiled"], "median_us"),
                                                dw)}
    return {"case": {k: case[k] for k in CASE_KEYS}, "label": label,
            "flops": A.flops(B, H, S, d, False), "variants": res, "ratios": ratios}


def plot(doc: dict, path):
    import plots

    plots.bars(doc, path, y="median_us", ylabel="median time, µs (lower is better)")

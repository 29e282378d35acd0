"""Attention forward for decoding-like calls: a few query rows against long keys, where the
(batch, head, query block) tiles alone would leave most SMs idle, so deepwell splits each tile's
keys into ranges that run in parallel and merges them (split-KV, src/attention/fwd_combine.hpp).
deepwell (its default plan), deepwell with the split turned off (DEEPWELL_ATTN_SPLITS=1), and
SDPA's flash, cuDNN and mem-efficient backends on (B, H, S, d) views of the same BSHD tensors;
GQA cases (Hkv < H: K/V heads shared by H / Hkv query heads, which deepwell packs into one tile
for one-row steps) pass enable_gqa to SDPA. bf16, non-causal (SDPA's is_causal is top-left
aligned when Sq != Sk, deepwell's bottom-right, so the masks would differ).

Timed as CUDA-graph replays (timing.measure_graph: kernel time, no host cost), the way decoding
loops run; the metric is the median time, and GB/s counts q, k, v read and the output written
once. Ratios are the fastest SDPA backend's time / deepwell's (> 1: deepwell faster)."""
from __future__ import annotations

import os

import common
from common import Variant
from suites import _attention as A

NAME = "attention_decode"
METRIC = "median_us"
CASE_KEYS = ["B", "Sq", "Sk", "H", "Hkv", "d"]
SHAPES = [  # (B, Sq, Sk, H, Hkv, d)
    (1, 1, 8192, 32, 32, 128),
    (1, 1, 32768, 16, 16, 128),
    (4, 1, 16384, 8, 8, 128),
    (8, 1, 8192, 32, 32, 128),   # 256 tiles: no split (control)
    (2, 16, 16384, 16, 16, 128),
    (1, 128, 16384, 16, 16, 128),
    (1, 1, 16384, 16, 16, 64),
    (1, 1, 16384, 8, 8, 256),
    (1, 1, 8192, 32, 8, 128),    # GQA (Llama-3-8B-like heads)
    (4, 1, 8192, 32, 8, 128),
    (1, 1, 32768, 32, 8, 128),
    (1, 1, 2048, 32, 8, 128),
    (1, 1, 32768, 32, 1, 128),   # MQA
]


def cases(smoke: bool, cpu: bool = False):
    if cpu:
        shapes = [(1, 1, 300, 2, 2, 64), (2, 16, 200, 2, 2, 128), (1, 1, 200, 4, 2, 64)]
    else:
        shapes = SHAPES[:2] if smoke else SHAPES
    for B, Sq, Sk, H, Hkv, d in shapes:
        yield {"B": B, "Sq": Sq, "Sk": Sk, "H": H, "Hkv": Hkv, "d": d,
               "device": "cpu" if cpu else "cuda"}


def _inputs(B, Sq, Sk, H, Hkv, d, dev):
    import torch

    dt = A.dtype_for(dev)

    def gen(seed):
        g = common.generator(dev, seed)
        q = torch.randn(B, Sq, H, d, generator=g, device=dev, dtype=dt)
        k = torch.randn(B, Sk, Hkv, d, generator=g, device=dev, dtype=dt)
        v = torch.randn(B, Sk, Hkv, d, generator=g, device=dev, dtype=dt)
        return q, k, v

    return gen, 2 * (2 * B * Sq * H * d + 2 * B * Sk * Hkv * d)


def _unsplit(dw):
    def fn(q, k, v):
        old = os.environ.get("DEEPWELL_ATTN_SPLITS")
        os.environ["DEEPWELL_ATTN_SPLITS"] = "1"
        try:
            return dw.attention(q, k, v)
        finally:
            if old is None:
                del os.environ["DEEPWELL_ATTN_SPLITS"]
            else:
                os.environ["DEEPWELL_ATTN_SPLITS"] = old

    return fn


def run(case: dict) -> dict:
    B, Sq, Sk, H, d, dev = (case[k] for k in ("B", "Sq", "Sk", "H", "d", "device"))
    Hkv = case.get("Hkv", H)
    gqa = Hkv != H
    gen, nbytes = _inputs(B, Sq, Sk, H, Hkv, d, dev)
    out_bytes = 2 * B * Sq * H * d
    chk = A.check(False)
    dw, err = common.deepwell_module()
    variants = [
        A.deepwell_variant(False, gen, nbytes, out_bytes),
        Variant("deepwell_unsplit", _unsplit(dw) if dw else None, gen, chk, nbytes, out_bytes,
                unavailable=err, ours=True),
    ]
    cuda_only = None if dev == "cuda" else "CUDA backends only"
    baselines = ["sdpa_flash", "sdpa_cudnn", "sdpa_efficient"]
    for name, backend in zip(baselines, ("FLASH_ATTENTION", "CUDNN_ATTENTION",
                                         "EFFICIENT_ATTENTION")):
        variants.append(Variant(name, A.sdpa(backend, False, gqa), gen, chk, nbytes, out_bytes,
                                unavailable=cuda_only))
    if dev == "cpu":
        variants.append(Variant("sdpa", A.sdpa(None, False, gqa), gen, chk, nbytes, out_bytes))
        baselines = ["sdpa"]
    label = f"B={B} Sq={Sq} Sk={Sk} H={H} Hkv={Hkv} d={d}"
    fl = 4.0 * B * H * Sq * Sk * d
    res = common.run_variants(variants, dev, fl, label, graph=dev == "cuda")
    us = {n: common.metric(r, "median_us") for n, r in res.items()}
    best_name, best = common.best_of(res, baselines, "median_us", higher=False)
    ratios = {"best_sdpa/deepwell": common.ratio(best, us["deepwell"]),
              "unsplit/deepwell": common.ratio(us["deepwell_unsplit"], us["deepwell"])}
    return {"case": {k: case[k] for k in CASE_KEYS}, "label": label, "flops": fl,
            "variants": res, "best_baseline": best_name, "ratios": ratios}


def plot(doc: dict, path):
    import plots

    plots.bars(doc, path, y="median_us", ylabel="median time, µs (lower is better)")

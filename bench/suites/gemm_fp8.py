"""FP8 (e4m3) GEMM with bf16 output: torch._scaled_mm tensorwise / rowwise (and blockwise, which
sm_90 builds of PyTorch reject) vs deepwell.gemm_fp8 at every scaling granularity; plus e4m3 x
e5m2 (an e5m2 weight, e.g. a gradient) with tensor scaling against torch._scaled_mm's.

Operands: A (M, K) row-major; B stored (N, K) K-major (a weight as quantize() writes it) and
passed as its (K, N) transpose view, the layout cuBLAS wants. deepwell gets its scales as
include/deepwell/gemm.hpp's Fp8Scaling describes them (keep the two in step):
  granularity  scale_a                                scale_b
  tensor       f32 (1)                                f32 (1)
  row          f32 (M, 1)                             f32 (1, N)
  block        f32 (M, K/128), unit stride along M    f32 (N/128, K/128), row-major
  mx           ue8m0 (M, K/32)                        ue8m0 (N, K/32)
(the block layouts are the ones the CUDA kernel reads without a copy). PyTorch gets the shapes
torch._scaled_mm documents: () / (M, 1) and (1, N) / (M, K/128) and (K/128, N/128), the block
scales outer-dim-major. The reference is the float64 product of the dequantized operands.
"""
from __future__ import annotations

import common
import refs
from common import Variant

NAME = "gemm_fp8"
METRIC = "tflops"
CASE_KEYS = ["M", "N", "K"]
BLOCKS = {  # granularity -> (block of A (M, K), block of B's storage (N, K))
    "tensor": lambda M, N, K: ((M, K), (N, K)),
    "row": lambda M, N, K: ((1, K), (1, K)),
    "block": lambda M, N, K: ((1, 128), (128, 128)),
    "mx": lambda M, N, K: ((1, 32), (1, 32)),
}


def cases(smoke: bool, cpu: bool = False):
    dev = "cpu" if cpu else "cuda"
    shapes = [(256, 256, 256), (128, 384, 1024)] if cpu else [(8192, 8192, 8192),
                                                               (4096, 7168, 16384)]
    for M, N, K in shapes:
        yield {"M": M, "N": N, "K": K, "device": dev}


def _torch_scales(gran: str, sa, sw):
    if gran == "tensor":
        return sa.reshape(()), sw.reshape(())
    if gran == "row":
        return sa, sw.t().contiguous()
    return sa.t().contiguous().t(), sw.t()  # block: (M, K/128), (K/128, N/128) outer-dim-major


def _inputs(M: int, N: int, K: int, gran: str, dev: str, for_torch: bool, e5m2: bool = False):
    """gen(seed) -> (a e4m3 (M, K), b e4m3 (or e5m2) (K, N) view of (N, K), scale_a, scale_b)."""
    import torch

    ba, bw = BLOCKS[gran](M, N, K)

    def gen(seed):
        g = common.generator(dev, seed)
        a, sa = refs.quantize(torch.randn(M, K, generator=g, device=dev), ba, pow2=gran == "mx")
        w, sw = refs.quantize(torch.randn(N, K, generator=g, device=dev), bw, pow2=gran == "mx",
                              e5m2=e5m2)
        if for_torch:
            sa, sw = _torch_scales(gran, sa, sw)
        elif gran == "tensor":
            sa, sw = sa.reshape(1), sw.reshape(1)
        elif gran == "row":
            sw = sw.reshape(1, N)
        elif gran == "block":
            sa = sa.t().contiguous().t()
        elif gran == "mx":
            sa, sw = sa.to(torch.float8_e8m0fnu), sw.to(torch.float8_e8m0fnu)
        return a, w.t(), sa, sw

    return gen, M * K + N * K


def _check(gran: str, M: int, N: int, K: int, for_torch: bool):
    ba, bw = BLOCKS[gran](M, N, K)

    def check(out, args):
        a, b, sa, sb = args
        # back to the scales of B's (N, K) storage, (N / bn, K / bk)
        sw = sb.reshape(N, 1) if gran == "row" else sb.t() if for_torch and gran == "block" else sb
        return refs.gemm_check(
            out, lambda i: a[i].double() * refs.expand_scale(sa, ba, i, None),
            lambda j: (b.t()[j].double() * refs.expand_scale(sw, bw, j, None)).t(), M, N)

    return check


def run(case: dict) -> dict:
    import torch

    M, N, K, dev = (case[k] for k in ("M", "N", "K", "device"))
    out_bytes = 2 * M * N
    variants = []
    def scaled_mm(a, b, sa, sb):
        return torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)

    for gran in ("tensor", "row", "block"):
        gen, nbytes = _inputs(M, N, K, gran, dev, for_torch=True)
        variants.append(Variant(f"torch_{gran}", scaled_mm, gen, _check(gran, M, N, K, True), nbytes,
                                out_bytes))
    gen, nbytes = _inputs(M, N, K, "tensor", dev, for_torch=True, e5m2=True)
    variants.append(Variant("torch_tensor_e5m2", scaled_mm, gen, _check("tensor", M, N, K, True),
                            nbytes, out_bytes))
    dw, err = common.deepwell_module()
    if dw is not None and not hasattr(dw, "gemm_fp8"):
        err = "not available: deepwell.gemm_fp8 is not in this build"
    for gran in BLOCKS:
        gen, nbytes = _inputs(M, N, K, gran, dev, for_torch=False)
        fn = (lambda g: lambda a, b, sa, sb: dw.gemm_fp8(a, b, sa, sb, granularity=g))(gran)
        variants.append(Variant(f"deepwell_{gran}", fn, gen, _check(gran, M, N, K, False), nbytes,
                                out_bytes, unavailable=err, ours=True))
    gen, nbytes = _inputs(M, N, K, "tensor", dev, for_torch=False, e5m2=True)
    fn = lambda a, b, sa, sb: dw.gemm_fp8(a, b, sa, sb, granularity="tensor")  # noqa: E731
    variants.append(Variant("deepwell_tensor_e5m2", fn, gen, _check("tensor", M, N, K, False),
                            nbytes, out_bytes, unavailable=err, ours=True))
    fl = 2.0 * M * N * K
    label = f"{M}x{N}x{K}"
    res = common.run_variants(variants, dev, fl, label)
    tf = {n: common.metric(r, "tflops") for n, r in res.items()}
    best_name, best = common.best_of(res, [f"torch_{g}" for g in ("tensor", "row", "block")],
                                     "tflops")
    ratios = {f"{g}/torch_{g}": common.ratio(tf[f"deepwell_{g}"], tf[f"torch_{g}"])
              for g in ("tensor", "row", "tensor_e5m2")}
    ratios.update({f"{g}/best_torch": common.ratio(tf[f"deepwell_{g}"], best)
                   for g in ("block", "mx")})
    return {"case": {k: case[k] for k in CASE_KEYS}, "label": label, "flops": fl,
            "variants": res, "best_baseline": best_name, "ratios": ratios}


def plot(doc: dict, path):
    import plots

    plots.bars(doc, path, y=doc["metric"],
               ylabel=common.UNITS[doc["metric"]] + " (higher is better)")

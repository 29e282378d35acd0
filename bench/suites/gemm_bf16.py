"""bf16 GEMM: deepwell.gemm vs torch.matmul (cuBLAS) on square and Llama-3 projection shapes,
and the fused bias + GELU(tanh) epilogue vs eager PyTorch (x @ w + b, then gelu) and
gelu(addmm(b, x, w)). Operands as in nn.Linear: x (M, K) row-major, the weight stored (N, K)
row-major and passed as its (K, N) transpose view. Ratio: deepwell TFLOP/s over the best PyTorch
way of computing the same op (> 1: deepwell faster)."""
from __future__ import annotations

import common
import refs
from common import Variant

NAME = "gemm_bf16"
METRIC = "tflops"
CASE_KEYS = ["shape", "op", "M", "N", "K"]
LLAMA = [("8B qkv", 6144, 4096), ("8B o", 4096, 4096), ("8B up+gate", 28672, 4096),
         ("8B down", 4096, 14336), ("70B qkv", 10240, 8192), ("70B up+gate", 57344, 8192),
         ("70B down", 8192, 28672)]
FUSED = "bias+gelu_tanh"


def cases(smoke: bool, cpu: bool = False):
    dev = "cpu" if cpu else "cuda"
    if cpu:  # every dimension / 16, M small: the CPU reference runs ~10 GFLOP/s
        squares, div, ms, fused = ([256] if smoke else [256, 512]), 16, [16, 64], (512, 256, 256)
    else:
        squares, div, ms, fused = [4096, 8192], 1, [128, 1024, 4096, 16384], (8192, 4096, 4096)
    shapes = [(f"{n}³", n, n, n) for n in squares]
    shapes += [(name + (f" /{div}" if div > 1 else ""), M, N // div, K // div)
               for name, N, K in LLAMA for M in ms]
    if smoke:
        keep = {("8B qkv", 0), ("8B o", 1), ("8B up+gate", 2), ("70B down", 3)}
        shapes = shapes[:1] + [s for s in shapes[len(squares):]
                               if (s[0].split(" /")[0], ms.index(s[1])) in keep]
    for shape, M, N, K in shapes:
        yield {"shape": shape, "op": "matmul", "M": M, "N": N, "K": K, "device": dev}
    M, N, K = fused
    yield {"shape": f"{M}x{N}x{K}", "op": FUSED, "M": M, "N": N, "K": K, "device": dev}


def _inputs(M: int, N: int, K: int, dev: str):
    import torch

    def gen(seed):
        g = common.generator(dev, seed)
        x = torch.randn(M, K, generator=g, device=dev, dtype=torch.bfloat16)
        w = torch.randn(N, K, generator=g, device=dev, dtype=torch.bfloat16) * K ** -0.5
        bias = torch.randn(N, generator=g, device=dev, dtype=torch.bfloat16)
        return x, w.t(), bias

    return gen, 2 * (M * K + N * K + N)


def run(case: dict) -> dict:
    import torch

    F = torch.nn.functional
    M, N, K, dev, op = (case[k] for k in ("M", "N", "K", "device", "op"))
    gen, nbytes = _inputs(M, N, K, dev)
    out_bytes = 2 * M * N

    def check(act):
        return lambda out, args: refs.gemm_check(
            out, lambda i: args[0][i].double(), lambda j: args[1][:, j].double(), M, N,
            bias=args[2] if act else None, act=act)

    dw, err = common.deepwell_module()
    if op == "matmul":
        dw_fn = lambda x, w, b: dw.gemm(x, w)  # noqa: E731
    else:
        dw_fn = lambda x, w, b: dw.gemm(x, w, bias=b, activation="gelu_tanh")  # noqa: E731
    act = "gelu_tanh" if op == FUSED else None
    variants = [Variant("deepwell", dw_fn, gen, check(act), nbytes, out_bytes, unavailable=err,
                        ours=True),
                Variant("matmul", lambda x, w, b: torch.matmul(x, w), gen, check(None), nbytes,
                        out_bytes)]
    torch_names = ["matmul"]
    if op == FUSED:
        variants += [
            Variant("eager", lambda x, w, b: F.gelu(x @ w + b, approximate="tanh"), gen,
                    check(act), nbytes, out_bytes),
            Variant("addmm_gelu", lambda x, w, b: F.gelu(torch.addmm(b, x, w), approximate="tanh"),
                    gen, check(act), nbytes, out_bytes)]
        torch_names = ["eager", "addmm_gelu"]
    fl = 2.0 * M * N * K
    label = f"{case['shape']} M={M}" + (f" {op}" if op != "matmul" else "")
    res = common.run_variants(variants, dev, fl, label)
    best_name, best = common.best_of(res, torch_names, "tflops")
    return {"case": {k: case[k] for k in CASE_KEYS}, "label": label, "flops": fl,
            "variants": res, "best_baseline": best_name,
            "ratios": {"deepwell/torch": common.ratio(common.metric(res["deepwell"], "tflops"),
                                                      best)}}


def plot(doc: dict, path):
    import plots

    plots.bars(doc, path, y=doc["metric"],
               ylabel=common.UNITS[doc["metric"]] + " (higher is better)")

"""float64 references for the correctness check that precedes every timing.

Full float64 references of the large cases would take gigabytes, so each check recomputes a
sample: a few (batch, head) pairs and a few hundred query rows for attention, a few hundred rows
and columns for GEMM (the first and last rows/columns always included). The whole output is
also checked for non-finite values, which catches elements the kernel never wrote (the output
block is poisoned with NaN before the call; see common._poison).
"""
from __future__ import annotations

import torch

from common import rel_err


def _sample(n: int, k: int, seed: int, device) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    idx = torch.randperm(n, generator=g)[:k]
    idx = torch.cat([idx, torch.tensor([0, n - 1])]).unique(sorted=True)
    return idx.to(device)


def attention_check(out, q, k, v, causal: bool, n_rows: int = 256, seed: int = 0) -> float:
    """Relative L2 error of out (B, S, H, d) against softmax(q k^T / sqrt d) v in float64, on
    sampled query rows of the first and last (batch, head). Sq == Sk here, so the causal mask
    (key j <= query i) is the same top-left or bottom-right aligned. GQA: k and v may have fewer
    heads (H a multiple of theirs); query head h reads K/V head h // (H / Hkv)."""
    if not bool(torch.isfinite(out).all()):
        return float("nan")
    B, S, H, d = q.shape
    Sk = k.shape[1]
    group = H // k.shape[2]
    rows = _sample(S, n_rows, seed, q.device)
    keys = torch.arange(Sk, device=q.device)
    outs, refs = [], []
    for b in sorted({0, B - 1}):
        for h in sorted({0, H - 1}):
            s = (q[b, rows, h].double() @ k[b, :, h // group].double().T) * d ** -0.5
            if causal:
                s = s.masked_fill(keys[None, :] > rows[:, None] + (Sk - S), float("-inf"))
            refs.append(torch.softmax(s, dim=-1) @ v[b, :, h // group].double())
            outs.append(out[b, rows, h])
    return rel_err(torch.cat(outs), torch.cat(refs))


def gemm_check(out, a_rows, b_cols, M: int, N: int, bias=None, act: str | None = None,
               n_rows: int = 256, n_cols: int = 512, seed: int = 0) -> float:
    """Relative L2 error of out (M, N) against act(A @ B + bias) in float64 on sampled rows and
    columns. a_rows(idx) -> float64 (len(idx), K); b_cols(idx) -> float64 (K, len(idx))."""
    if not bool(torch.isfinite(out).all()):
        return float("nan")
    i = _sample(M, n_rows, seed, out.device)
    j = _sample(N, n_cols, seed + 1, out.device)
    ref = a_rows(i) @ b_cols(j)
    if bias is not None:
        ref = ref + bias[j].double()
    if act == "gelu_tanh":
        ref = torch.nn.functional.gelu(ref, approximate="tanh")
    return rel_err(out[i][:, j], ref)


# ------------------------------------------------------------------------------ fp8 scaling
E4M3_MAX = 448.0
E5M2_MAX = 57344.0


def quantize(x: torch.Tensor, block: tuple[int, int], pow2: bool = False, e5m2: bool = False):
    """x (R, C) float32 -> (q e4m3 (or e5m2) (R, C), scale float32 (R/br, C/bc)) with
    x ~= q * scale blockwise. pow2 rounds each scale up to a power of two (MX / ue8m0 scales)."""
    R, C = x.shape
    br, bc = block
    top, dtype = (E5M2_MAX, torch.float8_e5m2) if e5m2 else (E4M3_MAX, torch.float8_e4m3fn)
    xb = x.reshape(R // br, br, C // bc, bc)
    scale = xb.abs().amax(dim=(1, 3)).clamp_min(1e-12) / top
    if pow2:
        scale = torch.exp2(torch.ceil(torch.log2(scale)))
    q = (xb / scale[:, None, :, None]).clamp(-top, top).to(dtype)
    return q.reshape(R, C), scale


def expand_scale(scale: torch.Tensor, block: tuple[int, int], rows, cols) -> torch.Tensor:
    """The float64 per-element scale of the sub-matrix (rows, cols) (index tensors, or None for
    all) of an operand quantized with this block shape."""
    s = scale.double().reshape(scale.shape[0] if scale.dim() == 2 else 1, -1)
    br, bc = block
    s = s if rows is None else s[rows // br]
    s = s if cols is None else s[:, cols // bc]
    if rows is None:
        s = s.repeat_interleave(br, dim=0)
    if cols is None:
        s = s.repeat_interleave(bc, dim=1)
    return s

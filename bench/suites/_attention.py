"""Pieces shared by the attention suites: BSHD inputs, and the deepwell / SDPA / flex callables.

Every callable takes BSHD tensors q, k, v (B, S, H, d) and returns a BSHD output. SDPA and flex
take (B, H, S, d), so they get q.transpose(1, 2) views of the same tensors (how a BSHD user
calls them) and their output is transposed back (a view, no copy).
"""
from __future__ import annotations

import functools

import common
import refs
from common import Variant


def dtype_for(device: str):
    import torch

    return torch.bfloat16


def inputs(B: int, S: int, H: int, d: int, device: str):
    """(gen, set_bytes): gen(seed) -> fresh random (q, k, v), bf16 BSHD."""
    import torch

    dt = dtype_for(device)

    def gen(seed):
        g = common.generator(device, seed)
        return tuple(torch.randn(B, S, H, d, generator=g, device=device, dtype=dt)
                     for _ in range(3))

    return gen, 3 * B * S * H * d * 2


def check(causal: bool):
    return lambda out, args: refs.attention_check(out, *args, causal=causal)


def deepwell_variant(causal: bool, gen, set_bytes: int, out_bytes: int,
                     name: str = "deepwell") -> Variant:
    dw, err = common.deepwell_module()
    fn = (lambda q, k, v: dw.attention(q, k, v, causal=causal)) if dw else None
    return Variant(name, fn, gen, check(causal), set_bytes, out_bytes, unavailable=err, ours=True)


def sdpa(backend: str | None, causal: bool, gqa: bool = False):
    """SDPA on transposed views; backend None = PyTorch's default selection. gqa: k and v have
    fewer heads than q (SDPA's enable_gqa; a backend without it raises, and the suite records it
    as unavailable)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    F = torch.nn.functional
    extra = {"enable_gqa": True} if gqa else {}
    if backend is None:
        return lambda q, k, v: F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal, **extra
        ).transpose(1, 2)
    be = [getattr(SDPBackend, backend)]

    def fn(q, k, v):
        with sdpa_kernel(be):
            return F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal,
                **extra
            ).transpose(1, 2)

    return fn


def raise_recompile_limits():
    """Static shapes recompile per case; keep torch.compile from falling back to eager."""
    import torch._dynamo

    for key in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, key):
            setattr(torch._dynamo.config, key, 4096)


@functools.cache
def compiled_flex():
    import torch
    from torch.nn.attention.flex_attention import flex_attention

    raise_recompile_limits()
    return torch.compile(flex_attention, dynamic=False)


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def flex(S: int, causal: bool, device: str):
    """flex_attention compiled with torch.compile; causal through a block mask. The mask is
    built on the first call (the untimed correctness call), as a model builds it once."""
    state = {}

    def fn(q, k, v):
        if not state:
            from torch.nn.attention.flex_attention import create_block_mask

            state["f"] = compiled_flex()
            state["mask"] = (create_block_mask(_causal, None, None, S, S, device=device)
                             if causal else None)
        return state["f"](q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                          block_mask=state["mask"]).transpose(1, 2)

    return fn


def flops(B: int, H: int, S: int, d: int, causal: bool) -> float:
    """Forward FLOPs, FA3 convention: 4·B·H·S²·d, halved when causal."""
    f = 4.0 * B * H * S * S * d
    return f / 2 if causal else f

"""torch custom ops for deepwell, with fake (meta) implementations and autograd.

deepwell.attention() calls straight into the native library in eager mode (lowest overhead); it
routes through these ops when torch.compile is tracing or when autograd must record the call.
Both paths run the same kernels on the caller's current stream, so CUDA graphs capture either.
"""
from __future__ import annotations

from typing import Optional

import torch

from . import ops

Tensor = torch.Tensor


def _lse_shape(q: Tensor, varlen: bool):
    return (q.shape[1], q.shape[0]) if varlen else (q.shape[0], q.shape[2], q.shape[1])


@torch.library.custom_op("deepwell::attention_fwd", mutates_args=())
def attention_fwd(q: Tensor, k: Tensor, v: Tensor, bias: Optional[Tensor],
                  cu_seqlens_q: Optional[Tensor], cu_seqlens_k: Optional[Tensor],
                  max_seqlen_q: int, max_seqlen_k: int, scale: float, causal: bool,
                  window_left: int, window_right: int) -> tuple[Tensor, Tensor]:
    varlen = cu_seqlens_q is not None
    out = torch.empty_like(q)
    lse = torch.empty(_lse_shape(q, varlen) if q.ndim in (3, 4) else (0,), dtype=torch.float32,
                      device=q.device)
    ops.forward_into(q, k, v, out, lse, causal=causal, window=(window_left, window_right),
                     scale=scale if scale > 0 else None, bias=bias, cu_seqlens_q=cu_seqlens_q,
                     cu_seqlens_k=cu_seqlens_k,
                     max_seqlen_q=max_seqlen_q if max_seqlen_q >= 0 else None,
                     max_seqlen_k=max_seqlen_k if max_seqlen_k >= 0 else None)
    return out, lse


@attention_fwd.register_fake
def _attention_fwd_fake(q, k, v, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                        scale, causal, window_left, window_right):
    varlen = cu_seqlens_q is not None
    return (torch.empty_like(q),
            q.new_empty(_lse_shape(q, varlen), dtype=torch.float32))


@torch.library.custom_op("deepwell::attention_bwd", mutates_args=())
def attention_bwd(dout: Tensor, q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor,
                  bias: Optional[Tensor], cu_seqlens_q: Optional[Tensor],
                  cu_seqlens_k: Optional[Tensor], max_seqlen_q: int, max_seqlen_k: int,
                  scale: float, causal: bool, window_left: int,
                  window_right: int) -> tuple[Tensor, Tensor, Tensor]:
    return ops.attention_backward(
        dout.contiguous(), q, k, v, out, lse, causal=causal, window=(window_left, window_right),
        scale=scale if scale > 0 else None, bias=bias, cu_seqlens_q=cu_seqlens_q,
        cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q if max_seqlen_q >= 0 else None,
        max_seqlen_k=max_seqlen_k if max_seqlen_k >= 0 else None)


@attention_bwd.register_fake
def _attention_bwd_fake(dout, q, k, v, out, lse, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                        max_seqlen_k, scale, causal, window_left, window_right):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _setup_context(ctx, inputs, output):
    (q, k, v, bias, cu_q, cu_k, max_q, max_k, scale, causal, wl, wr) = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, bias, cu_q, cu_k)
    ctx.args = (max_q, max_k, scale, causal, wl, wr)


def _backward(ctx, dout, dlse):
    q, k, v, out, lse, bias, cu_q, cu_k = ctx.saved_tensors
    max_q, max_k, scale, causal, wl, wr = ctx.args
    dq, dk, dv = attention_bwd(dout, q, k, v, out, lse, bias, cu_q, cu_k, max_q, max_k, scale,
                               causal, wl, wr)
    return dq, dk, dv, None, None, None, None, None, None, None, None, None


attention_fwd.register_autograd(_backward, setup_context=_setup_context)


def attention(q, k, v, *, causal, window, scale, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
              max_seqlen_k):
    """(out, lse) through the custom op; `window` is already (left, right) with -1 = unbounded,
    `scale` NaN means 1/sqrt(D)."""
    s = scale if scale == scale else -1.0  # NaN -> default, encoded as -1 in the op schema
    return attention_fwd(q, k, v, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                         s, bool(causal), window[0], window[1])

"""float64 attention oracle in torch (any device), FlashAttention semantics."""
import math

import torch


def dense(q, k, v, *, causal=False, window=None, scale=None, bias=None):
    """q (B, Sq, Hq, D), k/v (B, Sk, Hkv, D) -> out (B, Sq, Hq, D) and lse (B, Hq, Sq), float64.
    Rows that see no key give out 0 and lse -inf."""
    B, Sq, Hq, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    qf, kf, vf = q.double(), k.double(), v.double()
    if Hq != Hkv:
        kf = kf.repeat_interleave(Hq // Hkv, dim=2)
        vf = vf.repeat_interleave(Hq // Hkv, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", qf, kf) * scale
    if bias is not None:
        s = s + bias.double()
    i = torch.arange(Sq, device=q.device)[:, None]
    j = torch.arange(Sk, device=q.device)[None, :]
    diag = i + (Sk - Sq)
    left, right = (None, None) if window is None else window
    if causal:
        right = 0
    allowed = torch.ones(Sq, Sk, dtype=torch.bool, device=q.device)
    if left is not None and left >= 0:
        allowed &= j >= diag - left
    if right is not None and right >= 0:
        allowed &= j <= diag + right
    s = s.masked_fill(~allowed, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None])
    p = torch.nan_to_num(p, nan=0.0)
    out = torch.einsum("bhqk,bkhd->bqhd", p, vf)
    return out, lse


def varlen(q, k, v, cu_q, cu_k, **kw):
    """Packed q (total_q, Hq, D), k/v (total_k, Hkv, D) -> out like q, lse (Hq, total_q)."""
    out = torch.zeros(q.shape, dtype=torch.float64, device=q.device)
    lse = torch.full((q.shape[1], q.shape[0]), float("-inf"), dtype=torch.float64,
                     device=q.device)
    cq, ck = cu_q.tolist(), cu_k.tolist()
    for b in range(len(cq) - 1):
        q0, q1, k0, k1 = cq[b], cq[b + 1], ck[b], ck[b + 1]
        if q1 == q0:
            continue
        o, l = dense(q[None, q0:q1], k[None, k0:k1], v[None, k0:k1], **kw)
        out[q0:q1] = o[0]
        lse[:, q0:q1] = l[0]
    return out, lse


def rel_l2(got, ref):
    """Relative L2 error over the finite reference entries; non-finite entries must match."""
    got, ref = got.double(), ref.double()
    finite = torch.isfinite(ref)
    assert torch.equal(torch.isfinite(got), finite), "non-finite pattern differs"
    if not finite.all():
        assert torch.equal(got[~finite], ref[~finite]), "infinities differ"
    g, r = got[finite], ref[finite]
    den = torch.linalg.norm(r).item()
    num = torch.linalg.norm(g - r).item()
    return num / den if den > 0 else num

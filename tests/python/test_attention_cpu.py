"""deepwell.attention on the CPU backend (numpy and torch inputs) against float64 oracles."""
import math

import numpy as np
import pytest

import deepwell


def np_attention(q, k, v, causal=False, window=None, scale=None):
    """float64 numpy oracle, q (B, Sq, Hq, D)."""
    B, Sq, Hq, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    scale = 1 / math.sqrt(D) if scale is None else scale
    k = np.repeat(k.astype(np.float64), Hq // Hkv, axis=2)
    v = np.repeat(v.astype(np.float64), Hq // Hkv, axis=2)
    s = np.einsum("bqhd,bkhd->bhqk", q.astype(np.float64), k) * scale
    i, j = np.arange(Sq)[:, None], np.arange(Sk)[None, :]
    diag = i + Sk - Sq
    left, right = (-1, -1) if window is None else window
    if causal:
        right = 0
    allowed = np.ones((Sq, Sk), bool)
    if left >= 0:
        allowed &= j >= diag - left
    if right >= 0:
        allowed &= j <= diag + right
    s = np.where(allowed, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(s - m)
    l = e.sum(-1, keepdims=True)
    p = np.divide(e, l, out=np.zeros_like(e), where=l > 0)
    lse = np.where(l[..., 0] > 0, np.log(np.where(l[..., 0] > 0, l[..., 0], 1)) + m[..., 0], -np.inf)
    return np.einsum("bhqk,bkhd->bqhd", p, v), lse


def rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 17, 33, 4, 2, 16), (1, 40, 9, 2, 1, 32), (2, 1, 1, 1, 1, 8)])
def test_numpy_inputs(shape, causal, seed):
    B, Sq, Sk, Hq, Hkv, D = shape
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B, Sq, Hq, D), dtype=np.float32)
    k = rng.standard_normal((B, Sk, Hkv, D), dtype=np.float32)
    v = rng.standard_normal((B, Sk, Hkv, D), dtype=np.float32)
    out, lse = deepwell.attention(q, k, v, causal=causal, return_lse=True)
    ref, ref_lse = np_attention(q, k, v, causal)
    assert out.dtype == np.float32 and out.shape == q.shape
    assert rel(out, ref) < 1e-5
    finite = np.isfinite(ref_lse)
    assert np.array_equal(np.isfinite(lse), finite)
    assert rel(lse[finite], ref_lse[finite]) < 1e-5


def test_window_and_scale(seed):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((2, 30, 2, 16), dtype=np.float32) for _ in range(3))
    out = deepwell.attention(q, k, v, window=(4, 2), scale=0.2)
    assert rel(out, np_attention(q, k, v, window=(4, 2), scale=0.2)[0]) < 1e-5


def test_float16_numpy(seed):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((1, 25, 2, 16)).astype(np.float16) for _ in range(3))
    out = deepwell.attention(q, k, v)
    assert out.dtype == np.float16
    assert rel(out.astype(np.float64), np_attention(q, k, v)[0]) < 2e-3


def test_varlen_numpy(seed):
    rng = np.random.default_rng(seed)
    lens_q, lens_k = [3, 0, 7], [5, 2, 0]
    q = rng.standard_normal((10, 2, 8), dtype=np.float32)
    k = rng.standard_normal((7, 1, 8), dtype=np.float32)
    v = rng.standard_normal((7, 1, 8), dtype=np.float32)
    cu_q = np.array([0, 3, 3, 10], np.int32)
    cu_k = np.array([0, 5, 7, 7], np.int32)
    out, lse = deepwell.attention(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, causal=True,
                                  return_lse=True)
    assert lse.shape == (2, 10)
    ref0, _ = np_attention(q[None, 0:3], k[None, 0:5], v[None, 0:5], causal=True)
    assert rel(out[0:3], ref0[0]) < 1e-5
    assert (out[3:] == 0).all() and np.isneginf(lse[:, 3:]).all()  # third sequence has no keys


def test_torch_cpu_bf16_and_backward(seed):
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 19, 4, 32, generator=g, dtype=torch.float64)
    k = torch.randn(2, 23, 2, 32, generator=g, dtype=torch.float64)
    v = torch.randn(2, 23, 2, 32, generator=g, dtype=torch.float64)
    qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
    out = deepwell.attention(qf, kf, vf, causal=True)
    w = torch.randn(out.shape, generator=g)
    (out * w).sum().backward()
    # float64 reference through torch's own autograd
    q64, k64, v64 = (t.clone().requires_grad_() for t in (q, k, v))
    kk, vv = k64.repeat_interleave(2, 2), v64.repeat_interleave(2, 2)
    ref = torch.nn.functional.scaled_dot_product_attention(
        q64.transpose(1, 2), kk.transpose(1, 2), vv.transpose(1, 2), is_causal=False,
        attn_mask=torch.ones(19, 23, dtype=torch.bool).tril(23 - 19)).transpose(1, 2)
    (ref * w.double()).sum().backward()
    assert (out.detach().double() - ref).norm() / ref.norm() < 1e-5
    for got, want in ((qf.grad, q64.grad), (kf.grad, k64.grad), (vf.grad, v64.grad)):
        assert (got.double() - want).norm() / want.norm() < 1e-4
    bf = deepwell.attention(q.bfloat16(), k.bfloat16(), v.bfloat16())
    assert bf.dtype == torch.bfloat16

"""deepwell.gemm on the CPU backend against float64 numpy."""
import math

import numpy as np
import pytest

import deepwell


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


ACTS = {
    "none": lambda x: x,
    "relu": lambda x: np.maximum(x, 0),
    "gelu": lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "gelu_tanh": gelu_tanh,
    "silu": lambda x: x / (1 + np.exp(-x)),
}


def rel(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)


@pytest.mark.parametrize("act", sorted(ACTS))
@pytest.mark.parametrize("mnk", [(1, 1, 1), (7, 13, 5), (33, 65, 129)])
def test_epilogues(mnk, act, seed):
    M, N, K = mnk
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    bias = rng.standard_normal(N, dtype=np.float32)
    c = rng.standard_normal((M, N), dtype=np.float32)
    r = rng.standard_normal((M, N), dtype=np.float32)
    d = deepwell.gemm(a, b, bias=bias, c=c, alpha=0.5, beta=2.0, activation=act, residual=r)
    ref = ACTS[act](0.5 * a.astype(np.float64) @ b + 2.0 * c + bias) + r
    assert rel(d, ref) < 1e-5


def test_column_major_and_batched(seed):
    rng = np.random.default_rng(seed)
    a = np.asfortranarray(rng.standard_normal((17, 9), dtype=np.float32))
    b = rng.standard_normal((9, 11), dtype=np.float32).T.copy().T  # column-major view
    assert rel(deepwell.gemm(a, b), a.astype(np.float64) @ b) < 1e-5
    ab = rng.standard_normal((3, 5, 7), dtype=np.float32)
    bb = rng.standard_normal((7, 4), dtype=np.float32)  # broadcast over the batch
    out = deepwell.gemm(ab, bb)
    assert out.shape == (3, 5, 4) and rel(out, ab.astype(np.float64) @ bb) < 1e-5


def test_out_dtype_torch(seed):
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(31, 64, generator=g, dtype=torch.bfloat16)
    b = torch.randn(64, 40, generator=g, dtype=torch.bfloat16)
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        d = deepwell.gemm(a, b, out_dtype=dt)
        assert d.dtype == dt
        ref = a.double() @ b.double()
        assert (d.double() - ref).norm() / ref.norm() < 1e-2


def test_plan_override_spec():
    """The tuning hook's spec is checked field by field (no GPU needed); a build without CUDA
    accepts only the empty spec."""
    from deepwell import _C

    _C.set_gemm_plan_override("")
    if not deepwell.built_with_cuda():
        with pytest.raises(NotImplementedError, match="no CUDA kernels"):
            _C.set_gemm_plan_override("bf16_kk_bf16_128x256")
        return
    with pytest.raises(ValueError, match="argument 'spec'.*got 'nope'.*no kernel named 'nope'"):
        _C.set_gemm_plan_override("nope")
    with pytest.raises(ValueError, match="swizzle '3'"):
        _C.set_gemm_plan_override("bf16_kk_bf16_128x256,dp,1,h,3")
    _C.set_gemm_plan_override("bf16_kk_bf16_128x256,streamk")
    _C.set_gemm_plan_override("")


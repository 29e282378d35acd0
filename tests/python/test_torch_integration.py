"""torch integration: custom ops with fake impls (torch.compile), autograd, opcheck, on CPU."""
import pytest

torch = pytest.importorskip("torch")
import deepwell  # noqa: E402
from deepwell import torch_ops  # noqa: E402, F401  (registers the ops)


def qkv(seed, requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2, 16, 4, 32, generator=g).requires_grad_(requires_grad) for _ in range(3)]


def test_custom_op_opcheck(seed):
    q, k, v = qkv(seed)
    torch.library.opcheck(torch.ops.deepwell.attention_fwd.default,
                          (q, k, v, None, None, None, -1, -1, -1.0, True, -1, -1),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_static"))


def test_compile_fullgraph_matches_eager(seed):
    q, k, v = qkv(seed)

    def f(q, k, v):
        return deepwell.attention(q, k, v, causal=True) + 1

    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    assert torch.equal(compiled(q, k, v), f(q, k, v))


def test_autograd_through_custom_op(seed):
    q, k, v = qkv(seed, requires_grad=True)
    out = deepwell.attention(q, k, v, causal=True)
    out.square().sum().backward()
    q2, k2, v2 = (t.detach().clone().requires_grad_() for t in (q, k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(
        q2.transpose(1, 2), k2.transpose(1, 2), v2.transpose(1, 2), is_causal=True).transpose(1, 2)
    ref.square().sum().backward()
    for got, want in ((q.grad, q2.grad), (k.grad, k2.grad), (v.grad, v2.grad)):
        assert (got - want).norm() / want.norm() < 1e-4


def test_return_lse_through_compile(seed):
    q, k, v = qkv(seed)

    @torch.compile(backend="aot_eager", fullgraph=True)
    def f(q, k, v):
        return deepwell.attention(q, k, v, return_lse=True)

    out, lse = f(q, k, v)
    assert lse.shape == (2, 4, 16) and lse.dtype == torch.float32

"""deepwell.gemm_fp8 on CPU tensors (the reference backend): the Python surface, argument
handling and the fp8 decode-and-multiply fallback. Runs everywhere torch does."""
import pytest

torch = pytest.importorskip("torch")
import deepwell  # noqa: E402

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def rel_l2(got, ref) -> float:
    got, ref = got.double(), ref.double()
    assert torch.isfinite(got).all()
    return ((got - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def block_scales(m, n, k):
    kb = -(-k // 128)
    return torch.rand(m, kb) + 0.5, torch.rand(-(-n // 128), kb) + 0.5


@pytest.mark.parametrize("granularity", ["tensor", "row", "block", "mx"])
@pytest.mark.parametrize("b_dtype", [E4M3, E5M2])
def test_fp8_cpu_reference(granularity, b_dtype):
    m, n, k = 9, 140, 300
    a = torch.randn(m, k).to(E4M3)
    b = torch.randn(n, k).to(b_dtype).t()
    kk = torch.arange(k)
    if granularity == "tensor":
        sa, sb = torch.tensor([0.5]), torch.tensor([2.0])
        ad, bd = a.double() * 0.5, b.double() * 2.0
    elif granularity == "row":
        sa, sb = torch.rand(m) + 0.5, torch.rand(n) + 0.5
        ad, bd = a.double() * sa.double()[:, None], b.double() * sb.double()[None, :]
    elif granularity == "block":
        sa, sb = block_scales(m, n, k)
        ad = a.double() * sa.double()[:, kk // 128]
        bd = b.double() * sb.double()[torch.arange(n) // 128][:, kk // 128].t()
    else:
        sa = torch.randint(120, 135, (m, -(-k // 32)), dtype=torch.uint8)
        sb = torch.randint(120, 135, (n, -(-k // 32)), dtype=torch.uint8)
        ad = a.double() * (2.0 ** (sa.double() - 127))[:, kk // 32]
        bd = b.double() * (2.0 ** (sb.double() - 127))[:, kk // 32].t()
    out = deepwell.gemm_fp8(a, b, sa, sb, granularity=granularity, out_dtype=torch.float32)
    assert out.shape == (m, n) and out.dtype == torch.float32
    assert rel_l2(out, ad @ bd) <= 1e-5


def test_fp8_fused_epilogue_cpu():
    m, n, k = 6, 20, 64
    a, b = torch.randn(m, k).to(E4M3), torch.randn(k, n).to(E4M3)
    sa, sb = torch.rand(m) + 0.5, torch.rand(n) + 0.5
    bias, c, r = torch.randn(n), torch.randn(m, n), torch.randn(m, n)
    out = deepwell.gemm_fp8(a, b, sa, sb, granularity="row", bias=bias, c=c, alpha=0.5, beta=2.0,
                            activation="silu", residual=r, out_dtype=torch.float32)
    x = 0.5 * ((a.double() * sa.double()[:, None]) @ (b.double() * sb.double()[None, :]))
    ref = torch.nn.functional.silu(x + 2.0 * c.double() + bias.double()) + r.double()
    assert rel_l2(out, ref) <= 1e-5


def test_fp8_argument_errors():
    a, b = torch.randn(4, 32).to(E4M3), torch.randn(32, 8).to(E4M3)
    one = torch.ones(1)
    with pytest.raises(ValueError, match="granularity"):
        deepwell.gemm_fp8(a, b, one, one, granularity="blockwise")
    with pytest.raises(ValueError, match="argument 'scale_a'"):
        deepwell.gemm_fp8(a, b, torch.ones(3), torch.ones(8), granularity="row")
    with pytest.raises(TypeError, match="argument 'a'"):
        deepwell.gemm_fp8(a.float(), b, one, one)
    with pytest.raises(TypeError, match="argument 'scale_b'"):
        deepwell.gemm_fp8(a, b, one, one.double())

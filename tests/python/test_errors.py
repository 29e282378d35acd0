"""Bad input raises ValueError / TypeError / NotImplementedError carrying the library's message."""
import numpy as np
import pytest

import deepwell


def f32(*shape):
    return np.ones(shape, np.float32)


def test_non_tensor_argument():
    with pytest.raises(TypeError, match="argument 'q': expected a torch.Tensor"):
        deepwell.attention([1, 2], f32(1, 2, 1, 8), f32(1, 2, 1, 8))


def test_unsupported_numpy_dtype():
    x = np.ones((1, 2, 1, 8), np.float64)
    with pytest.raises(TypeError, match="argument 'q'"):
        deepwell.attention(x, x, x)


def test_dtype_mismatch_is_type_error():
    with pytest.raises(TypeError, match="argument 'k': expected dtype f32"):
        deepwell.attention(f32(1, 2, 1, 8), np.ones((1, 2, 1, 8), np.float16), f32(1, 2, 1, 8))


def test_shape_mismatch_is_value_error():
    with pytest.raises(ValueError, match="argument 'v'"):
        deepwell.attention(f32(1, 2, 1, 8), f32(1, 2, 1, 8), f32(1, 3, 1, 8))


def test_bad_rank():
    with pytest.raises(ValueError, match="argument 'q': expected a 4-D tensor"):
        deepwell.attention(f32(2, 8), f32(2, 8), f32(2, 8))


def test_gqa_heads_must_divide():
    with pytest.raises(ValueError, match="divides"):
        deepwell.attention(f32(1, 2, 4, 8), f32(1, 2, 3, 8), f32(1, 2, 3, 8))


def test_window_type():
    x = f32(1, 2, 1, 8)
    with pytest.raises(TypeError, match="argument 'window'"):
        deepwell.attention(x, x, x, window=3)
    with pytest.raises(TypeError, match="argument 'window'"):
        deepwell.attention(x, x, x, window=(1.5, 2))


def test_scale_value():
    x = f32(1, 2, 1, 8)
    with pytest.raises(ValueError, match="argument 'scale'"):
        deepwell.attention(x, x, x, scale=-1.0)
    with pytest.raises(TypeError, match="argument 'scale'"):
        deepwell.attention(x, x, x, scale="big")


def test_causal_with_right_window():
    x = f32(1, 2, 1, 8)
    with pytest.raises(ValueError, match="window_right"):
        deepwell.attention(x, x, x, causal=True, window=(None, 3))


def test_varlen_errors():
    q = f32(6, 2, 8)
    cu = np.array([0, 4, 6], np.int32)
    with pytest.raises(ValueError, match="cu_seqlens_k"):
        deepwell.attention(q, q, q, cu_seqlens_q=cu)
    with pytest.raises(ValueError, match="non-decreasing"):
        deepwell.attention(q, q, q, cu_seqlens_q=np.array([0, 5, 4], np.int32), cu_seqlens_k=cu)
    with pytest.raises(TypeError, match="cu_seqlens_q"):
        deepwell.attention(q, q, q, cu_seqlens_q=cu.astype(np.float32), cu_seqlens_k=cu)
    with pytest.raises(ValueError, match="max_seqlen_q"):
        deepwell.attention(q, q, q, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=-2)


def test_gemm_errors():
    with pytest.raises(ValueError, match="argument 'b'"):
        deepwell.gemm(f32(3, 4), f32(5, 6))
    with pytest.raises(ValueError, match="argument 'activation'"):
        deepwell.gemm(f32(3, 4), f32(4, 6), activation="tanh")
    with pytest.raises(TypeError, match="argument 'out_dtype'"):
        deepwell.gemm(f32(3, 4), f32(4, 6), out_dtype="int8")
    with pytest.raises(ValueError, match="argument 'bias'"):
        deepwell.gemm(f32(3, 4), f32(4, 6), bias=f32(5))
    with pytest.raises(TypeError, match="argument 'alpha'"):
        deepwell.gemm(f32(3, 4), f32(4, 6), alpha="x")


def test_torch_errors():
    torch = pytest.importorskip("torch")
    x = torch.ones(1, 2, 1, 8)
    with pytest.raises(ValueError, match="CPU or CUDA"):
        deepwell.attention(x.to("meta"), x, x)
    with pytest.raises(TypeError, match="argument 'q'"):
        deepwell.attention(x.to(torch.int64), x, x)
    if not deepwell.built_with_cuda() or not torch.cuda.is_available():
        pass


def test_torch_tensors_read_natively():
    """torch tensors reach deepwell._C as they are (module.cpp reads them); each rule of the
    descriptor path holds there too, naming the argument."""
    torch = pytest.importorskip("torch")
    x = torch.randn(3, 4)
    w = torch.randn(4, 5)
    with pytest.raises(TypeError, match="argument 'a': expected a tensor of .* got torch.float64"):
        deepwell.gemm(x.double(), w)
    with pytest.raises(TypeError, match="argument 'b': expected a tensor of .* got torch.int64"):
        deepwell.gemm(x, w.long())
    with pytest.raises(TypeError, match="argument 'out': expected a tensor of .* got torch.float64"):
        deepwell.gemm(x, w, out=torch.empty(3, 5, dtype=torch.float64))
    with pytest.raises(ValueError, match="argument 'b': expected a CPU or CUDA tensor, got a tensor on meta"):
        deepwell.gemm(x, w.to("meta"))
    with pytest.raises(ValueError, match="argument 'q': expected at most 8 dimensions"):
        deepwell.attention(torch.ones((1,) * 9), x, x)
    # Subclasses (nn.Parameter) and strided views are read like plain tensors.
    wp = torch.nn.Parameter(torch.randn(5, 4)).t()
    with torch.no_grad():
        got = deepwell.gemm(x, wp)
        torch.testing.assert_close(got, x @ wp, rtol=1e-5, atol=1e-5)
        got = deepwell.gemm(x[:, ::2], torch.randn(2, 5))
    assert got.shape == (3, 5)


def test_backward_on_cuda_is_not_supported_message():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    x = torch.ones(1, 2, 1, 64, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError, match="CPU backend"):
        deepwell.attention_backward(x, x, x, x, x, torch.zeros(1, 1, 2, device="cuda"))

"""The deepwell ops: framework-neutral entry points over the native library.

Every function accepts torch tensors (CPU or CUDA), numpy arrays (CPU) or other DLPack tensors,
runs CUDA work on the caller's current stream, and raises ValueError / TypeError /
NotImplementedError with the library's message on bad input.
"""
from __future__ import annotations

import sys

from . import _tensors as T

_ACTIVATIONS = {"none": 0, "relu": 1, "gelu": 2, "gelu_erf": 2, "gelu_tanh": 3, "silu": 4}


_C = None
_torch_gemm = None  # deepwell._torch.gemm once looked up; False where it is absent or not usable
_torch_gemm_fp8 = None  # deepwell._torch.gemm_fp8, the same way
_torch_attention = None  # deepwell._torch.attention, the same way
_torch_quantize = None  # deepwell._torch.quantize (used by quant.quantize), the same way


def _native():
    global _C
    if _C is None:
        from . import _C as native

        _C = native
    return _C


def _window(window, causal: bool):
    if window is None:
        return -1, -1
    if not isinstance(window, (tuple, list)) or len(window) != 2:
        raise TypeError(f"argument 'window': expected a (left, right) pair, got {window!r}")
    left, right = window
    out = []
    for side, val in (("left", left), ("right", right)):
        if val is None:
            out.append(-1)
        elif isinstance(val, int) and not isinstance(val, bool):
            out.append(val if val >= 0 else -1)
        else:
            raise TypeError(f"argument 'window': expected int or None for the {side} side, "
                            f"got {val!r}")
    return out[0], out[1]


def _scale(scale) -> float:
    if scale is None:
        return float("nan")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"argument 'scale': expected a float, got {type(scale).__name__}")
    if not scale > 0:
        raise ValueError(f"argument 'scale': expected a positive value, got {scale}")
    return float(scale)


def _max_len(value, name: str) -> int:
    if value is None:
        return -1
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"argument '{name}': expected an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"argument '{name}': expected a non-negative int, got {value}")
    return value


def _lse_shape(q, varlen: bool):
    if varlen and q.ndim == 3:
        return (q.shape[1], q.shape[0])
    if not varlen and q.ndim == 4:
        return (q.shape[0], q.shape[2], q.shape[1])
    return None  # wrong rank: the native check reports it


def attention(q, k, v, *, causal: bool = False, window=None, scale=None, bias=None,
              cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
              return_lse: bool = False, out=None):
    """Fused multi-head attention forward.

    q: (B, Sq, Hq, D) and k, v: (B, Sk, Hkv, D), any strides with the last dim contiguous; or
    packed variable-length (total, H, D) with cu_seqlens_q / cu_seqlens_k (int32, B + 1) and
    max_seqlen_q / max_seqlen_k. Hq must be a multiple of Hkv (GQA/MQA). causal masks are
    bottom-right aligned when Sq != Sk; window = (left, right) keeps keys within those distances
    of the diagonal (None = unbounded). scale defaults to 1/sqrt(D). bias (B|1, Hq|1, Sq, Sk) is
    added to the scores (CPU only). Returns out, or (out, lse) with lse fp32 (B, Hq, Sq) /
    (Hq, total_q) when return_lse.
    """
    if T.is_torch(q):
        import torch

        needs_graph = torch.compiler.is_compiling() or (
            torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad))
        if needs_graph:
            from . import torch_ops

            res = torch_ops.attention(q, k, v, causal=causal, window=_window(window, causal),
                                      scale=_scale(scale), bias=bias, cu_seqlens_q=cu_seqlens_q,
                                      cu_seqlens_k=cu_seqlens_k,
                                      max_seqlen_q=_max_len(max_seqlen_q, "max_seqlen_q"),
                                      max_seqlen_k=_max_len(max_seqlen_k, "max_seqlen_k"))
            return res if return_lse else res[0]
        if (out is None and bias is None and cu_seqlens_q is None and cu_seqlens_k is None
                and max_seqlen_q is None and max_seqlen_k is None):
            fast = _torch_attention
            if fast is None:
                fast = _load_torch_op("attention")
            if fast:
                wl, wr = _window(window, causal)
                res = fast(q, k, v, bool(causal), wl, wr, _scale(scale), bool(return_lse))
                if res is not NotImplemented:
                    return res
    varlen = cu_seqlens_q is not None
    if out is None:
        out = T.empty(q, tuple(q.shape)) if hasattr(q, "shape") else None
    lse = None
    if return_lse:
        shape = _lse_shape(q, varlen)
        lse = T.empty(q, shape if shape is not None else (0,), T.F32)
    forward_into(q, k, v, out, lse, causal=causal, window=window, scale=scale, bias=bias,
                 cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                 max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k)
    return (out, lse) if return_lse else out


def forward_into(q, k, v, out, lse, *, causal=False, window=None, scale=None, bias=None,
                 cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None):
    """attention() writing into given out (and optional lse) tensors."""
    wl, wr = _window(window, causal)
    _native().attention_forward(
        T.arg(q, "q"), T.arg(k, "k"), T.arg(v, "v"), T.arg(out, "out"),
        T.arg(lse, "lse"), T.arg(cu_seqlens_q, "cu_seqlens_q"),
        T.arg(cu_seqlens_k, "cu_seqlens_k"), _max_len(max_seqlen_q, "max_seqlen_q"),
        _max_len(max_seqlen_k, "max_seqlen_k"), T.arg(bias, "bias"), _scale(scale),
        bool(causal), wl, wr, *_stream_and_allocator(q))


def attention_backward(dout, q, k, v, out, lse, *, causal: bool = False, window=None, scale=None,
                       bias=None, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None,
                       max_seqlen_k=None):
    """Gradients (dq, dk, dv) of attention() given dout, the forward's out and lse (CPU)."""
    dq = T.empty(q, tuple(q.shape))
    dk = T.empty(k, tuple(k.shape))
    dv = T.empty(v, tuple(v.shape))
    wl, wr = _window(window, causal)
    _native().attention_backward(
        T.arg(q, "q"), T.arg(k, "k"), T.arg(v, "v"), T.arg(out, "out"),
        T.arg(dout, "dout"), T.arg(lse, "lse"), T.arg(dq, "dq"),
        T.arg(dk, "dk"), T.arg(dv, "dv"), T.arg(cu_seqlens_q, "cu_seqlens_q"),
        T.arg(cu_seqlens_k, "cu_seqlens_k"), _max_len(max_seqlen_q, "max_seqlen_q"),
        _max_len(max_seqlen_k, "max_seqlen_k"), T.arg(bias, "bias"), _scale(scale),
        bool(causal), wl, wr, T.stream_of(q))
    return dq, dk, dv


def _check_epilogue(activation, alpha, beta):
    """The epilogue arguments shared by gemm and gemm_fp8."""
    if activation not in _ACTIVATIONS:
        raise ValueError(f"argument 'activation': expected one of {sorted(_ACTIVATIONS)}, "
                         f"got {activation!r}")
    if type(alpha) is float and type(beta) is float:  # the common case, checked cheaply
        return
    for name, val in (("alpha", alpha), ("beta", beta)):
        if isinstance(val, bool) or not isinstance(val, (int, float)):
            raise TypeError(f"argument '{name}': expected a float, got {type(val).__name__}")


def _gemm_out_shape(a, b):
    try:
        sa, sb = a.shape, b.shape
        an, bn = len(sa), len(sb)
    except (AttributeError, TypeError):
        return None
    if an == 2 and bn == 2:
        return (sa[0], sb[1])
    if an not in (2, 3) or bn not in (2, 3):
        return None
    return (max(sa[0] if an == 3 else 1, sb[0] if bn == 3 else 1), sa[-2], sb[-1])


def gemm(a, b, *, bias=None, c=None, alpha: float = 1.0, beta: float = 0.0,
         activation: str = "none", residual=None, out_dtype=None, out=None):
    """D = act(alpha * a @ b + beta * c + bias) + residual.

    a: (M, K) or (batch, M, K); b: (K, N) or (batch, K, N); any strides (row- or column-major).
    activation: none, relu, gelu (erf), gelu_tanh or silu. out_dtype: the output dtype (a torch or
    numpy dtype; default: a's dtype).
    """
    _check_epilogue(activation, alpha, beta)
    if T.is_torch(a):
        fast = _torch_gemm if _torch_gemm is not None else _load_torch_op("gemm")
        if fast:
            code = -1 if out_dtype is None or out is not None else _dtype_code(out_dtype)
            d = fast(a, b, out, c, bias, residual, float(alpha), float(beta),
                     _ACTIVATIONS[activation], code)
            if d is not NotImplemented:
                return d
    if out is None:
        shape = _gemm_out_shape(a, b)
        code = None if out_dtype is None else _dtype_code(out_dtype)
        out = T.empty(a, shape if shape is not None else (0, 0), code)
    stream, alloc = _stream_and_allocator(a)
    _native().gemm(T.arg(a, "a"), T.arg(b, "b"), T.arg(out, "out"), T.arg(c, "c"),
                   T.arg(bias, "bias"), T.arg(residual, "residual"), float(alpha), float(beta),
                   _ACTIVATIONS[activation], stream, None, alloc)
    return out


def _torch_ext():
    """deepwell._torch (python/src/torch_ext.cpp), the host fast path for torch CUDA tensors:
    gemm, gemm_fp8, attention and quantize without the Python attribute reads and the
    Python-level output allocation (~6-10 us less host time per call, which decides small-M
    GEMMs and small attention calls). None unless it was built against the torch that is loaded; DEEPWELL_TORCH_EXT=0 turns
    it off (the general path then runs every call)."""
    import os

    if os.environ.get("DEEPWELL_TORCH_EXT", "1") == "0":
        return None
    try:
        from . import _torch as ext
    except ImportError:
        return None
    return ext if ext.built_for == sys.modules["torch"].__version__ else None


def _load_torch_op(name: str):
    """deepwell._torch.<name> (gemm, gemm_fp8, attention, quantize), or False (the general
    path); looked up at the op's first torch call and kept in the module global _torch_<name>."""
    ext = _torch_ext()
    fn = getattr(ext, name, False) if ext is not None else False
    globals()["_torch_" + name] = fn
    return fn


def _alloc_workspace(nbytes: int, device: int):
    """Scratch memory for one CUDA call (GEMM: split-K partials, transposed operand copies;
    attention: split-KV's partial results), from
    torch's caching allocator on the current stream. The native call asks for it once it has
    chosen its plan, only when the plan uses scratch, and frees it on return (in stream order)."""
    torch = sys.modules["torch"]  # the caller passed torch tensors, so it is loaded
    return torch.empty(nbytes, dtype=torch.uint8, device=device)


def _stream_and_allocator(like):
    """The caller's current stream and the workspace allocator for a call on like's device."""
    if T.is_torch(like) and like.is_cuda:
        return T.cuda_stream_of(like), _alloc_workspace
    return 0, None


_FP8_SCALING = {"tensor": 0, "row": 1, "block": 2, "mx": 3}


def _scale_descriptor(scale, name: str, granularity: str):
    """MX scales may come as uint8 or float8_e8m0fnu; both are read as ue8m0."""
    d = T.describe(scale, name)
    if granularity == "mx" and d is not None and d[1] == T.U8:
        d = (d[0], T.UE8M0) + tuple(d[2:])
    return d


def gemm_fp8(a, b, scale_a, scale_b, *, granularity: str = "tensor", bias=None, c=None,
             alpha: float = 1.0, beta: float = 0.0, activation: str = "none", residual=None,
             out_dtype=None, out=None):
    """D = act(alpha * (scale_a . A) @ (scale_b . B) + beta * c + bias) + residual, fp32 accumulation.

    a: fp8 (torch.float8_e4m3fn or float8_e5m2) (M, K) or (batch, M, K); b: fp8 (K, N) or
    (batch, K, N). On CUDA both must have unit stride along K (b = w.t() of a row-major w (N, K),
    as torch._scaled_mm wants it); the compiled kernels are e4m3 x e4m3 and e4m3 x e5m2.
    granularity and scale shapes (fp32 unless noted; shared by every batch):
      "tensor": scale_a (1), scale_b (1)
      "row":    scale_a (M) or (M, 1), scale_b (N) or (1, N)
      "block":  scale_a (M, ceil(K/128)) per 1x128 block, scale_b (ceil(N/128), ceil(K/128)) per
                128x128 block (any strides; on CUDA scale_a is read M-major and scale_b K-major,
                other layouts are copied in the workspace first; at M <= 16 scale_a is read
                in place)
      "mx":     ue8m0 (float8_e8m0fnu or uint8) scale_a (M, ceil(K/32)), scale_b (N, ceil(K/32))
    out_dtype: bfloat16 (default), float16 or float32; bias, c and residual have the output dtype
    on CUDA. CUDA runs tensor / row / block scaling on the fp8 tensor cores (any of the three
    output dtypes; e4m3 first, block scaling e4m3 x e4m3 only). "mx" with e4m3 x e4m3 and no batch
    runs the block kernels on a recast of both operands (each 32-element scale folded into the
    fp8 data by a power of two; only elements below ~2^-14 of the largest magnitude in their
    row's 128-block of K (a) or their column (b) change, by at most ~2^-18 of it; environment
    DEEPWELL_MX_EXACT=1 turns it off); other "mx" calls and e5m2-first "tensor" calls run exactly
    on the bf16 kernels after decoding both operands to bf16.
    """
    if granularity not in _FP8_SCALING:
        raise ValueError(f"argument 'granularity': expected one of {sorted(_FP8_SCALING)}, "
                         f"got {granularity!r}")
    _check_epilogue(activation, alpha, beta)
    if T.is_torch(a):
        fast = _torch_gemm_fp8 if _torch_gemm_fp8 is not None else _load_torch_op("gemm_fp8")
        if fast:
            code = -1 if out_dtype is None or out is not None else _dtype_code(out_dtype)
            d = fast(a, b, scale_a, scale_b, _FP8_SCALING[granularity], out, c, bias, residual,
                     float(alpha), float(beta), _ACTIVATIONS[activation], code)
            if d is not NotImplemented:
                return d
    if out is None:
        shape = _gemm_out_shape(a, b)
        code = T.BF16 if out_dtype is None else _dtype_code(out_dtype)
        out = T.empty(a, shape if shape is not None else (0, 0), code)
    args = (T.arg(a, "a"), T.arg(b, "b"),
            _scale_descriptor(scale_a, "scale_a", granularity),
            _scale_descriptor(scale_b, "scale_b", granularity), _FP8_SCALING[granularity],
            T.arg(out, "out"), T.arg(c, "c"), T.arg(bias, "bias"),
            T.arg(residual, "residual"), float(alpha), float(beta), _ACTIVATIONS[activation])
    stream, alloc = _stream_and_allocator(a)
    _native().gemm_fp8(*args, stream, None, alloc)
    return out


def _dtype_code(dtype) -> int:
    name = str(dtype).replace("torch.", "")
    codes = {"float32": T.F32, "float16": T.F16, "bfloat16": T.BF16, "half": T.F16,
             "float": T.F32}
    if name not in codes:
        try:
            import numpy as np

            name = np.dtype(dtype).name
        except TypeError:
            pass
    if name not in codes:
        raise TypeError(f"argument 'out_dtype': expected float32, float16 or bfloat16, "
                        f"got {dtype}")
    return codes[name]

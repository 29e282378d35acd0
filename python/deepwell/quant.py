"""Low-precision formats: quantize / dequantize (FP8, MXFP8, MXFP4, NVFP4, DeepSeek block FP8).

The rules are those of docs/formats.md. Inputs are torch tensors (CPU or CUDA) or numpy arrays;
outputs are allocated in the same framework and on the same device:

- FP8 elements as torch.float8_e4m3fn / torch.float8_e5m2 (uint8 for numpy);
- FP4 (e2m1) elements packed two per byte, lower index in the low nibble, as uint8 (..., K/2);
- UE8M0 scales as torch.float8_e8m0fnu, UE4M3 (NVFP4) scales as torch.float8_e4m3fn (uint8 when
  torch has no such dtype, and for numpy); FP32 scales as float32.
"""
from __future__ import annotations

import sys

from . import _tensors as T
from . import ops as _ops
from .ops import _dtype_code, _native

FORMATS = {"fp8_tensor": 0, "fp8_row": 1, "fp8_block1x128": 2, "fp8_block128x128": 3,
           "mxfp8": 4, "mxfp4": 5, "nvfp4": 6}
_ALIASES = {"tensor": 0, "row": 1, "1x128": 2, "128x128": 3}
_RULES = {"floor": 0, "rceil": 1}
_ELEMS = {"e4m3": T.E4M3, "e5m2": T.E5M2}
_FP4 = (5, 6)
_MX_LIKE = (4, 5, 6)


def _format(format) -> int:
    if not isinstance(format, str):
        raise TypeError(f"argument 'format': expected a str, got {type(format).__name__}")
    code = FORMATS.get(format, _ALIASES.get(format))
    if code is None:
        raise ValueError(f"argument 'format': expected one of {sorted(FORMATS)}, got {format!r}")
    return code


def _bool(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"argument '{name}': expected a bool, got {type(value).__name__}")
    return value


def _choice(value, table: dict, name: str):
    if not isinstance(value, str):
        raise TypeError(f"argument '{name}': expected a str, got {type(value).__name__}")
    if value not in table:
        raise ValueError(f"argument '{name}': expected one of {sorted(table)}, got {value!r}")
    return table[value]


def _alloc(like, shape, code: int):
    """A contiguous tensor for elements of dtype code `code` (F32 or a byte format)."""
    if T.is_torch(like):
        return like.new_empty(shape, dtype=T._torch_dtype(code))  # like's device (see T.empty)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(like, np.ndarray):
        return np.empty(shape, dtype=np.float32 if code == T.F32 else np.uint8)
    raise TypeError(f"argument 'x': expected a torch.Tensor or a numpy.ndarray, "
                    f"got {type(like).__name__}")


def _contiguous_strides(shape):
    strides, s = [], 1
    for n in reversed(shape):
        strides.append(s)
        s *= n
    return tuple(reversed(strides))


_strides_cache: dict = {}


def _strides_of(shape):
    """Contiguous strides of `shape` (a tuple), cached."""
    strides = _strides_cache.get(shape)
    if strides is None:
        strides = _contiguous_strides(shape)
        if len(_strides_cache) < 4096:
            _strides_cache[shape] = strides
    return strides


def _bytes_desc(t, code: int, name: str, elem_shape=None):
    """Descriptor of a byte tensor reinterpreted as dtype `code`; fp4 tensors are described in
    elements (nibbles), so their last dim and strides double."""
    d = T.describe(t, name)
    if d[1] not in (T.U8, T.E4M3, T.E5M2, T.UE8M0):
        raise TypeError(f"argument '{name}': expected a uint8 or float8 tensor, got dtype code "
                        f"{d[1]}")
    if code == T.E2M1:
        if elem_shape is None:
            elem_shape = tuple(d[4][:-1]) + (d[4][-1] * 2,) if d[4] else ()
        if 0 not in d[4] and list(d[5]) != list(_contiguous_strides(d[4])):  # empty: any strides
            raise ValueError(f"argument '{name}': expected a contiguous packed fp4 tensor, "
                             f"got strides {d[5]}")
        return (d[0], code, d[2], d[3], tuple(elem_shape), _contiguous_strides(elem_shape))
    return (d[0], code, d[2], d[3], d[4], d[5])


_shapes_cache: dict = {}  # (format, swizzle, transpose, x's shape) -> quantize_shapes' answer


def _shapes(fmt: int, swizzle: bool, transpose: bool, x):
    shape = getattr(x, "shape", None)
    if shape is None:
        T.describe(x, "x")  # raises the TypeError naming 'x'
    key = (fmt, swizzle, transpose, tuple(shape))
    hit = _shapes_cache.get(key)
    if hit is not None:
        return hit
    shape = tuple(int(n) for n in shape)
    try:
        out = _native().quantize_shapes(fmt, swizzle, transpose, shape)
    except ValueError as e:  # report it as quantize's, against the caller's argument
        raise ValueError(str(e).replace("quantize_shapes:", "quantize:", 1)
                         .replace("argument 'x_shape'", "argument 'x'", 1)) from None
    if len(_shapes_cache) < 4096:  # a model has a few dozen distinct shapes
        _shapes_cache[key] = out
    return out


def quantize(x, format: str = "mxfp8", *, rule: str = "floor", elem: str = "e4m3",
             transpose: bool = False, swizzle: bool = False, pow2_scales: bool = False,
             amax=None):
    """Quantizes x (..., K) along its last dimension K.

    format: fp8_tensor, fp8_row, fp8_block1x128 (1x128), fp8_block128x128 (128x128), mxfp8,
    mxfp4 or nvfp4. rule: the MX scale rule, "floor" (OCP) or "rceil" (NVIDIA, never clips).
    elem: "e4m3" or "e5m2" for the FP8 formats (mxfp4 and nvfp4 are always e2m1).
    transpose: also return quantize(x.T) of a 2-D x (R, K), e.g. a weight quantized once for both
    K-major uses. For the FP8 formats, when R is not a multiple of 32, data_t is a (K, R) view
    with strides (round_up(R, 32), 1): GEMMs' TMA loads need rows on 16-byte boundaries
    (deepwell.gemm_fp8, torch._scaled_mm take the view as it is), and rows on 32-byte sectors
    are written fastest; the padding bytes are not written (data_t.contiguous() gives a dense
    copy). swizzle: MX/NVFP4 scales in the 128x4 layout of Blackwell block-scaled MMA,
    shaped (ceil(R/128), ceil(K/block/4), 32, 16). pow2_scales: FP32 scales rounded up to powers
    of two. amax (fp8_tensor and nvfp4 only): a float32 tensor of one element on x's device, the
    amax to scale by when it is known beforehand (delayed scaling: an earlier step's amax); the
    scale is derived from |amax| by the same rule, elements above it saturate, and x is read once
    instead of twice. Nothing is synchronized: the value stays on the device.

    Returns (data, scales), or (data, scales, tensor_scale) for nvfp4; with transpose, the
    transposed (data_t, scales_t) follow (for fp8_tensor only data_t: it shares the scale).
    """
    fmt = _format(format)
    rule_code = _choice(rule, _RULES, "rule")
    elem_code = _choice(elem, _ELEMS, "elem")
    transpose = _bool(transpose, "transpose")
    swizzle = _bool(swizzle, "swizzle")
    pow2_scales = _bool(pow2_scales, "pow2_scales")
    if fmt in _FP4:
        if elem != "e4m3":
            raise ValueError(f"argument 'elem': {format} always stores e2m1 elements; leave elem "
                             f"at its default, got {elem!r}")
        elem_code = T.E2M1
    if T.is_torch(x):  # deepwell._torch: the outputs allocated and the call made in C++
        fast = _ops._torch_quantize
        if fast is None:
            fast = _ops._load_torch_op("quantize")
        if fast:
            res = fast(x, fmt, rule_code, elem_code, transpose, swizzle, pow2_scales, amax)
            if res is not NotImplemented:
                return res
    data_shape, scales_shape, scale_code, has_ts, data_t_shape, scales_t_shape = _shapes(
        fmt, swizzle, transpose, x)
    xd = T.describe(x, "x")
    if amax is not None and getattr(amax, "ndim", None) == 0:
        amax = amax.reshape(1)  # a 0-d tensor (e.g. torch.amax's result) as the (1) it describes
    amdesc = T.describe(amax, "amax")

    # Outputs are new tensors on x's device, contiguous unless `strides` says otherwise: their
    # descriptors are built directly (fp4 data described in elements: its last dim and strides are
    # those of x's shape).
    def fresh(t, code, shape, strides=None):
        ptr = t.data_ptr() if T.is_torch(t) else t.__array_interface__["data"][0]
        return (ptr, code, xd[2], xd[3], shape, strides or _strides_of(shape))

    def alloc_data(shape):
        if elem_code == T.E2M1:
            packed = tuple(shape[:-1]) + ((shape[-1] + 1) // 2,) if shape else ()
            t = _alloc(x, packed, T.U8)
            return t, fresh(t, T.E2M1, shape)
        t = _alloc(x, shape, elem_code)
        return t, fresh(t, elem_code, shape)

    def alloc_padded_rows(shape):  # fp8 codes (K, R), rows on 32-byte boundaries
        ld = (shape[1] + 31) // 32 * 32
        t = _alloc(x, (shape[0], ld), elem_code)[:, :shape[1]]
        return t, fresh(t, elem_code, shape, (ld, 1))

    def alloc_scales(shape):
        t = _alloc(x, shape, scale_code)
        return t, fresh(t, scale_code, shape)

    data, ddesc = alloc_data(data_shape)
    scales, sdesc = alloc_scales(scales_shape)
    ts = _alloc(x, (1,), T.F32) if has_ts else None
    data_t = scales_t = None
    dtdesc = stdesc = None
    if transpose:
        if elem_code != T.E2M1 and data_t_shape[1] % 32:
            data_t, dtdesc = alloc_padded_rows(data_t_shape)
        else:
            data_t, dtdesc = alloc_data(data_t_shape)
        if scales_t_shape is not None:
            scales_t, stdesc = alloc_scales(scales_t_shape)
    _native().quantize(xd, ddesc, sdesc, T.describe(ts, "tensor_scale"), dtdesc, stdesc, amdesc,
                       fmt, rule_code, pow2_scales, swizzle, T.stream_of(x))
    out = (data, scales) + ((ts,) if has_ts else ())
    if transpose:
        out += (data_t,) + ((scales_t,) if scales_t is not None else ())
    return out




def _elem_of(data, fmt: int, elem) -> int:
    if fmt in _FP4:
        return T.E2M1
    if T.is_torch(data):
        import torch

        by_dtype = {getattr(torch, "float8_e4m3fn", None): T.E4M3,
                    getattr(torch, "float8_e5m2", None): T.E5M2}
        if data.dtype in by_dtype:
            code = by_dtype[data.dtype]
            if elem is not None and _ELEMS[elem] != code:
                raise ValueError(f"argument 'elem': {elem!r} contradicts data's dtype {data.dtype}")
            return code
    return _ELEMS["e4m3" if elem is None else elem]


def dequantize(data, scales, format: str = "mxfp8", *, tensor_scale=None, elem: str | None = None,
               swizzle: bool = False, out_dtype="float32", out=None):
    """Decodes the output of quantize() back to floats of x's shape.

    data, scales (and tensor_scale for nvfp4) as quantize() returned them; elem says whether
    uint8 FP8 data holds e4m3 or e5m2 (torch float8 tensors carry it in their dtype); swizzle
    says the scales are in the swizzled layout. out_dtype: float32, float16 or bfloat16.
    """
    fmt = _format(format)
    if elem is not None:
        _choice(elem, _ELEMS, "elem")
    swizzle = _bool(swizzle, "swizzle")
    elem_code = _elem_of(data, fmt, elem)
    ddesc = _bytes_desc(data, elem_code, "data")
    sdesc = T.describe(scales, "scales")
    if sdesc is not None and fmt in _MX_LIKE and sdesc[1] in (T.U8, T.E4M3, T.UE8M0):
        sdesc = _bytes_desc(scales, T.UE4M3 if fmt == 6 else T.UE8M0, "scales")
    if out is None:
        out = T.empty(data, ddesc[4], _dtype_code(out_dtype))
    _native().dequantize(ddesc, sdesc, T.describe(tensor_scale, "tensor_scale"),
                         T.describe(out, "out"), fmt, swizzle, T.stream_of(data))
    return out


def swizzle_scales(scales):
    """Row-major 1-byte block scales (..., C) -> the swizzled layout (ceil(R/128), ceil(C/4), 32,
    16), R the product of the leading dims; padding bytes are zero."""
    d = T.describe(scales, "scales")
    if d[1] not in (T.U8, T.E4M3, T.UE8M0):
        raise TypeError(f"argument 'scales': expected 1-byte scales (uint8 or float8), got "
                        f"dtype code {d[1]}")
    shape = d[4]
    if not shape:
        raise ValueError("argument 'scales': expected a tensor with at least 1 dimension (..., C)")
    rows = 1
    for n in shape[:-1]:
        rows *= n
    out_shape = ((rows + 127) // 128, (shape[-1] + 3) // 4, 32, 16)
    out = _empty_like_bytes(scales, out_shape)
    _native().swizzle_scales(d, T.describe(out, "out"), True, T.stream_of(scales))
    return out


def unswizzle_scales(swizzled, shape):
    """The inverse of swizzle_scales(): back to row-major scales of the given (..., C) shape."""
    d = T.describe(swizzled, "swizzled")
    shape = tuple(int(n) for n in shape)
    out = _empty_like_bytes(swizzled, shape)
    _native().swizzle_scales(d, T.describe(out, "out"), False, T.stream_of(swizzled))
    return out


def _empty_like_bytes(t, shape):
    if T.is_torch(t):
        import torch

        return torch.empty(shape, dtype=t.dtype, device=t.device)
    import numpy as np

    return np.empty(shape, dtype=np.uint8)

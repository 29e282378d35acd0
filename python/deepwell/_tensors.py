"""Tensor plumbing shared by every op: descriptors for the native layer, allocation, streams.

A descriptor is the tuple (data_ptr, dtype_code, device_type, device_index, shape, strides) that
deepwell._C reads; dtype codes are those of include/deepwell/deepwell.h (DW_DTYPE_*), device
types are DLPack's (1 = CPU, 2 = CUDA), strides count elements.
"""
from __future__ import annotations

import sys

F32, F16, BF16, E4M3, E5M2, E2M1, UE8M0, UE4M3, I32, U8 = range(10)

_torch_codes: dict | None = None
_numpy_codes = {"float32": F32, "float16": F16, "bfloat16": BF16, "int32": I32, "uint8": U8}


_TorchTensor = None  # torch.Tensor, once torch has been imported by someone


def is_torch(x) -> bool:
    """True for a torch.Tensor, without importing torch when the caller never did."""
    global _TorchTensor
    if _TorchTensor is None:
        torch = sys.modules.get("torch")
        if torch is None:
            return False
        _TorchTensor = torch.Tensor
    return isinstance(x, _TorchTensor)


def _init_torch_codes() -> dict:
    global _torch_codes
    import torch

    codes = {torch.float32: F32, torch.float16: F16, torch.bfloat16: BF16, torch.int32: I32,
             torch.uint8: U8}
    for name, code in (("float8_e4m3fn", E4M3), ("float8_e5m2", E5M2),
                       ("float8_e8m0fnu", UE8M0)):
        if hasattr(torch, name):
            codes[getattr(torch, name)] = code
    _torch_codes = codes
    return codes


def _dtype_error(dtype) -> str:
    return f"expected a tensor of float32, float16, bfloat16, fp8, int32 or uint8, got {dtype}"


def _torch_code(dtype) -> int:
    code = (_torch_codes or _init_torch_codes()).get(dtype)
    if code is None:
        raise TypeError(_dtype_error(dtype))
    return code


def describe(x, name: str):
    """Descriptor tuple of a torch tensor, numpy array or DLPack tensor; None passes through."""
    if x is None:
        return None
    if is_torch(x):
        if x.is_cuda:
            dev_type, dev = 2, x.get_device()
        elif x.is_cpu:
            dev_type, dev = 1, 0
        else:
            raise ValueError(f"argument '{name}': expected a CPU or CUDA tensor, "
                             f"got a tensor on {x.device}")
        code = (_torch_codes or _init_torch_codes()).get(x.dtype)
        if code is None:
            raise TypeError(f"argument '{name}': {_dtype_error(x.dtype)}")
        return (x.data_ptr(), code, dev_type, dev, tuple(x.shape), x.stride())
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, np.ndarray):
        code = _numpy_codes.get(x.dtype.name)
        if code is None:
            raise TypeError(f"argument '{name}': expected an array of float32, float16, bfloat16, "
                            f"int32 or uint8, got {x.dtype}")
        item = x.dtype.itemsize
        if any(s % item for s in x.strides):
            raise ValueError(f"argument '{name}': expected strides that are whole elements, "
                             f"got byte strides {x.strides}")
        ptr = x.__array_interface__["data"][0]
        return (ptr, code, 1, 0, tuple(x.shape), tuple(s // item for s in x.strides))
    if hasattr(x, "__dlpack__"):
        from . import _C

        try:
            return _C.dlpack_descriptor(x)
        except TypeError as e:
            raise TypeError(f"argument '{name}': {e}") from None
    raise TypeError(f"argument '{name}': expected a torch.Tensor, a numpy.ndarray or a DLPack "
                    f"tensor, got {type(x).__name__}")


_native_reads_torch = False  # deepwell._C has torch.Tensor and the dtype codes (register_torch)


def _register_torch() -> None:
    global _native_reads_torch
    from . import _C

    _C.register_torch(_TorchTensor, _torch_codes or _init_torch_codes())
    _native_reads_torch = True


def arg(x, name: str):
    """A tensor argument for deepwell._C: a torch tensor as it is (the native layer reads its
    attributes itself, python/src/module.cpp: ~0.5 us less per tensor than building the
    descriptor here), anything else as its descriptor (describe). Errors name `name` either way."""
    if x is None:
        return None
    if is_torch(x):
        if not _native_reads_torch:
            _register_torch()
        return x
    return describe(x, name)


def empty(like, shape, dtype_code: int | None = None):
    """A new uninitialized tensor of the same framework and device as `like`."""
    if is_torch(like):
        # new_empty: like's device without building a torch.device per call (~1 us less than
        # torch.empty(..., device=like.device) on a typical host; these calls are host-bound)
        if dtype_code is None:
            return like.new_empty(shape)
        return like.new_empty(shape, dtype=_torch_dtype(dtype_code))
    np = sys.modules.get("numpy")
    if np is not None and isinstance(like, np.ndarray):
        dtype = like.dtype if dtype_code is None else _numpy_dtype(dtype_code)
        return np.empty(shape, dtype=dtype)
    raise TypeError(f"cannot allocate the output for a {type(like).__name__}: pass out=... "
                    f"(outputs are allocated for torch tensors and numpy arrays)")


_torch_dtypes: dict | None = None


def _torch_dtype(code: int):
    """The torch dtype that stores dtype code `code`: fp8 codes as torch's fp8 dtypes (UE4M3 as
    float8_e4m3fn), or uint8 where this torch lacks them; packed E2M1 as uint8."""
    global _torch_dtypes
    if _torch_dtypes is None:
        import torch

        _torch_dtypes = {F32: torch.float32, F16: torch.float16, BF16: torch.bfloat16,
                         I32: torch.int32, U8: torch.uint8, E2M1: torch.uint8}
        for code_, name in ((E4M3, "float8_e4m3fn"), (E5M2, "float8_e5m2"),
                            (UE8M0, "float8_e8m0fnu"), (UE4M3, "float8_e4m3fn")):
            _torch_dtypes[code_] = getattr(torch, name, torch.uint8)
    return _torch_dtypes[code]


def _numpy_dtype(code: int):
    import numpy as np

    if code == BF16:
        import ml_dtypes  # optional: numpy has no bfloat16 of its own

        return ml_dtypes.bfloat16
    return {F32: np.float32, F16: np.float16, I32: np.int32}[code]


def dtype_code_of(x) -> int:
    if is_torch(x):
        return _torch_code(x.dtype)
    return describe(x, "tensor")[1]


_raw_stream = None


def stream_of(x) -> int:
    """The caller's current CUDA stream on x's device (0 for CPU tensors and non-torch inputs)."""
    return cuda_stream_of(x) if is_torch(x) and x.is_cuda else 0


def cuda_stream_of(x) -> int:
    """stream_of for a torch tensor the caller already knows is on a CUDA device."""
    global _raw_stream
    if _raw_stream is None:
        import torch

        fast = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _raw_stream = fast if fast is not None else (
            lambda d: torch.cuda.current_stream(d).cuda_stream)
    return _raw_stream(x.get_device())
